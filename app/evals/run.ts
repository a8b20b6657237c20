// npm run eval: small real bug-fix tasks, each run headless through the real CLI (a child process,
// as a user would run it) in a temporary copy of its project, then judged here and not by the agent:
// the task's test is run again, and the files that test it must be byte-for-byte the originals.
// Without --model, each task's scripted trajectory plays the model: offline, the same every time.
// To add a task, add a folder to evals/tasks (see evals/README.md); this file needs no change.

import { execFile, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { cp, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { minimatch } from 'minimatch';
import { z } from 'zod';
import { loadScript } from 'reference-harness/scripted-model';
import { GUARDED, sandboxProblem } from 'reference-harness/hardening';
import { type AgentEvent, type UsageTotals } from '../harness.ts';

// =============================================================================================
// Tasks: a folder with task.json, project/ and (for scripted runs) trajectory.json

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const TASKS_DIR = path.join(REPO_ROOT, 'app', 'evals', 'tasks');
const PROGRAM = path.join(REPO_ROOT, 'app', 'main.ts');
/** What the verify command may take when the runner itself runs it (the CLI's own default). */
const VERIFY_TIMEOUT_MS = 120_000;

const taskFile = z.strictObject({
  /** The task as a user would type it. */
  prompt: z.string().trim().min(1),
  /** Exit code 0 means fixed; it must fail on the untouched project. */
  verify: z.string().trim().min(1),
  /** The test files: protected from the agent, and checked byte for byte afterwards. */
  protect: z.array(z.string().min(1)).min(1),
  budgets: z.strictObject({
    maxTurns: z.int().positive(),
    maxTokens: z.int().positive().optional(),
    maxCostUsd: z.number().positive().optional(),
    timeoutS: z.number().positive().optional(),
  }),
});
export type TaskSpec = z.infer<typeof taskFile>;

/** A task as loaded: ready to run, or malformed and saying why. */
export type Task = { name: string; dir: string } & (
  { problem: null; spec: TaskSpec; replies: number | null } | { problem: string }
);
type ReadyTask = Extract<Task, { problem: null }>;

/** Every task folder under `tasksDir`, in name order. `scripted`: each needs a valid trajectory.json. */
export async function loadTasks(tasksDir: string, scripted: boolean): Promise<Task[]> {
  const entries = await readdir(tasksDir, { withFileTypes: true });
  const names = entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  return await Promise.all(names.sort().map((name) => loadTask(path.join(tasksDir, name), scripted)));
}

/** Prevents a broken task from being run as if it were sound: a task.json that fails the schema, a
 *  missing project/, or a missing or invalid trajectory makes the task malformed, never resolved. */
async function loadTask(dir: string, scripted: boolean): Promise<Task> {
  const name = path.basename(dir);
  const malformed = (problem: string): Task => ({ name, dir, problem });
  const json = await readFile(path.join(dir, 'task.json'), 'utf8').then(
    (text) => JSON.parse(text) as unknown,
    (error: unknown) => (isMissing(error) ? 'no task.json' : `task.json: ${errorText(error)}`),
  );
  if (typeof json === 'string') return malformed(json);
  const parsed = taskFile.safeParse(json);
  if (!parsed.success) return malformed(`task.json: ${z.prettifyError(parsed.error).replace(/\n\s*/g, ' ')}`);
  const isFolder = await stat(path.join(dir, 'project')).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isFolder) return malformed('no project/ folder');
  if (!scripted) return { name, dir, problem: null, spec: parsed.data, replies: null };
  const trajectory = path.join(dir, 'trajectory.json');
  if (!existsSync(trajectory)) return malformed('no trajectory.json (a run without --model needs one)');
  const replies = await loadScript(trajectory).then(
    (script) => script.length,
    (error: unknown) => errorText(error).split('\n')[0]!,
  );
  if (typeof replies === 'string') return malformed(replies);
  return { name, dir, problem: null, spec: parsed.data, replies };
}

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';
const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Shard `index` of `count` (1-based) of the tasks in name order: each task lands in exactly one shard. */
export function shardOf<T extends { name: string }>(tasks: readonly T[], index: number, count: number): T[] {
  return [...tasks].sort((a, b) => (a.name < b.name ? -1 : 1)).filter((_, i) => i % count === index - 1);
}

/** Folders whose files are never a task's: git's data, installed packages, the session files. */
const UNWALKED = new Set(['.git', 'node_modules', '.agent']);

/** The project's files that match the globs, with their bytes; matched as the agent's --protect matches. */
async function protectedFiles(root: string, globs: readonly string[]): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  for (const entry of entries.filter((found) => found.isFile())) {
    const file = path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/');
    if (file.split('/').some((name) => UNWALKED.has(name))) continue;
    if (globs.some((glob) => minimatch(file, glob, { dot: true })))
      files.set(file, await readFile(path.join(root, file)));
  }
  return files;
}

