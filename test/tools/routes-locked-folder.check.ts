// A folder the harness may not read (chmod 000) inside the project: list_files lists the rest and names it, never
// fails whole. chmod 000 does not stop root, so where the tests run as root the listing runs in a child process as
// root without the two capabilities that skip permission checks. Named after the failure its guard prevents.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { tempProject } from '../helpers.ts';

/** setpriv's arguments that take away the capabilities letting root read and enter any folder. */
const NO_BYPASS = ['-dac_override,-dac_read_search'].flatMap((caps) => ['--bounding-set', caps, '--inh-caps', caps]);

test('a locked subfolder does not fail the whole listing: list_files shows the rest and names it as unread', async (t) => {
  const root = await tempProject(t, { 'a/x.txt': 'x\n', 'locked/secret.txt': 's\n', 'z.txt': 'z\n' });
  await chmod(path.join(root, 'locked'), 0o000);
  t.after(() => chmod(path.join(root, 'locked'), 0o755).catch(() => {})); // for rm, where it runs first as a user
  const url = (file: string) => JSON.stringify(pathToFileURL(path.join(import.meta.dirname, '..', '..', file)).href);
  const context = `{ root: ${JSON.stringify(root)}, seen: new Map(), disk: guardedDisk }`;
  const list = [
    `const { list_files } = await import(${url('tools.ts')});`,
    `const { guardedDisk } = await import(${url('hardening/index.ts')});`,
    `console.log(JSON.stringify(await list_files.run({}, ${context})));`,
  ].join('\n');
  const node = [process.execPath, '--import', 'tsx', '--input-type=module', '-e', list];
  const [file, ...args] = process.getuid?.() === 0 ? ['setpriv', ...NO_BYPASS, ...node] : node;
  const cwd = path.join(import.meta.dirname, '..', '..');
  const { stdout } = await promisify(execFile)(file!, args, { cwd });
  assert.equal(JSON.parse(stdout), 'a/\na/x.txt\nlocked/\nz.txt\n[could not read: locked/]');
});
