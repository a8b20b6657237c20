// How `npm test` finds and groups the test files: every `*.test.ts` under a folder, found (no list to keep), split
// into two shares that take about the same time, each imported into one process: Node and tsx start twice instead
// of once per file (measured: 20 s instead of 10 s). Every file still runs alone too:
// `node --import tsx --test test/x.test.ts`.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { sandboxProblem } from '../hardening/index.ts';

/** Every `*.test.ts` under `folder`, at any depth (node_modules and fixture projects aside), sorted. */
export function testFiles(folder: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const file = path.join(folder, entry.name);
    if (entry.isDirectory() && !['node_modules', 'projects'].includes(entry.name)) found.push(...testFiles(file));
    else if (entry.isFile() && entry.name.endsWith('.test.ts')) found.push(file);
  }
  return found.sort();
}

/** The file, beside the tests, that `npm run test:costs` writes: each test file's measured milliseconds. */
export const COSTS_FILE = 'costs.json';

/** The measured cost of each file under `folder` (absolute path → ms), from its costs.json; none without one. */
export function measuredCosts(folder: string): Map<string, number> {
  const file = path.join(folder, COSTS_FILE);
  if (!existsSync(file)) return new Map();
  const costs = JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>;
  return new Map(Object.entries(costs).map(([relative, ms]) => [path.join(folder, relative), ms]));
}

/** The files split into `count` shares by cost, dearest first into the cheapest share. A file's cost is its measured
 *  time where `costs` has one, else its size priced at the measured files' average time per byte (bytes alone when
 *  none is measured): a new file is guessed, a measured one is known, and a stale figure only unbalances the shares,
 *  never leaves a file out. The same files and costs always make the same shares. */
export function shares(files: readonly string[], count: number, costs = new Map<string, number>()): string[][] {
  const sized = files.map((file) => ({ file, bytes: statSync(file).size, ms: costs.get(file) }));
  const measured = sized.filter((entry) => entry.ms !== undefined);
  const msPerByte =
    measured.length === 0
      ? 1
      : measured.reduce((sum, entry) => sum + entry.ms!, 0) / measured.reduce((sum, entry) => sum + entry.bytes, 0);
  const costed = sized.map(({ file, bytes, ms }) => ({ file, cost: ms ?? bytes * msPerByte }));
  costed.sort((a, b) => b.cost - a.cost || a.file.localeCompare(b.file));
  const groups = Array.from({ length: count }, () => ({ cost: 0, files: [] as string[] }));
  for (const { file, cost } of costed) {
    const cheapest = groups.reduce((cheap, group) => (group.cost < cheap.cost ? group : cheap));
    cheapest.cost += cost;
    cheapest.files.push(file);
  }
  return groups.map((group) => group.files.sort());
}

/** The folders whose tests a share holds: those `TEST_FOLDERS` names (comma-separated, from the working folder),
 *  else `own` alone. A package's `npm test` is its own tests: the program's (app/test/) run in `npm run test:app`,
 *  a part of `npm run test:all`, so that deleting app/ leaves the harness's `npm test` whole. */
export function shareFolders(own: string, named: string | undefined): string[] {
  if (named === undefined) return [own];
  const folders = named.split(',').map((folder) => path.resolve(folder));
  const missing = folders.find((folder) => !existsSync(folder));
  if (missing !== undefined) throw new Error(`TEST_FOLDERS names ${missing}, which does not exist`);
  return folders;
}

/** Imports share `index` of two of the test files under the share's folders, so their tests run in this process. */
export async function importShare(own: string, index: number): Promise<void> {
  // Prevents a file's tests from running inside another file's test, then being cancelled with it: the files import
  // one after another while the first ones' tests already run, and a test registered after a top-level await
  // belongs to the test in which the awaited promise was made. Several files await sandboxProblem's cached answer
  // at the top (for their skips), so it is made here first, outside every test.
  await sandboxProblem();
  const folders = shareFolders(own, process.env.TEST_FOLDERS);
  const costs = new Map(folders.flatMap((folder) => [...measuredCosts(folder)]));
  const files = shares(folders.flatMap(testFiles), 2, costs)[index] ?? [];
  for (const file of files) await import(pathToFileURL(file).href);
}
