// list_files on a generated tree of 100,000 empty files, against `find` on the same tree.
// The tree is made once (a few seconds), used for both timings, and always deleted.

import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { list_files, MAX_LIST_ENTRIES } from '../tools.ts';
import { type Measurement, median } from './loop.ts';

const DIRS = 100;
const FILES_PER_DIR = 1000;
const RUNS = 3;

async function withFileTree<T>(use: (root: string) => Promise<T>): Promise<T> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'bench-tree-')));
  try {
    for (let d = 0; d < DIRS; d++) {
      const dir = path.join(root, `dir${String(d).padStart(3, '0')}`);
      await mkdir(dir);
      // One folder's files at a time: enough to keep the disk busy, few enough open handles.
      await Promise.all(
        Array.from({ length: FILES_PER_DIR }, (_, f) =>
          writeFile(path.join(dir, `file${String(f).padStart(4, '0')}.txt`), ''),
        ),
      );
    }
    return await use(root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** `find <dir> -mindepth 1`, its output drained from a pipe; resolves with the time and line count. */
function timeFind(root: string): Promise<{ ms: number; lines: number }> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn('find', [root, '-mindepth', '1'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let lines = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve({ ms: performance.now() - start, lines }) : reject(new Error(`find exited ${code}`)),
    );
  });
}

async function timeListFiles(root: string): Promise<{ ms: number; output: string }> {
  const start = performance.now();
  const output = await list_files.run({}, { root, seen: new Map() });
  return { ms: performance.now() - start, output };
}

export async function listFilesVsFind(): Promise<Measurement> {
  const made = performance.now();
  return withFileTree(async (root) => {
    const madeMs = performance.now() - made;
    const entries = DIRS + DIRS * FILES_PER_DIR;
    // Warm-up, and the checks: both see the whole tree, and list_files returns only the capped list.
    const found = await timeFind(root);
    if (found.lines !== entries) throw new Error(`find listed ${found.lines} entries, expected ${entries}`);
    const { output } = await timeListFiles(root);
    const lines = output.split('\n');
    const countLine = `[${entries - MAX_LIST_ENTRIES} more entries not shown; list a subfolder to see them]`;
    if (lines.length !== MAX_LIST_ENTRIES + 1 || lines.at(-1) !== countLine) {
      throw new Error(
        `list_files returned ${lines.length} lines ending ${JSON.stringify(lines.at(-1))}, expected ${MAX_LIST_ENTRIES} entries and ${JSON.stringify(countLine)}`,
      );
    }
    const ours: number[] = [];
    const theirs: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      ours.push((await timeListFiles(root)).ms);
      theirs.push((await timeFind(root)).ms);
    }
    return {
      value: median(ours) / median(theirs),
      note:
        `${entries} entries (${DIRS} dirs × ${FILES_PER_DIR} files, made in ${(madeMs / 1000).toFixed(1)} s); median of ${RUNS} after a warm-up: ` +
        `list_files ${median(ours).toFixed(0)} ms, find ${median(theirs).toFixed(0)} ms; list_files output checked: ` +
        `${MAX_LIST_ENTRIES} entries plus the count line "${countLine}", ${output.length} characters`,
    };
  });
}
