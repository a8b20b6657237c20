// hardening/atomic-write.ts's locks and faults, one at a time: the sweep of a live, half-written,
// planted or foreign lock, the wait for a held lock, a write or a folder that cannot be made, and a
// lock or temporary file removed meanwhile. Each fault is one fs/promises call made to fail (or to
// do something first) for one path in one test (`replaceFs`, test/replace-fs.ts);
// races are ordered by those calls, never by sleeps.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import fsPromises from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { sha256 } from '../../tools.ts';
import { sweepStrandedWrites, writeAtomically } from '../../hardening/atomic-write.ts';
import { project } from './tools-project.ts';
import { failure, replaceFs } from '../replace-fs.ts';

const { lstat, mkdir, open, readdir, readFile, rename, rm, writeFile } = fsPromises;
const LOCKS = path.join(os.tmpdir(), `reference-harness-locks-${process.getuid?.() ?? 0}`);
const DEAD = 2 ** 22 + 12_345; // above Linux's default pid_max: no process has it
const lockOf = (file: string) => path.join(LOCKS, `${sha256(file)}.lock`);

/** The folders the code under test lists from now on, in order. */
function foldersListed(t: TestContext): string[] {
  const listed: string[] = [];
  replaceFs(t, 'readdir', (dir: string) => {
    listed.push(dir);
    return readdir(dir);
  });
  return listed;
}

/** A lock file of this test's own in the locks folder, with `content`; the sweep sees only it. */
async function plantLock(t: TestContext, content: string): Promise<string> {
  await mkdir(LOCKS, { recursive: true, mode: 0o700 });
  const name = `details-${process.pid}-${Math.random().toString(36).slice(2)}.lock`;
  const lock = path.join(LOCKS, name);
  await writeFile(lock, content);
  t.after(() => rm(lock, { force: true }));
  replaceFs(t, 'readdir', (dir: string) => (dir === LOCKS ? Promise.resolve([name]) : readdir(dir)));
  return lock;
}

describe('the sweep of stranded writes at a start', () => {
  test('a lock of a live process is left with its temporary file: its write is still under way', async (t) => {
    const p = await project(t, { 'a.txt': 'a\n' });
    const temp = path.join(p.root, '.a.txt.0123456789ab.harness-tmp');
    await writeFile(temp, 'half');
    const lock = await plantLock(t, JSON.stringify({ pid: process.pid, temp }));
    await sweepStrandedWrites();
    assert.ok(existsSync(lock), 'the lock is still there');
    assert.ok(existsSync(temp), 'and the temporary file');
  });

  test('a lock half-written by its holder is left, instead of failing the start', async (t) => {
    const lock = await plantLock(t, '{"pid":');
    await sweepStrandedWrites();
    assert.ok(existsSync(lock));
  });

  test('a dead lock planted to name a file that is no temporary file removes the lock, never that file', async (t) => {
    const p = await project(t, { 'precious.txt': 'keep\n' });
    const lock = await plantLock(t, JSON.stringify({ pid: DEAD, temp: path.join(p.root, 'precious.txt') }));
    await sweepStrandedWrites();
    assert.ok(!existsSync(lock), 'the dead lock is gone');
    assert.equal(readFileSync(path.join(p.root, 'precious.txt'), 'utf8'), 'keep\n');
  });

  test('a dead lock whose temporary file is gone already is removed, instead of failing the start', async (t) => {
    const p = await project(t);
    const lock = await plantLock(t, JSON.stringify({ pid: DEAD, temp: path.join(p.root, '.gone.1.harness-tmp') }));
    await sweepStrandedWrites();
    assert.ok(!existsSync(lock));
  });

  test('a dead lock another sweep removes meanwhile does not fail this start', async (t) => {
    const lock = await plantLock(t, JSON.stringify({ pid: DEAD }));
    replaceFs(t, 'readFile', async (file: string, options: 'utf8') => {
      const text = await readFile(file, options);
      if (file === lock) await rm(lock);
      return text;
    });
    await sweepStrandedWrites();
    assert.ok(!existsSync(lock));
  });

  test("a lock of another user's live process (kill answers EPERM) is left", async (t) => {
    const lock = await plantLock(t, JSON.stringify({ pid: DEAD }));
    t.mock.method(process, 'kill', () => {
      throw failure('EPERM');
    });
    await sweepStrandedWrites();
    assert.ok(existsSync(lock));
  });

  for (const [what, info] of [
    ['made by another user', { dir: true, uid: (process.getuid?.() ?? 0) + 1, mode: 0o40700 }],
    ['writable by others', { dir: true, uid: process.getuid?.() ?? 0, mode: 0o40722 }],
    ['that is no folder', { dir: false, uid: process.getuid?.() ?? 0, mode: 0o100600 }],
  ] as const)
    test(`a locks folder ${what} is not swept: its locks are not ours to act on`, async (t) => {
      replaceFs(t, 'lstat', (file: string) =>
        file === LOCKS ? Promise.resolve({ isDirectory: () => info.dir, uid: info.uid, mode: info.mode }) : lstat(file),
      );
      const listed = foldersListed(t);
      await sweepStrandedWrites();
      assert.deepEqual(listed, []);
    });

  test('a locks folder that cannot be looked at is not swept, instead of failing the start', async (t) => {
    replaceFs(t, 'lstat', (file: string) => (file === LOCKS ? Promise.reject(failure('EACCES')) : lstat(file)));
    const listed = foldersListed(t);
    await sweepStrandedWrites();
    assert.deepEqual(listed, []);
  });

  test('a locks folder of ours that cannot be listed is not swept, instead of failing the start', async (t) => {
    const uid = process.getuid?.() ?? 0;
    replaceFs(t, 'lstat', (file: string) =>
      file === LOCKS ? Promise.resolve({ isDirectory: () => true, uid, mode: 0o40700 }) : lstat(file),
    );
    replaceFs(t, 'readdir', (dir: string) => (dir === LOCKS ? Promise.reject(failure('EACCES')) : readdir(dir)));
    await sweepStrandedWrites();
  });
});

