// The other half of `npm test`: see first-half.ts.

import './endurance.test.ts';
import './loop.test.ts';
import './lessons.test.ts';
import './anthropic-model.test.ts';
import './fake-api.test.ts';
import './paths.test.ts';
import './hardening.test.ts';
import './tools.test.ts';
import './guards.test.ts';
import './guards-mutants.test.ts';
import './limits.test.ts';
import './sandbox.test.ts';
import './routes-sandbox.test.ts';
import './suite.test.ts';
import './session-page.test.ts';
import './terminal-escapes.test.ts';
import './routes-session-file.test.ts';
import './routes-git.test.ts';
import './routes-agents-md.test.ts';
