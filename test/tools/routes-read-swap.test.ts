// Issue 47's class 5: a read is checked on the file it opened, not only on the path before opening it, so a folder
// swapped for a link between safe_path's look and the open leads nowhere. The swap is played as already done: the
// path handed to the open is one the check before it would have passed, had the folder not changed.

import assert from 'node:assert/strict';
import { mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { ToolError } from '../../tools.ts';
import { tempProject } from '../helpers.ts';
import { openReadable } from '../../hardening/index.ts';
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
