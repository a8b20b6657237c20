// The program's side of a session file, in this process (test/signals.check.ts starts the real program for what
// needs one): --resume runs with the options the session recorded, a session path that cannot hold a session is one
// line and exit 2 (never a stack trace, never a hang), a file that can no longer be written mid-run ends the run with
// one line, and SIGTERM or SIGHUP stop a run as Ctrl-C does, write its halt, and exit 143 or 129.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdirSync, openSync, readdirSync, rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { PassThrough } from 'node:stream';
import { describe, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { main } from '../main.ts';
import { parseCli, resumedOptions } from '../options.ts';
import type { RecordedOptions } from '../session-file.ts';
import { type Ending, EXIT, repl, type SessionEvent } from '../terminal.ts';
import { call, say } from 'reference-harness/scripted-model';
import { scriptedAgent, tempProject, within } from '../../test/helpers.ts';
import { runCli, slowCheck, withoutTime } from './helpers.ts';

/** A project with a test the model's fix must pass, and scripts of canned replies. */
async function project(t: TestContext, scripts: Record<string, unknown[]> = {}): Promise<string> {
  const files = Object.fromEntries(Object.entries(scripts).map(([name, replies]) => [name, JSON.stringify(replies)]));
  return tempProject(t, { 'a.txt': 'alpha\n', 'test.txt': 'the test\n', ...files });
}

/** What main says on stderr while it runs (usage errors, a session that can no longer be written), each message
 *  unwrapped (the program wraps a long one at 100 columns). */
function stderrOf(t: TestContext): () => string[] {
  const printed = t.mock.method(console, 'error', () => {});
  return () => printed.mock.calls.map((c) => String(c.arguments[0]).replace(/\n {2}/g, ' '));
}

/** What the program printed, a line wrapped at 100 columns joined again. */
const unwrapped = (printed: string) => printed.replace(/\n {2}/g, ' ');

const entries = async (file: string) =>
  (await readFile(file, 'utf8'))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => withoutTime(JSON.parse(line) as { type: string; at?: string; [field: string]: unknown }));

