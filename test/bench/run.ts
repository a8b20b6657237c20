// npm run bench: measures, prints one table, and never fails the build. A missed target is a finding, and a row
// that could not measure says why in the table; neither makes the exit code non-zero.
// Every ratio is paired: its two sides are measured in the same run, alternated, and the table gives the median of
// the per-pair ratios with their min and max. To add a row, add one entry to ROWS.
// `npm run bench -- WORDS` runs only the rows whose name contains WORDS.

import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { read_file } from '../../tools.ts';
import { listFilesVsFind } from './file-tree.ts';
import { gateOnLargeTree } from './gate.ts';
import {
  cachedShare,
  fixedPromptTokens,
  type Measurement,
  median,
  parallelReads,
  prefixStability,
  realisticTrip,
  RowSkipped,
  spreadOf,
  tripMedian,
  tripRatioAt40k,
} from './loop.ts';
import { sandboxOverhead } from './sandbox.ts';
import { SESSION_FILE_BYTES, withSessionFile } from './session-file.ts';
import { exportTime, pageAtScale, pageRows } from './session-page.ts';
import { stuckTripRatio } from './stuck.ts';
import { TEXT_FILE_LINES, withTextFile } from './text-file.ts';

interface Row {
  /** What is measured. */
  name: string;
  unit: string;
  /** None: a figure to report, with nothing to pass or miss. */
  target?: { op: '<' | '<=' | '>' | '>='; limit: number };
  /** The command or function behind the figure, so a reader can reproduce it. */
  how: string;
  measure(): Promise<Measurement>;
}

// Children run from the project root, where `npm test` is defined and `--import tsx` resolves.
const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MB = (kib: number) => (kib * 1024) / 1e6;

/** The window of the turn after the 1 GB resume: the default, so the older part is summarised a piece at a time. */
const TURN_WINDOW = 200_000;

/** The last window of the text file: the 500 lines that end it. */
const LAST_WINDOW = TEXT_FILE_LINES - 499;

