// The tests `npm run mutate:agent` runs against each mutant of agent.ts's guard sections (stryker.agent.config.mjs):
// the files that pin P1's answering of calls (sessions.test.ts: the parallel reads), P2's gate (sandbox.test.ts: the
// sandbox asked for and missing) and P3's hooks, budgets and stops (limits.test.ts: the window and the stuck model), in
// one process. limits.test.ts also pins P4's compaction in pieces and its failed summary.

import './guards.test.ts';
import './guards-mutants.test.ts';
import './hardening.test.ts';
import './limits.test.ts';
import './loop.test.ts';
import './routes-sandbox.test.ts';
import './endurance.test.ts';
import './sandbox.test.ts';
import './sessions.test.ts';