/** Protected files that differ between the original project and the copy: changed, deleted or added. */
async function protectedChanges(original: string, copy: string, globs: readonly string[]): Promise<string[]> {
  const [before, after] = await Promise.all([protectedFiles(original, globs), protectedFiles(copy, globs)]);
  const changes = [...before].flatMap(([file, bytes]) => {
    const now = after.get(file);
    return now === undefined ? [`${file} (deleted)`] : now.equals(bytes) ? [] : [`${file} (changed)`];
  });
  return [...changes, ...[...after.keys()].filter((file) => !before.has(file)).map((file) => `${file} (added)`)];
}

/** Runs a task's check as the gate does: in the OS sandbox where this machine has one (a real model's run refuses to
 *  start without one, see main), since it runs code the agent wrote. */
const runVerify = async (command: string, cwd: string) => {
  const sandbox = (await sandboxProblem()) === null;
  return await GUARDED.runner(command, {
    cwd,
    timeoutMs: VERIFY_TIMEOUT_MS,
    signal: new AbortController().signal,
    sandbox,
  });
};

/** Prevents a task that proves nothing from counting as solved: its test must exist (the protect
 *  globs match a file) and must fail on the untouched project. Runs in `scratch`, a copy. */
export async function wellFormedProblem(task: ReadyTask, scratch: string): Promise<string | null> {
  const project = path.join(task.dir, 'project');
  if ((await protectedFiles(project, task.spec.protect)).size === 0)
    return `no test: no file in project/ matches ${task.spec.protect.join(', ')}`;
  await cp(project, scratch, { recursive: true });
  const run = await runVerify(task.spec.verify, scratch);
  return run.exitCode === 0 ? 'the test passes before the run' : null;
}

/** Prevents taking the agent's word for it: resolved means the test passes when run here, afresh,
 *  and the files that test it are the originals, byte for byte. Returns why not, or null. */
export async function unresolvedReason(task: ReadyTask, copy: string): Promise<string | null> {
  const changed = await protectedChanges(path.join(task.dir, 'project'), copy, task.spec.protect);
  if (changed.length > 0) return `protected files differ from the originals: ${changed.join(', ')}`;
  const run = await runVerify(task.spec.verify, copy);
  if (run.exitCode === 0) return null;
  const how = run.timedOut ? `did not finish in ${VERIFY_TIMEOUT_MS / 1000} s` : `exited with code ${run.exitCode}`;
  return `\`${task.spec.verify}\` ${how} after the run`;
}

// =============================================================================================
// Temporary folders: one per eval run, owned by the process that made it

export const RUN_PREFIX = 'harness-eval-';
const OWNER_FILE = 'owner.pid';

/** A fresh folder for one eval run, holding the pid of this process so a later run can tell it is stale. */
export async function createRunFolder(parent = os.tmpdir()): Promise<string> {
  const folder = await mkdtemp(path.join(parent, RUN_PREFIX));
  await writeFile(path.join(folder, OWNER_FILE), String(process.pid));
  return folder;
}

/** Prevents copies from piling up in the temp folder when a run is killed before it can clean up:
 *  a run folder whose owner process is gone is removed. One without an owner file (a --keep run's) stays. */
export async function removeStaleRunFolders(parent = os.tmpdir()): Promise<string[]> {
  const removed: string[] = [];
  for (const entry of await readdir(parent, { withFileTypes: true })) {
    if (!entry.isDirectory() || !entry.name.startsWith(RUN_PREFIX)) continue;
    const folder = path.join(parent, entry.name);
    const owner = Number(await readFile(path.join(folder, OWNER_FILE), 'utf8').catch(() => ''));
    if (!Number.isInteger(owner) || owner <= 0 || isAlive(owner)) continue;
    await rm(folder, { recursive: true, force: true });
    removed.push(folder);
  }
  return removed;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0); // signal 0 only asks whether the process exists
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // it exists, and belongs to someone else
  }
}

// =============================================================================================
// Running one task

/** One task's outcome: one line of `--json`, one row of the table. */
export interface EvalResult {
  task: string;
  /** Which of the `--repeat` runs of the task: 1, 2, … */
  run: number;
  /** The model id, or "scripted" for the trajectories. */
  model: string;
  /** accepted, budget:turns (or :tokens, :cost, :time), interrupted, error, or malformed. */
  halt: string;
  resolved: boolean;
  /** Why the task did not pass (not resolved, malformed, or a trajectory that did not play out); null if it did. */
  why: string | null;
  turns: number;
  /** Every input token: uncached, written to the cache, and read from it. */
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
  /** Null when the model's price is unknown (the scripted model has none). */
  costUsd: number | null;
  /** The agent's run, from start to exit; the runner's own checks are not counted. */
  wallMs: number;
}