const ROWS: Row[] = [
  {
    name: 'npm test wall time, 3 runs',
    unit: 's',
    target: { op: '<=', limit: 10 },
    how: 'npm test',
    async measure() {
      const walls: number[] = [];
      const cpus: number[] = [];
      const failures: string[] = [];
      for (let i = 0; i < 3; i++) {
        // `times` prints the CPU time of the shell's children: the whole suite, every process of it.
        const run = await spawnCaptured('sh', ['-c', 'npm test >/dev/null 2>&1; status=$?; times; exit $status']);
        walls.push(run.ms / 1000);
        const [user = 0, system = 0] = [...(run.stdout.split('\n')[1] ?? '').matchAll(/(\d+)m([\d.]+)s/g)].map(
          (m) => Number(m[1]) * 60 + Number(m[2]),
        );
        cpus.push(user + system);
        if (run.code !== 0) failures.push(`run ${i + 1} exited ${run.code}`);
      }
      const cpu = spreadOf(cpus);
      return {
        ...spreadOf(walls),
        note:
          `CPU (user + sys, all processes) ${format(cpu.value)} s, min ${format(cpu.spread!.min)}, ` +
          `max ${format(cpu.spread!.max)}${failures.length > 0 ? `; ${failures.join(', ')}` : ''}`,
      };
    },
  },
  {
    name: 'read_file, first window of a 1 GiB text file, 5 reads',
    unit: 'ms',
    target: { op: '<', limit: 50 },
    how: 'read_file.run({ path })',
    measure: () => readLargeTextFile().then((rows) => rows.first),
  },
  {
    name: 'read_file, last window of a 1 GiB text file vs wc -l on it, 3 pairs',
    unit: '×',
    target: { op: '<=', limit: 2 },
    how: 'read_file.run({ path, offset }) vs wc -l FILE',
    measure: () => readLargeTextFile().then((rows) => rows.last),
  },
  {
    // Node and tsx alone take about 100 MB before the read, which no change to read_file can lower.
    name: 'read_file, last window of a 1 GiB text file, peak RSS added by the read',
    unit: 'MB',
    target: { op: '<', limit: 50 },
    how: 'node --import tsx bench/read-window.ts FILE OFFSET',
    measure: () => readLargeTextFile().then((rows) => rows.rss),
  },
  {
    name: '8 read-only 50 ms calls in one reply vs 1 call, 5 pairs',
    unit: '×',
    target: { op: '<=', limit: 1.3 },
    how: 'parallelReads() in bench/loop.ts: runTask + ScriptedModel',
    measure: parallelReads,
  },
  {
    name: 'harness overhead per trip, median of 1,000',
    unit: 'ms',
    target: { op: '<=', limit: 1 },
    how: 'tripMedian() in bench/loop.ts: runTask + ReplayModel',
    measure: tripMedian,
  },
  {
    name: 'trip cost at 40,000 messages vs at 1,000-2,000, 3 sessions',
    unit: '×',
    target: { op: '<=', limit: 2 },
    how: 'tripRatioAt40k() in bench/loop.ts: 20,000 trips',
    measure: tripRatioAt40k,
  },
  {
    name: 'stuck model: refused trip at 40,000 messages vs at 2,000, 300 pairs',
    unit: '×',
    target: { op: '<=', limit: 2 },
    how: 'stuckTripRatio() in bench/stuck.ts: resume + runTask, a model repeating one call',
    measure: stuckTripRatio,
  },
  {
    name: 'realistic trip: read_file + session file + printer',
    unit: 'ms',
    target: { op: '<=', limit: 1 },
    how: 'realisticTrip() in bench/loop.ts',
    measure: realisticTrip,
  },
  {
    name: 'cached share of input tokens, 40-call session',
    unit: '%',
    target: { op: '>=', limit: 90 },
    how: 'cachedShare() in bench/loop.ts: runTask + PrefixCacheModel',
    measure: cachedShare,
  },
  {
    name: 'fixed prompt: system + tool definitions',
    unit: 'tokens',
    target: { op: '<=', limit: 1000 },
    how: 'fixedPromptTokens() in bench/loop.ts: createAgent, chars / 4',
    measure: fixedPromptTokens,
  },
  {
    name: 'prefix-stable request pairs, 40-call session',
    unit: '%',
    target: { op: '>=', limit: 100 },
    how: 'prefixStability() in bench/loop.ts: runTask + ScriptedModel',
    measure: prefixStability,
  },
  {
    name: 'verify gate with --protect on a 100,000-file tree: time added, 7 pairs',
    unit: 'ms',
    target: { op: '<', limit: 100 },
    how: 'gateOnLargeTree() in bench/gate.ts: runTask with and without --protect',
    measure: gateOnLargeTree,
  },
  {
    // A figure to report, not to pass: the price of running the model's code contained.
    name: 'verify gate in the OS sandbox: time added to `node test.js`, 20 pairs',
    unit: 'ms',
    how: 'sandboxOverhead() in bench/sandbox.ts: runTask with sandbox true and false',
    measure: sandboxOverhead,
  },
  {
    name: 'list_files vs sorted find, 100,000-file tree, median of 9 pairs',
    unit: '×',
    target: { op: '<=', limit: 2 },
    how: 'listFilesVsFind() in bench/file-tree.ts: list_files.run({}) vs find DIR -mindepth 1, LC_ALL=C sort',
    measure: listFilesVsFind,
  },
  {
    name: 'session page export, 1,000 messages, median of 5',
    unit: 'ms',
    target: { op: '<', limit: 1000 },
    how: 'exportTime() in test/bench/session-page.ts: exportSession',
    measure: exportTime,
  },
  {
    name: 'session page, 10,000 messages: the page',
    unit: 'MB',
    target: { op: '<=', limit: 5 },
    how: 'pageAtScale() in test/bench/session-page.ts: writeLongSession, then export-page.ts in a child',
    measure: () => pageTenThousand().then((rows) => rows.size),
  },
  {
    name: 'session page, 10,000 messages: opened in Chromium, median of 5',
    unit: 'ms',
    target: { op: '<', limit: 1000 },
    how: 'the same page, opened 5 times in headless Chromium (playwright-core)',
    measure: () => pageTenThousand().then((rows) => rows.load),
  },
  {
    name: 'session page, 10,000 messages: export',
    unit: 's',
    how: 'the same child process',
    measure: () => pageTenThousand().then((rows) => rows.time),
  },
  {
    name: 'session page, a 200 MB session: export',
    unit: 's',
    how: 'pageAtScale() on 70,000 messages of 5,000-character results',
    measure: () => pageTwoHundred().then((rows) => rows.time),
  },
  {
    name: 'session page, a 200 MB session: export peak RSS',
    unit: 'MB',
    how: 'the same child process',
    measure: () => pageTwoHundred().then((rows) => rows.rss),
  },
  {
    name: 'session page, a 200 MB session: the page',
    unit: 'MB',
    how: 'the same export',
    measure: () => pageTwoHundred().then((rows) => rows.size),
  },
  {
    name: 'session page, a 200 MB session: opened in Chromium, median of 3',
    unit: 'ms',
    how: 'the same page, opened 3 times',
    measure: () => pageTwoHundred().then((rows) => rows.load),
  },
  {
    name: `resume a ${SESSION_FILE_BYTES / 1e9} GB session file: loadSession + resume`,
    unit: 's',
    how: `node --import tsx bench/load-session.ts FILE ${TURN_WINDOW}`,
    measure: () =>
      resumeRow((r, messages) => ({
        value: r.resumeMs / 1000,
        note: `${messages} messages; loadSession ${(r.loadMs / 1000).toFixed(1)} s of it`,
      })),
  },
  {
    name: `resume a ${SESSION_FILE_BYTES / 1e9} GB session file: peak RSS`,
    unit: 'MB',
    how: 'the same child process',
    measure: () =>
      resumeRow((r) => ({
        value: MB(r.resumedKiB),
        note: `after the resume, before the turn; of which ${MB(r.beforeKiB).toFixed(1)} MB was Node + tsx`,
      })),
  },
  {
    name: `resume a ${SESSION_FILE_BYTES / 1e9} GB session file, then one turn: total time`,
    unit: 's',
    how: `the same child: runTask(agent, 'go on'), contextWindow ${TURN_WINDOW.toLocaleString('en')}`,
    measure: () =>
      turnRow((r, messages) => ({
        value: (r.resumeMs + r.turnMs) / 1000,
        note:
          `the turn ${(r.turnMs / 1000).toFixed(1)} s of it, halted ${r.halt}; ${ms(r.firstSummaryMs)} from its ` +
          `start to the first summary request (the first look at all ${messages} messages), then a piece every ` +
          `${ms(r.earlyPieceMs)} over the first 500 and every ${ms(r.latePieceMs)} over the last 500 (medians)`,
      })),
  },
  {
    name: `resume a ${SESSION_FILE_BYTES / 1e9} GB session file, then one turn: summary calls`,
    unit: 'calls',
    how: 'the same child: each piece at most half the window',
    measure: () =>
      turnRow((r) => ({
        value: r.summaries,
        note:
          `${r.compactions} compactions, the largest piece ${r.largestPiece} messages (a piece fits half the ` +
          `window, ${TURN_WINDOW / 2} tokens, by the harness's estimate), ${(r.summarisedTokens / 1e6).toFixed(0)} ` +
          `million tokens summarised in all (its estimate, before long strings are cut); then ${r.replies} reply ("done")`,
      })),
  },
  {
    name: `resume a ${SESSION_FILE_BYTES / 1e9} GB session file, then one turn: peak RSS`,
    unit: 'MB',
    how: 'the same child',
    measure: () =>
      turnRow((r) => ({
        value: MB(r.peakKiB),
        note: `${(MB(r.peakKiB) - MB(r.resumedKiB)).toFixed(0)} MB above the peak after the resume`,
      })),
  },
];

