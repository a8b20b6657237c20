// npm run bench: measures the harness, prints one table, and never fails the build. A missed target is a finding,
// and a row that could not measure says why in the table; neither makes the exit code non-zero. The program's rows
// (the session file, the page, resuming a large session) are app/test/bench/run.ts: npm run bench:app.
// Every ratio is paired: its two sides are measured in the same run, alternated, and the table gives the median of
// the per-pair ratios with their min and max. To add a row, add one entry to ROWS.
// `npm run bench -- WORDS` runs only the rows whose name contains WORDS.

import path from 'node:path';
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
  spreadOf,
  tripMedian,
  tripRatioAt40k,
} from './loop.ts';
import { sandboxOverhead } from './sandbox.ts';
import { stuckTripRatio } from './stuck.ts';
import { format, lastLine, MB, type Row, runBench, spawnCaptured, timeMs } from './table.ts';
import { TEXT_FILE_LINES, withTextFile } from './text-file.ts';
import { containedRunner, guardedDisk } from '../../hardening/index.ts';

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
    name: 'verify gate in the OS sandbox, 10,000-file node_modules: time added to `node test.js`, 20 pairs',
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
];

// ---------------------------------------------------------------------------------------------

let textFileRows: Promise<{ first: Measurement; last: Measurement; rss: Measurement }> | undefined;

/** The three read_file rows, on one text file written once. */
function readLargeTextFile() {
  return (textFileRows ??= withTextFile(async (root, name) => {
    const firstWindow = () =>
      read_file.run({ path: name }, { root, seen: new Map(), disk: guardedDisk, runner: containedRunner });
    await firstWindow(); // warm-up: the first call also pays for JIT compilation
    const firsts: number[] = [];
    for (let i = 0; i < 5; i++) firsts.push(await timeMs(firstWindow));

    // read_file numbers the lines, so reaching the last window means counting them: `wc -l` is that floor.
    const lastWindow = () =>
      read_file.run(
        { path: name, offset: LAST_WINDOW },
        { root, seen: new Map(), disk: guardedDisk, runner: containedRunner },
      );
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

await runBench(ROWS);
