// `npm test` in app/ runs the program's tests as two processes, this file and second-half.ts, each importing one
// share of the test files under app/test/, found and split as the harness's are (test/suite.ts).

import { importShare } from '../../test/suite.ts';

await importShare(import.meta.dirname, 0);
