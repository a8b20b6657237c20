// The eval runner (app/evals/run.ts), in pieces and in-process: one test per guard. Runs end to end through the real
// CLI are in evals.check.ts (npm run test:terminal); that every trajectory resolves its task is `npm run eval` itself.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { parseCli } from '../options.ts';
import {
  agentArgs,
  compareRuns,
  createRunFolder,
  type EvalResult,
  evaluate,
  loadTasks,
  removeStaleRunFolders,
  reportLines,
  resolvedRates,
  RUN_PREFIX,
  shardOf,
  tableHeader,
  tableRow,
  type Task,
  TASKS_DIR,
  totalsRow,
  trajectoryMismatch,
  unresolvedReason,
} from '../evals/run.ts';
import { FAILING_TEST, PASSING_TEST, runMain, sumTask, TASK_JSON, taskFolder } from './eval-fixtures.ts';
import { tempProject } from '../../test/helpers.ts';

function ready(task: Task | undefined): Extract<Task, { problem: null }> {
  assert.ok(task !== undefined && task.problem === null, `task is malformed: ${task?.problem}`);
  return task;
}

const result = (task: string, fields: Partial<EvalResult> = {}): EvalResult => ({
  task,
  run: 1,
  model: 'scripted',
  halt: 'accepted',
  resolved: true,
  why: null,
  turns: 4,
  inputTokens: 1_000,
  cachedTokens: 0,
  outputTokens: 100,
  costUsd: null,
  wallMs: 400,
  ...fields,
});

describe('the eval tasks', () => {
  test('every task in evals/tasks loads: a valid task.json, a project and a trajectory', async () => {
    const tasks = await loadTasks(TASKS_DIR, true);
    assert.ok(tasks.length >= 10, `only ${tasks.length} tasks`);
    assert.deepEqual(
      tasks.filter((task) => task.problem !== null).map((task) => `${task.name}: ${task.problem}`),
      [],
    );
  });

  test('shards 1/N..N/N together cover every task exactly once', async () => {
    const tasks = await loadTasks(TASKS_DIR, true);
    for (const count of [1, 2, 3, 5]) {
      const shards = Array.from({ length: count }, (_, i) => shardOf(tasks, i + 1, count).map((task) => task.name));
      const all = shards.flat();
      assert.equal(new Set(all).size, all.length, `${count} shards overlap`);
      assert.deepEqual(all.sort(), tasks.map((task) => task.name).sort());
    }
  });

  test("the runner's arguments reach the agent CLI as the task's settings, a prompt with a leading -", async () => {
    const task = ready((await loadTasks(TASKS_DIR, true))[0]);
    const odd = {
      ...task,
      spec: { ...task.spec, prompt: '--yes is not a flag here', budgets: { maxTurns: 7, timeoutS: 9 } },
    };
    const options = parseCli(agentArgs(odd, '/tmp/copy', '/tmp/s.jsonl', undefined), {});
    assert.equal(options.task, '--yes is not a flag here');
    assert.equal(options.verify, task.spec.verify);
    assert.deepEqual(options.protect, task.spec.protect);
    assert.deepEqual([options.budgets.maxTurns, options.budgets.timeoutMs], [7, 9_000]);
    assert.equal(options.script, path.join(task.dir, 'trajectory.json'));
    const withModel = parseCli(agentArgs(odd, '/tmp/copy', '/tmp/s.jsonl', 'claude-x'), {});
    assert.deepEqual([withModel.model, withModel.script], ['claude-x', undefined]);
  });
});