export interface RunOptions {
  /** Undefined: the scripted trajectories play the model. */
  model: string | undefined;
  env: NodeJS.ProcessEnv;
  /** Which run of the task this is (default 1): each run has a folder of its own. */
  run?: number;
  /** Ctrl-C: the agent is stopped (SIGINT, then SIGKILL if it lingers) and the task is left unfinished. */
  signal?: AbortSignal;
}

/** The arguments of the agent CLI for one task, exactly as a user would pass them. */
export function agentArgs(task: ReadyTask, root: string, session: string, model: string | undefined): string[] {
  const { verify, protect, budgets, prompt } = task.spec;
  const optional = (flag: string, value: number | undefined) => (value === undefined ? [] : [flag, String(value)]);
  return [
    ...(model === undefined ? ['--script', path.join(task.dir, 'trajectory.json')] : ['--model', model]),
    '--verify',
    verify,
    ...protect.flatMap((glob) => ['--protect', glob]),
    '--yes',
    '--json',
    '--max-turns',
    String(budgets.maxTurns),
    ...optional('--max-tokens', budgets.maxTokens),
    ...optional('--max-cost', budgets.maxCostUsd),
    ...optional('--timeout', budgets.timeoutS),
    '--root',
    root,
    '--session',
    session,
    '--',
    prompt,
  ];
}

/** How long a stopped agent gets to write its halt and exit before it is killed. */
const STOP_GRACE_MS = 5_000;

/** Runs `node --import tsx app/main.ts ARGS` and collects its JSON events and the last line it wrote to stderr. When
 *  `signal` aborts, the agent is sent SIGINT (its own Ctrl-C), and SIGKILL if it has not exited a while later. */
function runAgentCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  signal: AbortSignal | undefined,
): Promise<{ events: AgentEvent[]; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', PROGRAM, ...args], {
      cwd: REPO_ROOT, // where `--import tsx` resolves
      env: { ...env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let killer: NodeJS.Timeout | undefined;
    const stop = () => {
      child.kill('SIGINT');
      killer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    };
    if (signal?.aborted)
      stop(); // stopped while the task was being set up
    else signal?.addEventListener('abort', stop, { once: true });
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const done = () => {
      clearTimeout(killer);
      signal?.removeEventListener('abort', stop);
      const events = stdout.split('\n').flatMap((line) => {
        if (!line.startsWith('{')) return [];
        try {
          return [JSON.parse(line) as AgentEvent];
        } catch {
          return []; // the last line of an agent killed while writing it
        }
      });
      resolve({ events, stderr: stderr.trim().split('\n').at(-1) ?? '' });
    };
    child.on('error', (error) => {
      stderr += error.message;
      done();
    });
    child.on('close', done);
  });
}

const noUsage: UsageTotals = { input: 0, cacheWrite: 0, cacheRead: 0, output: 0, costUsd: null };

/** Runs one task from start to verdict, in its own folder under `runFolder`; null when Ctrl-C stopped it first. */
export async function evaluate(task: Task, runFolder: string, options: RunOptions): Promise<EvalResult | null> {
  const run = options.run ?? 1;
  const blank = { task: task.name, run, model: options.model ?? 'scripted', resolved: false, turns: 0, wallMs: 0 };
  const usage = (totals: UsageTotals) => ({
    inputTokens: totals.input + totals.cacheWrite + totals.cacheRead,
    cachedTokens: totals.cacheRead,
    outputTokens: totals.output,
    costUsd: totals.costUsd,
  });
  const malformed = (problem: string): EvalResult => ({
    ...blank,
    halt: 'malformed',
    why: `malformed: ${problem}`,
    ...usage(noUsage),
  });
  if (task.problem !== null) return malformed(task.problem);
  const folder = path.join(runFolder, run === 1 ? task.name : `${task.name}.run-${run}`);
  if (options.signal?.aborted) return null;
  const problem = await wellFormedProblem(task, path.join(folder, 'before'));
  if (problem !== null) return malformed(problem);
  const copy = path.join(folder, 'project');
  await cp(path.join(task.dir, 'project'), copy, { recursive: true });
  const started = performance.now();
  const args = agentArgs(task, copy, path.join(folder, 'session.jsonl'), options.model);
  const { events, stderr } = await runAgentCli(args, options.env, options.signal);
  if (options.signal?.aborted) return null; // stopped: no verdict, and no test run after a Ctrl-C
  const wallMs = Math.round(performance.now() - started);
  const halt = events.findLast((event) => event.type === 'halt');
  const reply = events.findLast((event) => event.type === 'reply');
  const turns = halt?.turns ?? 0;
  const ended =
    halt === undefined
      ? `the agent stopped without a halt: ${stderr || 'no output'}`
      : halt.halt.kind === 'error'
        ? `the agent halted with an error: ${halt.halt.message}`
        : null;
  const unresolved = await unresolvedReason(task, copy);
  return {
    ...blank,
    halt: halt === undefined ? 'error' : halt.halt.kind === 'budget' ? `budget:${halt.halt.budget}` : halt.halt.kind,
    resolved: unresolved === null,
    why:
      unresolved === null
        ? trajectoryMismatch(task, halt?.halt.kind ?? 'error', turns)
        : [unresolved, ended].filter((text) => text !== null).join('; '),
    turns,
    ...usage(reply?.totals ?? noUsage),
    wallMs,
  };
}

