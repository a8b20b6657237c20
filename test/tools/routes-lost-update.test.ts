// Lost updates, a crash mid-write, a read-only file, a huge old_str: edit_file against other writers
// and faults (hardening/atomic-write.ts, tools.ts's changedOnDisk). Two sessions of one process, and
// two harness processes (routes-lost-update.check.ts, in test:sandbox: it starts processes), edit one
// file at the same moment: one edit lands, the other is refused with the content as it is now; never
// both told "edited" with one edit gone.

import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { containedRunner, guardedDisk } from '../../hardening/index.ts';
import { edit_file, read_file, type ToolContext } from '../../tools.ts';
import { project } from './tools-project.ts';

const LINES = 'alpha\nbeta\n';
const session = (root: string): ToolContext => ({
  root,
  seen: new Map(),
  disk: guardedDisk,
  runner: containedRunner,
});

describe('edits against another writer', () => {
  test('two sessions of one process edit one file at once: one edit lands, the other is refused with the file as it is now', async (t) => {
    for (let trial = 0; trial < 16; trial++) {
      const p = await project(t, { 'a.txt': LINES });
      const [first, second] = [session(p.root), session(p.root)];
      await Promise.all([first, second].map((ctx) => read_file.run({ path: 'a.txt' }, ctx)));
      const outcomes = await Promise.allSettled([
        edit_file.run({ path: 'a.txt', old_str: 'alpha', new_str: 'ALPHA' }, first),
        edit_file.run({ path: 'a.txt', old_str: 'beta', new_str: 'BETA' }, second),
      ]);
      const edited = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      const refused = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
      assert.equal(edited.length, 1, `trial ${trial}: exactly one edit is told "edited"`);
      assert.match(String(refused[0]), /changed on disk since you read it; nothing was edited/);
      const now = await readFile(path.join(p.root, 'a.txt'), 'utf8');
      assert.ok(now === 'ALPHA\nbeta\n' || now === 'alpha\nBETA\n', `trial ${trial}: the file holds the one edit`);
      assert.match(String(refused[0]), new RegExp(now.split('\n')[0]!), 'the refusal shows the content as it is');
    }
  });
});

describe('faults while writing', () => {
  test('a write that died mid-way leaves no temporary file among the project files once the next session starts', async (t) => {
    const p = await project(t, { 'a.txt': LINES });
    // What a harness killed between making its temporary file and renaming it leaves: the file and its lock.
    const temp = path.join(p.root, '.a.txt.0123456789ab.harness-tmp');
    await writeFile(temp, 'half a fi');
    const locks = path.join(os.tmpdir(), `reference-harness-locks-${process.getuid?.() ?? 0}`);
    await mkdir(locks, { recursive: true });
    const dead = 2 ** 22 + 12_345; // above Linux's default pid_max: no process has it
    await writeFile(path.join(locks, 'stranded-test.lock'), JSON.stringify({ pid: dead, temp }));
    const { GUARDED } = await import('../../hardening/index.ts');
    await GUARDED.root(p.root);
    assert.deepEqual(readdirSync(p.root), ['a.txt']);
    assert.ok(!readdirSync(locks).includes('stranded-test.lock'), 'and its lock is gone');
  });

  test('an edit never leaves its temporary file behind: after edits, only the files themselves are there', async (t) => {
    const p = await project(t, { 'a.txt': LINES });
    await read_file.run({ path: 'a.txt' }, p.ctx);
    await edit_file.run({ path: 'a.txt', old_str: 'alpha', new_str: 'one' }, p.ctx);
    await edit_file.run({ path: 'b.txt', old_str: '', new_str: 'new\n' }, p.ctx);
    assert.deepEqual(readdirSync(p.root).sort(), ['a.txt', 'b.txt']);
  });

  test('an old_str of thousands of lines is found by plain search, not a regular expression that overflows', async (t) => {
    const big = Array.from({ length: 20_000 }, (_, i) => `line ${i} (${'.*+?'.repeat(3)})`).join('\n') + '\n';
    const p = await project(t, { 'big.txt': big });
    await read_file.run({ path: 'big.txt' }, p.ctx);
    const oldStr = big.slice(0, big.lastIndexOf('line 19999'));
    const out = await edit_file.run({ path: 'big.txt', old_str: oldStr, new_str: 'head\n' }, p.ctx);
    assert.match(out, /^edited big\.txt: replaced \d+ line\(s\) at line 1/);
    assert.equal(await readFile(path.join(p.root, 'big.txt'), 'utf8'), `head\nline 19999 (${'.*+?'.repeat(3)})\n`);
  });
});