describe('malformed tasks', () => {
  test('a task whose test already passes is malformed, not resolved (in each --repeat run, each in its own folder)', async (t) => {
    const { root, tasksDir } = await taskFolder(t, { green: sumTask(PASSING_TEST) });
    const [task] = await loadTasks(tasksDir, true);
    const runFolder = await createRunFolder(root);
    const outcome = (await evaluate(task!, runFolder, { model: undefined, env: {}, run: 2 }))!;
    assert.deepEqual([outcome.run, outcome.halt, outcome.resolved], [2, 'malformed', false]);
    assert.equal(outcome.why, 'malformed: the test passes before the run');
    assert.deepEqual((await readdir(runFolder)).sort(), ['green.run-2', 'owner.pid']);
  });

  test('a task with no test is malformed, not resolved', async (t) => {
    const { root, tasksDir } = await taskFolder(t, { untested: sumTask(FAILING_TEST) });
    await writeFile(
      path.join(tasksDir, 'untested', 'task.json'),
      JSON.stringify({ ...TASK_JSON, protect: ['spec/**'] }),
    );
    const [task] = await loadTasks(tasksDir, true);
    const outcome = (await evaluate(task!, await createRunFolder(root), { model: undefined, env: {} }))!;
    assert.deepEqual([outcome.halt, outcome.resolved], ['malformed', false]);
    assert.match(outcome.why ?? '', /^malformed: no test: no file in project\/ matches spec\/\*\*/);
  });

  test('a task.json that breaks the schema, or a missing trajectory, makes the task malformed', async (t) => {
    const { tasksDir } = await taskFolder(t, {
      'extra-key': { ...sumTask(FAILING_TEST), 'task.json': JSON.stringify({ ...TASK_JSON, timeout: 5 }) },
      'no-budgets': { ...sumTask(FAILING_TEST), 'task.json': JSON.stringify({ ...TASK_JSON, budgets: undefined }) },
      'bad-trajectory': { ...sumTask(FAILING_TEST), 'trajectory.json': '[{ "content": "not blocks" }]' },
      'no-trajectory': sumTask(FAILING_TEST),
    });
    await rm(path.join(tasksDir, 'no-trajectory', 'trajectory.json'));
    const problems = Object.fromEntries((await loadTasks(tasksDir, true)).map((task) => [task.name, task.problem]));
    assert.match(problems['extra-key'] ?? '', /^task\.json: .*timeout/);
    assert.match(problems['no-budgets'] ?? '', /^task\.json: .*budgets/);
    assert.match(problems['bad-trajectory'] ?? '', /trajectory\.json is not a script of replies/);
    assert.equal(problems['no-trajectory'], 'no trajectory.json (a run without --model needs one)');
    const withModel = await loadTasks(tasksDir, false);
    assert.equal(withModel.find((task) => task.name === 'no-trajectory')?.problem, null);
  });

  test('a malformed task shows in the table as malformed, says why, and fails the run', async (t) => {
    const { tasksDir } = await taskFolder(t, { green: sumTask(PASSING_TEST) });
    const { status, stdout } = await runMain(['--tasks', tasksDir]);
    assert.equal(status, 1);
    assert.match(stdout, /^eval: 1 task\(s\), scripted \(no --model/);
    assert.match(stdout, /\ngreen +malformed +no +0 /);
    assert.match(stdout, /\ngreen: malformed: the test passes before the run\n/);
    assert.match(stdout, /\neval: 0 passed, 1 failed\n$/);
  });
});

describe('the resolved check', () => {
  test('a protected file changed in the copy means not resolved, even though the test now passes', async (t) => {
    const { tasksDir } = await taskFolder(t, { sum: sumTask(FAILING_TEST) });
    const task = ready((await loadTasks(tasksDir, true))[0]);
    const copy = await tempProject(t, {
      'package.json': '{ "type": "commonjs" }',
      'add.js': 'exports.add = () => 0;\n',
    });
    await writeFile(path.join(copy, 'test.js'), PASSING_TEST);
    assert.equal(await unresolvedReason(task, copy), 'protected files differ from the originals: test.js (changed)');
    await writeFile(path.join(copy, 'test.js'), FAILING_TEST);
    assert.equal(await unresolvedReason(task, copy), '`node test.js` exited with code 1 after the run');
    await writeFile(path.join(copy, 'add.js'), 'exports.add = (a, b) => a + b;\n');
    assert.equal(await unresolvedReason(task, copy), null);
  });

  test('a trajectory that ends before its last reply fails, though the task is resolved', () => {
    const task = { name: 't', dir: '/t', problem: null, spec: { ...TASK_JSON, protect: ['test.js'] }, replies: 6 };
    assert.match(trajectoryMismatch(task, 'accepted', 4) ?? '', /has 6 replies, and the run ended accepted after 4/);
    assert.match(trajectoryMismatch(task, 'error', 6) ?? '', /ended error after 6/);
    assert.equal(trajectoryMismatch(task, 'accepted', 6), null);
    assert.equal(trajectoryMismatch({ ...task, replies: null }, 'budget:turns', 2), null);
  });
});

describe('temporary folders', () => {
  test('run folders of dead runs are removed; live, unowned and unrelated folders stay', async (t) => {
    const parent = await tempProject(t);
    const dead = spawnSync('true').pid; // a process that has exited: its pid is no one's
    const stale = await createRunFolder(parent);
    await writeFile(path.join(stale, 'owner.pid'), String(dead));
    const live = await createRunFolder(parent);
    await mkdir(path.join(parent, `${RUN_PREFIX}kept`));
    await mkdir(path.join(parent, 'other-dead'));
    await writeFile(path.join(parent, 'other-dead', 'owner.pid'), String(dead));
    assert.deepEqual(await removeStaleRunFolders(parent), [stale]);
    assert.deepEqual((await readdir(parent)).sort(), [path.basename(live), `${RUN_PREFIX}kept`, 'other-dead'].sort());
    assert.equal(await readFile(path.join(live, 'owner.pid'), 'utf8'), String(process.pid));
  });
});

describe('output', () => {
  test('the table fits in 100 columns, long names and big numbers included', () => {
    const big = result('a-task-name-longer-than-its-column', {
      halt: 'budget:tokens',
      resolved: false,
      turns: 120,
      inputTokens: 98_765_432,
      outputTokens: 1_234_567,
      cachedTokens: 90_000_000,
      costUsd: 1234.5678,
      wallMs: 3_600_000,
    });
    assert.match(totalsRow([big, result('other')]), /^total +1\/2 50% +124 /);
    for (const line of [tableHeader(), tableRow(big), totalsRow([big, big])])
      assert.ok(line.length <= 100, `${line.length} columns: ${line}`);
    assert.match(tableRow(big), /budget:tokens +no +120 +98\.8M +1,234,567 +91% +\$1234\.57/);
  });

  test('--repeat: a table per run, then the resolved rate’s mean, min and max over the runs', () => {
    const runs = [
      result('a', { run: 1 }),
      result('b', { run: 1 }),
      result('a', { run: 2 }),
      result('b', { run: 2, resolved: false, halt: 'budget:turns', why: 'the test still fails' }),
    ];
    assert.deepEqual(resolvedRates(runs, 2), { mean: 0.75, min: 0.5, max: 1 });
    const lines = reportLines(runs, 2, 12_345);
    assert.deepEqual(
      lines
        .filter((line) => /^(run|total|resolved rate|b \(|ran)/.test(line))
        .map((line) => line.replace(/ {2,}/g, ' ')),
      [
        'run 1 of 2',
        'total 2/2 100% 8 2,000 200 0% unknown 0.8 s',
        'run 2 of 2',
        'total 1/2 50% 8 2,000 200 0% unknown 0.8 s',
        'b (run 2): the test still fails',
        'resolved rate over 2 runs: mean 75.0%, min 50.0%, max 100.0%',
        'ran in 12.3 s',
      ],
    );
  });

  test('compare shows resolved flips, turns, token and cost deltas, and tasks in one run only', () => {
    const a = [result('flip', { costUsd: 0.01 }), result('same'), result('fixed', { resolved: false }), result('gone')];
    const b = [
      result('flip', { resolved: false, turns: 7, inputTokens: 2_500, outputTokens: 90, costUsd: 0.015 }),
      result('same'),
      result('fixed'),
      result('new'),
    ];
    const lines = compareRuns(a, b);
    const line = (task: string) => lines.find((l) => l.startsWith(`${task} `)) ?? '';
    assert.match(line('flip'), /yes → no +broken +4 → 7 +\+1,500 +-10 +\+\$0\.0050/);
    assert.match(line('fixed'), /no → yes +fixed/);
    assert.match(line('same'), /yes +4 → 4 +0 +0 +unknown/);
    assert.match(line('gone'), /only in A/);
    assert.match(line('new'), /only in B/);
    assert.ok(lines.includes('resolved: 3/4 → 3/4 (1 fixed, 1 broken)'), lines.join('\n'));
    for (const l of lines) assert.ok(l.length <= 100, l);
  });

  test('--compare reads two --json runs (their summaries skipped, of --repeat the first run) and exits 0; a line that is not a result is one line and exit 2', async (t) => {
    const summary = JSON.stringify({ type: 'summary', commit: null, resolved: 1 });
    const root = await tempProject(t, {
      'a.jsonl': `${JSON.stringify(result('x'))}\n${summary}\n`,
      'b.jsonl': [result('x', { resolved: false }), result('x', { run: 2 })]
        .map((r) => `${JSON.stringify(r)}\n`)
        .join(''),
      'banner.jsonl': `> reference-harness@0.1.0 eval\n${JSON.stringify(result('x'))}\n`,
    });
    const compared = await runMain(['--compare', path.join(root, 'a.jsonl'), path.join(root, 'b.jsonl')]);
    assert.equal(compared.status, 0);
    assert.match(compared.stdout, /x +yes → no +broken/);
    const bad = await runMain(['--compare', path.join(root, 'a.jsonl'), path.join(root, 'banner.jsonl')]);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /^eval: --compare: .*banner\.jsonl:1 is not a result line .*\n$/);
  });

  test('bad flags are one line on stderr and exit code 2', async () => {
    for (const args of [
      ['--jobs', '0'],
      ['--repeat', '1.5'],
      ['--shard', '3/2'],
      ['--shard', 'x'],
      ['--frobnicate'],
      ['--compare', 'a'],
      ['no-such-task'],
    ]) {
      const { status, stderr, stdout } = await runMain(args);
      assert.equal(status, 2, args.join(' '));
      assert.equal(stdout, '');
      assert.match(stderr, /^eval: [^\n]+ \(see --help\)\n$/, args.join(' '));
    }
    const noKey = await runMain(['--model', 'claude-x']);
    assert.match(noKey.stderr, /--model needs ANTHROPIC_API_KEY/);
  });
});

// Both wait on child processes: they run side by side.
