// npm run test:terminal: the REPL and a headless run in a real pseudo-terminal (test/pty.ts), where Ctrl-C is a key
// readline reads, typed text is echoed, and the status line is drawn. Each test starts the real program (about a
// second), so they are kept out of `npm test`; .ci/run runs them too.

import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type FakeApi, fakeMessage, startFakeApi } from '../../test/model/fake-api.ts';
import { alive, tempProject } from '../../test/helpers.ts';
import { theProgramAbove, slowCheck, withoutTime } from './helpers.ts';
import { hasScript, startInTerminal, type Terminal } from './pty.ts';

const skip = hasScript ? false : 'needs script(1) from util-linux';

const text = (t: string) => ({ type: 'text' as const, text: t, citations: null });

/** Ends the program if a test fails half way, so no child outlives the suite. */
function started(t: { after: (fn: () => void) => void }, terminal: Terminal): Terminal {
  t.after(() => terminal.kill());
  return terminal;
}

/** The program in a terminal, against a local API whose one reply is "Done.". */
async function doneInTerminal(t: TestContext, args: string[]): Promise<{ term: Terminal; api: FakeApi }> {
  const api = await startFakeApi([{ kind: 'reply', message: fakeMessage([text('Done.')]) }]);
  t.after(() => api.close());
  const root = await tempProject(t);
  const env = { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: api.baseURL };
  return { term: started(t, startInTerminal(args, { cwd: root, env })), api };
}

