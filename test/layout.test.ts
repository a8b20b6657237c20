// The shape a reader relies on: agent.ts is the whole harness and only it, in reading order, with lines that fit a
// projector; the harness stands alone (nothing of it, its tests or its lessons imports app/, the program, so deleting
// app/ leaves it whole); no import goes round in a circle. Each test is named after what a newcomer would trip over.
// The program's own layout is pinned in app/test/layout.test.ts.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { importCircle, importsOf } from './helpers.ts';

const project = path.join(import.meta.dirname, '..');
const HARDENING = readdirSync(path.join(project, 'hardening'))
  .filter((name) => name.endsWith('.ts'))
  .map((name) => `hardening/${name}`);
const CORE = ['agent.ts', 'tools.ts', 'scripted-model.ts', ...HARDENING];
const read = (file: string) => readFile(path.join(project, file), 'utf8');

// Tools leave these behind when they run (a mutation run's copy of the project among them); .gitignore keeps them
// out of the repository.
const LEFTOVERS = ['.agent', 'reports', '.stryker-tmp'];

/** The harness's own .ts files (node_modules, fixture projects, leftovers and the program in app/ aside), by path
 *  from the project root. */
async function harnessFiles(folder = ''): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(path.join(project, folder), { withFileTypes: true })) {
    const name = path.join(folder, entry.name);
    if (name === 'app') continue;
    const skipped = ['node_modules', '.git', 'projects', 'tasks', 'example', ...LEFTOVERS];
    if (entry.isDirectory() && !skipped.includes(entry.name)) {
      files.push(...(await harnessFiles(name)));
    } else if (entry.isFile() && entry.name.endsWith('.ts')) files.push(name);
  }
  return files;
}

test('no line of agent.ts, tools.ts, scripted-model.ts or the hardening is wider than 100 columns', async () => {
  const wide: string[] = [];
  for (const file of CORE) {
    const lines = (await read(file)).split('\n');
    wide.push(...lines.flatMap((line, i) => (line.length > 100 ? [`${file}:${i + 1}`] : [])));
  }
  assert.deepEqual(wide, []);
});

// The front page says what the harness is, how to run it, the loop, the layout, the lessons and how to fork it; the
// manuals go beside what they describe (app/README.md, test/README.md), counted as `wc -w` counts.
test('README.md is a front page: at most 3,000 words', async () => {
  const words = (await read('README.md')).split(/\s+/).filter(Boolean).length;
  assert.ok(words <= 3_000, `README.md has ${words} words, over 3,000: move a manual beside what it describes`);
});

test("agent.ts imports only tools.ts and the hardening's defaults, and nothing of a terminal: the harness never draws", async () => {
  const source = await read('agent.ts');
  assert.deepEqual(importsOf('agent.ts', source).sort(), ['hardening/index.ts', 'tools.ts']);
  for (const terminal of ['node:readline', 'node:readline/promises', 'node:tty']) {
    assert.ok(!source.includes(`'${terminal}'`), `agent.ts imports ${terminal}`);
  }
  assert.doesNotMatch(source, /\b(parseArgs|styleText|process\.stdout|process\.stdin|console\.)/);
});

test('no line of the core or lesson files is wider than 120 columns, so nothing wraps on a projector', async () => {
  const files = (await harnessFiles()).filter((file) => !file.startsWith('test/'));
  const wide: string[] = [];
  for (const file of files) {
    (await read(file)).split('\n').forEach((line, i) => line.length > 120 && wide.push(`${file}:${i + 1}`));
  }
  assert.deepEqual(wide, []);
});

test('the core files import nothing of the project outside themselves, so lessons and tests can never be needed', async () => {
  for (const file of CORE) {
    const outside = importsOf(file, await read(file)).filter((name) => !CORE.includes(name));
    assert.deepEqual(outside, [], `${file} imports ${outside.join(', ')}`);
  }
});

test('no import goes round in a circle, type-only and dynamic imports included: each file can be read before its users', async () => {
  const graph = new Map<string, string[]>();
  for (const file of await harnessFiles()) graph.set(file, importsOf(file, await read(file)));
  assert.equal(importCircle(graph), null);
  assert.equal(
    importCircle(
      new Map([
        ['a.ts', ['b.ts']],
        ['b.ts', ['a.ts']],
      ]),
    ),
    'a.ts → b.ts → a.ts',
  ); // it can fail
  assert.ok(graph.has('lessons/run.ts') && graph.has('agent.ts'), 'the graph holds the lessons and the harness');
});

test('the top level holds the design card and nothing else: the harness, its tests and lessons, and the program folder if kept', async () => {
  const entries = (await readdir(project)).filter((name) => !['node_modules', '.git'].includes(name)).sort();
  const card = ['package.json', 'package-lock.json', 'tsconfig.json', 'agent.ts', 'tools.ts', 'scripted-model.ts'];
  // app/ is the program, a package of its own: a fork of the harness may delete it.
  const program = entries.includes('app') ? ['app'] : [];
  const expected = [
    ...card,
    'hardening',
    'test',
    'lessons',
    ...program,
    'README.md',
    '.ci',
    '.gitignore',
    '.prettierignore',
  ];
  assert.deepEqual(
    entries.filter((name) => !LEFTOVERS.includes(name)),
    expected.sort(),
  );
});

test("test/ mirrors the harness: a folder per part, and at its top only the suite's own files", async () => {
  const top = await readdir(path.join(project, 'test'), { withFileTypes: true });
  const folders = top.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  assert.deepEqual(folders.sort(), ['bench', 'lessons', 'loop', 'model', 'mutation', 'sandbox', 'tools']);
  const tests = top.filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts')).map((entry) => entry.name);
  assert.deepEqual(tests.sort(), ['layout.test.ts', 'suite.test.ts'], 'a test of a part goes in its folder');
});

test('the harness stands alone: no file of it, its tests or its lessons imports app/, so deleting app/ breaks nothing', async () => {
  const files = await harnessFiles();
  assert.ok(
    files.includes('test/layout.test.ts') && files.includes('lessons/run.ts'),
    'the walk saw test/ and lessons/',
  );
  const intoApp = files.flatMap((file) => {
    const source = readFileSync(path.join(project, file), 'utf8');
    return importsOf(file, source)
      .filter((imported) => imported === 'app' || imported.startsWith(`app${path.sep}`))
      .map((imported) => `${file} → ${imported}`);
  });
  assert.deepEqual(intoApp, []);
  // Nor runs it: a path built to a file in app/ (a spawned main.ts) breaks the same way once app/ is gone.
  const runsApp = files.filter((file) => {
    const code = readFileSync(path.join(project, file), 'utf8').replace(/^\s*(\/\/|\*).*$/gm, '');
    return /path\.join\([^)]*['"]app['"]|['"](\.\.\/)*app\/[\w-]+\.ts['"]/.test(code);
  });
  assert.deepEqual(runsApp, [], 'these build a path into app/');
});

test("package.json holds only the harness's dependencies: the program's are in app/package.json", async () => {
  const manifest = JSON.parse(await read('package.json')) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
    bin?: unknown;
  };
  assert.equal(manifest.bin, undefined, 'the harness command is the program, named by app/package.json');
  const all = { ...manifest.dependencies, ...manifest.devDependencies };
  for (const onlyTheProgram of ['@agentclientprotocol/sdk', 'marked', 'marked-terminal', 'playwright-core'])
    assert.ok(!(onlyTheProgram in all), `${onlyTheProgram} is the program's (app/package.json)`);
});
