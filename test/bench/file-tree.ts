// list_files on a generated tree of 100,000 empty files, against `find | sort` on the same tree.
// The tree is made once (a few seconds), used for both timings, and always deleted. It has a root
// .gitignore (ignoring nothing in it), so list_files checks every entry against git's rules.
// Paired: each pair times both, in alternating order, so a noisy moment hits both sides of a ratio.

import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { list_files, MAX_LIST_ENTRIES } from '../../tools.ts';
import { type Measurement, median } from './loop.ts';
import { containedRunner, guardedDisk } from '../../hardening/index.ts';

const DIRS = 100;
const FILES_PER_DIR = 1000;
const PAIRS = 9;
/** Rules like a real project's; none matches the generated names, so nothing is left out. */
const GITIGNORE = 'node_modules/\ndist/\nbuild/\n*.log\n*.tmp\n.env\ncoverage/\n';

async function withFileTree<T>(use: (root: string) => Promise<T>): Promise<T> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'bench-tree-')));
  try {
    await writeFile(path.join(root, '.gitignore'), GITIGNORE);
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

/** `find <dir> -mindepth 1 | LC_ALL=C sort` (byte order, as list_files sorts), drained from a pipe;
 *  resolves with the time and line count. */
function timeFindSorted(root: string): Promise<{ ms: number; lines: number }> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn('sh', ['-c', 'find "$1" -mindepth 1 | LC_ALL=C sort', 'sh', root], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let lines = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve({ ms: performance.now() - start, lines }) : reject(new Error(`find | sort exited ${code}`)),
    );
  });
}

async function timeListFiles(root: string): Promise<{ ms: number; output: string }> {
  const start = performance.now();
  const output = await list_files.run({}, { root, seen: new Map(), disk: guardedDisk, runner: containedRunner });
  return { ms: performance.now() - start, output };
}

export async function listFilesVsFind(): Promise<Measurement> {
  const made = performance.now();
  return withFileTree(async (root) => {
    const madeMs = performance.now() - made;
    const entries = 1 + DIRS + DIRS * FILES_PER_DIR;
    // Warm-up, and the checks: both see the whole tree, and list_files returns only the capped list.
    const found = await timeFindSorted(root);
    if (found.lines !== entries) throw new Error(`find listed ${found.lines} entries, expected ${entries}`);
    const { output } = await timeListFiles(root);
    const lines = output.split('\n');
    const countLine = `[${entries - MAX_LIST_ENTRIES} more entries not shown; list a subfolder to see them]`;
    if (lines.length !== MAX_LIST_ENTRIES + 1 || lines.at(-1) !== countLine) {
      throw new Error(
        `list_files returned ${lines.length} lines ending ${JSON.stringify(lines.at(-1))}, ` +
          `expected ${MAX_LIST_ENTRIES} entries and ${JSON.stringify(countLine)}`,
      );
    }
    const ours: number[] = [];
    const theirs: number[] = [];
    const ratios: number[] = [];
    for (let i = 0; i < PAIRS; i++) {
      // Alternate which side goes first, so neither always runs on the warmer cache.
      let listMs: number;
      let findMs: number;
      if (i % 2 === 0) {
        listMs = (await timeListFiles(root)).ms;
        findMs = (await timeFindSorted(root)).ms;
      } else {
        findMs = (await timeFindSorted(root)).ms;
        listMs = (await timeListFiles(root)).ms;
      }
      ours.push(listMs);
      theirs.push(findMs);
      ratios.push(listMs / findMs);
    }
    const ms = (values: number[]) => `${median(values).toFixed(0)} ms`;
    return {
      value: median(ratios),
      note:
        `${entries} entries (${DIRS} dirs × ${FILES_PER_DIR} files and a .gitignore, made in ` +
        `${(madeMs / 1000).toFixed(1)} s); ${PAIRS} pairs in alternating order after a warm-up; ratio per pair ` +
        `min ${Math.min(...ratios).toFixed(2)} / median ${median(ratios).toFixed(2)} / ` +
        `max ${Math.max(...ratios).toFixed(2)}; medians: list_files ${ms(ours)}, find | sort ${ms(theirs)}; ` +
        `list_files output checked: ${MAX_LIST_ENTRIES} entries plus the count line "${countLine}"`,
    };
  });
}
