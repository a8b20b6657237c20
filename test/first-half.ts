// `npm test` runs the tests as two processes, this file and second-half.ts, each importing one share of the test
// files under test/ and each workspace's test/ (test/suite.ts finds and splits them): a new test file runs without
// editing a list.

import { importShare } from './suite.ts';

await importShare(import.meta.dirname, 0);
