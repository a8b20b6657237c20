// The build bin.mjs starts the program from (app/bundle.mjs): made again after any edit or when its files are gone,
// never steered by a project's tsconfig.json, the program's own import.meta.url kept, a build still in use kept. Each
// on a small program of its own in a temporary folder, built by the real esbuild.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freshBuild } from '../bundle.mjs';
import { tempProject } from '../../test/helpers.ts';

/** What the built program's entry exports. */
async function exported(url: URL | undefined): Promise<Record<string, unknown>> {
  assert.ok(url, 'no build');
  return (await import(url.href)) as Record<string, unknown>;
}

describe('the build', () => {
  test('an edited file runs as edited, not as the build made before the edit', async (t) => {
    const root = await tempProject(t, {
      'program/main.ts': "export { word } from './word.ts';\n",
      'program/word.ts': "export const word: string = 'one';\n",
    });
    const [main, folder] = [path.join(root, 'program', 'main.ts'), path.join(root, 'build')];
    assert.equal((await exported(await freshBuild(main, folder))).word, 'one');
    assert.equal((await exported(await freshBuild(main, folder))).word, 'one'); // built once, found again
    await writeFile(path.join(root, 'program', 'word.ts'), "export const word: string = 'three';\n");
    assert.equal((await exported(await freshBuild(main, folder))).word, 'three');
  });

  test("a tsconfig.json above the program's files does not steer its imports", async (t) => {
    // Installed inside a project, the program's files have the project's tsconfig.json above them; its "paths" could
    // send the program's `import 'word'` to a file the model wrote.
    const root = await tempProject(t, {
      'tsconfig.json': JSON.stringify({ compilerOptions: { baseUrl: '.', paths: { word: ['./evil.ts'] } } }),
      'evil.ts': "export const word = 'evil';\n",
      'node_modules/word/package.json': JSON.stringify({ name: 'word', type: 'module', main: 'index.js' }),
      'node_modules/word/index.js': "export const word = 'real';\n",
      'program/main.ts': "export { word } from 'word';\n",
    });
    const built = await freshBuild(path.join(root, 'program', 'main.ts'), path.join(root, 'build'));
    assert.equal((await exported(built)).word, 'real');
  });

  test("the program's own import.meta.url is its file's, not the build's: main.ts finds its package.json by it", async (t) => {
    // Where npm installs it: the program's own files are in node_modules too.
    const installed = path.join('node_modules', '@reference-harness', 'app', 'main.ts');
    const root = await tempProject(t, { [installed]: 'export const url = import.meta.url;\n' });
    const main = path.join(root, installed);
    assert.equal((await exported(await freshBuild(main, path.join(root, 'build')))).url, pathToFileURL(main).href);
  });

  test('a build whose files were removed, its manifest left, is made again rather than failing every start', async (t) => {
    const root = await tempProject(t, { 'program/main.ts': "export const word: string = 'one';\n" });
    const [main, folder] = [path.join(root, 'program', 'main.ts'), path.join(root, 'build')];
    const first = await freshBuild(main, folder);
    await rm(path.dirname(fileURLToPath(first!)), { recursive: true });
    assert.equal((await exported(await freshBuild(main, folder))).word, 'one');
  });

  test('a folder the build cannot be written to leaves the program to run as TypeScript', async (t) => {
    const root = await tempProject(t, { 'program/main.ts': 'export const ok = true;\n', 'a-file': '' });
    assert.equal(
      await freshBuild(path.join(root, 'program', 'main.ts'), path.join(root, 'a-file', 'build')),
      undefined,
    );
  });

  test('a build current for days is not removed when an edit replaces it: a program still running loads its parts', async (t) => {
    const root = await tempProject(t, { 'program/main.ts': "export const word: string = 'one';\n" });
    const [main, folder] = [path.join(root, 'program', 'main.ts'), path.join(root, 'build')];
    const first = await freshBuild(main, folder);
    const firstDir = path.dirname(fileURLToPath(first!));
    const days = new Date(Date.now() - 3 * 24 * 60 * 60 * 1000);
    await utimes(firstDir, days, days); // built three days ago, current until now
    const forgotten = path.join(folder, 'build-0-0-old');
    await mkdir(forgotten);
    await utimes(forgotten, days, days); // replaced three days ago
    await writeFile(main, "export const word: string = 'three';\n");
    assert.equal((await exported(await freshBuild(main, folder))).word, 'three');
    assert.deepEqual([existsSync(firstDir), existsSync(forgotten)], [true, false]);
  });
});