describe('--resume runs with the options the session recorded', () => {
  test('a session started with --verify resumes with it, instead of accepting "done" unverified, and says where each option came from', async (t) => {
    const root = await project(t, { 'first.json': [say('Done.')], 'second.json': [say('Done now.')] });
    // Where the program keeps sessions, out of the model's reach: one elsewhere in the project sets no gate unasked.
    const file = path.join(root, '.agent', 'sessions', 'session.jsonl');
    const started = ['--root', root, '--yes', '--session', file, '--script', path.join(root, 'first.json')];
    const first = await runCli([
      ...started,
      '--verify',
      'exit 3',
      '--max-turns',
      '1',
      '--context-window',
      '50000',
      'fix',
    ]);
    assert.equal(first.status, EXIT.notAccepted, first.stdout);

    const resumed = ['--root', root, '--yes', '--resume', file, '--script', path.join(root, 'second.json')];
    const { status, stdout } = await runCli([...resumed, 'keep going']);
    assert.match(
      unwrapped(stdout),
      /\noptions: from the session --verify "exit 3" --verify-timeout 120 --max-turns 1 --model scripted --context-window 50000\n/,
    );
    assert.doesNotMatch(stdout, /no --verify command|accepted \(unverified/);
    assert.match(stdout, /context window 50,000 tokens/);
    assert.match(stdout, /halt: budget \(turns: the limit of 1 turns was reached/, 'the recorded check refused "done"');
    assert.equal(status, EXIT.notAccepted);
  });

  test('an option given with --resume replaces the recorded one, the rest are the recorded ones (--protect among them)', async (t) => {
    const edit = call('edit_file', { path: 'test.txt', old_str: 'the test', new_str: 'no test' });
    const root = await project(t, { 'first.json': [say('Done.')], 'second.json': [edit, say('Done.')] });
    const file = path.join(root, '.agent', 'sessions', 'session.jsonl');
    const first = ['--root', root, '--yes', '--session', file, '--script', path.join(root, 'first.json')];
    await runCli([...first, '--verify', 'exit 3', '--protect', 'test.txt', '--max-turns', '1', 'fix']);

    const resumed = ['--root', root, '--yes', '--resume', file, '--script', path.join(root, 'second.json')];
    const { status, stdout } = await runCli([...resumed, '--verify', 'exit 0', '--max-turns', '5', 'keep going']);
    assert.match(
      unwrapped(stdout),
      /\noptions: from the session --verify-timeout 120 --protect "test.txt" --model scripted; from the command line --verify --max-turns\n/,
    );
    assert.match(stdout, /test\.txt.*protected/i, 'the recorded --protect still refuses the edit');
    assert.equal(await readFile(path.join(root, 'test.txt'), 'utf8'), 'the test\n');
    assert.match(stdout, /halt: accepted \(verified by `exit 0`\)/);
    assert.equal(status, EXIT.accepted);
  });

  test('every recorded option is taken unless given: budgets one by one, the task model, the window and the context files; a dollar budget still needs a price', () => {
    const recorded: RecordedOptions = {
      verify: 'npm test',
      verifyTimeoutMs: 30_000,
      protect: ['test/**'],
      budgets: { maxTurns: 7, maxTokens: 9000, maxCostUsd: 2, timeoutMs: 60_000 },
      approval: 'yes',
      tools: [],
      contextWindow: 100_000,
      contextFiles: false,
      taskModel: 'claude-haiku-4-5',
    };
    const given = parseCli(['--max-tokens', '500', '--resume', 's.jsonl', 'go'], {});
    const { options, said } = resumedOptions(given, { model: 'claude-sonnet-4-5', options: recorded });
    assert.deepEqual(
      [options.verify, options.verifyTimeoutMs, options.protect, options.model, options.taskModel],
      ['npm test', 30_000, ['test/**'], 'claude-sonnet-4-5', 'claude-haiku-4-5'],
    );
    assert.deepEqual(options.budgets, { maxTurns: 7, maxTokens: 500, maxCostUsd: 2, timeoutMs: 60_000 });
    assert.deepEqual([options.contextWindow, options.contextFiles], [100_000, false]);
    assert.equal(
      said,
      'options: from the session --verify "npm test" --verify-timeout 30 --protect "test/**" --max-turns 7 ' +
        '--max-cost 2 --timeout 60 --model claude-sonnet-4-5 --task-model claude-haiku-4-5 --context-window 100000 ' +
        '--no-context-files; from the command line --max-tokens',
    );
    const unpriced = parseCli(['--model', 'my-local-model', '--resume', 's.jsonl', 'go'], {});
    assert.throws(() => resumedOptions(unpriced, { model: 'claude-sonnet-4-5', options: recorded }), {
      message: /--max-cost needs a known price, and my-local-model has none: give one with --price/,
    });
  });

  test('a version 1 session, which recorded no options, says so and runs with the command line', async (t) => {
    const root = await project(t, { 'script.json': [say('Done.')] });
    const file = path.join(root, 'old.jsonl');
    const header = { type: 'session', version: 1, model: 'scripted', root, startedAt: '2026-01-01T00:00:00.000Z' };
    await writeFile(file, `${JSON.stringify(header)}\n`);
    const args = ['--root', root, '--yes', '--resume', file, '--script', path.join(root, 'script.json'), 'go on'];
    const { status, stdout } = await runCli(args);
    assert.match(
      unwrapped(stdout),
      /\noptions: the session recorded none \(format 1\), so the command line gives them all\n/,
    );
    assert.equal(status, EXIT.accepted);
  });
});

describe('a session path that cannot hold a session is one line and exit 2', () => {
  /** Runs main with `args`, in a project with a script, and returns the one message it printed. */
  async function refused(t: TestContext, root: string, args: string[]): Promise<string> {
    const said = stderrOf(t);
    const script = path.join(root, 'script.json');
    const code = await within(main(['--root', root, '--yes', '--script', script, ...args, 'task'], {}), 'main', 5_000);
    assert.equal(code, EXIT.usage, said().join('\n'));
    assert.equal(said().length, 1, said().join('\n'));
    const [line = ''] = said();
    assert.doesNotMatch(line, /\n|    at /, 'one message, no stack');
    return line;
  }

  test('--session at a directory, under a file, or at a device (/dev/full) is refused before anything runs', async (t) => {
    const root = await project(t, { 'script.json': [say('Done.')] });
    mkdirSync(path.join(root, 'folder'));
    assert.match(
      await refused(t, root, ['--session', path.join(root, 'folder')]),
      /^harness: --session: .*folder is a directory, not a session file \(see --help\)$/,
    );
    assert.match(
      await refused(t, root, ['--session', path.join(root, 'a.txt', 'x.jsonl')]),
      /^harness: --session: .*a\.txt\/x\.jsonl cannot hold a session: not a directory \(ENOTDIR\) \(see --help\)$/,
    );
    assert.match(
      await refused(t, root, ['--session', '/dev/full']),
      /^harness: --session: \/dev\/full is a device, not a session file \(see --help\)$/,
    );
    assert.equal(await readFile(path.join(root, 'a.txt'), 'utf8'), 'alpha\n');
  });

  test('a named pipe is refused, never opened: --session, --resume and --export at a FIFO do not hang', async (t) => {
    const root = await project(t, { 'script.json': [say('Done.')] });
    const fifo = path.join(root, 'pipe.jsonl');
    execFileSync('mkfifo', [fifo]);
    // Held open here, so that a harness which did open it would go on (and fail the test) instead of hanging it.
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    t.after(() => closeSync(reader));
    for (const flag of ['--session', '--resume']) {
      assert.match(
        await refused(t, root, [flag, fifo]),
        new RegExp(`^harness: ${flag}: .*pipe\\.jsonl is a named pipe, not a session file \\(see --help\\)$`),
      );
    }
    const said = stderrOf(t);
    assert.equal(await within(main(['--export', fifo], {}), '--export', 5_000), EXIT.usage);
    assert.deepEqual(said(), [
      `harness: --export: cannot read ${fifo}: not a regular file, so not a session file (see --help)`,
    ]);
  });

  test('--resume of a file that cannot be written (or a directory) is refused before the run, naming why', async (t) => {
    const root = await project(t, { 'script.json': [say('Done.')] });
    const file = path.join(root, 'locked.jsonl');
    const header = { type: 'session', version: 1, model: 'scripted', root, startedAt: '2026-01-01T00:00:00.000Z' };
    await writeFile(file, `${JSON.stringify(header)}\n`);
    const unlock = lockAgainstWriting(file);
    if (unlock === null) return t.skip('root can write any file, and chattr +i is not available here');
    try {
      assert.match(
        await refused(t, root, ['--resume', file]),
        /^harness: --resume: .*locked\.jsonl cannot be resumed: .+ \(E[A-Z]+\) \(see --help\)$/,
      );
    } finally {
      unlock();
    }
    assert.match(await refused(t, root, ['--resume', root]), /is a directory, not a session file/);
  });

  test('a session file that can no longer be written mid-run stops the run with one line, not a stack trace', async (t) => {
    const read = call('read_file', { path: 'a.txt' });
    const root = await project(t, { 'script.json': [read, { ...say('Done.'), delay_ms: 150 }] });
    const folder = path.join(root, 'sessions');
    const file = path.join(folder, 's.jsonl');
    const said = stderrOf(t);
    const running = main(
      ['--root', root, '--yes', '--session', file, '--script', path.join(root, 'script.json'), 'go'],
      {},
    );
    // Once the read is answered, the model "thinks" for 150 ms: the session's folder goes meanwhile.
    while (!(await readFile(file, 'utf8').catch(() => '')).includes('"tool_result"')) await sleep(5);
    rmSync(folder, { recursive: true });
    assert.equal(await within(running, 'main', 5_000), EXIT.notAccepted);
    assert.deepEqual(said(), [
      `harness: the session file ${file} was removed; no longer writing to it; the run was stopped, so that nothing goes unrecorded`,
    ]);
  });
});

/** Makes `file` unwritable even for root (the tests run as root here): immutable with chattr, or read-only. Returns
 *  what undoes it, or null where it cannot be done. */
function lockAgainstWriting(file: string): (() => void) | null {
  if (process.getuid?.() !== 0) {
    execFileSync('chmod', ['444', file]);
    return () => {};
  }
  try {
    execFileSync('chattr', ['+i', file], { stdio: 'ignore' });
  } catch {
    return null;
  }
  return () => execFileSync('chattr', ['-i', file]);
}

describe('SIGTERM and SIGHUP stop a run as Ctrl-C does, then end the program', () => {
  for (const [signal, code] of [
    ['SIGTERM', EXIT.SIGTERM],
    ['SIGHUP', EXIT.SIGHUP],
  ] as const) {
    test(`${signal} during the verify command: its processes are killed, the halt is written, exit ${code}`, async (t) => {
      const root = await project(t, { 'script.json': [say('Done.')] });
      const file = path.join(root, 'session.jsonl');
      const check = slowCheck(); // it must not outlive the run
      const args = ['--root', root, '--yes', '--session', file, '--script', path.join(root, 'script.json')];
      const running = runCli([...args, '--verify', check.command, 'fix']);
      while (check.running().length === 0) await sleep(5);
      process.emit(signal, signal);
      const { status, stdout } = await within(running, 'the run after the signal', 5_000);
      assert.equal(status, code, stdout);
      assert.match(stdout, /halt: interrupted/);
      // Killed with the verify command's process group; a process killed a moment ago may still be tearing down.
      for (const start = Date.now(); check.running().length > 0 && Date.now() - start < 1_000;) await sleep(10);
      assert.deepEqual(check.running(), [], 'the verify command was left running');
      const written = await entries(file);
      assert.deepEqual(written.at(-1), { type: 'halt', halt: { kind: 'interrupted' } });
      assert.deepEqual(written.at(-2), { type: 'interrupt', signal, afterEvents: written.at(-2)?.afterEvents });
      assert.equal(process.listenerCount(signal), 0, 'the program stopped listening once it was done');
    });
  }

  test('in the REPL, the ending stops the run under way, drops the lines queued behind it, and closes with its code', async (t) => {
    const root = await project(t);
    const check = slowCheck();
    const { agent, events } = await scriptedAgent(root, [say('Done.'), say('Never asked.')], {
      verify: check.command,
    });
    const input = new PassThrough();
    const rl = createInterface({ input, terminal: false });
    const told: SessionEvent[] = [];
    const ending = new AbortController();
    const code = repl(agent, rl, {
      interactive: false,
      switchSession: async () => {},
      tell: (e) => told.push(e),
      ending: ending.signal,
    });
    input.write('fix it\nand then this\n');
    while (check.running().length === 0) await sleep(5);
    ending.abort({ code: EXIT.SIGTERM, signal: 'SIGTERM' } satisfies Ending);
    assert.equal(await within(code, 'the REPL after the ending', 5_000), EXIT.SIGTERM);
    assert.deepEqual(
      told.filter((e) => e.type === 'task' || e.type === 'interrupt').map((e) => JSON.stringify(e)),
      ['{"type":"task","text":"fix it"}', '{"type":"interrupt","signal":"SIGTERM"}'],
      'the queued line never ran',
    );
    assert.deepEqual(
      events.flatMap((e) => (e.type === 'halt' ? [e.halt] : [])),
      [{ kind: 'interrupted' }],
    );
    assert.deepEqual(check.running(), [], 'the verify command was left running');
  });

  test('SIGTERM during a run of edits: every edit answered as applied is in the file, and no temporary file is left', async (t) => {
    const lines = Array.from({ length: 40 }, (_, i) => `line ${i}`);
    const edits = lines.map((line) =>
      call('edit_file', { path: 'f.txt', old_str: `${line}\n`, new_str: `${line} done\n` }),
    );
    const root = await project(t, { 'script.json': [call('read_file', { path: 'f.txt' }), ...edits, say('Done.')] });
    await writeFile(path.join(root, 'f.txt'), lines.map((line) => `${line}\n`).join(''));
    const file = path.join(root, 'session.jsonl');
    const args = ['--root', root, '--yes', '--session', file, '--script', path.join(root, 'script.json')];
    const running = runCli([...args, '--max-turns', '100', 'edit every line']);
    while ((await readFile(file, 'utf8').catch(() => '')).split('"edited f.txt').length < 4) await sleep(1);
    process.emit('SIGTERM', 'SIGTERM');
    const { status } = await within(running, 'the run after SIGTERM', 5_000);
    assert.equal(status, EXIT.SIGTERM);
    const applied = (await readFile(file, 'utf8')).split('"edited f.txt').length - 1;
    const done = (await readFile(path.join(root, 'f.txt'), 'utf8')).split(' done\n').length - 1;
    assert.ok(applied >= 3 && applied < lines.length, `${applied} edits answered as applied`);
    assert.equal(done, applied, 'the file holds exactly the edits answered as applied');
    assert.deepEqual(
      readdirSync(root).filter((name) => name.endsWith('.tmp')),
      [],
    );
  });
});
