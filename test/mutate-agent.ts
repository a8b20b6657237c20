// The tests `npm run mutate:agent` runs against each mutant of agent.ts's guard sections (stryker.agent.config.mjs):
// the files that pin P1's answering of calls (sessions.test.ts: the parallel reads), P2's gate and P3's hooks,
// budgets and stops, in one process.

import './guards.test.ts';
import './guards-mutants.test.ts';
import './hardening.test.ts';
import './loop.test.ts';
import './endurance.test.ts';
import './sessions.test.ts';
