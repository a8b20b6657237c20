// The other share of the harness's tests: see first-half.ts.

import { importShare } from './suite.ts';

await importShare(import.meta.dirname, 1);