/** Prevents a trajectory that no longer plays out as written from passing unnoticed: a scripted run
 *  must end accepted on its last reply, not earlier (a wrong fix that was meant to fail passed, say). */
export function trajectoryMismatch(task: ReadyTask, halt: string, turns: number): string | null {
  if (task.replies === null || (halt === 'accepted' && turns === task.replies)) return null;
  return (
    `the trajectory has ${task.replies} replies, and the run ended ${halt} after ${turns}: ` +
    'it no longer plays out as written'
  );
}

// =============================================================================================
// The table, and comparing two runs

const WIDTHS = { task: 22, halt: 13, resolved: 10, turns: 5, input: 10, output: 9, cached: 6, cost: 9, wall: 8 };

const thousands = (n: number) => n.toLocaleString('en-US');
/** Token counts: exact up to ten million, then in millions, so a column never overflows. */
const tokens = (n: number) => (Math.abs(n) < 10_000_000 ? thousands(n) : `${(n / 1_000_000).toFixed(1)}M`);
/** Four decimals, since one task often costs less than a cent; two from $100 up, to keep the column. */
const dollars = (usd: number | null, sign = false) =>
  usd === null
    ? 'unknown'
    : `${sign && usd >= 0 ? '+' : usd < 0 ? '-' : ''}$${Math.abs(usd).toFixed(Math.abs(usd) >= 100 ? 2 : 4)}`;
const share = (part: number, whole: number) => (whole === 0 ? '0%' : `${Math.round((100 * part) / whole)}%`);
const fit = (text: string, width: number) => (text.length > width ? `${text.slice(0, width - 1)}…` : text);

function row(cells: Record<keyof typeof WIDTHS, string>): string {
  return (Object.keys(WIDTHS) as (keyof typeof WIDTHS)[])
    .map((key, i) => (i < 3 ? fit(cells[key], WIDTHS[key]).padEnd(WIDTHS[key]) : cells[key].padStart(WIDTHS[key])))
    .join(' ')
    .trimEnd();
}

export const tableHeader = () =>
  row({
    task: 'task',
    halt: 'halt',
    resolved: 'resolved',
    turns: 'turns',
    input: 'input',
    output: 'output',
    cached: 'cached',
    cost: 'cost',
    wall: 'wall',
  });

export function tableRow(result: EvalResult): string {
  return row({
    task: result.task,
    halt: result.halt,
    resolved: result.resolved ? 'yes' : 'no',
    turns: String(result.turns),
    input: tokens(result.inputTokens),
    output: tokens(result.outputTokens),
    cached: share(result.cachedTokens, result.inputTokens),
    cost: dollars(result.costUsd),
    wall: `${(result.wallMs / 1000).toFixed(1)} s`,
  });
}

export function totalsRow(results: readonly EvalResult[]): string {
  const sum = (pick: (result: EvalResult) => number) => results.reduce((total, result) => total + pick(result), 0);
  const resolved = results.filter((result) => result.resolved).length;
  const costs = results.map((result) => result.costUsd);
  return row({
    task: 'total',
    halt: '',
    resolved: `${resolved}/${results.length} ${share(resolved, results.length)}`,
    turns: String(sum((r) => r.turns)),
    input: tokens(sum((r) => r.inputTokens)),
    output: tokens(sum((r) => r.outputTokens)),
    cached: share(
      sum((r) => r.cachedTokens),
      sum((r) => r.inputTokens),
    ),
    cost: dollars(costs.includes(null) ? null : sum((r) => r.costUsd ?? 0)),
    wall: `${(sum((r) => r.wallMs) / 1000).toFixed(1)} s`,
  });
}

/** The fields of a result line that a comparison reads; other fields are ignored. */
const resultLine = z.object({
  task: z.string(),
  run: z.number().optional(), // missing in runs from before --repeat
  model: z.string(),
  resolved: z.boolean(),
  turns: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  costUsd: z.number().nullable(),
});
type ResultLine = z.infer<typeof resultLine>;

/** Reads a `--json` run: one result per line, then the summary. A line that is neither is a usage error naming the
 *  line. Of a run with `--repeat`, the first run of each task is compared. */