// ---------------------------------------------------------------------------------------------

let textFileRows: Promise<{ first: Measurement; last: Measurement; rss: Measurement }> | undefined;

/** The three read_file rows, on one text file written once. */
function readLargeTextFile() {
  return (textFileRows ??= withTextFile(async (root, name) => {
    const firstWindow = () => read_file.run({ path: name }, { root, seen: new Map() });
    await firstWindow(); // warm-up: the first call also pays for JIT compilation
    const firsts: number[] = [];
    for (let i = 0; i < 5; i++) firsts.push(await timeMs(firstWindow));

    // read_file numbers the lines, so reaching the last window means counting them: `wc -l` is that floor.
    const lastWindow = () => read_file.run({ path: name, offset: LAST_WINDOW }, { root, seen: new Map() });
    const countLines = () => spawnCaptured('wc', ['-l', path.join(root, name)], root);
    const shown = (await lastWindow()).split('\n').at(-1)!; // warm-up, and a check that it is the last window
    if (!shown.startsWith(`${String(TEXT_FILE_LINES).padStart(6)}\t`))
      throw new Error(`read_file at offset ${LAST_WINDOW} ended with ${JSON.stringify(shown)}`);
    const ours: number[] = [];
    const theirs: number[] = [];
    for (let i = 0; i < 3; i++) {
      ours.push(await timeMs(lastWindow));
      theirs.push(await timeMs(countLines));
    }

    const child = path.join('test', 'bench', 'read-window.ts');
    const run = await spawnCaptured(process.execPath, [
      '--import',
      'tsx',
      child,
      path.join(root, name),
      `${LAST_WINDOW}`,
    ]);
    if (run.code !== 0) throw new Error(`read-window.ts exited ${run.code}: ${lastLine(run.output)}`);
    const { beforeKiB, peakKiB } = JSON.parse(run.stdout) as { beforeKiB: number; peakKiB: number };
    return {
      first: spreadOf(firsts),
      last: {
        ...spreadOf(ours.map((ms, i) => ms / theirs[i]!)),
        note:
          `${TEXT_FILE_LINES} lines; read_file at offset ${LAST_WINDOW} (the last 500 lines), median ` +
          `${median(ours).toFixed(0)} ms; wc -l ${median(theirs).toFixed(0)} ms; the file in the page cache`,
      },
      rss: {
        value: MB(peakKiB - beforeKiB),
        note:
          `peak ${MB(peakKiB).toFixed(1)} MB, ` +
          `of which ${MB(beforeKiB).toFixed(1)} MB was Node + tsx before the read`,
      },
    };
  }));
}

