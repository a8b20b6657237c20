// The program's half of test/layout.test.ts: its lines fit a projector, no import goes round in a circle through
// it, and its package.json names the command.

import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { importCircle, importsOf } from '../../test/helpers.ts';

const project = path.join(import.meta.dirname, '..', '..');
const read = (file: string) => readFile(path.join(project, file), 'utf8');

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

/** The program's files: app/ without its tests. */
const programFiles = async () => (await filesUnder('app')).filter((file) => !file.startsWith('app/test/'));

/** Each `import … from '…'` (and `export … from`, and `import('…')`) of `source`: what it names, and from where. */
const importsIn = (source: string) => [
  ...[...source.matchAll(/^(?:import|export)\s+(?:type\s+)?([^;]*?)\s+from\s+'([^']+)'/gms)].map(([, what, from]) => ({
    what: what!,
    from: from!,
  })),
  ...[...source.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].map(([, from]) => ({ what: 'import()', from: from! })),
];

test('no line of the program files is wider than 120 columns, so nothing wraps on a projector', async () => {
  const files = await programFiles();
  const wide: string[] = [];
  for (const file of files) {
    (await read(file)).split('\n').forEach((line, i) => line.length > 120 && wide.push(`${file}:${i + 1}`));
  }
  assert.deepEqual(wide, []);
});

test('no import goes round in a circle through the program, type-only and dynamic imports included', async () => {
  const graph = new Map<string, string[]>();
  for (const file of await filesUnder('')) graph.set(file, importsOf(file, await read(file)));
  assert.equal(importCircle(graph), null);
  assert.ok(graph.has('app/main.ts') && graph.has('agent.ts'), 'the graph holds the program and the harness');
});

test('the program imports nothing outside app/ by path: the harness by its package name, never lessons/ or test/', async () => {
  const outside: string[] = [];
  for (const file of await programFiles()) {
    for (const { from } of importsIn(await read(file))) {
      const resolved = path.normalize(path.join(path.dirname(file), from));
      if (from.startsWith('.') && !resolved.startsWith(`app${path.sep}`)) outside.push(`${file}: ${from}`);
    }
  }
  assert.deepEqual(outside, []);
});

test("the program imports at most 30 of the harness's names, each by name, so its public API stays small", async () => {
  const names = new Set<string>();
  for (const file of await programFiles()) {
    for (const { what, from } of importsIn(await read(file))) {
      if (from !== 'reference-harness' && !from.startsWith('reference-harness/')) continue;
      const listed = /^\{([^}]*)\}$/.exec(what.trim())?.[1];
      assert.ok(listed !== undefined, `${file} imports ${what} from ${from}: name what it takes`);
      for (const name of listed.split(',').map((n) => n.trim().replace(/^type\s+/, '')))
        if (name !== '') names.add(`${from}: ${name.split(/\s+as\s+/)[0]}`);
    }
  }
  assert.ok(names.size > 20 && names.size <= 30, `${names.size} names:\n${[...names].sort().join('\n')}`);
});

test('app/package.json names the program, so `npx harness` runs it', async () => {
  const { bin } = JSON.parse(await read('app/package.json')) as { bin: Record<string, string> };
  assert.deepEqual(bin, { harness: 'bin.mjs' });
  assert.match(await read('app/bin.mjs'), /^#!\/usr\/bin\/env node\n/); // node, not tsx: tsx need not be on the PATH
  assert.match(await read('app/main.ts'), /^#!\/usr\/bin\/env tsx\n/);
});
