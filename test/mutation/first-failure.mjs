// The test reporter of a mutation run (stryker.config.mjs): it ends the process at the first failing test, so a
// mutant that a test catches costs that test's time, not the whole list's. It prints the failure on stderr (what
// caught the mutant) and nothing else; a run with no failure ends as usual, exit code 0.

export default async function* firstFailure(source) {
  for await (const event of source) {
    if (event.type !== 'test:fail' || event.data.todo || event.data.skip) continue;
    const { name, details } = event.data;
    process.stderr.write(`failed: ${name}\n${details?.error?.message ?? ''}\n`);
    process.exit(1);
  }
  yield '';
}
