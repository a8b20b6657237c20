// npm run test:terminal: the REPL and a headless run in a real pseudo-terminal (test/pty.ts), where Ctrl-C is a key
// readline reads, typed text is echoed, and the status line is drawn. Each test starts the real program (about a
// second), so they are kept out of `npm test`; .ci/run runs them too.

import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fakeMessage, startFakeApi } from './fake-api.ts';
import { alive, slowCheck, tempProject, theProgramAbove } from './helpers.ts';
import { hasScript, startInTerminal, type Terminal } from './pty.ts';

const skip = hasScript ? false : 'needs script(1) from util-linux';

const text = (t: string) => ({ type: 'text' as const, text: t, citations: null });

/** Ends the program if a test fails half way, so no child outlives the suite. */
function started(t: { after: (fn: () => void) => void }, terminal: Terminal): Terminal {
  t.after(() => terminal.kill());
  return terminal;
}

test(
  'Ctrl-C during the verify, with a message typed meanwhile: halt "interrupted", no new model request, the prompt waits; a second Ctrl-C leaves',
  { skip },
  async (t) => {
    const api = await startFakeApi([{ kind: 'reply', message: fakeMessage([text('Done.')]) }]);
    t.after(() => api.close());
    const root = await tempProject(t);
    const env = { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: api.baseURL };
    const term = started(t, startInTerminal(['--verify', 'sleep 30'], { cwd: root, env }));
    await term.waitFor(/you> /);
    term.type('fix the bug\r');
    await term.waitFor(/checking "done": sleep 30 · 0 s/);
    const statusFrom = term.arrivals().length;
    await sleep(1_200);
    term.type('also update the docs');
    await sleep(800);
    term.type('\r');
    await term.waitFor(/queued/);
    await sleep(600);
    const gaps = term
      .arrivals()
      .slice(statusFrom)
      .map((at, i, all) => at - (all[i - 1] ?? at));
    assert.ok(Math.max(...gaps) < 1_000, `the screen stood still for ${Math.max(...gaps)} ms while the verify ran`);
    term.type('\x03');
    await term.waitFor(/halt: interrupted after 1 turn\(s\)/);
    await term.waitFor(/not sent \(the run was stopped\): "also update the docs"; type it again to send it/);
    await term.waitFor(/halt: interrupted[\s\S]*you> /);
    await sleep(500); // time enough for a request that should not happen
    assert.equal(api.requests.filter((r) => r.path === '/v1/messages').length, 1, 'a model request after Ctrl-C');
    term.type('\x03');
    assert.equal(await term.exited, 0, 'leaving the REPL at its prompt is not an error');
    // The typed line landed on a line of its own, not inside the status line.
    assert.match(term.output(), /(^|\n|\x1b\[0J)» also update the docs/);
    assert.doesNotMatch(term.output(), /· \d+ s[^\n\r\x1b]*also update/);
  },
);

test(
  'a headless run at a terminal stops at Ctrl-C: the terminal is not left raw with nobody reading it',
  { skip },
  async (t) => {
    const root = await tempProject(t, {
      'script.json': JSON.stringify([{ content: [{ type: 'text', text: 'Done.' }] }]),
    });
    const term = started(
      t,
      startInTerminal(['--script', 'script.json', '--verify', 'sleep 30', 'fix it'], { cwd: root }),
    );
    await term.waitFor(/checking "done"/);
    term.type('\x03');
    await term.waitFor(/halt: interrupted/, 5_000);
    assert.equal(await term.exited, 130);
  },
);

test('a Ctrl-C after "halt: accepted", while the program winds down, leaves the exit code 0', { skip }, async (t) => {
  const api = await startFakeApi([{ kind: 'reply', message: fakeMessage([text('Done.')]) }]);
  t.after(() => api.close());
  const root = await tempProject(t);
  const env = { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: api.baseURL };
  const term = started(t, startInTerminal(['--verify', 'true', 'fix it'], { cwd: root, env }));
  await term.waitFor(/halt: accepted/);
  // Ctrl-C every few ms through the wind-down (a few hundred ms after main returns), where one used to land. Then
  // none: script(1) keeps relaying keys that never stop coming, and ended minutes after the program did.
  const pressing = setInterval(() => term.type('\x03'), 5);
  setTimeout(() => clearInterval(pressing), 2_000);
  const code = await term.exited;
  clearInterval(pressing);
  assert.equal(code, 0);
});

test(
  'the approval prompt says Enter means no, asks again for an answer it does not know, and takes Y; /resume names the new session',
  { skip },
  async (t) => {
    const edit = { path: 'a.txt', old_str: 'alpha', new_str: 'beta' };
    const script = [
      {
        content: [
          { type: 'tool_use', name: 'read_file', input: { path: 'a.txt' } },
          { type: 'tool_use', name: 'read_file', input: { path: 'b.txt' } },
        ],
      },
      { content: [{ type: 'tool_use', name: 'edit_file', input: edit }] },
      { content: [{ type: 'tool_use', name: 'edit_file', input: { ...edit, path: 'b.txt' } }] },
      { content: [{ type: 'text', text: 'Done.' }] },
    ];
    const root = await tempProject(t, {
      'a.txt': 'alpha\n',
      'b.txt': 'alpha\n',
      'script.json': JSON.stringify(script),
    });
    const term = started(t, startInTerminal(['--script', 'script.json'], { cwd: root }));
    await term.waitFor(/you> /);
    term.type('change a\r');
    await term.waitFor(/Allow this edit_file\? \[y\]es, \[N\]o, \[a\]lways this session \(Enter: no\)/);
    term.type('yess\r');
    await term.waitFor(/Please answer y, n or a/);
    term.type('Y\r');
    await term.waitFor(/✓ edited a\.txt: replaced 1 line\(s\) at line 1 with 1 line\(s\)/);
    await term.waitFor(/edited a\.txt[\s\S]*Allow this edit_file\?/);
    term.type('\r'); // Enter: no
    await term.waitFor(/Why not\?/);
    term.type('\r');
    await term.waitFor(/halt: accepted/);
    assert.equal(await readFile(path.join(root, 'a.txt'), 'utf8'), 'beta\n');
    assert.equal(await readFile(path.join(root, 'b.txt'), 'utf8'), 'alpha\n', 'Enter said no');
    // After /resume, the session named is the one now written to.
    const header = { type: 'session', version: 1, model: 'scripted', root, startedAt: '2026-12-01T00:00:00.000Z' };
    const said = { type: 'message', message: { role: 'user', content: 'hello' } };
    await writeFile(path.join(root, 'old.jsonl'), `${JSON.stringify(header)}\n${JSON.stringify(said)}\n`);
    term.type('/resume old.jsonl\r');
    await term.waitFor(/resumed old\.jsonl: 1 messages\s+session: old\.jsonl \(continue it with --resume\)/);
    term.type('/exit\r');
    assert.equal(await term.exited, 0);
  },
);

test(
  'the terminal closing during the verify command (SIGHUP): the run stops, no process of the check outlives it, the halt is written, the program ends',
  { skip },
  async (t) => {
    const root = await tempProject(t, {
      'script.json': JSON.stringify([{ content: [{ type: 'text', text: 'Done.' }] }]),
    });
    const file = path.join(root, 'session.jsonl');
    const check = slowCheck();
    const args = ['--script', 'script.json', '--session', file, '--verify', check.command];
    const term = started(t, startInTerminal(args, { cwd: root }));
    await term.waitFor(/you> /);
    term.type('fix it\r');
    await term.waitFor(/checking "done"/);
    while (check.running().length === 0) await sleep(10);
    const program = theProgramAbove(check.running()[0]!);
    term.kill(); // script(1) goes, and with it the terminal: the kernel hangs up on the program
    for (const start = Date.now(); (alive(program) || check.running().length > 0) && Date.now() - start < 5_000;)
      await sleep(20);
    assert.deepEqual(check.running(), [], 'the verify command outlived the terminal');
    assert.equal(alive(program), false, 'the program outlived its terminal');
    const last = (await readFile(file, 'utf8'))
      .trim()
      .split('\n')
      .slice(-2)
      .map((line) => JSON.parse(line));
    assert.deepEqual(last, [
      { type: 'interrupt', signal: 'SIGHUP', afterEvents: last[0].afterEvents },
      { type: 'halt', halt: { kind: 'interrupted' } },
    ]);
  },
);
