// A resolve hook for a mutation run (test/mutation/mutate-tests.ts registers it): the harness imported by its
// package name (app/'s tests and the app code they run: `reference-harness`, `reference-harness/tools`) is this
// copy's files, the ones with the mutants in them. Without it the name goes through node_modules/reference-harness,
// a link to `..` that in Stryker's sandbox (node_modules linked from the project) is the unmutated project.

import { readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const { name, exports } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));

/** The exports map's entry for a specifier of this package (`.`, `./tools`), or undefined for any other. */
const exportOf = (specifier) => {
  if (specifier === name) return exports['.'];
  if (specifier.startsWith(`${name}/`)) return exports[`.${specifier.slice(name.length)}`];
  return undefined;
};

export async function resolve(specifier, context, next) {
  const target = exportOf(specifier);
  return next(target === undefined ? specifier : new URL(target, root).href, context);
}
