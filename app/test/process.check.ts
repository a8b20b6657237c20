// Part of npm run test:terminal: the real program as a process, for what only a process shows: a signal from outside
// (SIGTERM from a service manager or `kill`, SIGHUP from a closed terminal) and a session file that stops taking
// writes, a refused root as the launcher says it, or a crash (SIGKILL) mid-call and the resume after it. Each test
// starts the program (about a second), so they are kept out of `npm test`;
// app/test/program-session.test.ts pins the same rules in-process.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadSession, RUN_WITHOUT_HALT } from '../session-file.ts';
import { EXIT } from '../terminal.ts';
import { call, say } from 'reference-harness/scripted-model';
import { alive, tempProject, violationsOf, within } from '../../test/helpers.ts';
import { theProgramAbove, parentOf, slowCheck, withoutTime } from './helpers.ts';

const program = path.join(import.meta.dirname, '..', 'main.ts');
/** tsx by its full address, so the program can start in any folder. */
const tsx = import.meta.resolve('tsx');

interface Run {
  pid: number;
  exited: Promise<{ code: number | null; output: string }>;
}

/** Starts `node --import tsx app/main.ts ...args` in `root`, through `sh -c` when a shell prefix is given. */
function start(t: TestContext, root: string, args: string[], shellPrefix?: string): Run {
  const command = [process.execPath, '--import', tsx, program, ...args];
  const quoted = command.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const child =
    shellPrefix === undefined
      ? spawn(command[0]!, command.slice(1), { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: environment() })
      : spawn('bash', ['-c', `${shellPrefix}; exec ${quoted}`], {
          cwd: root,
          stdio: ['ignore', 'pipe', 'pipe'],
          env: environment(),
        });
  t.after(() => child.kill('SIGKILL'));
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const exited = new Promise<{ code: number | null; output: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, output })),
  );
  return { pid: child.pid!, exited };
}

const environment = () => ({ PATH: process.env.PATH ?? '', NO_COLOR: '1' });

/** Waits until `check` holds, or fails after `ms`. */
async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  for (const start = Date.now(); !check(); await sleep(10)) {
    if (Date.now() - start > ms) throw new Error(`${what}: still waiting after ${ms / 1000} s`);
  }
}

const lastEntries = (file: string, n: number) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .slice(-n)
    .map((line) => withoutTime(JSON.parse(line) as { type: string; at?: string; [field: string]: unknown }));

for (const [signal, code] of [
  ['SIGTERM', EXIT.SIGTERM],
  ['SIGHUP', EXIT.SIGHUP],
] as const) {
  test(`${signal} to the program during the verify command: no process of the check outlives it, the halt is in the session file, exit ${code}`, async (t) => {
    const root = await tempProject(t, { 'script.json': JSON.stringify([say('Done.')]) });
    const file = path.join(root, 'session.jsonl');
    const check = slowCheck();
    const run = start(t, root, [
      '--yes',
      '--script',
      'script.json',
      '--session',
      file,
      '--verify',
      check.command,
      'fix',
    ]);
    await until(() => check.running().length > 0, 'the verify command');
    process.kill(run.pid, signal);
    const { code: exitCode, output } = await within(run.exited, 'the program after the signal', 10_000);
    assert.equal(exitCode, code, output);
    await until(() => check.running().length === 0, 'the verify command to be gone', 1_000);
    assert.deepEqual(lastEntries(file, 1), [{ type: 'halt', halt: { kind: 'interrupted' } }]);
  });
}

test('SIGHUP to the tsx launcher alone (`tsx app/main.ts` runs it as a child, and passes SIGINT and SIGTERM on but not SIGHUP): the program stops its run all the same', async (t) => {
  const root = await tempProject(t, { 'script.json': JSON.stringify([say('Done.')]) });
  const file = path.join(root, 'session.jsonl');
  const check = slowCheck();
  const args = [fileURLToPath(import.meta.resolve('tsx/cli')), program, '--yes', '--script', 'script.json'];
  const launcher = spawn(process.execPath, [...args, '--session', file, '--verify', check.command, 'fix'], {
    cwd: root,
    stdio: 'ignore',
    env: environment(),
  });
  t.after(() => launcher.kill('SIGKILL'));
  await until(() => check.running().length > 0, 'the verify command');
  const child = theProgramAbove(check.running()[0]!);
  assert.equal(parentOf(child), launcher.pid, "the program runs as the launcher's child");
  t.after(() => alive(child) && process.kill(child, 'SIGKILL'));
  launcher.kill('SIGHUP');
  await until(() => !alive(child) && check.running().length === 0, 'the program and its check to end', 5_000);
  assert.deepEqual(lastEntries(file, 1), [{ type: 'halt', halt: { kind: 'interrupted' } }]);
});