async function readResults(file: string): Promise<ResultLine[]> {
  const text = await readFile(file, 'utf8').catch((error: unknown) => {
    throw new UsageError(`--compare: cannot read ${file}: ${errorText(error)}`);
  });
  return text
    .split('\n')
    .map((line, i) => ({ line, number: i + 1 }))
    .filter(({ line }) => line.trim() !== '' && !line.startsWith('{"type":"summary"'))
    .map(({ line, number }) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        parsed = undefined;
      }
      const result = resultLine.safeParse(parsed);
      if (!result.success)
        throw new UsageError(
          `--compare: ${file}:${number} is not a result line of \`npm run -s eval -- --json\` ` +
            "(npm's own banner? use -s)",
        );
      return result.data;
    })
    .filter((result) => (result.run ?? 1) === 1);
}

const COMPARE_WIDTHS = [24, 10, 8, 9, 10, 10, 11];

/** Per task: resolved flips, turns, and the token and cost deltas from run A to run B. */
export function compareRuns(a: readonly ResultLine[], b: readonly ResultLine[]): string[] {
  const line = (cells: string[]) =>
    cells
      .map((cell, i) =>
        i < 3 ? fit(cell, COMPARE_WIDTHS[i]!).padEnd(COMPARE_WIDTHS[i]!) : cell.padStart(COMPARE_WIDTHS[i]!),
      )
      .join(' ')
      .trimEnd();
  const signed = (n: number) => `${n > 0 ? '+' : ''}${tokens(n)}`;
  const yesNo = (resolved: boolean) => (resolved ? 'yes' : 'no');
  const lines = [line(['task', 'resolved', 'change', 'turns', 'input Δ', 'output Δ', 'cost Δ'])];
  const names = [...new Set([...a, ...b].map((result) => result.task))].sort();
  let fixed = 0;
  let broken = 0;
  for (const name of names) {
    const before = a.find((result) => result.task === name);
    const after = b.find((result) => result.task === name);
    if (before === undefined || after === undefined) {
      lines.push(line([name, before ? 'only in A' : 'only in B']));
      continue;
    }
    const change = before.resolved === after.resolved ? '' : after.resolved ? 'fixed' : 'broken';
    if (change === 'fixed') fixed++;
    if (change === 'broken') broken++;
    const cost =
      before.costUsd === null || after.costUsd === null ? 'unknown' : dollars(after.costUsd - before.costUsd, true);
    lines.push(
      line([
        name,
        change === '' ? yesNo(after.resolved) : `${yesNo(before.resolved)} → ${yesNo(after.resolved)}`,
        change,
        `${before.turns} → ${after.turns}`,
        signed(after.inputTokens - before.inputTokens),
        signed(after.outputTokens - before.outputTokens),
        cost,
      ]),
    );
  }
  const both = (run: readonly ResultLine[]) =>
    run.filter((result) => a.some((r) => r.task === result.task) && b.some((r) => r.task === result.task));
  const total = (run: readonly ResultLine[], pick: (result: ResultLine) => number) =>
    both(run).reduce((sum, result) => sum + pick(result), 0);
  const percent = (from: number, to: number) =>
    from === 0 ? '' : ` (${to >= from ? '+' : ''}${((100 * (to - from)) / from).toFixed(1)}%)`;
  const totalLine = (what: string, pick: (result: ResultLine) => number) => {
    const [from, to] = [total(a, pick), total(b, pick)];
    return `${what}: ${thousands(from)} → ${thousands(to)}${percent(from, to)}`;
  };
  const costOf = (run: readonly ResultLine[]) =>
    both(run).some((result) => result.costUsd === null) ? null : total(run, (result) => result.costUsd ?? 0);
  const resolvedOf = (run: readonly ResultLine[]) => `${run.filter((result) => result.resolved).length}/${run.length}`;
  return [
    ...lines,
    '',
    `resolved: ${resolvedOf(a)} → ${resolvedOf(b)} (${fixed} fixed, ${broken} broken)`,
    `${totalLine('input tokens', (result) => result.inputTokens)}, on the tasks in both runs`,
    totalLine('output tokens', (result) => result.outputTokens),
    `cost: ${dollars(costOf(a))} → ${dollars(costOf(b))}`,
  ];
}

// =============================================================================================
// The command line

const HELP = `Usage: npm run eval -- [options] [task...]

Runs each task in evals/tasks headless through the agent CLI, in a temporary copy of its project,
then checks it here: the task's test must pass again and its protected files must be unchanged.
A line on stderr as each task finishes; the table at the end. Ctrl-C stops the run: the tasks
finished so far are shown, the temporary copies removed, and the exit code is 130.

Options:
  --model ID        run the real model (needs ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL);
                    without it, each task's trajectory.json plays the model, offline
  --jobs N          tasks run at once (default: 1)
  --repeat N        run each task N times, for the spread of the resolved rate (default: 1)
  --shard I/N       only the tasks whose index in name order, modulo N, is I-1
  --json            one JSON object per task per line instead of the table, then a summary line
                    (commit, date, model, resolved rate, tokens, cost, wall time)
  --tasks DIR       the folder of tasks (default: evals/tasks)
  --keep            keep the temporary copies and sessions, and say where
  --compare A B     per-task changes between two --json runs A and B (files)
  -h, --help        show this help

Exit codes: 0 every task resolved, 1 some task not (or malformed), 2 usage error, 130 Ctrl-C.`;