describe('the lock of a write', () => {
  test('a write waits for the lock another session holds, and writes only once it is let go', async (t) => {
    const p = await project(t, { 'a.txt': 'a\n' });
    const file = path.join(p.root, 'a.txt');
    await mkdir(LOCKS, { recursive: true, mode: 0o700 });
    const lock = lockOf(file);
    await writeFile(lock, JSON.stringify({ pid: process.pid }));
    t.after(() => rm(lock, { force: true }));
    let letGo = false;
    replaceFs(t, 'readFile', async (read: string, options: 'utf8') => {
      const text = await readFile(read, options);
      if (read === lock && !letGo) {
        await rm(lock); // the other session's write ends as this one looks at its lock
        letGo = true;
      }
      return text;
    });
    let renamedAfterLetGo: boolean | undefined;
    replaceFs(t, 'rename', (from: string, to: string) => {
      renamedAfterLetGo = letGo;
      return rename(from, to);
    });
    await writeAtomically(file, 'b\n', 'a\n', p.ctx);
    assert.equal(renamedAfterLetGo, true);
    assert.equal(readFileSync(file, 'utf8'), 'b\n');
    assert.ok(!existsSync(lock), 'and its own lock is gone');
  });

  test('a lock held for ten seconds refuses the write, naming the file, instead of waiting forever', async (t) => {
    const p = await project(t, { 'a.txt': 'a\n' });
    const file = path.join(p.root, 'a.txt');
    await mkdir(LOCKS, { recursive: true, mode: 0o700 });
    const lock = lockOf(file);
    await writeFile(lock, JSON.stringify({ pid: process.pid }));
    t.after(() => rm(lock, { force: true }));
    const clock = [0, 10_000, 10_001]; // the wait starts, is at its limit, is past it
    const now = t.mock.method(Date, 'now', () => clock.shift() ?? 10_001);
    let looked = 0;
    replaceFs(t, 'readFile', (read: string, options: 'utf8') => {
      if (read === lock) looked++;
      return readFile(read, options);
    });
    const refusal = await writeAtomically(file, 'b\n', 'a\n', p.ctx).then(
      () => null,
      (error: unknown) => error,
    );
    now.mock.restore();
    assert.match(String(refusal), /a\.txt is being written by another session; not edited/);
    assert.equal(looked, 2, 'it still waited at exactly ten seconds');
    assert.equal(readFileSync(file, 'utf8'), 'a\n');
    assert.ok(existsSync(lock), "and the other session's lock is left");
  });

  test('a lock that cannot be made (EACCES) fails the write with that error, instead of waiting for it', async (t) => {
    const p = await project(t, { 'a.txt': 'a\n' });
    const file = path.join(p.root, 'a.txt');
    const lock = lockOf(file);
    replaceFs(t, 'writeFile', (to: string, data: string, options?: object) =>
      to === lock ? Promise.reject(failure('EACCES')) : writeFile(to, data, options),
    );
    await assert.rejects(writeAtomically(file, 'b\n', 'a\n', p.ctx), /EACCES \(simulated\)/);
    assert.equal(readFileSync(file, 'utf8'), 'a\n');
  });

  test('the lock names its temporary file and its holder before the file exists, so a crash cannot strand it', async (t) => {
    const p = await project(t, { 'a.txt': 'a\n' });
    const file = path.join(p.root, 'a.txt');
    let recorded: unknown;
    replaceFs(t, 'open', async (opened: string, flags: number, mode?: number) => {
      if (opened.endsWith('.harness-tmp')) {
        const temp = path.join(p.root, path.basename(opened));
        recorded = { lock: JSON.parse(await readFile(lockOf(file), 'utf8')) as unknown, temp, there: existsSync(temp) };
      }
      return open(opened, flags, mode);
    });
    await writeAtomically(file, 'b\n', 'a\n', p.ctx);
    const { lock, temp, there } = recorded as { lock: unknown; temp: string; there: boolean };
    assert.deepEqual(lock, { pid: process.pid, temp });
    assert.equal(there, false);
  });

  test('a lock removed meanwhile (by a sweep) does not fail the write that held it', async (t) => {
    const p = await project(t, { 'a.txt': 'a\n' });
    const file = path.join(p.root, 'a.txt');
    replaceFs(t, 'rename', async (from: string, to: string) => {
      await rm(lockOf(file));
      return rename(from, to);
    });
    await writeAtomically(file, 'b\n', 'a\n', p.ctx);
    assert.equal(readFileSync(file, 'utf8'), 'b\n');
  });
});

