// The bench's table: a row is a named figure with its target, measured one row at a time and printed as one
// markdown table with notes. test/bench/run.ts holds the harness's rows, app/test/bench/run.ts the program's.

import { spawn } from 'node:child_process';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { type Measurement, RowSkipped } from './loop.ts';

export interface Row {
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
export const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const MB = (kib: number) => (kib * 1024) / 1e6;

export const ms = (n: number) => `${n.toFixed(n < 10 ? 1 : 0)} ms`;

export const lastLine = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter((line) => line.trim() !== '')
    .at(-1) ?? '(no output)';

export async function timeMs(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

export interface SpawnResult {
  code: number | null;
  ms: number;
  stdout: string;
  /** stdout and stderr interleaved, for error messages. */
  output: string;
}

/** Output is captured, not inherited, so the child's noise never breaks the table. */
export function spawnCaptured(command: string, args: string[], cwd = PROJECT_ROOT): Promise<SpawnResult> {
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

export function format(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

export async function runBench(rows: readonly Row[]): Promise<void> {
  console.log(`bench · node ${process.version} · ${os.cpus().length} cpus · ${new Date().toISOString()}`);
  const table = [['measured', 'figure', 'min-max (runs)', 'target', 'result', 'command / function']];
  const notes: string[] = [];
  const only = process.argv.slice(2).join(' ');
  // One at a time: rows running together would steal each other's cores and skew the times.
  for (const row of rows.filter((r) => r.name.includes(only))) {
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
