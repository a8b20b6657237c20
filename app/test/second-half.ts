// The other share of the program's tests: see first-half.ts.

import { importShare } from '../../test/suite.ts';

await importShare(import.meta.dirname, 1);