/** A mistake on the command line: one line on stderr and exit code 2. */
class UsageError extends Error {}

interface EvalOptions {
  tasksDir: string;
  names: string[];
  model: string | undefined;
  json: boolean;
  jobs: number;
  repeat: number;
  shard: { index: number; count: number } | null;
  keep: boolean;
  compare: [string, string] | null;
  help: boolean;
}

function parseEvalArgs(argv: string[], env: NodeJS.ProcessEnv): EvalOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        model: { type: 'string' },
        jobs: { type: 'string' },
        repeat: { type: 'string' },
        shard: { type: 'string' },
        json: { type: 'boolean' },
        tasks: { type: 'string' },
        keep: { type: 'boolean' },
        compare: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new UsageError(errorText(error));
  }
  const { values, positionals } = parsed;
  if (values.compare && positionals.length !== 2)
    throw new UsageError(`--compare needs two files, A and B; got ${positionals.length}`);
  if (values.model !== undefined && !env.ANTHROPIC_API_KEY && !env.ANTHROPIC_BASE_URL)
    throw new UsageError('--model needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL) in the environment');
  return {
    tasksDir: path.resolve(values.tasks ?? TASKS_DIR),
    names: values.compare ? [] : positionals,
    model: values.model,
    json: values.json ?? false,
    jobs: positiveWhole('--jobs', values.jobs),
    repeat: positiveWhole('--repeat', values.repeat),
    shard: values.shard === undefined ? null : parseShard(values.shard),
    keep: values.keep ?? false,
    compare: values.compare ? [positionals[0]!, positionals[1]!] : null,
    help: values.help ?? false,
  };
}

