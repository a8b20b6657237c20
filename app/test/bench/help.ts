// `harness --help` against Claude Code's `claude --help`, paired (issue 31): how long an editor or a person waits
// for the program to answer at all. Claude Code is whatever `claude` is on the PATH, or $CLAUDE_BIN; without one
// the row is skipped, saying so (`npm i --prefix /tmp/cc @anthropic-ai/claude-code`, then
// CLAUDE_BIN=/tmp/cc/node_modules/.bin/claude).

import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { median, type Measurement, RowSkipped, spreadOf } from '../../../test/bench/loop.ts';

const PAIRS = 20;
const BIN = path.join(import.meta.dirname, '..', '..', 'bin.mjs');

/** One `--help` of a command: its wall milliseconds. It must exit 0 and print a usage line. */
function helpMs(command: string, args: string[]): number {
  const started = performance.now();
  const run = spawnSync(command, [...args, '--help'], { encoding: 'utf8' });
  const ms = performance.now() - started;
  if (run.status !== 0 || !/usage/i.test(run.stdout)) throw new Error(`${command} --help: ${run.stderr}`);
  return ms;
}

/** The `claude` to pair against: $CLAUDE_BIN, else the PATH's; without one the row is skipped, saying so. */
export function claudeCode(): string {
  const found = process.env.CLAUDE_BIN ?? spawnSync('sh', ['-c', 'command -v claude'], { encoding: 'utf8' }).stdout;
  if (found.trim() === '') throw new RowSkipped('no Claude Code here: set CLAUDE_BIN, or put `claude` on the PATH');
  return found.trim();
}

export function helpAgainstClaudeCode(): Promise<Measurement> {
  const claude = claudeCode();
  const ours = () => helpMs(process.execPath, [BIN]);
  const theirs = () => helpMs(claude, []);
  ours(); // warm-up: the page cache for both
  theirs();
  const harness: number[] = [];
  const claudes: number[] = [];
  for (let i = 0; i < PAIRS; i++) {
    // Alternated, and each side first in half the pairs, so a drift in the machine's load favours neither.
    if (i % 2 === 0) {
      harness.push(ours());
      claudes.push(theirs());
    } else {
      claudes.push(theirs());
      harness.push(ours());
    }
  }
  return Promise.resolve({
    ...spreadOf(harness.map((ms, i) => ms / claudes[i]!)),
    note:
      `${PAIRS} pairs, alternated; medians: \`node app/bin.mjs --help\` ${median(harness).toFixed(0)} ms, ` +
      `\`${claude} --help\` ${median(claudes).toFixed(0)} ms`,
  });
}
