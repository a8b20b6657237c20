// A read-only file stays read-only: run as an ordinary user, edit_file refuses a mode 0444 file,
// though the folder would let a rename replace it (hardening/atomic-write.ts, refuseReadOnly). As
// root the test runs the tools as the nobody user (setpriv), since root may write anything.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const NOBODY = 65534;

test('a file the person cannot write is not edited: edit_file refuses it and says so, and it keeps its content', async (t) => {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'read-only-')));
  t.after(() => rm(root, { recursive: true, force: true }));
  const file = path.join(root, 'locked.txt');
  await writeFile(file, 'as it was\n');
  await chmod(file, 0o444);
  await chmod(root, 0o777); // the folder allows a rename over the file: only the file's mode says no
  const url = (name: string) => JSON.stringify(pathToFileURL(path.join(import.meta.dirname, '..', '..', name)).href);
  const script = [
    `const { edit_file, read_file } = await import(${url('tools.ts')});`,
    `const { guardedDisk } = await import(${url('hardening/index.ts')});`,
    `const ctx = { root: ${JSON.stringify(root)}, seen: new Map(), disk: guardedDisk };`,
    `await read_file.run({ path: 'locked.txt' }, ctx);`,
    `const edit = { path: 'locked.txt', old_str: 'as it was', new_str: 'changed' };`,
    `console.log(await edit_file.run(edit, ctx).then(() => 'edited', (e) => e.message));`,
  ].join('\n');
  const node = [process.execPath, '--import', 'tsx', '--input-type=module', '-e', script];
  const asRoot = process.getuid?.() === 0;
  if (asRoot) await chown(file, 0, 0);
  const ids = [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'];
  const [program, ...args] = asRoot ? ['setpriv', ...ids, ...node] : node;
  const cwd = path.join(import.meta.dirname, '..', '..');
  const { stdout } = await promisify(execFile)(program!, args, { cwd, env: { ...process.env, HOME: root } });
  assert.equal(stdout.trim(), 'locked.txt is read-only for you; edit_file leaves it as it is');
  assert.equal(await readFile(file, 'utf8'), 'as it was\n');
});