/** A count given on the command line: 1 when not given. */
function positiveWhole(flag: string, text: string | undefined): number {
  const n = text === undefined ? 1 : Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} needs a positive whole number, got "${text}"`);
  return n;
}

function parseShard(text: string): { index: number; count: number } {
  const match = /^(\d+)\/(\d+)$/.exec(text);
  const [index, count] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
  if (index < 1 || index > count) throw new UsageError(`--shard needs I/N with 1 ≤ I ≤ N, e.g. 1/2; got "${text}"`);
  return { index, count };
}

/** The tasks this run covers: those named (all if none), then the shard. */
async function selectTasks(options: EvalOptions): Promise<Task[]> {
  const all = await loadTasks(options.tasksDir, options.model === undefined).catch((error: unknown) => {
    throw new UsageError(`--tasks ${options.tasksDir}: ${errorText(error)}`);
  });
  const unknown = options.names.filter((name) => !all.some((task) => task.name === name));
  if (unknown.length > 0) throw new UsageError(`no such task: ${unknown.join(', ')} (in ${options.tasksDir})`);
  const named = options.names.length === 0 ? all : all.filter((task) => options.names.includes(task.name));
  return options.shard === null ? named : shardOf(named, options.shard.index, options.shard.count);
}

/** Runs `work` on every item, at most `limit` at a time, starting none once `signal` aborts; results in the items'
 *  order, undefined for those never started. */
async function pool<T, R>(
  items: readonly T[],
  limit: number,
  signal: AbortSignal,
  work: (item: T) => Promise<R>,
): Promise<(R | undefined)[]> {
  const results: (R | undefined)[] = new Array(items.length).fill(undefined);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length && !signal.aborted; i = next++) results[i] = await work(items[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** How the runner is driven from outside: Ctrl-C, and how often it says what is still running. */
export interface EvalControl {
  /** Aborts on Ctrl-C (the program's SIGINT). */
  signal?: AbortSignal;
  /** With no task finished for this long, a line names the tasks still running. */
  heartbeatMs?: number;
}

/** Long enough not to chatter, short enough that a real model's minute-long task is never silent. */
const HEARTBEAT_MS = 15_000;
/** The exit code of a run stopped by Ctrl-C, as a shell reports a process ended by SIGINT. */
const INTERRUPTED = 130;

export async function main(
  argv: string[],
  env: NodeJS.ProcessEnv,
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
  control: EvalControl = {},
): Promise<number> {
  try {
    const options = parseEvalArgs(argv, env);
    if (options.help) {
      out.write(`${HELP}\n`);
      return 0;
    }
    if (options.compare) {
      const [a, b] = await Promise.all(options.compare.map(readResults));
      out.write(`A: ${options.compare[0]}\nB: ${options.compare[1]}\n${compareRuns(a!, b!).join('\n')}\n`);
      return 0;
    }
    return await runEval(options, env, { out, err, signal: control.signal ?? new AbortController().signal }, control);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    err.write(`eval: ${error.message} (see --help)\n`);
    return 2;
  }
}

/** One task's run: which task, and which of the --repeat runs. */
interface Work {
  task: Task;
  run: number;
  /** How the progress lines name it. */
  label: string;
}

async function runEval(
  options: EvalOptions,
  env: NodeJS.ProcessEnv,
  io: { out: NodeJS.WritableStream; err: NodeJS.WritableStream; signal: AbortSignal },
  control: EvalControl,
): Promise<number> {
  const tasks = await selectTasks(options);
  // Prevents a real model's code from running uncontained: its checks run in the OS sandbox, or the eval won't start.
  const noSandbox = options.model === undefined ? null : await sandboxProblem();
  if (noSandbox !== null) throw new UsageError(`--model runs the tasks' checks in the OS sandbox, and ${noSandbox}`);
  await removeStaleRunFolders();
  const runFolder = await createRunFolder();
  // A second Ctrl-C exits at once, without the cleanup below: the folder goes as the process exits.
  const removeNow = () => rmSync(runFolder, { recursive: true, force: true });
  if (!options.keep) process.once('exit', removeNow);
  const say = (text: string) => {
    if (!options.json) io.out.write(`${text}\n`);
  };
  const tell = (text: string) => io.err.write(`${text}\n`);
  const who =
    options.model === undefined
      ? 'scripted (no --model: each task replays its trajectory.json)'
      : `model ${options.model}`;
  const times = options.repeat === 1 ? '' : `, ${options.repeat} runs each`;
  say(`eval: ${tasks.length} task(s)${times}, ${who}, ${options.jobs} at a time`);
  const work: Work[] = Array.from({ length: options.repeat }, (_, r) =>
    tasks.map((task) => ({
      task,
      run: r + 1,
      label: options.repeat === 1 ? task.name : `${task.name} (run ${r + 1})`,
    })),
  ).flat();
  const started = performance.now();
  const progress = progressLines(work.length, tell, control.heartbeatMs ?? HEARTBEAT_MS);
  try {
    const results = await pool(work, options.jobs, io.signal, async (item) => {
      progress.start(item.label);
      const result = await evaluate(item.task, runFolder, {
        model: options.model,
        env,
        run: item.run,
        signal: io.signal,
      });
      progress.end(item.label, result);
      if (result && options.json) io.out.write(`${JSON.stringify(result)}\n`);
      return result;
    });
    const finished = results.filter((result): result is EvalResult => result !== undefined && result !== null);
    const wallMs = Math.round(performance.now() - started);
    if (options.json)
      io.out.write(`${JSON.stringify(await summaryOf(finished, options, wallMs, io.signal.aborted))}\n`);
    else for (const line of reportLines(finished, options.repeat, wallMs)) say(line);
    if (io.signal.aborted) {
      const which = unfinishedText(work, results);
      tell(`eval: interrupted (Ctrl-C): ${finished.length} of ${work.length} finished; ${which}`);
      return INTERRUPTED;
    }
    const failed = finished.filter((result) => result.why !== null).length;
    say(`eval: ${finished.length - failed} passed, ${failed} failed`);
    return failed === 0 ? 0 : 1;
  } finally {
    progress.stop();
    process.off('exit', removeNow);
    if (options.keep) {
      await rm(path.join(runFolder, OWNER_FILE));
      say(`kept: ${runFolder} (each task's project copy and session.jsonl)`);
    } else {
      await rm(runFolder, { recursive: true, force: true });
    }
  }
}

/** The tasks a Ctrl-C left unfinished: those it stopped (null), then how many it kept from starting (undefined). */
function unfinishedText(work: Work[], results: (EvalResult | null | undefined)[]): string {
  const stopped = work.filter((_, i) => results[i] === null).map((item) => item.label);
  const notStarted = results.filter((result) => result === undefined).length;
  return [stopped.length > 0 && `stopped: ${stopped.join(', ')}`, notStarted > 0 && `${notStarted} not started`]
    .filter(Boolean)
    .join('; ');
}

/** The progress on stderr: `[3/12] falsy-zero resolved 4.1 s` as each task finishes, and, when none has finished for
 *  a while, which are still running and for how long. */
