// npm run mutate:agent: mutation testing of agent.ts's guard code (P1 answering calls, P2 the gate, P3 hooks,
// budgets and stops), with the settings of stryker.config.mjs (read its comments first). A separate config, not
// one run for both files: agent.ts needs other tests than tools.ts, and each mutant runs the whole command, so one
// run would pay for every test file on every mutant. Survivors that cannot matter: test/mutation/MUTATION-SURVIVORS.md.
//
// The line range is read from agent.ts's own banners (`grep -n '^// P' agent.ts`): from P1's to the line before P4's,
// so it follows the sections as they move.

import { readFileSync } from 'node:fs';
import base, { TEST_COMMAND } from './stryker.config.mjs';

const banners = readFileSync(new URL('../../agent.ts', import.meta.url), 'utf8').split('\n');
const lineOf = (part) => banners.findIndex((line) => line.startsWith(`// ${part} — `)) + 1;
const GUARD_SECTIONS = `agent.ts:${lineOf('P1')}-${lineOf('P4') - 1}`;
// The tests that pin those sections, in one process (test/mutation/mutate-agent.ts imports them): one start of Node
// and tsx per mutant instead of one per file (9 s instead of 13 s wall for the first four files), ended by the
// first failing test.
const COMMAND = `${TEST_COMMAND} test/mutation/mutate-agent.ts`;

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  ...base,
  mutate: [GUARD_SECTIONS],
  commandRunner: { command: COMMAND },
  // A mutant that loops (a halt check made false) is cut off at 3 s past 1.5 × the normal run's time: a third of
  // P2's and P3's mutants end that way, so a longer grace only makes the run longer. Run it on an otherwise idle
  // machine: under load a normal run can outlast that bound, and a survivor then passes for a timeout.
  timeoutMS: 3_000,
  // One more than the cores: the command spends half its wall time waiting on timers and child processes
  // (measured: 4.2 s of CPU in 8.9 s), so a third runner fills the waits.
  concurrency: 3,
  htmlReporter: { fileName: 'reports/mutation-agent/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation-agent/mutation.json' },
};
