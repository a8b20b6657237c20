// Issue 47's class 5: a read is checked on the file it opened, not only on the path before opening it, so a folder
// swapped for a link between safe_path's look and the open leads nowhere. The swap is played as already done: the
// path handed to the open is one the check before it would have passed, had the folder not changed.

import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { ToolError } from '../../tools.ts';
import { tempProject } from '../helpers.ts';
import { openReadable } from '../../hardening/index.ts';
import { readdirChecked } from '../../hardening/file-tree.ts';
import { containedRunner, guardedDisk } from '../../hardening/index.ts';

const linuxOnly = process.platform === 'linux' ? false : 'the opened file is named by /proc/self/fd on Linux only';

test(
  'a folder swapped for a link out (or into .git) just before the open: the opened file is checked, and not read',
  { skip: linuxOnly },
  async (t) => {
    const outside = await tempProject(t, { 'secret.txt': 'SECRET\n' });
    const root = await tempProject(t, { 'src/a.txt': 'a\n', '.git/config': '[remote]\n\turl = https://token@x\n' });
    const ctx = { root, seen: new Map<string, string>(), disk: guardedDisk, runner: containedRunner };
    const plain = await openReadable(ctx, path.join(root, 'src', 'a.txt'), 'src/a.txt');
    assert.equal(await plain.readFile('utf8'), 'a\n');
    await plain.close();
    await symlink(outside, path.join(root, 'swapped'));
    await mkdir(path.join(root, 'sub'));
    await symlink(path.join(root, '.git'), path.join(root, 'sub', 'swapped'));
    for (const [file, requested] of [
      [path.join(root, 'swapped', 'secret.txt'), 'swapped/secret.txt'],
      [path.join(root, 'sub', 'swapped', 'config'), 'sub/swapped/config'],
    ] as const) {
      await assert.rejects(openReadable(ctx, file, requested), (error: unknown) => {
        assert.ok(error instanceof ToolError);
        assert.equal(
          error.message,
          `${requested} changed into a link while it was opened, to what the tools do not read; not read`,
        );
        return true;
      });
    }
  },
);

test(
  'a folder swapped for a link out just before it is listed: the opened folder is checked, and not listed',
  { skip: linuxOnly },
  async (t) => {
    const outside = await tempProject(t, { 'secret.txt': 'SECRET\n' });
    const root = await tempProject(t, { 'src/a.txt': 'a\n' });
    assert.deepEqual(
      (await readdirChecked(root, path.join(root, 'src'))).map((entry) => entry.name),
      ['a.txt'],
    );
    await mkdir(path.join(root, 'deep'));
    await symlink(outside, path.join(root, 'swapped'));
    await symlink(outside, path.join(root, 'deep', 'swapped'));
    for (const requested of ['swapped', 'deep/swapped']) {
      await assert.rejects(readdirChecked(root, path.join(root, requested)), (error: unknown) => {
        assert.ok(error instanceof ToolError);
        assert.equal(error.message, `${requested} changed into a link while it was listed`);
        return true;
      });
    }
    // A folder on the way swapped: the last name is a folder, but the real path is outside.
    await symlink(outside, path.join(root, 'via'));
    const { mkdir: make } = await import('node:fs/promises');
    await make(path.join(outside, 'inner'));
    await assert.rejects(readdirChecked(root, path.join(root, 'via', 'inner')), /changed into a link/);
  },
);

test(
  'a folder on the way swapped for a link that loops is refused as a link, not failed with a bare ELOOP',
  { skip: linuxOnly },
  async (t) => {
    const root = await tempProject(t, { 'src/a.txt': 'a\n' });
    await symlink('loop', path.join(root, 'loop'));
    await assert.rejects(readdirChecked(root, path.join(root, 'loop', 'inner')), (error: unknown) => {
      assert.ok(error instanceof ToolError);
      assert.equal(error.message, 'loop/inner changed into a link while it was listed');
      return true;
    });
  },
);

test(
  'a folder gone before it is listed is the plain error it is, not "changed into a link"',
  { skip: linuxOnly },
  async (t) => {
    const root = await tempProject(t, { 'src/a.txt': 'a\n' });
    await assert.rejects(readdirChecked(root, path.join(root, 'gone')), { code: 'ENOENT' });
  },
);

test(
  'a listing closes every folder it opens, so a long session never runs out of descriptors',
  { skip: linuxOnly },
  async (t) => {
    const root = await tempProject(t, { 'src/a.txt': 'a\n' });
    const open = () => readdirSync('/proc/self/fd').length;
    const before = open();
    for (let i = 0; i < 12; i++) await readdirChecked(root, path.join(root, 'src'));
    assert.ok(open() - before < 5, `${open() - before} more folders open after 12 listings`);
  },
);
