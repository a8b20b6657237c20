// The shape a reader relies on: agent.ts in reading order, lines that fit a projector, and core files that
// depend on nothing outside themselves. Each test is named after what a newcomer would trip over.

import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

const project = path.join(import.meta.dirname, '..');
const CORE = ['agent.ts', 'tools.ts', 'scripted-model.ts'];
const read = (file: string) => readFile(path.join(project, file), 'utf8');

test('the loop is on the first screens and the agent ends at the Part II banner, so a reader can stop there', async () => {
  const lines = (await read('agent.ts')).split('\n');
  const runTask = lines.findIndex((line) => line.startsWith('export async function runTask(')) + 1;
  const banner = lines.findIndex((line) => /^\/\/ *Part II\b/.test(line)) + 1;
  assert.ok(runTask > 0 && runTask <= 160, `runTask is defined at line ${runTask}; the aim is by line 160`);
  assert.ok(banner > runTask && banner <= 900, `the Part II banner is at line ${banner}; the aim is by line 900`);
});

test('no line of the core or lesson files is wider than 120 columns, so nothing wraps on a projector', async () => {
  const lessons = (await readdir(path.join(project, 'lessons'))).filter((f) => f.endsWith('.ts'));
  const wide: string[] = [];
  for (const file of [...CORE, ...lessons.map((f) => `lessons/${f}`)]) {
    (await read(file)).split('\n').forEach((line, i) => line.length > 120 && wide.push(`${file}:${i + 1}`));
  }
  assert.deepEqual(wide, []);
});

test('the core files import nothing of the project outside themselves, so lessons and tests can never be needed', async () => {
  for (const file of CORE) {
    const imports = [...(await read(file)).matchAll(/^import .* from '(\.[^']+)';$/gm)].map((m) => m[1]);
    const outside = imports.filter((name) => !CORE.includes(path.normalize(name!)));
    assert.deepEqual(outside, [], `${file} imports ${outside.join(', ')}`);
  }
});
