// A 1 GiB file that costs almost no disk: some text lines, then a hole. read_file must answer
// from the first window of it without ever walking the gigabyte.

import { mkdtemp, realpath, rm, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const SPARSE_SIZE = 1024 ** 3;
const TEXT_BYTES = 16 * 1024;

/** Runs `use` on a fresh sparse file and always deletes it, even when `use` throws. */
export async function withSparseFile<T>(use: (root: string, name: string) => Promise<T>): Promise<T> {
  // read_file wants a real root: on some systems the temp dir is reached through a symlink.
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'bench-sparse-')));
  try {
    const lines: string[] = [];
    for (let i = 1, bytes = 0; bytes < TEXT_BYTES; i++) {
      const line = `line ${i}: the quick brown fox jumps over the lazy dog\n`;
      lines.push(line);
      bytes += line.length;
    }
    await writeFile(path.join(root, 'sparse.txt'), lines.join(''));
    // Growing a file with truncate adds a hole, not written zeros, so this takes no time or disk.
    await truncate(path.join(root, 'sparse.txt'), SPARSE_SIZE);
    return await use(root, 'sparse.txt');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
