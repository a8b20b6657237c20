// Defends against: a listing that drowns the model in what git ignores (build output, caches), that
// one locked or vanishing subfolder fails whole, or that follows a link out of the project. The
// listing reads .gitignore (and .git/info/exclude) as git does, all subfolders at once, stops
// keeping entries at the cap, and never follows a link; git's data, installed packages and the
// harness's own folder are never entered.
// Tests: test/tools/tools-gitignore.test.ts, test/tools/routes-locked-folder.check.ts,
// test/tools/tools.test.ts and test/tools/tools-details.test.ts (the cap, the order),
// test/tools/routes-read-swap.test.ts (a folder swapped for a link), test/bench/file-tree.ts (the
// speed of a 100,000-file tree).

import { constants, type Dirent } from 'node:fs';
import { lstat, open, readdir, readFile, readlink } from 'node:fs/promises';
import path from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { isInside, type Listing as ToolListing, type ToolContext, ToolError } from '../tools.ts';
import { FILES_BY_FD } from './read-window.ts';
import { readablePath } from './repository-data.ts';

/** Never listed: git's own data, installed packages, and the agent's session transcripts. */
export const SKIPPED_DIRS = new Set(['.git', 'node_modules', '.agent']);

/** The guarded disk's list: git's ignore rules, a cap, unreadable subfolders named. */
export async function listIgnoring(
  dir: string,
  cap: number,
  ctx: ToolContext,
): Promise<ToolListing> {
  const start = await readablePath(ctx, path.relative(ctx.root, dir) || '.');
  const rules = await gitignoreAbove(ctx.root, start);
  const { entries, more, ignored, unreadable } = await listTree(ctx.root, start, rules, cap);
  const notes: string[] = [];
  if (ignored > 0) notes.push(`[${ignored} entries ignored by .gitignore not shown]`);
  if (unreadable.length > 0) notes.push(`[could not read: ${unreadable.join(', ')}]`);
  return { entries, more, notes };
}

/** Every entry under `start`, sorted, relative to the root with "/" separators, folders ending in
 *  "/". Ignored files are included: fingerprints of protected files must see a file git ignores
 *  too. */
export async function walk(root: string, start = root): Promise<string[]> {
  return (await listTree(root, start, null, Infinity)).entries;
}

/** One .gitignore's rules, and the folder they are relative to: "" for the root, else e.g.
 *  "src/". */
interface IgnoreFile {
  readonly base: string;
  readonly rules: Ignore;
}

/** A folder read and sorted out: what it shows, what git ignores in it, and the rules for its
 *  subfolders. */
interface Folder {
  readonly dir: string;
  /** The folder's path relative to the root, ending in "/" ("" for the root). */
  readonly prefix: string;
  /** The .gitignore rules in force in it, its own included, outermost first; null to list ignored
   *  entries too. */
  readonly rules: readonly IgnoreFile[] | null;
  /** Its entries that git does not ignore, relative to the root; sorted while the listing can still
   *  show them. */
  readonly kept: string[];
  /** How many of its entries git ignores. */
  readonly ignored: number;
}

interface Listing {
  /** The project root: no folder outside it is read. */
  readonly root: string;
  /** The first entries in sorted order, up to the cap. */
  readonly entries: string[];
  /** Entries past the cap: counted, not kept. */
  more: number;
  /** Entries left out because git ignores them; an ignored folder counts once, its contents not at
   *  all. */
  ignored: number;
  /** Subfolders listed but not looked into: locked (chmod 000), or gone while it was read. */
  readonly unreadable: string[];
}

/** The entries under `start` as `walk` gives them, less (and counting) what the .gitignore rules
 *  ignore, the first `cap` of them kept. Symlinks are listed but never followed: a link to a folder
 *  outside must not leak its tree. */
async function listTree(
  root: string,
  start: string,
  ignoreFiles: readonly IgnoreFile[] | null,
  cap: number,
): Promise<Listing> {
  const listing: Listing = { root, entries: [], more: 0, ignored: 0, unreadable: [] };
  const base = path.relative(root, start).split(path.sep).join('/');
  await listFolder(
    await readFolder(start, base === '' ? '' : `${base}/`, ignoreFiles, listing, cap),
    listing,
    cap,
  );
  return listing;
}

/** Reads one folder and tells its entries git ignores from the rest. */
async function readFolder(
  dir: string,
  prefix: string,
  inherited: readonly IgnoreFile[] | null,
  listing: Listing,
  cap: number,
): Promise<Folder> {
  const children = await readdirChecked(listing.root, dir);
  let rules = inherited;
  if (rules !== null && children.some((child) => child.name === '.gitignore')) {
    rules = [...rules, ...(await loadIgnoreFile(path.join(dir, '.gitignore'), prefix))];
  }
  // A fresh copy of the rules (compiled, case-sensitive as made) for this folder's entries alone:
  // each copy caches every path it is asked about, and lookups in one cache of a whole tree's paths
  // cost more than the matching itself.
  const local = rules?.map(({ base, rules }) => ({ base, rules: ignore().add(rules) }));
  const kept: string[] = [];
  let ignored = 0;
  for (const child of children) {
    const isFolder = child.isDirectory();
    if (isFolder && SKIPPED_DIRS.has(child.name)) continue;
    // Each folder carries its relative path down, so no entry needs a path.relative of its own.
    const relative = isFolder ? `${prefix}${child.name}/` : prefix + child.name;
    if (local !== undefined && gitIgnores(local, relative)) ignored++;
    else kept.push(relative);
  }
  // Once the listing is full, entries are only counted and their order no longer matters. It only
  // grows, so a folder read while it had room is sorted, perhaps needlessly; one read after it
  // filled never shows.
  if (listing.entries.length < cap) kept.sort();
  return { dir, prefix, rules, kept, ignored };
}

