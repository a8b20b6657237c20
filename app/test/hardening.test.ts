// The program's half of test/loop/hardening.test.ts: protected files across --resume, the command line without a
// terminal (no prompt to hang on), and --json, the printer other programs parse.

import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { type AgentEvent, runTask } from 'reference-harness';
import { call, reply, say, text } from 'reference-harness/scripted-model';
import { scriptedAgent, tempProject } from '../../test/helpers.ts';
import { jsonPrinter } from '../terminal.ts';
import { runCli } from './helpers.ts';
import { PROGRAM_TOOLS } from '../program-tools.ts';

/** The program's tools that change files, as the start-up notice names them. */
const CHANGING = PROGRAM_TOOLS.filter((tool) => !tool.readOnly)
  .map((tool) => tool.name)
  .join(', ');

describe('protected files', () => {
  test('a protected file changed between two runs is not laundered by --resume: the resume is refused, naming it', async (t) => {
    const root = await tempProject(t, { 'test.js': 'process.exit(1);\n' });
    const session = path.join(root, '.agent', 's.jsonl');
    const script = path.join(root, '.agent', 'done.json');
    await mkdir(path.dirname(script), { recursive: true });
    await writeFile(script, JSON.stringify([{ content: [{ type: 'text', text: 'Done.' }] }]));
    const args = ['--root', root, '--protect', 'test.js', '--verify', 'node test.js', '--yes', '--script', script];
    assert.equal((await runCli([...args, '--session', session, '--max-turns', '1', 'fix it'])).status, 1);
    await writeFile(path.join(root, 'test.js'), 'process.exit(0);\n'); // "fixed" by editing the test itself
    const said = t.mock.method(console, 'error', () => {});
    const resumed = await runCli([...args, '--resume', session, '--max-turns', '1', 'keep going']);
    assert.equal(resumed.status, 2, 'the resume did not run on a "done" bought by changing the test');
    assert.match(
      String(said.mock.calls[0]?.arguments[0]),
      /protected files changed since the session started: test\.js/,
    );
  });
});

describe('command line without a terminal', () => {
  const cli = runCli;
  const ADD = 'export function add(a, b) {\n  return a - b;\n}\n';
  const fixAdd = [
    call('read_file', { path: 'add.js' }),
    call('edit_file', { path: 'add.js', old_str: '  return a - b;', new_str: '  return a + b;' }),
    say('Fixed add.'),
  ];

  test('with no terminal and no --yes, an edit is denied (said up front) instead of hanging on a prompt', async (t) => {
    const root = await tempProject(t, { 'add.js': ADD });
    const script = path.join(root, 'script.json');
    await writeFile(script, JSON.stringify(fixAdd));
    const run = await cli(['--script', script, '--root', root, 'fix add']);
    assert.equal(run.status, 0, run.stdout);
    const lines = run.stdout.split('\n');
    const warned = lines.findIndex((l) =>
      l.includes(`no terminal and no --yes: every change (${CHANGING}) will be denied`),
    );
    const firstCall = lines.findIndex((l) => l.startsWith('→ '));
    assert.ok(warned >= 0 && warned < firstCall, run.stdout);
    // Nobody was asked, so nobody is said to have declined.
    assert.match(run.stdout, /✗ not run: changes need approval, and there is no terminal to ask \(--yes allows them\)/);
    assert.doesNotMatch(run.stdout, /declined/);
    assert.equal(await readFile(path.join(root, 'add.js'), 'utf8'), ADD);
  });

  test('--json prints nothing but one JSON event per line, so other programs can parse it', async (t) => {
    const root = await tempProject(t, { 'add.js': ADD });
    const script = path.join(root, 'script.json');
    await writeFile(script, JSON.stringify(fixAdd));
    const run = await cli(['--script', script, '--root', root, '--json', '--yes', 'fix add']);
    assert.equal(run.status, 0, run.stdout);
    assert.ok(run.stdout.endsWith('\n'));
    const events = run.stdout
      .slice(0, -1)
      .split('\n')
      .map((line) => JSON.parse(line) as AgentEvent);
    assert.ok(events.every((e) => typeof e === 'object' && e !== null && typeof e.type === 'string'));
    const halt = { kind: 'accepted', verifiedBy: null } as const;
    assert.deepEqual(events.at(-2), { type: 'halt', halt, turns: 3 });
    assert.equal(await readFile(path.join(root, 'add.js'), 'utf8'), ADD.replace('a - b', 'a + b'));
    // The last line adds it all up, so a script need not: the run, its tokens, its cost (null: no price) and time.
    const { tokens, durationMs, ...result } = events.at(-1) as unknown as Record<string, unknown>;
    assert.deepEqual(result, { type: 'result', exitCode: 0, halt, tasks: 1, turns: 3, costUsd: null });
    const { input, cacheWrite, cacheRead, output, total } = tokens as Record<string, number>;
    assert.ok(input! > 0 && output! > 0 && total === input! + cacheWrite! + cacheRead! + output!, `${tokens}`);
    assert.ok(typeof durationMs === 'number' && durationMs >= 0);
  });
});

describe('--json', () => {
  test('the JSON printer writes exactly one parseable event per line, the halt included', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'one\ntwo\n' });
    let written = '';
    const out = new Writable({
      write(chunk, _encoding, done) {
        written += String(chunk);
        done();
      },
    });
    const print = jsonPrinter(out);
    const events: AgentEvent[] = [];
    const script = [call('read_file', { path: 'a.txt' }), reply(text('Line one.\nLine two, with "quotes".'))];
    const { agent } = await scriptedAgent(root, script, { onEvent: (e) => (events.push(e), print(e)) });
    await runTask(agent, 'read a.txt');
    await new Promise((resolve) => out.end(resolve));
    assert.ok(written.endsWith('\n'));
    const parsed = written
      .slice(0, -1)
      .split('\n')
      .map((line) => JSON.parse(line) as AgentEvent);
    assert.deepEqual(parsed, JSON.parse(JSON.stringify(events)));
    assert.deepEqual(parsed.at(-1), { type: 'halt', halt: { kind: 'accepted', verifiedBy: null }, turns: 2 });
  });
});