describe('a write that fails', () => {
  test('a rename that fails (ENOSPC) removes the temporary file and the lock, and keeps the file as it was', async (t) => {
    const p = await project(t, { 'a.txt': 'a\n' });
    const file = path.join(p.root, 'a.txt');
    replaceFs(t, 'rename', () => Promise.reject(failure('ENOSPC')));
    await assert.rejects(writeAtomically(file, 'b\n', 'a\n', p.ctx), /ENOSPC \(simulated\)/);
    assert.deepEqual(readdirSync(p.root), ['a.txt']);
    assert.equal(readFileSync(file, 'utf8'), 'a\n');
    assert.ok(!existsSync(lockOf(file)), 'the lock is let go');
  });

  test('a full disk mid-write (ENOSPC) closes the half-written temporary file and removes it', async (t) => {
    const p = await project(t, { 'a.txt': 'a\n' });
    const file = path.join(p.root, 'a.txt');
    const handles: fsPromises.FileHandle[] = [];
    replaceFs(t, 'open', async (opened: string, flags: number, mode?: number) => {
      const handle = await open(opened, flags, mode);
      if (!opened.endsWith('.harness-tmp')) return handle;
      handles.push(handle);
      t.mock.method(handle, 'writeFile', () => Promise.reject(failure('ENOSPC')));
      return handle;
    });
    await assert.rejects(writeAtomically(file, 'b\n', 'a\n', p.ctx), /ENOSPC \(simulated\)/);
    assert.equal(handles.length, 1);
    assert.equal(handles[0]!.fd, -1, 'the temporary file is closed');
    assert.deepEqual(readdirSync(p.root), ['a.txt']);
    assert.equal(readFileSync(file, 'utf8'), 'a\n');
  });

  test('a temporary file removed meanwhile fails the write with its own error, not the clean-up', async (t) => {
    const p = await project(t, { 'a.txt': 'a\n' });
    const file = path.join(p.root, 'a.txt');
    replaceFs(t, 'rename', async (from: string) => {
      await rm(from);
      throw failure('ENOSPC');
    });
    await assert.rejects(writeAtomically(file, 'b\n', 'a\n', p.ctx), /ENOSPC \(simulated\)/);
    assert.deepEqual(readdirSync(p.root), ['a.txt']);
  });

  test('a folder that cannot be made (EACCES) fails the write with that error, not as a link swapped in', async (t) => {
    const p = await project(t);
    const file = path.join(p.root, 'sub', 'new.txt');
    replaceFs(t, 'mkdir', (dir: string, options?: object) =>
      dir.endsWith('/sub') ? Promise.reject(failure('EACCES')) : mkdir(dir, options),
    );
    await assert.rejects(writeAtomically(file, 'new\n', null, p.ctx), /EACCES \(simulated\)/);
    assert.deepEqual(readdirSync(p.root), []);
  });

  test('a folder removed between making and opening it is refused as swapped, and nothing is written', async (t) => {
    const p = await project(t);
    const file = path.join(p.root, 'sub', 'new.txt');
    replaceFs(t, 'open', async (opened: string, flags: number, mode?: number) => {
      if (opened.endsWith('/sub')) await rm(path.join(p.root, 'sub'), { recursive: true }); // another session
      return open(opened, flags, mode);
    });
    await assert.rejects(
      writeAtomically(file, 'new\n', null, p.ctx),
      /sub changed into a link while it was written to/,
    );
    assert.ok(!existsSync(path.join(p.root, 'sub', 'new.txt')));
  });
});
