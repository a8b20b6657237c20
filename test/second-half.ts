// The other share of the tests: see first-half.ts.

import { importShare } from './suite.ts';

await importShare(import.meta.dirname, 1);
