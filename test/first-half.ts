// `npm test` runs the suite as two processes, this file and second-half.ts, each importing half of the test files:
// Node and tsx start twice instead of once per file. Every file still runs alone too:
// `node --import tsx --test test/x.test.ts`. test/suite.test.ts checks that each test file is in exactly one half.
// Balanced by CPU time (measured with `--test-reporter=dot`, one file at a time), not by count.

import './property.test.ts';
import './sessions.test.ts';
import './evals.test.ts';
import './cli.test.ts';
import './layout.test.ts';
import './session-file.test.ts';
import './tools-details.test.ts';
import './tools-gitignore.test.ts';
import './tools-inputs.test.ts';
import './program-session.test.ts';
import './acp.test.ts';
import './replay.test.ts';
import './acceptance.test.ts';
import './routes-replay-resume.test.ts';
import './routes-write-race.test.ts';
