// The suite itself: `npm test` finds the test files (test/suite.ts) instead of reading a list, so a new test file
// runs in CI without anyone adding it anywhere, and the two processes get about the same share.

import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { tempProject } from './helpers.ts';
import { shares, testFiles } from './suite.ts';

test('a new test file runs in npm test without editing a list: found at any depth, in exactly one share', async (t) => {
  const folder = await tempProject(t, { 'a.test.ts': 'x'.repeat(500), 'b.test.ts': 'x', 'helper.ts': 'x' });
  await mkdir(path.join(folder, 'tools'));
  await writeFile(path.join(folder, 'tools', 'new.test.ts'), 'x'.repeat(300));
  const found = testFiles(folder);
  assert.deepEqual(
    found.map((file) => path.relative(folder, file)),
    ['a.test.ts', 'b.test.ts', 'tools/new.test.ts'],
  );
  const [first, second] = shares(found, 2);
  assert.deepEqual([...first!, ...second!].sort(), found, 'every file in one share, none in both');
  assert.deepEqual(first, [path.join(folder, 'a.test.ts')], 'the largest file alone, the two smaller together');
});

test("the harness's own test files are all found, so none is left out of npm test", () => {
  const found = testFiles(import.meta.dirname).map((file) => path.relative(import.meta.dirname, file));
  for (const file of ['suite.test.ts', 'guards.test.ts', 'loop.test.ts', 'sandbox.test.ts', 'acceptance.test.ts'])
    assert.ok(found.includes(file), `${file} is not found`);
  const [first, second] = shares(testFiles(import.meta.dirname), 2);
  assert.ok(first!.length > 0 && second!.length > 0, 'both processes get files');
});
