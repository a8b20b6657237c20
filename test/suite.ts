// How `npm test` finds and groups the test files: every `*.test.ts` under a folder, found (no list to keep), split
// into two shares of about the same size, each imported into one process: Node and tsx start twice instead of once
// per file (measured: 20 s instead of 10 s). Every file still runs alone too: `node --import tsx --test test/x.test.ts`.

import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

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

/** The files split into `count` shares by size, largest first into the lightest share: bytes stand in for the time a
 *  file takes, so no hand-kept weights go stale. The same files always make the same shares. */
export function shares(files: readonly string[], count: number): string[][] {
  const sized = files.map((file) => ({ file, bytes: statSync(file).size }));
  sized.sort((a, b) => b.bytes - a.bytes || a.file.localeCompare(b.file));
  const groups = Array.from({ length: count }, () => ({ bytes: 0, files: [] as string[] }));
  for (const { file, bytes } of sized) {
    const lightest = groups.reduce((light, group) => (group.bytes < light.bytes ? group : light));
    lightest.bytes += bytes;
    lightest.files.push(file);
  }
  return groups.map((group) => group.files.sort());
}

/** Imports share `index` of two of the test files under `folder`, so their tests run in this process. */
export async function importShare(folder: string, index: number): Promise<void> {
  for (const file of shares(testFiles(folder), 2)[index] ?? []) await import(pathToFileURL(file).href);
}