test('SIGTERM during a run of edits, five times over: each edit answered as applied is in the file, none answered otherwise is, and no temporary file is left', async (t) => {
  const lines = Array.from({ length: 400 }, (_, i) => `line ${i}`);
  const script = [
    call('read_file', { path: 'f.txt' }),
    ...lines.map((line) => call('edit_file', { path: 'f.txt', old_str: `${line}\n`, new_str: `${line} done\n` })),
    say('Done.'),
  ];
  await Promise.all(
    [1, 2, 3, 4, 5].map(async (trial) => {
      const root = await tempProject(t, {
        'f.txt': lines.map((line) => `${line}\n`).join(''),
        'script.json': JSON.stringify(script),
      });
      const file = path.join(root, 'session.jsonl');
      const args = ['--yes', '--max-turns', '1000', '--script', 'script.json', '--session', file];
      const run = start(t, root, [...args, 'edit every line']);
      // A different moment each trial: after 5, 10, ... edits were answered.
      const edited = () => (existsSync(file) ? readFileSync(file, 'utf8').split('"edited f.txt').length - 1 : 0);
      await until(() => edited() >= trial * 5, `trial ${trial}: the edits`);
      process.kill(run.pid, 'SIGTERM');
      const { code, output } = await within(run.exited, `trial ${trial}: the program after SIGTERM`, 10_000);
      assert.equal(code, EXIT.SIGTERM, output);
      const applied = edited();
      const inFile = (await readFile(path.join(root, 'f.txt'), 'utf8')).split(' done\n').length - 1;
      assert.equal(inFile, applied, `trial ${trial}: the file holds exactly the edits answered as applied`);
      assert.ok(applied < lines.length, `trial ${trial}: the signal came before the last edit`);
      assert.deepEqual(
        readdirSync(root).filter((name) => name.includes('.tmp')),
        [],
        `trial ${trial}`,
      );
      assert.deepEqual(lastEntries(file, 1), [{ type: 'halt', halt: { kind: 'interrupted' } }]);
    }),
  );
});

test('a session file that stops taking writes mid-run (the file size limit reached: EFBIG) ends the run with one line, exit 1', async (t) => {
  const big = `${'word '.repeat(15)}\n`.repeat(600); // ~48 KB: one read fits under the limit, two do not
  const script = [call('read_file', { path: 'big.txt' }), call('read_file', { path: 'big.txt' }), say('Done.')];
  const root = await tempProject(t, { 'big.txt': big, 'script.json': JSON.stringify(script) });
  await writeFile(path.join(root, 'session.jsonl'), '');
  const file = path.join(root, 'session.jsonl');
  // bash's ulimit -f counts KiB: the session file may not pass 80 KiB, as if the disk were full there.
  const run = start(t, root, ['--yes', '--script', 'script.json', '--session', file, 'read it twice'], 'ulimit -f 80');
  const { code, output } = await within(run.exited, 'the program', 10_000);
  assert.equal(code, EXIT.notAccepted, output);
  const unwrapped = output.replace(/\n {2}/g, ' '); // the program wraps a long message at 100 columns
  const problems = unwrapped.split('\n').filter((line) => line.startsWith('harness: '));
  assert.deepEqual(problems, [
    `harness: the session file ${file} can no longer be written: file too large (EFBIG); the run was stopped, so that nothing goes unrecorded`,
  ]);
  assert.doesNotMatch(output, /\n\s+at /, 'no stack trace');
});