test(
  'Ctrl-C during the verify, with a message typed meanwhile: halt "interrupted", no new model request, the prompt waits; two more leave',
  { skip },
  async (t) => {
    const { term, api } = await doneInTerminal(t, ['--verify', 'sleep 30']);
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
    await term.waitFor(/press Ctrl-C again to exit/);
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
  const { term } = await doneInTerminal(t, ['--verify', 'true', 'fix it']);
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

/** What the terminal shows, line by line: escape codes gone, and each status-line redraw (\r) a line of its own. */
const screenLines = (output: string) =>
  output
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
    .split(/\r\n|\n|\r/)
    .filter((line) => line !== '');

/** A reply of the fake API with the given usage (the footer and the status line show these numbers). */
function replyWith(content: Parameters<typeof fakeMessage>[0], usage: { input: number; output: number; read: number }) {
  const message = fakeMessage(content, content.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn');
  const { input, output, read } = usage;
  return {
    kind: 'reply' as const,
    message: {
      ...message,
      usage: { ...message.usage, input_tokens: input, output_tokens: output, cache_read_input_tokens: read },
    },
  };
}

const toolUse = (id: string, name: string, input: unknown) =>
  ({ type: 'tool_use', id, name, input, caller: { type: 'direct' } }) as const;

/** A check that prints its first line at once, its verdict 1.5 s later, and fails until add() adds. */
const SLOW_CHECK = [
  "import { add } from './add.js';",
  "console.log('checking add(2, 3)…');",
  'await new Promise((resolve) => setTimeout(resolve, 1500));',
  "if (add(2, 3) !== 5) { console.log('AssertionError: expected 5, got ' + add(2, 3)); process.exit(1); }",
  "console.log('ok');",
].join('\n');

test(
  'a run as the person sees it: model and root at start, calls in words, the turn in the footer and the session on the status line, an edit as a diff under --yes, the failing check live and then its last lines; no line over 100 columns',
  { skip },
  async (t) => {
    const api = await startFakeApi([
      replyWith(
        [
          toolUse('toolu_1', 'read_file', { path: 'add.js', offset: 1, limit: 40 }),
          toolUse('toolu_2', 'list_files', { path: 'src' }),
        ],
        { input: 12_345, output: 678, read: 20_000 },
      ),
      replyWith([text('It looks right to me.')], { input: 1_000, output: 10, read: 32_000 }),
      replyWith(
        [toolUse('toolu_3', 'edit_file', { path: 'add.js', old_str: '  return a - b;', new_str: '  return a + b;' })],
        {
          input: 1_000,
          output: 40,
          read: 33_000,
        },
      ),
      replyWith([text('## Done\n\nFixed **add**.')], { input: 1_000, output: 10, read: 34_000 }),
    ]);
    t.after(() => api.close());
    const root = await tempProject(t, {
      'add.js': 'export function add(a, b) {\n  return a - b;\n}\n',
      'check.js': SLOW_CHECK,
      'package.json': '{"type": "module"}',
      'src/x.js': '',
    });
    const env = { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: api.baseURL };
    const term = started(t, startInTerminal(['--yes', '--verify', 'node check.js', 'fix add'], { cwd: root, env }));
    // While the check runs: its latest line, and what the session has spent, on the status line.
    await term.waitFor(/checking "done": node check\.js · \d s · 66,033 tokens · \$0\.\d{4} · checking add\(2, 3\)…/);
    assert.doesNotMatch(term.output(), /gate:/, 'the live line came before the verdict');
    assert.equal(await term.exited, 0);
    const lines = screenLines(term.output());
    const shown = lines.join('\n');
    assert.match(lines[0]!, /^model: claude-sonnet-5-5 \(\$2 in, \$10 out per million tokens\) · root: \//);
    assert.match(shown, /^→ read_file add\.js \(lines 1–40\)$/m);
    assert.match(shown, /^→ list_files src\/$/m);
    // Turn 1's own figures: 12,345 + 20,000 in (62% of it from the cache, at a tenth of the price), 678 out, at $2
    // and $10 a million: 12,345 × 2 + 20,000 × 0.2 + 678 × 10 = 35,470 millionths of a dollar.
    assert.match(shown, /^ {2}\[turn 1 · in 32,345 \(62% cached\) · out 678 · \$0\.0355\]$/m);
    assert.match(shown, /^ {2}\[turn 2 · in 33,000 \(97% cached\) · out 10 · \$0\.0085\]$/m, "turn 2's, not a total");
    assert.match(shown, /^context window 200,000 tokens: system [\d,]+ · tools [\d,]+ · AGENTS\.md 0 ·/m);
    assert.match(
      shown,
      /^gate: `node check\.js` exited with code 1: not done\n {2}│ checking add\(2, 3\)…\n {2}│ AssertionError: expected 5, got -1$/m,
    );
    assert.match(
      shown,
      /^→ edit_file add\.js\n {4}- {2}return a - b;\n {4}\+ {2}return a \+ b;\n {2}✓ edited add\.js/m,
    );
    assert.match(shown, /^## Done\n+Fixed \*\*add\*\*\.$/m, 'NO_COLOR: the markdown as the model wrote it');
    assert.match(
      shown,
      /^halt: accepted \(verified by `node check\.js`\) after 4 turn\(s\)\n {2}session: 135,083 tokens · \$0\.0619$/m,
    );
    const wide = lines.filter((line) => line.length > 100);
    assert.deepEqual(wide, [], 'every line fits 100 columns');
  },
);

test(
  'on a colour terminal the model\'s markdown is drawn (a heading and bold, not "##" and "**") and an edit\'s diff is red and green',
  { skip },
  async (t) => {
    const edit = { path: 'a.css', old_str: 'float: left;', new_str: 'display: flex;' };
    const api = await startFakeApi([
      { kind: 'reply', message: fakeMessage([toolUse('toolu_1', 'read_file', { path: 'a.css' })], 'tool_use') },
      { kind: 'reply', message: fakeMessage([toolUse('toolu_2', 'edit_file', edit)], 'tool_use') },
      { kind: 'reply', message: fakeMessage([text('## Done\n\nFixed the **layout**.')]) },
    ]);
    t.after(() => api.close());
    const root = await tempProject(t, { 'a.css': 'float: left;\n' });
    const env = { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: api.baseURL, NO_COLOR: undefined };
    const term = started(t, startInTerminal(['--yes', 'fix the layout'], { cwd: root, env }));
    assert.equal(await term.exited, 0);
    const output = term.output();
    assert.match(output, /\x1b\[31m {4}-float: left;\x1b\[39m\r?\n\x1b\[32m {4}\+display: flex;\x1b\[39m/);
    assert.match(output, /\x1b\[1mDone\x1b\[22m/, 'the heading in bold');
    assert.match(output, /Fixed the \x1b\[1mlayout\x1b\[22m\./, '**layout** in bold');
    assert.doesNotMatch(output, /## Done|\*\*layout\*\*/);
  },
);

test(
  'Ctrl-C twice 0.3 s apart during a run stops the run and stays: "press Ctrl-C again to exit"; the next one leaves on a line of its own',
  { skip },
  async (t) => {
    const { term } = await doneInTerminal(t, ['--verify', 'sleep 30']);
    await term.waitFor(/you> /);
    term.type('fix the bug\r');
    await term.waitFor(/checking "done": sleep 30/);
    term.type('\x03');
    await sleep(300);
    term.type('\x03');
    await term.waitFor(/halt: interrupted/);
    await term.waitFor(/press Ctrl-C again to exit/);
    const stillThere = await Promise.race([term.exited.then(() => false), sleep(1_000).then(() => true)]);
    assert.ok(stillThere, 'the program left after two Ctrl-C meant for the run');
    term.type('\x03');
    assert.equal(await term.exited, 0);
    // The shell's prompt comes next: it must start on a line of its own, not after "you> ".
    const visible = term.output().replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '');
    assert.match(visible, /you> \r?\n$/);
  },
);

test(
  'a pasted block of three lines is one message, sent by Enter: not a task and two steering messages; /help lists the commands',
  { skip },
  async (t) => {
    const api = await startFakeApi([{ kind: 'reply', message: fakeMessage([text('Noted.')]) }]);
    t.after(() => api.close());
    const root = await tempProject(t);
    const env = { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: api.baseURL };
    const term = started(t, startInTerminal([], { cwd: root, env }));
    await term.waitFor(/you> /);
    assert.match(term.output(), /\x1b\[\?2004h/, 'the terminal is asked to mark pastes');
    term.type('\x1b[200~first line\rsecond line\rthird line\x1b[201~');
    await term.waitFor(/third line/);
    await sleep(300);
    assert.equal(api.requests.filter((r) => r.path === '/v1/messages').length, 0, 'a paste is not sent by itself');
    term.type('\r');
    await term.waitFor(/halt: accepted/);
    const sent = api.requests.filter((r) => r.path === '/v1/messages');
    assert.equal(sent.length, 1);
    const { messages } = sent[0]!.body as { messages: { role: string; content: { text: string }[] }[] };
    assert.deepEqual(
      messages.map((m) => [m.role, m.content.map((block) => block.text)]),
      [['user', ['first line\nsecond line\nthird line']]],
    );
    assert.doesNotMatch(term.output(), /queued/);
    term.type('/help\r');
    await term.waitFor(/\/compact +summarise the older messages now[\s\S]*\/exit +leave/);
    term.type('/exit\r');
    assert.equal(await term.exited, 0);
    assert.match(term.output(), /\x1b\[\?2004l/, 'and the terminal gets its own paste back');
  },
);

test(
  'the command line: --version, "did you mean --verify?" for a typo, --help and a missing key within 100 columns, one error prefix for all',
  { skip },
  async (t) => {
    const root = await tempProject(t, { 'script.json': '[]' });
    const noKey = { ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: '' };
    const run = async (args: string[], env: NodeJS.ProcessEnv = {}) => {
      const term = started(t, startInTerminal(args, { cwd: root, env }));
      return { code: await term.exited, lines: screenLines(term.output()) };
    };
    const [version, typo, help, missingKey, unwritable] = await Promise.all([
      run(['--version']),
      run(['--verfy', 'npm test', 'fix it']),
      run(['--help']),
      run(['fix it'], noKey),
      run(['--script', 'script.json', '--session', '/dev/null/s.jsonl', 'fix it']),
    ]);
    const { version: expected } = JSON.parse(
      await readFile(path.join(import.meta.dirname, '..', 'package.json'), 'utf8'),
    );
    assert.deepEqual(version, { code: 0, lines: [`harness ${expected}`] });
    assert.deepEqual(typo, {
      code: 2,
      lines: ['harness: unknown option --verfy; did you mean --verify? (see --help)'],
    });
    assert.equal(help.code, 0);
    assert.ok(help.lines.length > 20);
    assert.match(missingKey.lines.join('\n'), /^harness: ANTHROPIC_API_KEY is not set/);
    // A session path that cannot hold a session is said the same way, as a usage error, not as a stack trace.
    assert.equal(unwritable.code, 2);
    assert.match(
      unwritable.lines.join('\n').replace(/\n {2}/g, ' '),
      /^harness: --session: \/dev\/null\/s\.jsonl cannot hold a session: not a directory \(ENOTDIR\) \(see --help\)$/,
    );
    for (const line of [...help.lines, ...missingKey.lines, ...unwritable.lines])
      assert.ok(line.length <= 100, `${line.length}: ${line}`);
  },
);

test('a block pasted while the agent works is one steering message, not one per line', { skip }, async (t) => {
  const { term } = await doneInTerminal(t, ['--verify', 'sleep 30']);
  await term.waitFor(/you> /);
  term.type('fix the bug\r');
  await term.waitFor(/checking "done": sleep 30/);
  term.type('\x1b[200~use tabs\rand keep the tests\x1b[201~');
  await sleep(300);
  assert.doesNotMatch(term.output(), /queued/, 'nothing is sent until Enter');
  term.type('\r');
  await term.waitFor(/queued/);
  term.type('\x03');
  await term.waitFor(/not sent \(the run was stopped\): "use tabs\r?\nand keep the tests"/);
  assert.equal(term.output().match(/queued/g)?.length, 1, 'one message');
  term.kill();
});

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
      .map((line) => withoutTime(JSON.parse(line) as { at?: string; afterEvents?: number }));
    assert.deepEqual(last, [
      { type: 'interrupt', signal: 'SIGHUP', afterEvents: last[0]?.afterEvents },
      { type: 'halt', halt: { kind: 'interrupted' } },
    ]);
  },
);

test(
  'a session file the model could edit sets the gate at --resume only with a yes at the terminal: Enter refuses, naming the flags',
  { skip },
  async (t) => {
    const options = {
      ...{ verify: 'exit 3', verifyTimeoutMs: 120_000, protect: ['test.txt'], approval: 'yes', tools: [] },
      ...{ budgets: { maxTurns: 1 }, contextWindow: undefined, contextFiles: true, taskModel: undefined },
    };
    const header = { type: 'session', version: 2, model: 'scripted', startedAt: '2026-12-01T00:00:00.000Z', options };
    const root = await tempProject(t, { 'test.txt': 'the test\n', 'script.json': JSON.stringify([{ content: [] }]) });
    await writeFile(path.join(root, 's.jsonl'), `${JSON.stringify({ ...header, root })}\n`);
    const args = ['--resume', 's.jsonl', '--script', 'script.json', '--yes', 'go on'];
    const asked =
      /s\.jsonl is inside the project, where the model can edit it, and sets --verify "exit 3" --protect "test\.txt"\. Take them\? \[y\/N\]/;
    const refusing = started(t, startInTerminal(args, { cwd: root }));
    await refusing.waitFor(asked);
    refusing.type('\r');
    await refusing.waitFor(/harness: --resume: [\s\S]*give them on the\s+command line/);
    assert.equal(await refusing.exited, 2);
    const taking = started(t, startInTerminal(args, { cwd: root }));
    await taking.waitFor(asked);
    taking.type('y\r');
    await taking.waitFor(/options: from the session --verify "exit 3"/);
    await taking.waitFor(/halt: /);
    assert.notEqual(await taking.exited, 2);
  },
);
