// The runners the gate runs the verify command through: the reading path's runCommand (tools.ts) and the
// default runner's spawnCommand (hardening/command-output.ts), each named after the failure it prevents. What
// both must do is tried on both; what only the production runner does is tried on it alone.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { spawnCommand } from '../../hardening/command-output.ts';
import { runCommand, type Runner } from '../../tools.ts';
import { tempProject, within } from '../helpers.ts';

const never = new AbortController().signal;
const spawned: Runner = (command, options) => spawnCommand(['/bin/sh', '-c', command], process.env, options);
const RUNNERS: [string, Runner][] = [
  ['runCommand', runCommand],
  ['spawnCommand', spawned],
];

for (const [name, run] of RUNNERS) {
  describe(`the verify command runner: ${name}`, () => {
    test("a chatty command's output keeps its head and tail, so memory and the gate message stay small", async (t) => {
      const root = await tempProject(t);
      const chatty = `node -e "for (let i = 0; i < 100000; i++) console.log('line ' + i)"`;
      const ran = await run(chatty, { cwd: root, timeoutMs: 30_000, signal: never });
      assert.equal(ran.exitCode, 0);
      assert.match(ran.output, /^line 0\n/);
      assert.match(ran.output, /line 99999\n$/);
      assert.match(ran.output, /output left out/);
      assert.ok(ran.output.length < 20_000);
    });

    test('a short output comes back whole, with nothing said left out, and a silent one says "(no output)"', async (t) => {
      const root = await tempProject(t);
      const short = await run('echo one; echo two >&2', { cwd: root, timeoutMs: 10_000, signal: never });
      assert.deepEqual([short.exitCode, short.output], [0, 'one\ntwo\n']);
      const silent = await run('true', { cwd: root, timeoutMs: 10_000, signal: never });
      assert.deepEqual([silent.exitCode, silent.output], [0, '(no output)']);
    });

    test('a command that reads its input gets end-of-file at once, not a pipe it would wait on until its time limit', async (t) => {
      const root = await tempProject(t);
      // Given a pipe, cat would wait for input until the time limit.
      const ran = await run('cat; echo done', { cwd: root, timeoutMs: 5_000, signal: never });
      assert.deepEqual([ran.exitCode, ran.timedOut, ran.output], [0, false, 'done\n']);
    });

    test('a command started after the run was stopped is killed at once, not run to its end', async (t) => {
      const root = await tempProject(t);
      const stopped = AbortSignal.abort();
      const ran = await run('sleep 5; echo finished', { cwd: root, timeoutMs: 60_000, signal: stopped });
      assert.deepEqual([ran.exitCode, ran.timedOut, ran.output], [null, false, '(no output)']);
    });

    test('a command running when the run is stopped is killed then, not left to run to its end', async (t) => {
      const root = await tempProject(t);
      const stop = new AbortController();
      const onOutput = () => stop.abort();
      const ran = await run('echo started; sleep 10; echo finished', {
        cwd: root,
        timeoutMs: 60_000,
        signal: stop.signal,
        onOutput,
      });
      assert.deepEqual([ran.exitCode, ran.timedOut, ran.output], [null, false, 'started\n']);
    });

    test('a verify command that hangs is killed at its timeout instead of hanging the run', async (t) => {
      const root = await tempProject(t);
      const ran = await run('sleep 30', { cwd: root, timeoutMs: 50, signal: never });
      assert.equal(ran.timedOut, true);
      assert.equal(ran.exitCode, null);
    });

    test('a command that cannot start (its folder is gone) is a failure that says why, not a thrown error', async (t) => {
      const root = await tempProject(t);
      const ran = await run('true', { cwd: path.join(root, 'gone'), timeoutMs: 5_000, signal: never });
      assert.equal(ran.exitCode, null);
      assert.match(ran.output, /ENOENT/);
    });
  });
}

describe('the production runner alone (hardening/command-output.ts)', () => {
  test('output past the head and tail says exactly how much was left out, even when a short piece came first', async (t) => {
    const root = await tempProject(t);
    // One character, then (once the runner has seen it) 20,000 more: the first piece fills no tail.
    const command = 'printf x; while [ ! -e go ]; do sleep 0.01; done; head -c 20000 /dev/zero | tr "\\0" y';
    const onOutput = () => writeFileSync(path.join(root, 'go'), '');
    const ran = await spawned(command, { cwd: root, timeoutMs: 30_000, signal: never, onOutput });
    const kept = 16 * 1024;
    const cut = `\n[... ${20_001 - kept} characters of output left out ...]\n`;
    assert.equal(ran.output, `x${'y'.repeat(kept / 2 - 1)}${cut}${'y'.repeat(kept / 2)}`);
  });

  test('a child that left the process group and holds the output pipes does not keep the run waiting past the kill', async (t) => {
    if (process.platform !== 'linux') return t.skip('setsid is util-linux');
    const root = await tempProject(t);
    // setsid puts the child in a session of its own, out of reach of the group kill; it keeps stdout open.
    const escaped = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 60' & sleep 30";
    const ran = await within(spawned(escaped, { cwd: root, timeoutMs: 200, signal: never }), 'the run', 10_000);
    process.kill(Number(await readFile(path.join(root, 'escaped.pid'), 'utf8')), 'SIGKILL');
    assert.equal(ran.timedOut, true);
  });
});
