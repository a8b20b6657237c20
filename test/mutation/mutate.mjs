// npm run mutate: every section of stryker.config.mjs (tools.ts's three, then each hardening file), one
// Stryker run each against the tests that pin it, then a score per section, per file and in total. Faster than
// one run of everything, in which every mutant would run every section's tests. MUTATE_SECTION picks some,
// comma-separated (`MUTATE_SECTION=hung-calls,line-endings npm run mutate`); arguments go to each Stryker run
// (`npm run mutate -- --timeoutMS 30000`).

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { SECTIONS, fileOf, reportOf } from './stryker.config.mjs';

const DETECTED = new Set(['Killed', 'Timeout']);
const UNDETECTED = new Set(['Survived', 'NoCoverage']);

/** A report's counts: Stryker's score is detected over detected and undetected (errors and ignored left out). */
function counts(report) {
  const statuses = Object.values(report.files).flatMap((file) => file.mutants.map((mutant) => mutant.status));
  const count = (status) => statuses.filter((each) => each === status).length;
  const detected = statuses.filter((status) => DETECTED.has(status)).length;
  const undetected = statuses.filter((status) => UNDETECTED.has(status)).length;
  return { valid: detected + undetected, detected, killed: count('Killed'), timeout: count('Timeout'), undetected };
}

const asked = process.env.MUTATE_SECTION?.split(',') ?? Object.keys(SECTIONS); // stryker.config.mjs checks them

const rows = [];
for (const section of asked) {
  const started = Date.now();
  const stryker = ['stryker', 'run', 'test/mutation/stryker.config.mjs', ...process.argv.slice(2)];
  const ran = spawnSync('npx', stryker, { stdio: 'inherit', env: { ...process.env, MUTATE_SECTION: section } });
  if (ran.status !== 0) throw new Error(`the ${section} section's run failed (exit code ${ran.status})`);
  const minutes = (Date.now() - started) / 60_000;
  rows.push({ name: section, minutes, ...counts(JSON.parse(readFileSync(reportOf(section).json, 'utf8'))) });
}

/** The rows added up, under one name. */
const sum = (name, some) => {
  const total = { name, valid: 0, detected: 0, killed: 0, timeout: 0, undetected: 0, minutes: 0 };
  for (const row of some) for (const key of Object.keys(total).slice(1)) total[key] += row[key];
  return total;
};
const line = ({ name, valid, detected, killed, timeout, undetected, minutes }) =>
  `${name}: ${((100 * detected) / valid).toFixed(2)}% (${detected} of ${valid}: ${killed} killed, ` +
  `${timeout} timed out, ${undetected} survived), ${minutes.toFixed(0)} min`;

console.log('\nper section:');
for (const row of rows) console.log(line(row));
console.log('per file:');
const files = [...new Set(asked.map(fileOf))];
for (const file of files)
  console.log(
    line(
      sum(
        file,
        rows.filter((row) => fileOf(row.name) === file),
      ),
    ),
  );
console.log(line(sum('total', rows)));
