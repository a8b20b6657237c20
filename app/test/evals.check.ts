// The eval runner end to end, as a person meets it: real tasks through the real CLI, and a real Ctrl-C to the
// runner's process group. Child processes take seconds, so these run in `npm run test:terminal`, not `npm test`.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { type EvalResult, type EvalSummary, RUN_PREFIX } from '../evals/run.ts';
import { FAILING_TEST, PASSING_TEST, runMain, sumTask, taskFolder } from './eval-fixtures.ts';

describe('a run end to end', { concurrency: 2 }, () => {
  /** The run folders in `parent` that this process (or `pid`) owns. */
  const runFolders = async (parent: string, pid = process.pid) => {
    const names = (await readdir(parent)).filter((name) => name.startsWith(RUN_PREFIX));
    const owners = await Promise.all(
      names.map((name) => readFile(path.join(parent, name, 'owner.pid'), 'utf8').catch(() => '')),
    );
    return names.filter((_, i) => owners[i] === String(pid));
  };

  test('each task says so as it finishes, with a count, and while it runs; --json ends with a summary: commit, date, model, resolved rate, tokens, cost, wall time; no folder is left', async () => {
    const { status, stdout, stderr } = await runMain(['--json', 'off-by-one'], process.env, { heartbeatMs: 100 });
    assert.equal(status, 0, stderr);
    assert.match(stderr, /^\[0\/1\] still running: off-by-one \(\d+\.\d s\)$/m);
    assert.match(stderr, /^\[1\/1\] off-by-one resolved \d+\.\d s$/m);
    const lines = stdout.trim().split('\n');
    assert.equal(lines.length, 2);
    const outcome = JSON.parse(lines[0]!) as EvalResult;
    assert.deepEqual(
      [outcome.task, outcome.run, outcome.model, outcome.halt, outcome.resolved, outcome.why, outcome.turns],
      ['off-by-one', 1, 'scripted', 'accepted', true, null, 4],
    );
    assert.ok(outcome.inputTokens > 0 && outcome.outputTokens > 0 && outcome.wallMs > 0 && outcome.costUsd === null);
    const summary = JSON.parse(lines[1]!) as EvalSummary;
    const head = spawnSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
    assert.deepEqual(
      [summary.type, summary.commit, summary.model, summary.tasks, summary.runs, summary.finished, summary.resolved],
      ['summary', head || null, 'scripted', 1, 1, 1, 1],
    );
    assert.deepEqual(summary.resolvedRate, { mean: 1, min: 1, max: 1 });
    assert.deepEqual(
      [summary.inputTokens, summary.cachedTokens, summary.outputTokens, summary.costUsd, summary.interrupted],
      [outcome.inputTokens, outcome.cachedTokens, outcome.outputTokens, null, false],
    );
    assert.ok(Math.abs(Date.parse(summary.date) - Date.now()) < 60_000 && summary.wallMs >= outcome.wallMs);
    assert.deepEqual(await runFolders(os.tmpdir()), []);
  });

  test('Ctrl-C shows the tasks finished so far, stops the rest, removes the temporary folder and exits 130', async (t) => {
    const slow = JSON.stringify([{ content: [{ type: 'text', text: 'Thinking.' }], delay_ms: 60_000 }]);
    const { tasksDir } = await taskFolder(t, {
      green: sumTask(PASSING_TEST), // malformed: it finishes at once, without an agent
      slow: { ...sumTask(FAILING_TEST), 'trajectory.json': slow },
    });
    // As `npm run eval` runs it, in a process group of its own: a terminal's Ctrl-C goes to the whole group.
    const child = spawn(process.execPath, ['--import', 'tsx', 'evals/run.ts', '--tasks', tasksDir, '--jobs', '2'], {
      cwd: path.join(import.meta.dirname, '..'),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let [stdout, stderr] = ['', ''];
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    const greenDone = new Promise<void>((resolve) =>
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        if (stderr.includes('[1/2] green malformed')) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    await Promise.race([greenDone, exited]);
    process.kill(-child.pid!, 'SIGINT');
    assert.equal(await exited, 130, `${stdout}\n${stderr}`);
    assert.match(stdout, /\ngreen +malformed +no +0 /);
    assert.match(stdout, /\ntotal +0\/1 0% /);
    assert.doesNotMatch(stdout, /\nslow /);
    assert.match(stderr, /\neval: interrupted \(Ctrl-C\): 1 of 2 finished; stopped: slow\n$/);
    assert.deepEqual(await runFolders(os.tmpdir(), child.pid), [], 'the temporary folder is removed');
  });
});
