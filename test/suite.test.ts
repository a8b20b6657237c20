// The suite itself: `npm test` imports the test files into two processes (test/first-half.ts, second-half.ts), so a
// new test file that neither half imports would never run in CI.

import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

const HALVES = ['first-half.ts', 'second-half.ts'];

test('every test file runs in npm test: each is imported by exactly one of the two halves, none is left out', async () => {
  const folder = import.meta.dirname;
  const testFiles = (await readdir(folder)).filter((file) => file.endsWith('.test.ts')).sort();
  const imported: string[] = [];
  for (const half of HALVES) {
    const source = await readFile(path.join(folder, half), 'utf8');
    imported.push(...[...source.matchAll(/^import '\.\/([^']+)';$/gm)].map((match) => match[1]!));
  }
  assert.deepEqual([...imported].sort(), testFiles);
});
