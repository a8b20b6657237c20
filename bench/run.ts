// npm run bench: measures, prints one table, and never fails the build. A missed target is a
// finding, not an error; only a benchmark that could not measure makes the exit code non-zero.
// `npm run bench -- WORDS` runs only the rows whose name contains WORDS.
// To add a row, add one entry to ROWS.

import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { read_file } from '../tools.ts';
import { listFilesVsFind } from './file-tree.ts';
import { cachedShare, fixedPromptTokens, parallelReads, prefixStability, tripGrowth, tripMedian } from './loop.ts';
import { withSparseFile } from './sparse-file.ts';

interface Measurement {
  value: number;
  /** Anything a reader needs to trust the figure; printed under the table. */
  note?: string;
}

interface Row {
  /** What is measured. */
  name: string;
  unit: string;
  target: { op: '<' | '<=' | '>' | '>='; limit: number };
  /** The command or function behind the figure, so a reader can reproduce it. */
  how: string;
  measure(): Promise<Measurement>;
}

// Children run from the project root, where `npm test` is defined and `--import tsx` resolves.
const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

const ROWS: Row[] = [
  {
    name: 'npm test wall time',
    unit: 's',
    target: { op: '<=', limit: 10 },
    how: 'npm test',
    async measure() {
      const run = await spawnCaptured('npm', ['test']);
      // A failing suite still took this long; failing the build is the test job's business.
      return { value: run.ms / 1000, ...(run.code !== 0 && { note: `npm test exited ${run.code}` }) };
    },
  },
  {
    name: 'read_file on 1 GiB sparse file, median of 5',
    unit: 'ms',
    target: { op: '<', limit: 50 },
    how: 'read_file.run({ path })',
    measure: () =>
      withSparseFile(async (root, name) => {
        const read = () => read_file.run({ path: name }, { root, seen: new Map() });
        await read(); // warm-up: the first call also pays for JIT compilation and the page cache
        const times: number[] = [];
        for (let i = 0; i < 5; i++) times.push(await timeMs(read));
        return { value: median(times) };
      }),
  },
  {
    name: 'read_file on 1 GiB sparse file, peak RSS',
    unit: 'MB',
    target: { op: '<', limit: 100 },
    how: 'node --import tsx bench/read-sparse.ts <file>',
    measure: () =>
      withSparseFile(async (root, name) => {
        const child = path.join('bench', 'read-sparse.ts');
        const run = await spawnCaptured(process.execPath, ['--import', 'tsx', child, path.join(root, name)]);
        if (run.code !== 0) throw new Error(`read-sparse.ts exited ${run.code}: ${run.output.slice(-500)}`);
        const { beforeKiB, peakKiB } = JSON.parse(run.stdout) as { beforeKiB: number; peakKiB: number };
        const mb = (kib: number) => (kib * 1024) / 1e6;
        return { value: mb(peakKiB), note: `of which ${mb(beforeKiB).toFixed(1)} MB was Node + tsx before the read` };
      }),
  },
  {
    name: '8 read-only 50 ms calls in one reply vs 1 call',
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
    name: 'trip 1,000 vs trip 10 (medians of 990-1000, 5-15)',
    unit: '×',
    target: { op: '<=', limit: 2 },
    how: 'tripGrowth() in bench/loop.ts: same session',
    measure: tripGrowth,
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
    name: 'list_files vs sorted find, 100,000-file tree, median of 9 pairs',
    unit: '×',
    target: { op: '<=', limit: 2 },
    how: 'listFilesVsFind() in bench/file-tree.ts: list_files.run({}) vs find DIR -mindepth 1, LC_ALL=C sort',
    measure: listFilesVsFind,
  },
];

// ---------------------------------------------------------------------------------------------

async function timeMs(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

interface SpawnResult {
  code: number | null;
  ms: number;
  stdout: string;
  /** stdout and stderr interleaved, for error messages. */
  output: string;
}

/** Output is captured, not inherited, so the child's noise never breaks the table. */
function spawnCaptured(command: string, args: string[]): Promise<SpawnResult> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(command, args, { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (d: Buffer) => ((stdout += d), (output += d)));
    child.stderr.on('data', (d: Buffer) => (output += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, ms: performance.now() - start, stdout, output }));
  });
}

const PASSES: Record<Row['target']['op'], (value: number, limit: number) => boolean> = {
  '<': (v, l) => v < l,
  '<=': (v, l) => v <= l,
  '>': (v, l) => v > l,
  '>=': (v, l) => v >= l,
};
const OP_SIGN = { '<': '<', '<=': '≤', '>': '>', '>=': '≥' };

function format(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

async function main(): Promise<number> {
  console.log(`bench · node ${process.version} · ${os.cpus().length} cpus · ${new Date().toISOString()}`);
  const table = [['measured', 'figure', 'target', 'result', 'command / function']];
  const notes: string[] = [];
  let crashed = false;
  // One at a time: rows running together would steal each other's cores and skew the times.
  const only = process.argv.slice(2).join(' ');
  for (const row of ROWS.filter((r) => r.name.includes(only))) {
    const target = `${OP_SIGN[row.target.op]} ${row.target.limit} ${row.unit}`;
    try {
      const { value, note } = await row.measure();
      const pass = PASSES[row.target.op](value, row.target.limit);
      table.push([row.name, `${format(value)} ${row.unit}`, target, pass ? 'pass' : 'MISS', row.how]);
      if (note !== undefined) notes.push(`${row.name}: ${note}`);
    } catch (error) {
      crashed = true;
      table.push([row.name, 'error', target, 'ERROR', row.how]);
      notes.push(`${row.name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const widths = table[0]!.map((_, col) => Math.max(...table.map((cells) => cells[col]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, col) => c.padEnd(widths[col]!)).join(' | ')} |`;
  console.log(line(table[0]!));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const cells of table.slice(1)) console.log(line(cells));
  for (const note of notes) console.log(`  * ${note}`);
  return crashed ? 1 : 0;
}

process.exitCode = await main();
