// --protect's fingerprints and globs, called directly: which files are fingerprinted, how a file that
// cannot be read is fingerprinted, what a change is reported as, and what an odd glob matches. The
// gate-level tests are in test/loop/hardening.test.ts; these pin the edges it does not reach.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, symlinkSync } from 'node:fs';
import fsPromises, { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { describe, test } from 'node:test';
import { changedFiles } from '../../tools.ts';
import { tempProject } from '../helpers.ts';
import { failure, replaceFs } from '../replace-fs.ts';
import { globMatcher, hashProtected } from '../../hardening/index.ts';

describe('--protect fingerprints', () => {
  test('a protected file added since the start is reported as added, not left out', async (t) => {
    const root = await tempProject(t, { 'test/a.test.js': 'a\n' });
    const before = await hashProtected(root, ['test/**']);
    await writeFile(path.join(root, 'test', 'b.test.js'), 'b\n');
    assert.deepEqual(changedFiles(before, await hashProtected(root, ['test/**'])), ['test/b.test.js (added)']);
    const after = new Map([
      ['a', '1'],
      ['b', '3'],
      ['c', '4'],
    ]);
    assert.deepEqual(
      changedFiles(
        new Map([
          ['a', '1'],
          ['b', '2'],
          ['d', '5'],
        ]),
        after,
      ),
      ['b (changed)', 'd (deleted)', 'c (added)'],
    );
  });

  test('a protected folder that is a link (test -> spec) is walked: an edit of spec/add.test.js changes test/add.test.js, and a link loop ends', async (t) => {
    const root = await tempProject(t, { 'spec/add.test.js': 'expect 5\n' });
    symlinkSync('spec', path.join(root, 'test'));
    symlinkSync('..', path.join(root, 'spec', 'up')); // a loop: spec/up/spec/up/...
    const before = await hashProtected(root, ['test/**']);
    assert.deepEqual([...before.keys()], ['test/add.test.js']);
    await writeFile(path.join(root, 'spec', 'add.test.js'), 'expect -1\n');
    assert.deepEqual(changedFiles(before, await hashProtected(root, ['test/**'])), ['test/add.test.js (changed)']);
  });

  test('--protect "**" fingerprints exactly the files of the project, none that is not there', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'a\n', 'src/b.ts': 'b\n' });
    assert.deepEqual([...(await hashProtected(root, ['**'])).keys()], ['a.txt', 'src/b.ts']);
  });

  test('a glob that names node_modules fingerprints the dot-folders inside it too (node_modules/.bin)', async (t) => {
    const root = await tempProject(t, { 'node_modules/.bin/tool': 'x\n', 'node_modules/pkg/.hidden/y': 'y\n' });
    const files = [...(await hashProtected(root, ['node_modules/**'])).keys()];
    assert.deepEqual(files, ['node_modules/.bin/tool', 'node_modules/pkg/.hidden/y']);
  });

  test("a negated glob that names node_modules opens no skipped folder: git's own files, which change with every commit, are not fingerprinted", async (t) => {
    const root = await tempProject(t, {
      '.git/HEAD': 'ref\n',
      '.agent/log': 'l\n',
      'node_modules/p/i.js': 'i\n',
      'a.txt': 'a\n',
    });
    const files = [...(await hashProtected(root, ['!vendor/node_modules/**'])).keys()];
    assert.deepEqual(files, ['a.txt']);
  });

  test('a broken link under --protect is fingerprinted as unreadable instead of crashing the start and the gate', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'a\n' });
    symlinkSync('gone.txt', path.join(root, 'broken.txt'));
    const hashes = await hashProtected(root, ['**']);
    assert.equal(hashes.get('broken.txt'), 'unreadable: ENOENT');
  });

  test('fingerprints never follow a link out of the project: a link to a file or a named pipe outside is fingerprinted by its target, never opened', async (t) => {
    const outside = await tempProject(t, { 'secret.txt': 'one\n' });
    execFileSync('mkfifo', [path.join(outside, 'pipe')]);
    const root = await tempProject(t, { 'a.txt': 'a\n' });
    symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'secret-link'));
    symlinkSync(path.join(outside, 'pipe'), path.join(root, 'pipe-link'));
    symlinkSync('/proc/self/mem', path.join(root, 'mem'));
    const before = await hashProtected(root, ['**']); // a pipe opened would block here
    assert.equal(before.get('secret-link'), `a link out of the project, to ${path.join(outside, 'secret.txt')}`);
    assert.equal(before.get('mem'), 'a link out of the project, to /proc/self/mem');
    await writeFile(path.join(outside, 'secret.txt'), 'two\n');
    assert.deepEqual(
      changedFiles(before, await hashProtected(root, ['**'])),
      [],
      'what a link out points at is not read',
    );
    assert.match(before.get('a.txt') ?? '', /^[0-9a-f]{64}$/);
  });
});