function progressLines(total: number, tell: (text: string) => void, heartbeatMs: number) {
  const running = new Map<string, number>();
  let done = 0;
  let lastLine = performance.now();
  const line = (text: string) => {
    tell(text);
    lastLine = performance.now();
  };
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const heartbeat = setInterval(
    () => {
      if (running.size === 0 || performance.now() - lastLine < heartbeatMs) return;
      const now = performance.now();
      const names = [...running].map(([label, since]) => `${label} (${seconds(now - since)})`);
      line(`[${done}/${total}] still running: ${names.join(', ')}`);
    },
    Math.min(heartbeatMs, 1_000),
  );
  heartbeat.unref();
  return {
    start: (label: string) => running.set(label, performance.now()),
    end(label: string, result: EvalResult | null) {
      running.delete(label);
      if (result === null) return;
      const verdict = result.resolved ? 'resolved' : result.halt === 'malformed' ? 'malformed' : 'not resolved';
      line(`[${++done}/${total}] ${label} ${verdict} ${seconds(result.wallMs)}`);
    },
    stop: () => clearInterval(heartbeat),
  };
}

/** The table of a run (one per run with --repeat), the reasons, the resolved rate's spread, the wall time. */
export function reportLines(results: readonly EvalResult[], repeat: number, wallMs: number): string[] {
  const lines: string[] = [];
  for (let run = 1; run <= repeat; run++) {
    const ofRun = results.filter((result) => result.run === run);
    if (ofRun.length === 0) continue;
    if (repeat > 1) lines.push('', `run ${run} of ${repeat}`);
    lines.push(tableHeader(), ...ofRun.map(tableRow), totalsRow(ofRun));
  }
  for (const result of results)
    if (result.why !== null) lines.push(`${result.task}${repeat > 1 ? ` (run ${result.run})` : ''}: ${result.why}`);
  if (repeat > 1) {
    const { mean, min, max } = resolvedRates(results, repeat);
    lines.push(`resolved rate over ${repeat} runs: mean ${percent(mean)}, min ${percent(min)}, max ${percent(max)}`);
  }
  lines.push(`ran in ${(wallMs / 1000).toFixed(1)} s`);
  return lines;
}

const percent = (share: number) => `${(100 * share).toFixed(1)}%`;

/** Each run's share of tasks resolved (of the tasks it finished), and their mean, lowest and highest. */
export function resolvedRates(
  results: readonly EvalResult[],
  repeat: number,
): { mean: number; min: number; max: number } {
  const rates = Array.from({ length: repeat }, (_, r) => results.filter((result) => result.run === r + 1))
    .filter((run) => run.length > 0)
    .map((run) => run.filter((result) => result.resolved).length / run.length);
  if (rates.length === 0) return { mean: 0, min: 0, max: 0 };
  return {
    mean: rates.reduce((sum, rate) => sum + rate, 0) / rates.length,
    min: Math.min(...rates),
    max: Math.max(...rates),
  };
}

/** The last line of `--json`: what was measured, on what, and when, so a file of runs says where it came from. */
export interface EvalSummary {
  type: 'summary';
  /** `git rev-parse HEAD` in this repository; null when git cannot say. */
  commit: string | null;
  date: string;
  model: string;
  tasks: number;
  runs: number;
  /** Results in all; fewer than tasks × runs when Ctrl-C stopped the run. */
  finished: number;
  interrupted: boolean;
  resolved: number;
  resolvedRate: { mean: number; min: number; max: number };
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
  costUsd: number | null;
  wallMs: number;
}

async function summaryOf(
  results: readonly EvalResult[],
  options: EvalOptions,
  wallMs: number,
  interrupted: boolean,
): Promise<EvalSummary> {
  const sum = (pick: (result: EvalResult) => number) => results.reduce((total, result) => total + pick(result), 0);
  const costs = results.map((result) => result.costUsd);
  return {
    type: 'summary',
    commit: await commitOf(REPO_ROOT),
    date: new Date().toISOString(),
    model: options.model ?? 'scripted',
    tasks: results.length === 0 ? 0 : new Set(results.map((result) => result.task)).size,
    runs: options.repeat,
    finished: results.length,
    interrupted,
    resolved: results.filter((result) => result.resolved).length,
    resolvedRate: resolvedRates(results, options.repeat),
    inputTokens: sum((result) => result.inputTokens),
    cachedTokens: sum((result) => result.cachedTokens),
    outputTokens: sum((result) => result.outputTokens),
    costUsd: costs.includes(null) ? null : sum((result) => result.costUsd ?? 0),
    wallMs,
  };
}

/** The commit checked out in `dir`, or null when git is missing or it is not a repository. */
async function commitOf(dir: string): Promise<string | null> {
  try {
    const { stdout } = await promisify(execFile)('git', ['rev-parse', 'HEAD'], { cwd: dir });
    return stdout.trim() || null;
  } catch {
    return null;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  // Ctrl-C stops the run (the agents get it too, from the terminal): the finished tasks are shown and the copies
  // removed. A second Ctrl-C exits at once.
  const stop = new AbortController();
  process.on('SIGINT', () => {
    if (stop.signal.aborted) process.exit(INTERRUPTED);
    stop.abort();
  });
  void main(process.argv.slice(2), process.env, process.stdout, process.stderr, { signal: stop.signal }).then(
    (code) => {
      process.exitCode = code;
    },
  );
}
