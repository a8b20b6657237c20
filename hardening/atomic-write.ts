// Defends against: half a file after a crash mid-write, a private file's new content readable by
// others for a moment, and a write landing outside the project when a folder on its path is
// swapped for a link meanwhile (two sessions on one project). The content goes to a temporary file
// beside the target, made with the file's mode, then renamed over it; on Linux the folders are
// opened one by one from the root without following links, and the file is made in the last one.
// Tests: test/tools/routes-write-race.test.ts, test/tools/tools-details.test.ts (modes, crashes).

import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, realpath, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { isInside, type ToolContext, ToolError } from '../tools.ts';
import { FILES_BY_FD } from './read-window.ts';

/** A crash mid-write must never leave half a file: write a temp file beside it, then rename. */
export async function writeAtomically(
  file: string,
  content: string,
  ctx: ToolContext,
): Promise<void> {
  const mode = await stat(file).then(
    (s) => s.mode,
    () => undefined,
  );
  const folder = await (FILES_BY_FD ? openFolder : checkedFolder)(ctx, path.dirname(file));
  try {
    const name = path.basename(file);
    const temp = path.join(folder.path, `${name}.${randomBytes(6).toString('hex')}.tmp`);
    // Created with the file's mode, so a private file's new content is never readable by others,
    // even briefly; but the umask masks a new file's mode (0o775 would come out 0o755), so it is
    // set again explicitly.
    const handle = await open(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW,
      mode,
    );
    try {
      await handle.writeFile(content);
      if (mode !== undefined) await handle.chmod(mode);
    } finally {
      await handle.close();
    }
    await rename(temp, path.join(folder.path, name)).catch(async (error: unknown) => {
      await rm(temp, { force: true });
      throw error;
    });
    await folder.check(name);
  } finally {
    await folder.close();
  }
}

const NOFOLLOW = constants.O_NOFOLLOW;

/** A folder a file is written in: a path that names it, a check of the written file, and a way to
 *  let it go. */
interface WriteFolder {
  readonly path: string;
  check(name: string): Promise<void>;
  close(): Promise<void>;
}

/** Prevents a write landing outside the project (or in a protected folder) when a folder on its
 *  path is swapped for a symlink meanwhile (two sessions on one project): the folders of `dir`, the
 *  real path safe_path gave, are opened one by one from the root, each without following a link,
 *  and the file is made and renamed in the last one through /proc/self/fd, which names that very
 *  folder wherever a link may point now. A link found on the way was put there since safe_path
 *  looked, and the write is refused. Missing folders are made on the way. */
async function openFolder(ctx: ToolContext, dir: string): Promise<WriteFolder> {
  let handle = await open(ctx.root, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    const names = path.relative(ctx.root, dir).split(path.sep);
    for (const name of names.filter((name) => name !== '')) {
      const next = `/proc/self/fd/${handle.fd}/${name}`;
      await mkdir(next).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
      const opened = await open(next, constants.O_RDONLY | constants.O_DIRECTORY | NOFOLLOW).catch(
        async (error: unknown) => {
          // A file in the way is a plain mistake; anything else (a link, or nothing by now) is the
          // swap.
          const file = await lstat(next).then(
            (info) => info.isFile(),
            () => false,
          );
          throw file ? error : swapped(ctx, dir);
        },
      );
      await handle.close();
      handle = opened;
    }
  } catch (error) {
    await handle.close();
    throw error;
  }
  const opened = handle;
  return { path: `/proc/self/fd/${opened.fd}`, check: async () => {}, close: () => opened.close() };
}

/** Elsewhere (macOS), where no path names an open folder: the folder's real path is checked before
 *  the write and the written file's after it, and a file that landed outside is removed again. This
 *  narrows the race without closing it: forced on Linux under the flipping of
 *  test/tools/routes-write-race.test.ts, 1 to 8 files in 400 landed outside (22 to 30 with no check
 *  at all). Exported so that a test on Linux can try it. */
export async function checkedFolder(ctx: ToolContext, dir: string): Promise<WriteFolder> {
  await mkdir(dir, { recursive: true }); // a new file may be in a new folder
  const where = async (file: string) => {
    const real = await realpath(file);
    return isInside(ctx.root, real) ? null : real;
  };
  if ((await where(dir)) !== null) throw swapped(ctx, dir);
  return {
    path: dir,
    async check(name) {
      const outside = await where(path.join(dir, name));
      if (outside === null) return;
      await rm(outside, { force: true });
      throw swapped(ctx, dir);
    },
    close: async () => {},
  };
}

const swapped = (ctx: ToolContext, dir: string) =>
  new ToolError(
    `${path.relative(ctx.root, dir) || '.'} changed into a link while it was written to; ` +
      'nothing was written',
  );
