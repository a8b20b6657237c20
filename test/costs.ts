// `npm run test:costs`: measures how long each test file takes, so test/suite.ts splits npm test's files into shares
// that end together (by size alone, one share took twice the other's time). Each file runs alone, one at a time, the
// fastest of two runs, and its time less that of a file with one empty test that loads the harness (Node, tsx, the
// runner and the harness's modules starting, paid once per share) is written to costs.json in its folder. Run it on
// an idle machine after a test file changes much; a file it has not measured yet is priced by its size.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { COSTS_FILE, testFiles } from './suite.ts';

/** Milliseconds `node --import tsx --test file` takes, the fastest of `runs`. */
function timeOf(file: string, runs: number): number {
  let fastest = Infinity;
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    execFileSync(process.execPath, ['--import', 'tsx', '--test', file], { stdio: 'ignore' });
    fastest = Math.min(fastest, performance.now() - started);
  }
  return fastest;
}

const empty = mkdtempSync(path.join(tmpdir(), 'test-costs-'));
const emptyFile = path.join(empty, 'empty.test.ts');
/** What nearly every test file loads, once per share: the harness and the tests' scaffolding. */
const shared = ['agent.ts', 'tools.ts', 'hardening/index.ts', 'scripted-model.ts', 'test/helpers.ts'].map(
  (file) => `import '${pathToFileURL(path.join(import.meta.dirname, '..', file)).href}';\n`,
);
writeFileSync(emptyFile, `${shared.join('')}import { test } from 'node:test';\ntest('nothing', () => {});\n`);
const startup = timeOf(emptyFile, 3);
rmSync(empty, { recursive: true, force: true });
for (const folder of process.argv.slice(2)) {
  const costs: Record<string, number> = {};
  for (const file of testFiles(path.resolve(folder))) {
    const ms = Math.max(Math.round(timeOf(file, 2) - startup), 1);
    costs[path.relative(path.resolve(folder), file)] = ms;
    console.log(`${String(ms).padStart(6)} ms  ${path.relative(process.cwd(), file)}`);
  }
  writeFileSync(path.join(folder, COSTS_FILE), `${JSON.stringify(costs, null, 2)}\n`);
}
console.log(`(less ${Math.round(startup)} ms each: starting Node, tsx, the runner and the harness)`);