// The program's half of test/sandbox/routes-sandbox.check.ts, as the launcher prints it (app/test/refused-root.test.ts pins the
// same error in-process).
test('the program says a refused root in one line and exits non-zero', async (t) => {
  const script = path.join(await tempProject(t), 'script.json');
  await writeFile(script, JSON.stringify([say('Done.')]));
  const run = spawnSync(process.execPath, ['--import', 'tsx', program, '--root', '/tmp', '--script', script, 'go'], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  assert.notEqual(run.status, 0);
  assert.match(run.stderr, /^harness: the root \/tmp is refused: it holds \/tmp, the temporary folder the sandbox /);
  const lines = run.stderr.trim().split('\n');
  assert.equal(lines.filter((line) => !line.startsWith('  ')).length, 1, `one message, wrapped at most: ${run.stderr}`);
});

describe('crash and resume from the command line', () => {
  test(
    'a CLI killed with SIGKILL in the middle of a tool call resumes with --resume: no message lost, a valid transcript, the missing halt said, exit 0',
    { timeout: 30_000 },
    async (t) => {
      const root = await tempProject(t, { 'a.txt': 'alpha\n' });
      // read_file far into a 1 TiB sparse file scans minutes of zeros: a tool call still running when the kill comes.
      // (A named pipe used to serve, but read_file now refuses anything that is not a regular file.)
      writeFileSync(path.join(root, 'huge.log'), 'x\n'.repeat(5000));
      truncateSync(path.join(root, 'huge.log'), 2 ** 40);
      const firstScript = path.join(root, '.agent', 'first.json');
      const secondScript = path.join(root, '.agent', 'second.json');
      const file = path.join(root, '.agent', 'crash.jsonl');
      await mkdir(path.join(root, '.agent'));
      writeFileSync(
        firstScript,
        JSON.stringify([
          call('read_file', { path: 'a.txt' }),
          call('read_file', { path: 'huge.log', offset: 1e9 }),
          say('done'),
        ]),
      );
      writeFileSync(secondScript, JSON.stringify([say('huge.log never answered; a.txt says alpha.')]));
      const cli = (args: string[]) =>
        spawn(process.execPath, ['--import', 'tsx', program, '--root', root, '--yes', ...args], {
          env: { PATH: process.env.PATH ?? '', NO_COLOR: '1' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
      const exited = (child: ReturnType<typeof spawn>) =>
        new Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }>((resolve) => {
          let output = '';
          child.stdout?.on('data', (chunk: Buffer) => (output += chunk));
          child.stderr?.on('data', (chunk: Buffer) => (output += chunk));
          child.on('close', (code, signal) => resolve({ code, signal, output }));
        });

      const first = cli(['--script', firstScript, '--session', file, 'read a.txt, then huge.log']);
      t.after(() => first.kill('SIGKILL'));
      const firstExit = exited(first);
      // Busy for minutes once the second call is in the file: it is the huge.log read.
      const inSecondCall = async () => {
        for (;;) {
          const lines = (await readFile(file, 'utf8').catch(() => '')).split('\n');
          const results = lines.filter((l) => l.includes('"tool_result"')).length;
          if (results === 1 && lines.some((l) => l.includes('"path":"huge.log"'))) return;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      await within(
        Promise.race([
          inSecondCall(),
          firstExit.then((r) => Promise.reject(new Error(`the CLI ended early: ${r.output}`))),
        ]),
        'waiting for the huge.log read',
        15_000,
      );
      first.kill('SIGKILL');
      assert.equal((await firstExit).signal, 'SIGKILL');
      const beforeResume = await readFile(file, 'utf8');
      assert.ok(beforeResume.endsWith('\n'));

      const second = cli(['--script', secondScript, '--resume', file, 'keep going']);
      t.after(() => second.kill('SIGKILL'));
      const secondExit = await exited(second);
      assert.equal(secondExit.code, 0, secondExit.output);
      const said = secondExit.output.replace(/\s+/g, ' ');
      assert.ok(said.includes(RUN_WITHOUT_HALT), `the resume says the killed run had no halt: ${said}`);

      const afterResume = await readFile(file, 'utf8');
      assert.ok(
        afterResume.startsWith(beforeResume),
        'every line written before the kill is still at the start of the file',
      );
      const loaded = await loadSession(file);
      const messagesBefore = beforeResume
        .split('\n')
        .filter((l) => l.includes('"type":"message"'))
        .map((l) => JSON.parse(l).message);
      assert.equal(messagesBefore.length, 4, 'task, read a.txt, its result, read huge.log');
      assert.deepEqual(loaded.messages.slice(0, messagesBefore.length), messagesBefore);
      assert.deepEqual(loaded.warnings, [], 'the repair was written to the file by the resume');
      const repair = { tool_use_id: 'toolu_s2_0', content: 'not run: the session ended before this call finished' };
      assert.deepEqual(loaded.messages[4]!.content, [{ type: 'tool_result', ...repair, is_error: true }]);
      assert.deepEqual(violationsOf({ messages: loaded.messages }), []);
      assert.equal(loaded.messages.at(-1)!.role, 'assistant');
    },
  );
});
