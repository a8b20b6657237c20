// The tests `npm run mutate:agent` runs against each mutant of agent.ts's guard sections (stryker.agent.config.mjs):
// the files that pin P1's answering of calls (sessions.test.ts: the parallel reads), P2's gate (sandbox.test.ts: the
// sandbox asked for and missing) and P3's hooks, budgets and stops (limits.test.ts: the window and the stuck model), in
// one process. limits.test.ts also pins P4's compaction in pieces and its failed summary.

import '../loop/guards.test.ts';
import '../loop/guards-mutants.test.ts';
import '../loop/hardening.test.ts';
import '../loop/limits.test.ts';
import '../loop/loop.test.ts';
import '../sandbox/routes-sandbox.check.ts';
import '../loop/endurance.test.ts';
import '../sandbox/sandbox.check.ts';
import '../loop/sessions.test.ts';
