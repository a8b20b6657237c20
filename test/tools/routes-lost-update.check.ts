// Lost updates between two harness processes (hardening/atomic-write.ts): each reads one file, and
// both edit it at the same moment: one edit lands, the other is refused, in every trial. Real
// processes, so it runs in test:sandbox; the same race between two sessions of one process is in
// routes-lost-update.test.ts.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { project } from './tools-project.ts';

const LINES = 'alpha\nbeta\n';

test('two harness processes edit one file at once: one edit lands, the other is refused, in every trial', async (t) => {
  const p = await project(t, { 'a.txt': LINES });
  const url = (file: string) => JSON.stringify(pathToFileURL(path.join(import.meta.dirname, '..', '..', file)).href);
  // Each reads, says so with a file beside the project, and edits once both have read.
  const script = (oldStr: string, trial: number) =>
    [
      `const { edit_file, read_file } = await import(${url('tools.ts')});`,
      `const { guardedDisk } = await import(${url('hardening/index.ts')});`,
      `const { existsSync, writeFileSync } = await import('node:fs');`,
      `const ctx = { root: ${JSON.stringify(p.root)}, seen: new Map(), disk: guardedDisk };`,
      `await read_file.run({ path: 'a.txt' }, ctx);`,
      `writeFileSync(${JSON.stringify(path.join(p.outside, `read-${trial}-`))} + ${JSON.stringify(oldStr)}, '');`,
      `const other = ${JSON.stringify(path.join(p.outside, `read-${trial}-`))} + ${JSON.stringify(oldStr === 'alpha' ? 'beta' : 'alpha')};`,
      `while (!existsSync(other)) await new Promise((resolve) => setTimeout(resolve, 1));`,
      `const edit = { path: 'a.txt', old_str: ${JSON.stringify(oldStr)}, new_str: 'X' };`,
      `console.log(await edit_file.run(edit, ctx).then(() => 'edited', (e) => e.message.split(' Its current')[0]));`,
    ].join('\n');
  const run = promisify(execFile);
  const cwd = path.join(import.meta.dirname, '..', '..');
  for (let trial = 0; trial < 4; trial++) {
    await writeFile(path.join(p.root, 'a.txt'), LINES);
    const said = await Promise.all(
      ['alpha', 'beta'].map(async (oldStr) => {
        const args = ['--import', 'tsx', '--input-type=module', '-e', script(oldStr, trial)];
        return (await run(process.execPath, args, { cwd })).stdout.trim();
      }),
    );
    assert.deepEqual(said.sort(), ['a.txt changed on disk since you read it; nothing was edited.', 'edited'].sort());
    const now = await readFile(path.join(p.root, 'a.txt'), 'utf8');
    assert.ok(now === 'X\nbeta\n' || now === 'alpha\nX\n', `trial ${trial}: one edit, whole: ${JSON.stringify(now)}`);
  }
});
