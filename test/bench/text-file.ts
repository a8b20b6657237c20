// A real 1 GiB text file of numbered, equal-length lines, for the read_file rows: its first window costs a few
// reads, its last window a scan of the whole file (read_file numbers lines, so it must count them to get there).
// Written once per benchmark run (a few seconds; the page cache keeps it) and always deleted.

import { open, mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const TEXT_FILE_BYTES = 1024 ** 3;
const line = (n: number) => `line ${String(n).padStart(10, '0')}: the quick brown fox jumps over the lazy dog\n`;
const LINE_BYTES = line(1).length;
/** Whole lines only, so the file is a hair under 1 GiB. */
export const TEXT_FILE_LINES = Math.floor(TEXT_FILE_BYTES / LINE_BYTES);

/** Runs `use` with a fresh text file (root, name) and deletes it afterwards, even when `use` throws. */
export async function withTextFile<T>(use: (root: string, name: string) => Promise<T>): Promise<T> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'bench-text-')));
  try {
    const file = await open(path.join(root, 'big.txt'), 'w');
    try {
      const perChunk = Math.floor((1024 * 1024) / LINE_BYTES);
      for (let n = 1; n <= TEXT_FILE_LINES;) {
        let chunk = '';
        for (const end = Math.min(n + perChunk, TEXT_FILE_LINES + 1); n < end; n++) chunk += line(n);
        await file.write(chunk);
      }
    } finally {
      await file.close();
    }
    return await use(root, 'big.txt');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
