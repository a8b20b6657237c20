// npm run mutate: mutation testing with StrykerJS. Not part of `npm test` or CI: it takes minutes.
// Stryker changes one thing at a time in the files under `mutate` (a `<` for a `<=`, a condition
// for `true`, a deleted call) and runs the command below: a test must then fail. A mutant that
// survives is a guard no test pins, or a change that cannot matter; the second kind is listed,
// with the reason, in MUTATION-SURVIVORS.md. The report is written to reports/mutation/.
//
// The code is mutated section by section, each with the tests that pin it (the command runs every
// listed test for every mutant, so a section's run pays only for its own tests). The sections are
// read from the files themselves, so they follow the code as it moves: tools.ts's parts from its
// banners, and one section per hardening file (index.ts, only wiring, excepted) with the tests its
// opening comment names after "Tests:" (its *.test.ts and *.check.ts files; benchmarks are not tests).
//   MUTATE_SECTION=runner npx stryker run test/mutation/stryker.config.mjs   # one section (or a,b together)
//   MUTATE_SECTION=hung-calls,line-endings npm run mutate   # a few, each with its score
//   npm run mutate                # every section in turn, then the scores (test/mutation/mutate.mjs)
// Without MUTATE_SECTION: every section's code, every mutant against every section's tests (slower).

import { readdirSync, readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const lines = readFileSync(new URL('tools.ts', root), 'utf8').split('\n');
/** The line of the banner that starts with `title`, 1-based; a missing banner is an error, not a silent range. */
const bannerLine = (title) => {
  const index = lines.findIndex((line) => line.startsWith(`// ${title}`));
  if (index < 0) throw new Error(`tools.ts has no banner "// ${title}"`);
  return index; // the banner's rule is the line above: the section ends there
};
const runner = bannerLine('The runner seam');
const context = bannerLine('AGENTS.md files');

/** tools.ts's parts and the tests that pin each. */
const TOOLS_SECTIONS = {
  // The tool contract and the schema check, safe_path, the caps, the disk seam and the three tools.
  tools: {
    mutate: `tools.ts:1-${runner - 1}`,
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
  // runCommand (a shell in the project, a timeout, the process group killed), sandboxChoice and commandOptions
  // (fork-tools: a tool that runs commands; guards-mutants: the gate's choice).
  runner: {
    mutate: `tools.ts:${runner}-${context - 1}`,
    tests: [
      'test/sandbox/sandbox.check.ts',
      'test/sandbox/routes-sandbox.check.ts',
      'test/sandbox/command-output.test.ts',
      'test/loop/loop.test.ts',
      'test/loop/limits.test.ts',
      'test/tools/fork-tools.test.ts',
      'test/loop/guards-mutants.test.ts',
    ],
  },
  // AGENTS.md: what is read into the system prompt, and what is skipped.
  context: {
    mutate: `tools.ts:${context}-${lines.length}`,
    tests: ['test/tools/routes-agents-md.test.ts', 'test/loop/endurance.test.ts'],
  },
};

/** The test files a hardening file's opening comment names after "Tests:"; naming none is an error. */
const testsNamedBy = (file) => {
  const text = readFileSync(new URL(file, root), 'utf8').split('\n');
  const header = text
    .slice(
      0,
      text.findIndex((line) => !line.startsWith('//')),
    )
    .join(' ');
  const named = header.split('Tests:')[1]?.match(/(?:app\/)?test\/[\w/.-]+\.(?:test|check)\.ts/g) ?? [];
  if (named.length === 0) throw new Error(`${file}'s opening comment names no test under "Tests:"`);
  return named;
};
/** One section per hardening file, named after it: `hardening/hung-calls.ts` is `hung-calls`. */
const HARDENING_SECTIONS = Object.fromEntries(
  readdirSync(new URL('hardening/', root))
    .filter((name) => name.endsWith('.ts') && name !== 'index.ts')
    .sort()
    .map((name) => [
      name.slice(0, -'.ts'.length),
      { mutate: `hardening/${name}`, tests: testsNamedBy(`hardening/${name}`) },
    ]),
);

/** Every section, and the file each mutates: tools.ts's three, then each hardening file. */
export const SECTIONS = { ...TOOLS_SECTIONS, ...HARDENING_SECTIONS };
/** The file a section's mutants are in (its score is summed per file). */
export const fileOf = (section) => SECTIONS[section].mutate.split(':')[0];

// One section, or several comma-separated (run together: every mutant against all their tests).
const chosen = process.env.MUTATE_SECTION;
const names = chosen?.split(',') ?? Object.keys(SECTIONS);
const unknown = names.filter((name) => !(name in SECTIONS));
if (unknown.length > 0)
  throw new Error(`no section ${unknown.join(', ')}: MUTATE_SECTION is one of ${Object.keys(SECTIONS).join(', ')}`);
const parts = names.map((name) => SECTIONS[name]);
const testFiles = ['test', 'app/test'].flatMap((folder) =>
  readdirSync(new URL(folder, root), { recursive: true }).map((name) => `${folder}/${name}`),
);
/** The test files a pattern names (`*` within one name); a pattern that names none is an error. */
const filesOf = (pattern) => {
  const matcher = new RegExp(`^${pattern.replaceAll('.', '\\.').replaceAll('*', '[^/]*')}$`);
  const found = testFiles.filter((file) => matcher.test(file)).sort();
  if (found.length === 0) throw new Error(`no test file matches ${pattern}`);
  return found;
};
const TESTS = [...new Set(parts.flatMap((part) => part.tests.flatMap(filesOf)))];
const MUTATE = parts.map((part) => part.mutate);
/** How a mutation run starts its tests: in this process, ended by the first failure. */
export const TEST_COMMAND = 'node --import tsx --test-reporter=./test/mutation/first-failure.mjs';
/** Where a run's reports go: one pair per section, so that the sections' runs add up. */
export const reportOf = (section = 'all') => ({
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
  // Under load (other runs on the two cores) a normal run can outlast a tight bound, and a survivor
  // then passes for a timeout: raise it (`--timeoutMS 30000`) on a busy machine, and say so.
  timeoutMS: 10_000,
  reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
  htmlReporter: { fileName: reportOf(chosen).html },
  jsonReporter: { fileName: reportOf(chosen).json },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