let tenThousand: Promise<ReturnType<typeof pageRows>> | undefined;
let twoHundred: Promise<ReturnType<typeof pageRows>> | undefined;

/** The 10,000-message rows share one session and one export, as do the 200 MB rows. */
const pageTenThousand = () => (tenThousand ??= pageAtScale(10_000, 2_000, 5).then(pageRows));
const pageTwoHundred = () => (twoHundred ??= pageAtScale(70_000, 5_000, 3).then(pageRows));

interface ResumeReport {
  failed: string;
  loadMs: number;
  resumeMs: number;
  messages: number;
  beforeKiB: number;
  resumedKiB: number;
  peakKiB: number;
  turnMs: number;
  halt: string;
  accepted: boolean;
  summaries: number;
  compactions: number;
  summarisedTokens: number;
  replies: number;
  largestPiece: number;
  firstSummaryMs: number;
  earlyPieceMs: number;
  latePieceMs: number;
}

let resumed: Promise<{ report: Partial<ResumeReport>; messages: number; failure: string | undefined }> | undefined;

/** One child resumes the generated session and runs one task on it; every resume row reads its report. */
function resumeLargeSession() {
  return (resumed ??= withSessionFile(async (file, messages) => {
    const child = path.join('test', 'bench', 'load-session.ts');
    const run = await spawnCaptured(process.execPath, ['--import', 'tsx', child, file, `${TURN_WINDOW}`]);
    const report = (run.stdout.trim() === '' ? {} : JSON.parse(run.stdout)) as Partial<ResumeReport>;
    const died = run.code !== 0 ? `the child exited ${run.code}: ${lastLine(run.output)}` : undefined;
    return { report, messages, failure: report.failed ?? died };
  }));
}

