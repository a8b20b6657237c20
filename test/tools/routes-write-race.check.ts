// Route 9 of issue 28: edit_file's write lands inside the root even when a folder on its path is swapped for a
// symlink out while it writes (a second writer on the project: another session, a watcher). Run for real: a child
// process flips the folder as fast as it can while 400 new files are written.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { edit_file, ToolError, type ToolContext } from '../../tools.ts';
import { tempProject, within } from '../helpers.ts';
import { containedRunner, guardedDisk } from '../../hardening/index.ts';

/** Flips `sub` between the real folder (kept as sub-dir) and a link out (kept as sub-link), by renames, until this
 *  process is gone (a run killed mid-test must not leave it spinning). A folder the writer made in a gap (a new
 *  file's folder) is moved aside, inside the root, so the flipping goes on. */
const SWAPPER = `
const fs = require('node:fs');
const path = require('node:path');
const [root, parent] = process.argv.slice(1);
const [sub, dir, link] = ['sub', 'sub-dir', 'sub-link'].map((name) => path.join(root, name));
let strays = 0;
const quietly = (f) => { try { f(); } catch {} };
const put = (from) => { quietly(() => fs.renameSync(sub, path.join(root, 'stray-' + strays++))); quietly(() => fs.renameSync(from, sub)); };
process.stdout.write('flipping\\n');
for (let i = 0; ; i++) {
  if (i % 256 === 0 && String(process.ppid) !== parent) process.exit(1);
  put(dir); quietly(() => fs.renameSync(sub, dir));
  put(link); quietly(() => fs.renameSync(sub, link));
}`;

test('edit_file never writes outside the root while a folder on its path flips to a link out: 400 new files, none outside', async (t) => {
  const base = await tempProject(t, { 'outside/.keep': '', 'project/sub-dir/.keep': '' });
  const [root, outside] = [path.join(base, 'project'), path.join(base, 'outside')];
  symlinkSync(outside, path.join(root, 'sub-link'));
  const swapper = spawn(process.execPath, ['-e', SWAPPER, root, String(process.pid)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stopped = new Promise((resolve) => swapper.on('exit', resolve));
  let written = 0;
  try {
    await within(new Promise((resolve) => swapper.stdout.once('data', resolve)), 'the swapper to start');
    const ctx: ToolContext = { root, seen: new Map(), disk: guardedDisk, runner: containedRunner };
    for (let i = 0; i < 400; i++) {
      try {
        await edit_file.run({ path: `sub/f${i}.txt`, old_str: '', new_str: `file ${i}\n` }, ctx);
        written++;
      } catch (error) {
        // Refused (outside the project, a link on the way) or lost to a rename: either way nothing landed outside.
        if (!(error instanceof ToolError) && (error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  } finally {
    // Stopped before anything else: the project's removal would never end while the folder still flips.
    swapper.kill('SIGKILL');
    await stopped;
  }
  assert.deepEqual(
    readdirSync(outside).filter((name) => name !== '.keep'),
    [],
    'files landed outside the root',
  );
  // The race was run, not dodged: some writes went through while the folder was in place.
  assert.ok(written > 0, 'no write got through: the flipping left no moment to write in');
  assert.ok(existsSync(path.join(root, 'sub-dir')) || existsSync(path.join(root, 'sub')));
});
