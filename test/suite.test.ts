// The suite itself: `npm test` finds the test files (test/suite.ts) instead of reading a list, so a new test file
// runs in CI without anyone adding it anywhere, and the two processes get shares that take about the same time.

import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { tempProject } from './helpers.ts';
import { COSTS_FILE, measuredCosts, shareFolders, shares, testFiles } from './suite.ts';

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

test('the shares balance by measured time where there is one, and a file not yet measured is priced by its size', async (t) => {
  const folder = await tempProject(t, {
    'big.test.ts': 'x'.repeat(500),
    'slow.test.ts': 'x',
    'new.test.ts': 'x'.repeat(300),
  });
  const [big, slow, unmeasured] = ['big.test.ts', 'slow.test.ts', 'new.test.ts'].map((name) => path.join(folder, name));
  // About 2 ms a byte over the measured two (1,000 ms for 501 bytes): new.test.ts's 300 bytes cost about 600 ms.
  const costs = new Map([
    [big!, 100],
    [slow!, 900],
  ]);
  const [first, second] = shares(testFiles(folder), 2, costs);
  assert.deepEqual(first, [slow], 'the slow small file alone: its measured time, not its size, counts');
  assert.deepEqual(second, [big, unmeasured].sort());
  await writeFile(path.join(folder, COSTS_FILE), JSON.stringify({ 'slow.test.ts': 900 }));
  assert.deepEqual(measuredCosts(folder), new Map([[slow!, 900]]), 'costs.json names files from its own folder');
});

test("the harness's own test files are all found, so none is left out of npm test", () => {
  const found = testFiles(import.meta.dirname).map((file) => path.relative(import.meta.dirname, file));
  const parts = [
    'loop/guards.test.ts',
    'loop/loop.test.ts',
    'sandbox/protect-fingerprints.test.ts',
    'lessons/acceptance.test.ts',
  ];
  for (const file of ['suite.test.ts', ...parts]) assert.ok(found.includes(file), `${file} is not found`);
  const [first, second] = shares(testFiles(import.meta.dirname), 2);
  assert.ok(first!.length > 0 && second!.length > 0, 'both processes get files');
});

test("npm test's two processes hold the harness's own tests, not a workspace's, and a folder named that is not there fails the run", async (t) => {
  const root = await tempProject(t, { 'test/a.test.ts': 'x', 'app/test/b.test.ts': 'x' });
  const [own, app] = [path.join(root, 'test'), path.join(root, 'app/test')];
  await writeFile(path.join(root, 'package.json'), JSON.stringify({ workspaces: ['app'] }));
  assert.deepEqual(shareFolders(own, undefined), [own], "its own folder: the program's tests are test:app's");
  assert.deepEqual(shareFolders(own, `${own},${app}`), [own, app], 'TEST_FOLDERS decides');
  assert.throws(() => shareFolders(own, `${own},${path.join(root, 'ap/test')}`), /TEST_FOLDERS names .*ap\/test/);
});
