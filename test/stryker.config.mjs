// npm run mutate: mutation testing with StrykerJS. Not part of `npm test` or CI: it takes minutes.
// Stryker changes one thing at a time in the files under `mutate` (a `<` for a `<=`, a condition
// for `true`, a deleted call) and runs the command below: a test must then fail. A mutant that
// survives is a guard no test pins, or a change that cannot matter; the second kind is listed,
// with the reason, in MUTATION-SURVIVORS.md. The report is written to reports/mutation/.
//
// To cover more code, add it to `mutate` (a line range such as 'agent.ts:900-980' keeps it to one
// section) and the tests that pin it to TESTS.

const TESTS = ['test/tools.test.ts', 'test/tools-*.test.ts', 'test/paths.test.ts'];

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  mutate: ['tools.ts'],
  // The command runner: each mutant is switched on through an environment variable, and the
  // command's exit code decides. No per-test coverage, so every mutant runs every listed test.
  testRunner: 'command',
  commandRunner: { command: `node --import tsx --test ${TESTS.join(' ')}` },
  coverageAnalysis: 'off',
  // A changed message text is no changed behaviour; the tests match messages, not their wording.
  mutator: { excludedMutations: ['StringLiteral'] },
  // No TypeScript API: TypeScript 7 (the native compiler) has no JS API, which both the type checker
  // plugin and Stryker's tsconfig rewriting call. So no checker (mutants that do not type-check run
  // anyway, under the // @ts-nocheck Stryker adds), and tsconfigFile names no file, so the rewriting
  // is skipped: our tsconfig.json has no `extends` or `references` that would need it.
  checkers: [],
  tsconfigFile: 'no-tsconfig-rewrite.json',
  concurrency: 2,
  timeoutMS: 10_000,
  reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
