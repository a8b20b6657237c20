// list_files honours .gitignore (the root's, nested ones and .git/info/exclude), so build output
// and logs do not crowd the model's view; it says how many entries it left out. `walk` (behind
// protected-file fingerprints) still sees everything.

import assert from 'node:assert/strict';
import { link, mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { list_files } from '../../tools.ts';
import { project } from './tools-project.ts';
import { walk } from '../../hardening/index.ts';

const listing = async (...args: Parameters<typeof list_files.run>) => (await list_files.run(...args)).split('\n');

describe('list_files and .gitignore', () => {
  test('an ignored build folder and log file do not crowd the listing, and the listing says it left them out', async (t) => {
    const p = await project(t, {
      '.gitignore': 'dist/\n*.log\n',
      'src/main.ts': '',
      'README.md': '',
    });
    await writeFile(path.join(p.root, 'debug.log'), 'noise\n');
    // 300 hard links to one empty file: 300 entries at a fraction of the cost of 300 files.
    await mkdir(path.join(p.root, 'dist'));
    await writeFile(path.join(p.root, 'dist', 'chunk0.js'), '');
    await Promise.all(
      Array.from({ length: 299 }, (_, i) =>
        link(path.join(p.root, 'dist', 'chunk0.js'), path.join(p.root, 'dist', `chunk${i + 1}.js`)),
      ),
    );
    assert.deepEqual(await listing({}, p.ctx), [
      '.gitignore',
      'README.md',
      'src/',
      'src/main.ts',
      '[2 entries ignored by .gitignore not shown]',
    ]);
  });

  test('a nested .gitignore applies inside its own folder only', async (t) => {
    const p = await project(t, { 'src/.gitignore': '*.gen.ts\n', 'src/a.gen.ts': '', 'src/a.ts': '', 'b.gen.ts': '' });
    assert.deepEqual(await listing({}, p.ctx), [
      'b.gen.ts',
      'src/',
      'src/.gitignore',
      'src/a.ts',
      '[1 entries ignored by .gitignore not shown]',
    ]);
  });

  test('a negation in a deeper .gitignore brings back a file the root ignores, as in git', async (t) => {
    const p = await project(t, {
      '.gitignore': '*.log\n',
      'logs/.gitignore': '!keep.log\n',
      'logs/keep.log': '',
      'logs/other.log': '',
      'keep.log': '',
    });
    assert.deepEqual(await listing({}, p.ctx), [
      '.gitignore',
      'logs/',
      'logs/.gitignore',
      'logs/keep.log',
      '[2 entries ignored by .gitignore not shown]',
    ]);
  });

  test('an anchored pattern in a nested .gitignore is relative to its own folder', async (t) => {
    const p = await project(t, { 'src/.gitignore': '/gen/\n', 'src/gen/a.ts': '', 'src/lib/gen/b.ts': '' });
    assert.deepEqual(await listing({}, p.ctx), [
      'src/',
      'src/.gitignore',
      'src/lib/',
      'src/lib/gen/',
      'src/lib/gen/b.ts',
      '[1 entries ignored by .gitignore not shown]',
    ]);
  });

  test('a .gitignore can ignore itself, even as the only entry of its folder', async (t) => {
    const p = await project(t, { 'scratch/.gitignore': '*\n', 'a.ts': '' });
    assert.deepEqual(await listing({}, p.ctx), ['a.ts', 'scratch/', '[1 entries ignored by .gitignore not shown]']);
  });

  test('.git/info/exclude hides files like a .gitignore does', async (t) => {
    const p = await project(t, { '.git/info/exclude': 'scratch.md\n', 'scratch.md': '', 'a.ts': '' });
    assert.deepEqual(await listing({}, p.ctx), ['a.ts', '[1 entries ignored by .gitignore not shown]']);
  });

  test("listing a subfolder still honours the root's .gitignore and the folders' between", async (t) => {
    const p = await project(t, {
      '.gitignore': '*.log\n',
      'src/.gitignore': '*.tmp\n',
      'src/lib/a.ts': '',
      'src/lib/a.log': '',
      'src/lib/a.tmp': '',
    });
    assert.deepEqual(await listing({ path: 'src/lib' }, p.ctx), [
      'src/lib/a.ts',
      '[2 entries ignored by .gitignore not shown]',
    ]);
  });

  test('an ignored folder asked for by name is listed: the model wants to see it', async (t) => {
    const p = await project(t, { '.gitignore': 'dist/\n', 'dist/app.js': '', 'dist/app.js.map': '' });
    assert.deepEqual(await listing({ path: 'dist' }, p.ctx), ['dist/app.js', 'dist/app.js.map']);
    assert.deepEqual(await listing({ path: 'dist/' }, p.ctx), ['dist/app.js', 'dist/app.js.map']);
  });

  test('a folder with only ignored entries says so instead of looking empty', async (t) => {
    const p = await project(t, { '.gitignore': '*.log\n', 'logs/a.log': '' });
    assert.deepEqual(await listing({ path: 'logs' }, p.ctx), [
      '(empty folder)',
      '[1 entries ignored by .gitignore not shown]',
    ]);
  });

  test('.git, node_modules and .agent stay skipped even where .gitignore would bring them back', async (t) => {
    const p = await project(t, {
      '.gitignore': '!node_modules/\n!.agent/\n',
      '.git/HEAD': '',
      'node_modules/pkg/index.js': '',
      '.agent/session.jsonl': '',
      'a.ts': '',
    });
    assert.deepEqual(await listing({}, p.ctx), ['.gitignore', 'a.ts']);
  });

  test('patterns match case-sensitively, as git does by default: Debug.log does not hide debug.log', async (t) => {
    const p = await project(t, { '.gitignore': 'Debug.log\n', 'debug.log': '' });
    assert.deepEqual(await listing({}, p.ctx), ['.gitignore', 'debug.log']);
  });

  test('a symlink named .gitignore is not followed, as git does not follow it', async (t) => {
    const p = await project(t, { 'rules.txt': '*.ts\n', 'a.ts': '' });
    await symlink('rules.txt', path.join(p.root, '.gitignore'));
    assert.deepEqual(await listing({}, p.ctx), ['.gitignore', 'a.ts', 'rules.txt']);
  });

  test('walk, behind protected-file fingerprints, still sees the files git ignores', async (t) => {
    const p = await project(t, { '.gitignore': '.env\ndist/\n', '.env': 'KEY=1\n', 'dist/app.js': '', 'a.ts': '' });
    assert.deepEqual(await walk(p.root), ['.env', '.gitignore', 'a.ts', 'dist/', 'dist/app.js']);
  });
});
