// The program's half of test/layout.test.ts: its lines fit a projector, no import goes round in a circle through
// it, and its package.json names the command.

import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

const project = path.join(import.meta.dirname, '..', '..');
const read = (file: string) => readFile(path.join(project, file), 'utf8');

/** Every project file an import names: static, type-only, re-exported or dynamic (`import('./x.ts')`). */
function importsOf(file: string, source: string): string[] {
  const specifiers = [
    ...source.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'([^']+)'/gms),
    ...source.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
  ].map((match) => match[1]!);
  const local = specifiers.filter((s) => s.startsWith('.'));
  return [...new Set(local.map((s) => path.normalize(path.join(path.dirname(file), s))))];
}

/** The .ts files under `folder` (node_modules and fixture projects aside), by path from the project root. */
async function filesUnder(folder: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(path.join(project, folder), { withFileTypes: true })) {
    const name = path.join(folder, entry.name);
    if (entry.isDirectory() && !['node_modules', '.git', 'projects', 'tasks', 'example'].includes(entry.name)) {
      files.push(...(await filesUnder(name)));
    } else if (entry.isFile() && entry.name.endsWith('.ts')) files.push(name);
  }
  return files;
}

test('no line of the program files is wider than 120 columns, so nothing wraps on a projector', async () => {
  const files = (await filesUnder('app')).filter((file) => !file.startsWith('app/test/'));
  const wide: string[] = [];
  for (const file of files) {
    (await read(file)).split('\n').forEach((line, i) => line.length > 120 && wide.push(`${file}:${i + 1}`));
  }
  assert.deepEqual(wide, []);
});

test('no import goes round in a circle through the program, type-only and dynamic imports included', async () => {
  const graph = new Map<string, string[]>();
  for (const file of await filesUnder('')) graph.set(file, importsOf(file, await read(file)));
  const done = new Set<string>();
  const visit = (file: string, trail: string[]): void => {
    if (trail.includes(file))
      assert.fail(`an import circle: ${[...trail.slice(trail.indexOf(file)), file].join(' → ')}`);
    if (done.has(file)) return;
    for (const imported of graph.get(file) ?? []) visit(imported, [...trail, file]);
    done.add(file);
  };
  for (const file of graph.keys()) visit(file, []);
  assert.ok(done.has('app/main.ts') && done.has('agent.ts'), 'the walk reached the program and the harness');
});

test('app/package.json names the program, so `npx harness` runs it', async () => {
  const { bin } = JSON.parse(await read('app/package.json')) as { bin: Record<string, string> };
  assert.deepEqual(bin, { harness: 'bin.mjs' });
  assert.match(await read('app/bin.mjs'), /^#!\/usr\/bin\/env node\n/); // node, not tsx: tsx need not be on the PATH
  assert.match(await read('app/main.ts'), /^#!\/usr\/bin\/env tsx\n/);
});
