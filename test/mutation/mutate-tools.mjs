// npm run mutate: all of tools.ts, a section at a time, each against the tests that pin it (test/mutation/stryker.config.mjs
// lists them), then one score for the file. Faster than one run of the whole file, in which every mutant would run
// every section's tests. Arguments go to each Stryker run (`npm run mutate -- --concurrency 1`).

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { SECTIONS, reportOf } from './stryker.config.mjs';

const DETECTED = new Set(['Killed', 'Timeout']);
const UNDETECTED = new Set(['Survived', 'NoCoverage']);

/** Stryker's score of one report: detected over detected and undetected (errors and ignored left out). */
function counts(report) {
  const statuses = Object.values(report.files).flatMap((file) => file.mutants.map((mutant) => mutant.status));
  const detected = statuses.filter((status) => DETECTED.has(status)).length;
  return { detected, valid: detected + statuses.filter((status) => UNDETECTED.has(status)).length };
}

const rows = [];
for (const section of Object.keys(SECTIONS)) {
  const started = Date.now();
  const stryker = ['stryker', 'run', 'test/mutation/stryker.config.mjs', ...process.argv.slice(2)];
  const ran = spawnSync('npx', stryker, { stdio: 'inherit', env: { ...process.env, MUTATE_SECTION: section } });
  if (ran.status !== 0) throw new Error(`the ${section} section's run failed (exit code ${ran.status})`);
  const minutes = (Date.now() - started) / 60_000;
  rows.push({ section, minutes, ...counts(JSON.parse(readFileSync(reportOf(section).json, 'utf8'))) });
}
const score = ({ detected, valid }) => `${((100 * detected) / valid).toFixed(2)}% (${detected} of ${valid})`;
const total = { detected: 0, valid: 0, minutes: 0 };
for (const row of rows) {
  console.log(`${row.section}: ${score(row)}, ${row.minutes.toFixed(0)} min`);
  for (const key of Object.keys(total)) total[key] += row[key];
}
console.log(`tools.ts: ${score(total)}, ${total.minutes.toFixed(0)} min`);
