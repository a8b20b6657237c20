// A test's way to make one fs/promises call fail, or do something first, for one path: it orders, without timing,
// what only a race or an unprivileged user meets (root opens a file chmod 000). Used by the fingerprints' and the
// atomic write's tests.

import type { TestContext } from 'node:test';
import fsPromises from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';

type Replaced = 'lstat' | 'mkdir' | 'open' | 'readdir' | 'readFile' | 'rename' | 'writeFile';

/** Puts `replacement` in the place of fs/promises' `name` for the rest of the test: a built-in's named imports
 *  follow its module once synced, so the code under test sees it too. */
export function replaceFs(t: TestContext, name: Replaced, replacement: (...args: never[]) => unknown): void {
  const replaced = t.mock.method(fsPromises, name, replacement);
  syncBuiltinESMExports();
  t.after(() => {
    replaced.mock.restore();
    syncBuiltinESMExports();
  });
}

/** The error a failed system call rejects with, its code set. */
export const failure = (code: string) => Object.assign(new Error(`${code} (simulated)`), { code });
