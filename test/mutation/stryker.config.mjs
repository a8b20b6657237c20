// npm run mutate: mutation testing with StrykerJS. Not part of `npm test` or CI: it takes minutes.
// Stryker changes one thing at a time in the files under `mutate` (a `<` for a `<=`, a condition
// for `true`, a deleted call) and runs the command below: a test must then fail. A mutant that
// survives is a guard no test pins, or a change that cannot matter; the second kind is listed,
// with the reason, in MUTATION-SURVIVORS.md. The report is written to reports/mutation/.
//
// tools.ts is mutated section by section, each with the tests that pin it (the command runs every
// listed test for every mutant, so a section's run pays only for its own tests). The sections are
// read from tools.ts's own banners, so they follow the code as it moves:
//   MUTATE_SECTION=runner npx stryker run test/mutation/stryker.config.mjs   # one: tools, runner, context, fingerprints
//   npm run mutate                # every section in turn, then one score (test/mutation/mutate-tools.mjs)
// Without MUTATE_SECTION: all of tools.ts, every mutant against every section's tests (slower).

import { readdirSync, readFileSync } from 'node:fs';

const lines = readFileSync(new URL('../../tools.ts', import.meta.url), 'utf8').split('\n');
/** The line of the banner that starts with `title`, 1-based; a missing banner is an error, not a silent range. */
const bannerLine = (title) => {
  const index = lines.findIndex((line) => line.startsWith(`// ${title}`));
  if (index < 0) throw new Error(`tools.ts has no banner "// ${title}"`);
  return index; // the banner's rule is the line above: the section ends there
};
const runner = bannerLine('The command runner');
const context = bannerLine('AGENTS.md files');
const fingerprints = bannerLine('Fingerprints of the protected files');

/** Each part of tools.ts and the tests that pin it. */
export const SECTIONS = {
  // defineTool and the schema check, safe_path, protected names, the caps and the three tools.
  tools: {
    lines: `1-${runner - 1}`,
    tests: [
      'test/tools/tools.test.ts',
      'test/tools/tools-*.test.ts',
      'test/tools/paths.test.ts',
      'test/tools/routes-git.test.ts',
      'test/tools/routes-write-race.check.ts',
      'test/loop/guards.test.ts',
      'test/tools/routes-locked-folder.check.ts', // list_files past a locked subfolder
    ],
  },
  // runCommand, its OS sandbox (the allowlist, the overlay, the environment, the trusted programs) and the root check;
  // sandboxChoice and commandOptions (fork-tools: a tool that runs commands; guards-mutants: the gate's choice).
  runner: {
    lines: `${runner}-${context - 1}`,
    tests: [
      'test/sandbox/sandbox.check.ts',
      'test/sandbox/routes-sandbox.check.ts',
      'test/loop/loop.test.ts',
      'test/loop/limits.test.ts',
      'test/tools/fork-tools.test.ts',
      'test/loop/guards-mutants.test.ts',
    ],
  },
  // AGENTS.md: what is read into the system prompt, and what is skipped.
  context: {
    lines: `${context}-${fingerprints - 1}`,
    tests: ['test/tools/routes-agents-md.test.ts', 'test/loop/endurance.test.ts'],
  },
  // --protect: the globs and the fingerprints the gate compares.
  fingerprints: {
    lines: `${fingerprints}-${lines.length}`,
    tests: [
      'test/loop/hardening.test.ts',
      'test/sandbox/routes-sandbox.check.ts',
      'test/tools/tools-gitignore.test.ts',
      'test/sandbox/protect-fingerprints.test.ts',
    ],
  },
};

const chosen = process.env.MUTATE_SECTION;
if (chosen !== undefined && !(chosen in SECTIONS))
  throw new Error(`MUTATE_SECTION must be one of ${Object.keys(SECTIONS).join(', ')}`);
const parts = chosen === undefined ? Object.values(SECTIONS) : [SECTIONS[chosen]];
const testFiles = readdirSync(new URL('..', import.meta.url), { recursive: true }).map((name) => `test/${name}`);
/** The test files a pattern names (`*` within one name); a pattern that names none is an error. */
const filesOf = (pattern) => {
  const matcher = new RegExp(`^${pattern.replaceAll('.', '\\.').replaceAll('*', '[^/]*')}$`);
  const found = testFiles.filter((file) => matcher.test(file)).sort();
  if (found.length === 0) throw new Error(`no test file matches ${pattern}`);
  return found;
};
const TESTS = [...new Set(parts.flatMap((part) => part.tests.flatMap(filesOf)))];
const MUTATE = chosen === undefined ? ['tools.ts'] : [`tools.ts:${SECTIONS[chosen].lines}`];
/** How a mutation run starts its tests: in this process, ended by the first failure. */
export const TEST_COMMAND = 'node --import tsx --test-reporter=./test/mutation/first-failure.mjs';
/** Where a run's reports go: one pair per section, so that the sections' runs add up. */
export const reportOf = (section = 'tools') => ({
  html: `reports/mutation/${section}.html`,
  json: `reports/mutation/${section}.json`,
});

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  mutate: MUTATE,
  // The command runner: each mutant is switched on through an environment variable, and the
  // command's exit code decides. No per-test coverage, so every mutant runs the listed tests, all in
  // one process (test/mutation/mutate-tests.ts imports them, run without `--test`, which would start a second
  // one): one start of Node and tsx per mutant, not one per file. The reporter ends the process at
  // the first failure (test/mutation/first-failure.mjs): a caught mutant costs the tests up to the one that
  // caught it (measured: 1.6 s instead of 7.5 s for one of the runner section's).
  testRunner: 'command',
  commandRunner: { command: `MUTATE_TESTS=${TESTS.join(',')} ${TEST_COMMAND} test/mutation/mutate-tests.ts` },
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
  htmlReporter: { fileName: reportOf(chosen).html },
  jsonReporter: { fileName: reportOf(chosen).json },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