describe('--protect fingerprints of what cannot be read as it was found', () => {
  const { lstat, open, readdir } = fsPromises;

  test('a protected folder the check locked (chmod 000) reads as its files deleted, instead of failing the gate', async (t) => {
    const root = await tempProject(t, { 'test/a.test.js': 'a\n', 'b.txt': 'b\n' });
    const before = await hashProtected(root, ['**']);
    const locked = path.join(root, 'test');
    replaceFs(t, 'readdir', (dir: string, options: { withFileTypes: true }) =>
      dir === locked ? Promise.reject(failure('EACCES')) : readdir(dir, options),
    );
    assert.deepEqual(changedFiles(before, await hashProtected(root, ['**'])), ['test/a.test.js (deleted)']);
  });

  test('a protected file the harness may not open is fingerprinted as unreadable, instead of crashing the gate', async (t) => {
    const root = await tempProject(t, { 'secret.test.js': 's\n', 'a.txt': 'a\n' });
    replaceFs(t, 'open', (file: string, flags: number) =>
      file.endsWith('secret.test.js') ? Promise.reject(failure('EACCES')) : open(file, flags),
    );
    const hashes = await hashProtected(root, ['**']);
    assert.equal(hashes.get('secret.test.js'), 'unreadable: EACCES');
    assert.match(hashes.get('a.txt') ?? '', /^[0-9a-f]{64}$/);
  });

  test('a protected file deleted between finding it and looking at it is fingerprinted as unreadable, instead of crashing the gate', async (t) => {
    const root = await tempProject(t, { 'gone.test.js': 'g\n' });
    replaceFs(t, 'lstat', (file: string) =>
      file.endsWith('gone.test.js') ? Promise.reject(failure('ENOENT')) : lstat(file),
    );
    assert.equal((await hashProtected(root, ['**'])).get('gone.test.js'), 'unreadable: ENOENT');
  });

  test('a protected file swapped for a named pipe after it was looked at is fingerprinted by its mode, never read', async (t) => {
    const root = await tempProject(t, { 'a.test.js': 'a\n' });
    const pipe = path.join(root, '..', `${path.basename(root)}-pipe`);
    execFileSync('mkfifo', [pipe]);
    t.after(() => fsPromises.rm(pipe, { force: true }));
    replaceFs(t, 'open', (file: string, flags: number) => open(file.endsWith('a.test.js') ? pipe : file, flags));
    assert.match((await hashProtected(root, ['**'])).get('a.test.js') ?? '', /^not a regular file \(mode 10\d{3}\)$/);
  });
});

describe('--protect fingerprints of what is no regular file', () => {
  test('a socket in the project is fingerprinted by its mode, never opened', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'a\n' });
    const server = createServer();
    await new Promise<void>((listening) => server.listen(path.join(root, 'agent.sock'), listening));
    t.after(() => new Promise((closed) => server.close(closed)));
    assert.match((await hashProtected(root, ['**'])).get('agent.sock') ?? '', /^not a regular file \(mode 14\d{4}\)$/);
  });

  test('fingerprinting closes every file it opens, so the gates of a long session never run out of descriptors', async (t) => {
    const files = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`test/f${i}.test.js`, `${i}\n`]));
    const root = await tempProject(t, files);
    const open = () => readdirSync('/proc/self/fd').length;
    const before = open();
    assert.equal((await hashProtected(root, ['test/**'])).size, 12);
    assert.ok(open() - before < 5, `${open() - before} more files open after fingerprinting 12`);
  });
});

describe('--protect globs', () => {
  test('a comment or empty glob protects nothing, instead of crashing the check of every path', () => {
    const matches = globMatcher(['#not a glob', '']);
    assert.deepEqual(['a.js', '#not a glob', '.env'].map(matches), [undefined, undefined, undefined]);
  });

  test('a negated glob protects everything outside it, as minimatch says, dotfiles included', () => {
    const matches = globMatcher(['!dist/**']);
    assert.deepEqual(['src/a.js', '.env', 'dist/a.js'].map(matches), ['!dist/**', '!dist/**', undefined]);
  });
});