/** A row of the resume itself: it stands even if the turn after it failed. */
async function resumeRow(measure: (report: ResumeReport, messages: number) => Measurement): Promise<Measurement> {
  const { report, messages, failure } = await resumeLargeSession();
  const peak = report.peakKiB === undefined ? '' : ` (peak RSS ${MB(report.peakKiB).toFixed(0)} MB)`;
  if (report.resumeMs === undefined) throw new Error(`${failure ?? 'no report'}${peak}`);
  if (report.messages !== messages) throw new Error(`resumed ${report.messages} of ${messages} messages`);
  return measure(report as ResumeReport, messages);
}

/** A row of the turn after the resume: it needs the turn to have ended accepted. */
function turnRow(measure: (report: ResumeReport, messages: number) => Measurement): Promise<Measurement> {
  return resumeRow((report, messages) => {
    if (report.turnMs === undefined) throw new Error(report.failed ?? 'no report of the turn');
    if (!report.accepted) throw new Error(`the turn halted ${report.halt}`);
    return measure(report, messages);
  });
}

const ms = (n: number) => `${n.toFixed(n < 10 ? 1 : 0)} ms`;

const lastLine = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter((line) => line.trim() !== '')
    .at(-1) ?? '(no output)';

async function timeMs(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

interface SpawnResult {
  code: number | null;
  ms: number;
  stdout: string;
  /** stdout and stderr interleaved, for error messages. */
  output: string;
}

/** Output is captured, not inherited, so the child's noise never breaks the table. */
function spawnCaptured(command: string, args: string[], cwd = PROJECT_ROOT): Promise<SpawnResult> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (d: Buffer) => ((stdout += d), (output += d)));
    child.stderr.on('data', (d: Buffer) => (output += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, ms: performance.now() - start, stdout, output }));
  });
}

const PASSES: Record<NonNullable<Row['target']>['op'], (value: number, limit: number) => boolean> = {
  '<': (v, l) => v < l,
  '<=': (v, l) => v <= l,
  '>': (v, l) => v > l,
  '>=': (v, l) => v >= l,
};
const OP_SIGN = { '<': '<', '<=': '≤', '>': '>', '>=': '≥' };

function format(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

async function main(): Promise<void> {
  console.log(`bench · node ${process.version} · ${os.cpus().length} cpus · ${new Date().toISOString()}`);
  const table = [['measured', 'figure', 'min-max (runs)', 'target', 'result', 'command / function']];
  const notes: string[] = [];
  const only = process.argv.slice(2).join(' ');
  // One at a time: rows running together would steal each other's cores and skew the times.
  for (const row of ROWS.filter((r) => r.name.includes(only))) {
    const target = row.target ? `${OP_SIGN[row.target.op]} ${row.target.limit} ${row.unit}` : '-';
    try {
      const { value, spread, note } = await row.measure();
      const range = spread ? `${format(spread.min)}-${format(spread.max)} (${spread.runs})` : '';
      const result = row.target === undefined ? 'reported' : PASSES[row.target.op](value, row.target.limit);
      const verdict = result === true ? 'pass' : result === false ? 'MISS' : result;
      table.push([row.name, `${format(value)} ${row.unit}`, range, target, verdict, row.how]);
      if (note !== undefined) notes.push(`${row.name}: ${note}`);
    } catch (error) {
      const skipped = error instanceof RowSkipped;
      table.push([row.name, skipped ? 'skipped' : 'failed', '', target, skipped ? 'skipped' : 'FAILED', row.how]);
      notes.push(`${row.name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const widths = table[0]!.map((_, col) => Math.max(...table.map((cells) => cells[col]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, col) => c.padEnd(widths[col]!)).join(' | ')} |`;
  console.log(line(table[0]!));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const cells of table.slice(1)) console.log(line(cells));
  for (const note of notes) console.log(`  * ${note}`);
}

await main();
