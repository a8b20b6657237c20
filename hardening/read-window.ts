// Defends against: a read that never returns or outlives its run (a named pipe blocks until someone
// writes, a device never ends, skipping to a far offset of a 1 GB file takes minutes), a read of a
// file swapped for a link between safe_path's look and the open, and a huge file loaded whole. The
// file is opened once, without blocking; the file opened is checked (Linux's /proc/self/fd); files
// above MAX_EDITABLE_BYTES are read chunk by chunk only as far as the window goes.
// Tests: test/tools/tools-details.test.ts (windows, pipes, huge files),
// test/tools/tools.test.ts (the caps, folders and pipes refused),
// test/tools/routes-read-swap.test.ts, test/tools/read-window-details.test.ts (the caps, chunks
// and the binary sniff at their edges), test/bench/read-window.ts.

import { constants, existsSync } from 'node:fs';
import { open, readlink, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import {
  type FileLines,
  MAX_BYTES,
  MAX_EDITABLE_BYTES,
  MAX_LINES,
  type ToolContext,
  ToolError,
} from '../tools.ts';
import { readablePath } from './repository-data.ts';

/** Whether a path names an open file (Linux's /proc/self/fd/N). */
export const FILES_BY_FD = existsSync('/proc/self/fd');

/** The guarded disk's read: one open, checked; a window of a huge file. */
export async function readWindow(
  file: string,
  offset: number,
  ctx: ToolContext,
): Promise<FileLines> {
  const requested = path.relative(ctx.root, file) || '.';
  await readablePath(ctx, requested);
  const info = await stat(file);
  if (info.isDirectory()) throw new ToolError(`${requested} is a folder; use list_files`);
  if (!info.isFile())
    throw new ToolError(
      `${requested} is not a regular file (a named pipe, socket or device); only files can be read`,
    );
  const handle = await openReadable(ctx, file, requested);
  try {
    // A file small enough to edit is read once, whole: the window, the line count and the hash
    // all come from the same bytes. Read separately, a change in between could pin a version the
    // model never saw.
    const whole = info.size <= MAX_EDITABLE_BYTES ? await handle.readFile() : null;
    const next = whole === null ? chunksFrom(handle, ctx.signal) : chunksOf(whole);
    const window = await lineWindow(next, offset, MAX_LINES + 1);
    if (window === 'binary')
      throw new ToolError(
        `${requested} is a binary file (${info.size} bytes); read_file shows text only`,
      );
    const total = whole === null ? null : countLines(whole);
    return { lines: window.lines, toEnd: window.reachedEnd, size: info.size, total, whole };
  } finally {
    await handle.close();
  }
}

/** Prevents a read that a folder swapped for a link since safe_path looked leads outside the
 *  project (or into `.git`): the file is opened without blocking, and the file it opened is
 *  checked, by the path the kernel gives its descriptor (Linux's /proc/self/fd/N). Elsewhere the
 *  check before the open is all there is. */
export async function openReadable(
  ctx: ToolContext,
  file: string,
  requested: string,
): Promise<FileHandle> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  if (!FILES_BY_FD) return handle;
  try {
    const reached = await readlink(`/proc/self/fd/${handle.fd}`);
    const swapped = 'changed into a link while it was opened, to what the tools do not read';
    await readablePath(ctx, path.relative(ctx.root, reached)).catch(() => {
      throw new ToolError(`${requested} ${swapped}; not read`);
    });
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** A huge file's chunks, read only as far as asked: a 1 GB file is never loaded. Large chunks:
 *  each read waits for a thread of the pool, and with 64 KiB ones that wait was most of the time.
 */
function chunksFrom(handle: FileHandle, signal: AbortSignal | undefined): () => Promise<Buffer> {
  const chunk = Buffer.alloc(1024 * 1024);
  return async () => {
    // Prevents a read that outlives its run: skipping far into a huge file can take minutes.
    if (signal?.aborted)
      throw new ToolError('stopped: the run was interrupted while the file was being read');
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
    // Only the bytes just read: past them, the buffer still holds the previous chunk's.
    return chunk.subarray(0, bytesRead);
  };
}

interface LineWindow {
  lines: string[];
  reachedEnd: boolean;
}

/** One buffer as the only chunk of a file. */
function chunksOf(whole: Buffer): () => Promise<Buffer> {
  let given = false;
  return async () => {
    if (given) return Buffer.alloc(0);
    given = true;
    return whole;
  };
}

/** The lines from `offset` on, at most `limit` of them and MAX_BYTES in all, from a file's chunks
 *  as `next` gives them (an empty chunk at the end; a chunk may be reused once the next is asked
 *  for). 'binary': the file has a NUL byte in its first 8 KiB. */
async function lineWindow(
  next: () => Promise<Buffer>,
  offset: number,
  limit: number,
): Promise<LineWindow | 'binary'> {
  const lines: string[] = [];
  let partial: Buffer[] = [];
  let partialBytes = 0;
  let lineNumber = 1;
  let shownBytes = 0;
  for (let first = true; ; first = false) {
    const data = await next();
    if (first && data.subarray(0, 8192).includes(0)) return 'binary';
    if (data.length === 0) {
      // Only lines from the offset on are gathered, so a partial line here is one to show.
      if (partialBytes > 0) lines.push(Buffer.concat(partial).toString('utf8'));
      return { lines, reachedEnd: true };
    }
    let start = 0;
    // Lines before the window are only counted.
    while (lineNumber < offset) {
      const newline = data.indexOf(10, start);
      if (newline === -1) break;
      lineNumber++;
      start = newline + 1;
    }
    // The rest of this chunk is the start of a line before the window.
    if (lineNumber < offset) continue;
    while (start < data.length) {
      const newline = data.indexOf(10, start);
      const end = newline === -1 ? data.length : newline;
      partial.push(Buffer.from(data.subarray(start, end)));
      partialBytes += end - start;
      if (shownBytes + partialBytes > MAX_BYTES) {
        // Whole lines only; a single line bigger than the cap shows its start (read_file says so).
        if (lines.length > 0) return { lines, reachedEnd: false };
        lines.push(Buffer.concat(partial).subarray(0, MAX_BYTES).toString('utf8'));
        return { lines, reachedEnd: false };
      }
      if (end === data.length) break;
      lines.push(Buffer.concat(partial).toString('utf8').replace(/\r$/, ''));
      shownBytes += partialBytes + 1;
      if (lines.length === limit) {
        const reachedEnd = end + 1 < data.length ? false : (await next()).length === 0;
        return { lines, reachedEnd };
      }
      partial = [];
      partialBytes = 0;
      start = end + 1;
    }
  }
}

/** How many lines `text` has; a last line without a newline counts too. */
function countLines(text: Buffer): number {
  let count = 0;
  for (let i = text.indexOf(10); i !== -1; i = text.indexOf(10, i + 1)) count++;
  return text.length > 0 && text[text.length - 1] !== 10 ? count + 1 : count;
}
