// The tests a mutation run (stryker.config.mjs) runs against each mutant, in one process: one start of Node and tsx
// per mutant instead of one per file. MUTATE_TESTS names them, comma-separated, as paths from the project's root.
// The harness imported by its package name is this copy's files (own-package.mjs), so app/'s tests see the mutants.

import { register } from 'node:module';

register('./own-package.mjs', import.meta.url);
const tests = (process.env.MUTATE_TESTS ?? '').split(',').filter((file) => file !== '');
if (tests.length === 0) throw new Error('MUTATE_TESTS names no test file');
for (const file of tests) await import(new URL(`../../${file}`, import.meta.url).href);
