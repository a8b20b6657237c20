// Defends against: "silent green" by a change the gate cannot see (an uncontained check, or a
// tool, that rewrites a --protect'ed test), and a fingerprint that hangs or reads outside the
// project. Every protected file is fingerprinted at the session's start and at each gate; a link is
// followed only to a file inside the root, and only regular files are opened, without blocking.
// Tests: test/sandbox/protect-fingerprints.test.ts, test/loop/hardening.test.ts ("protected
// files"), test/sandbox/routes-sandbox.check.ts, test/tools/tools-gitignore.test.ts.

import { createHash } from 'node:crypto';
import { constants, type Dirent } from 'node:fs';
import { lstat, open, readdir, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';
import { Minimatch } from 'minimatch';
import { isInside, type ToolContext } from '../tools.ts';
import { SKIPPED_DIRS } from './file-tree.ts';

/** The guarded disk's fingerprints. */
export const fingerprintsOf = (globs: readonly string[], ctx: ToolContext) =>
  hashProtected(ctx.root, globs);

/** Fingerprints every protected file, so the gate can tell whether one changed by any means. */
export async function hashProtected(
  root: string,
  globs: readonly string[],
): Promise<Map<string, string>> {
  const hashes = new Map<string, string>();
  if (globs.length === 0) return hashes;
  const protectedBy = globMatcher(globs);
  const files = (await filesGlobsReach(root, globs)).filter(
    (file) => protectedBy(file) !== undefined,
  );
  for (const file of files.sort()) hashes.set(file, await fingerprint(root, path.join(root, file)));
  return hashes;
}

/** Every file of the project ("/"-separated; a link to a folder inside the root is walked, unless
 *  it leads back up), git's ignored ones included, and
 *  inside node_modules, .git and .agent only as far as a glob that names the folder can match:
 *  "node_modules/pkg/**" walks pkg alone, and "test/**" never enters node_modules. A folder it
 *  cannot read counts as empty, so a protected file the check locked away is "deleted". */
async function filesGlobsReach(root: string, globs: readonly string[]): Promise<string[]> {
  const naming = [...SKIPPED_DIRS].flatMap((name) =>
    globs
      .filter((glob) => glob.split('/').includes(name))
      .map((glob) => new Minimatch(glob, { dot: true }))
      .filter((pattern) => !pattern.negate),
  );
  const files: string[] = [];
  const visit = async (
    dir: string,
    prefix: string,
    guarded: boolean,
    above: readonly string[] = [],
  ): Promise<void> => {
    // A link to a folder it is inside of (spec/up -> ..) would walk forever: the walk ends there.
    const real = await realpath(dir).catch(() => dir);
    if (above.includes(real)) return;
    const chain = [...above, real];
    // Prevents the gate from throwing (a rejected run) on a folder locked or gone meanwhile.
    const children = await readdir(dir, { withFileTypes: true }).catch(() => []);
    await Promise.all(
      children.map(async (child) => {
        const relative = prefix + child.name;
        const folder = child.isDirectory() || (await linkToFolderInside(root, dir, child));
        if (!folder) return void files.push(relative);
        const inGuarded = guarded || SKIPPED_DIRS.has(child.name);
        if (!inGuarded || naming.some((pattern) => pattern.match(relative, true)))
          await visit(path.join(dir, child.name), `${relative}/`, inGuarded, chain);
      }),
    );
  };
  await visit(root, '', false);
  return files;
}

/** Prevents a protected folder that is a link (test -> spec) from hiding its files: the gate would
 *  fingerprint the link alone, and an edit of spec/a.test.js would pass as unseen. A link to a
 *  folder inside the root is walked under its own name; one out of the root never is. */
async function linkToFolderInside(root: string, dir: string, child: Dirent): Promise<boolean> {
  if (!child.isSymbolicLink()) return false;
  const real = await realpath(path.join(dir, child.name)).catch(() => null);
  if (real === null || !isInside(root, real)) return false;
  return (await lstat(real)).isDirectory();
}

const compiledGlobs = new WeakMap<readonly string[], (file: string) => string | undefined>();

/** The --protect globs, compiled once per list (so once per session) rather than once per file: the
 *  gate tests every file of the project. Returns the first glob a "/"-separated path matches;
 *  dotfiles match too (`.env`). A regular expression turns most paths away at once; minimatch's own
 *  match() confirms the few it lets through, so the answer is exactly minimatch's (the expression
 *  is looser: "test/**" also takes a file named "test"). */
export function globMatcher(globs: readonly string[]): (file: string) => string | undefined {
  let matcher = compiledGlobs.get(globs);
  if (matcher === undefined) {
    const compiled = globs.map((glob) => {
      const pattern = new Minimatch(glob, { dot: true });
      // false for a comment or an empty glob; a negated expression for a negated one
      const loose = pattern.makeRe();
      return {
        glob,
        matches: (file: string) => (loose === false || loose.test(file)) && pattern.match(file),
      };
    });
    matcher = (file) => compiled.find(({ matches }) => matches(file))?.glob;
    compiledGlobs.set(globs, matcher);
  }
  return matcher;
}

/** Prevents a hang at startup or at the gate, and a fingerprint that reads outside the project:
 *  a link is followed only to a file inside the root (one out is fingerprinted by where it points,
 *  never opened), and only a regular file is opened, without blocking and without following a link
 *  swapped in meanwhile; anything else is fingerprinted by its mode, so a named pipe is never
 *  opened. A broken link or an unreadable file still gets a fingerprint: the gate must not
 *  crash. */
async function fingerprint(root: string, file: string): Promise<string> {
  const unreadable = (error: NodeJS.ErrnoException) => `unreadable: ${error.code}`;
  const real = await realpath(file).catch(unreadable);
  if (real.startsWith('unreadable')) return real;
  if (!isInside(root, real)) return `a link out of the project, to ${await readlink(file)}`;
  const stats = await lstat(real).catch(unreadable);
  if (typeof stats === 'string') return stats;
  if (!stats.isFile()) return `not a regular file (mode ${stats.mode.toString(8)})`;
  const flags = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;
  const handle = await open(real, flags).catch(unreadable);
  if (typeof handle === 'string') return handle;
  try {
    const opened = await handle.stat();
    if (!opened.isFile()) return `not a regular file (mode ${opened.mode.toString(8)})`;
    const bytes = await handle.readFile().catch(unreadable);
    return typeof bytes === 'string' ? bytes : createHash('sha256').update(bytes).digest('hex');
  } finally {
    await handle.close();
  }
}