/** Prevents one subfolder that cannot be read (locked, or gone meanwhile) from failing a whole
 *  listing: it is read as empty, and named in `listing.unreadable`. */
function readSubfolder(
  dir: string,
  prefix: string,
  rules: readonly IgnoreFile[] | null,
  listing: Listing,
  cap: number,
): Promise<Folder> {
  return readFolder(dir, prefix, rules, listing, cap).catch(() => {
    listing.unreadable.push(prefix);
    return { dir, prefix, rules, kept: [], ignored: 0 };
  });
}

/** Adds one folder's entries to the listing in sorted order, each subfolder followed by its own
 *  entries. Sorting folder by folder is enough: "src/" and everything in it sort together, next to
 *  "src.ts" and "srcs", so no sort of the whole tree is needed. */
async function listFolder(folder: Folder, listing: Listing, cap: number): Promise<void> {
  const { dir, prefix, rules, kept } = folder;
  listing.ignored += folder.ignored;
  // All subfolders are read at once, each sorted out as soon as it arrives: the reads take a
  // fraction of the time of one by one, and the matching of those already read overlaps the reading
  // of the rest.
  const subfolders = await Promise.all(
    kept.map((relative) =>
      relative.endsWith('/')
        ? readSubfolder(
            path.join(dir, relative.slice(prefix.length, -1)),
            relative,
            rules,
            listing,
            cap,
          )
        : undefined,
    ),
  );
  for (const [i, relative] of kept.entries()) {
    if (listing.entries.length < cap) listing.entries.push(relative);
    else listing.more++;
    const subfolder = subfolders[i];
    if (subfolder !== undefined) await listFolder(subfolder, listing, cap);
  }
}

/** The rules in force at `start`: .git/info/exclude, then the .gitignore of each folder from the
 *  root down to start's parent (start's own is read by the walk). A folder asked for by name is
 *  listed even if it is ignored: the model wants to see it. */
async function gitignoreAbove(root: string, start: string): Promise<IgnoreFile[]> {
  const files = await loadIgnoreFile(path.join(root, '.git', 'info', 'exclude'), '');
  let base = '';
  for (const name of path.relative(root, start).split(path.sep)) {
    if (name === '') continue;
    files.push(...(await loadIgnoreFile(path.join(root, base, '.gitignore'), base)));
    base += `${name}/`;
  }
  return base !== '' && gitIgnores(files, base) ? [] : files;
}

/** A .gitignore (or .git/info/exclude) as rules for the folder `base`; none if it is missing or not
 *  a regular file (git does not follow a symlinked .gitignore either, and a named pipe would
 *  block). */
async function loadIgnoreFile(file: string, base: string): Promise<IgnoreFile[]> {
  const info = await lstat(file).catch(() => undefined);
  if (info?.isFile() !== true) return [];
  // Case-sensitive, as git is unless a repository sets core.ignorecase.
  return [{ base, rules: ignore({ ignorecase: false }).add(await readFile(file, 'utf8')) }];
}

/** Whether git ignores `relative` (from the root; folders end in "/"): as in git, the deepest
 *  .gitignore with a rule about it decides, and a negation ("!keep.log") there brings it back. */
function gitIgnores(files: readonly IgnoreFile[], relative: string): boolean {
  for (let i = files.length - 1; i >= 0; i--) {
    const { base, rules } = files[i]!;
    const { ignored, unignored } = rules.test(relative.slice(base.length));
    if (ignored || unignored) return ignored;
  }
  return false;
}

/** Prevents a listing that a folder swapped for a link since it was found leads outside the
 *  project: on Linux the folder is opened without following a link, its real path checked
 *  by its descriptor (/proc/self/fd/N), and read through that descriptor. Elsewhere the folder's
 *  entries (a link is never followed) are all there is. */
export async function readdirChecked(root: string, dir: string): Promise<Dirent[]> {
  if (!FILES_BY_FD) return await readdir(dir, { withFileTypes: true });
  const flags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
  const swapped = new ToolError(
    `${path.relative(root, dir)} changed into a link while it was listed`,
  );
  const handle = await open(dir, flags).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ELOOP' || error.code === 'ENOTDIR' ? swapped : error;
  });
  try {
    const opened = `/proc/self/fd/${handle.fd}`;
    if (!isInside(root, await readlink(opened))) throw swapped;
    return await readdir(opened, { withFileTypes: true });
  } finally {
    await handle.close();
  }
}
