// Inputs that hurt a tool rather than trick it: arguments that are not an object or nest deep,
// files that block a read forever, files too large to edit, line breaks that differ from line to
// line, links that lead round in a circle. Each test is named after what went wrong before its guard.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { open, readFile, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { edit_file, list_files, MAX_EDITABLE_BYTES, read_file, schemaProblem } from '../../tools.ts';
import { growSparse, numbered, type Project, project, refused } from './tools-project.ts';
import { MAX_INPUT_DEPTH, UNUSABLE, nestedDeeperThan } from '../../hardening/index.ts';

const NOT_REGULAR = /is not a regular file \(a named pipe, socket or device\)/;

/** A named pipe in the project, or the test skipped where there is no mkfifo. */
function makeFifo(t: TestContext, p: Project, name: string): string | undefined {
  const fifo = path.join(p.root, name);
  try {
    execFileSync('mkfifo', [fifo], { stdio: 'ignore' });
    return fifo;
  } catch {
    t.skip('no mkfifo on this platform');
    return undefined;
  }
}

/** Runs `attempt` while a watchdog keeps opening the pipe's writing end: a call that opens the pipe
 *  for reading is let through (it reads nothing), and the test fails instead of hanging. */
async function guarded<T>(fifo: string, attempt: () => Promise<T>): Promise<T> {
  let readerWasWaiting = false;
  const letThrough = async () => {
    // ENXIO: nobody is waiting to read, which is what should happen.
    const writer = await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => undefined);
    if (writer !== undefined) readerWasWaiting = true;
    await writer?.close();
  };
  const watchdog = setInterval(() => void letThrough(), 300);
  try {
    const result = await attempt();
    assert.equal(readerWasWaiting, false, `${fifo} was opened for reading: without the watchdog, a hang`);
    return result;
  } finally {
    clearInterval(watchdog);
  }
}

describe("a call's arguments", () => {
  test('arguments that are null, text or a number are refused by the schema, not a TypeError from `in`', () => {
    for (const [input, sent] of [
      [null, 'null'],
      ['a.txt', '"a.txt"'],
      [3, '3'],
    ] as const) {
      const problem = schemaProblem(read_file, input);
      assert.match(problem ?? '', /^invalid arguments for read_file: \(input\): .+\. You sent: (.+)$/);
      assert.equal(problem?.split('You sent: ')[1], sent);
    }
  });

  test('a refusal names each argument that is wrong by its path, and a wrong whole input as "(input)"', () => {
    const problem = schemaProblem(read_file, { path: 7, offset: 'x' });
    assert.match(problem ?? '', /^invalid arguments for read_file: path: [^;]+; offset: [^;]+\. You sent: /);
  });

  test('an input the agent marked unusable is refused with its note, not checked against the schema', () => {
    const problem = schemaProblem(read_file, { [UNUSABLE]: 'the arguments were not JSON' });
    assert.equal(problem, 'invalid arguments for read_file: the arguments were not JSON');
  });

  test('a value that nests exactly to the limit, ending in a number or null, is not deeper than it', () => {
    const nest = (leaf: unknown, levels: number): unknown => (levels === 0 ? leaf : { a: nest(leaf, levels - 1) });
    for (const leaf of [1, null, 'x'])
      assert.equal(nestedDeeperThan(nest(leaf, MAX_INPUT_DEPTH), MAX_INPUT_DEPTH), false);
    assert.equal(nestedDeeperThan(nest({}, MAX_INPUT_DEPTH), MAX_INPUT_DEPTH), true); // an object there is a level more
    assert.equal(nestedDeeperThan(null, 0), false);
    assert.equal(schemaProblem(read_file, nest(1, MAX_INPUT_DEPTH))?.includes('nested deeper'), false);
  });
});

describe('files that would block a read forever', () => {
  test('a named pipe is refused before it is opened, instead of blocking read_file forever', async (t) => {
    const p = await project(t);
    const fifo = makeFifo(t, p, 'events.pipe');
    if (fifo === undefined) return;
    await guarded(fifo, () => refused(read_file.run({ path: 'events.pipe' }, p.ctx), NOT_REGULAR));
  });

  test('a symlink to a named pipe is refused too', async (t) => {
    const p = await project(t);
    const fifo = makeFifo(t, p, 'events.pipe');
    if (fifo === undefined) return;
    await symlink('events.pipe', path.join(p.root, 'latest'));
    await guarded(fifo, () => refused(read_file.run({ path: 'latest' }, p.ctx), NOT_REGULAR));
  });

  test('a named pipe is refused by edit_file before it is opened, even with a read record in place', async (t) => {
    const p = await project(t);
    const fifo = makeFifo(t, p, 'events.pipe');
    if (fifo === undefined) return;
    p.ctx.seen.set(fifo, 'a hash, so only the file-kind check stands in the way');
    await guarded(fifo, () =>
      refused(edit_file.run({ path: 'events.pipe', old_str: 'a', new_str: 'b' }, p.ctx), NOT_REGULAR),
    );
  });

  test('a named pipe called .gitignore does not block list_files', async (t) => {
    const p = await project(t, { 'a.ts': '' });
    const fifo = makeFifo(t, p, '.gitignore');
    if (fifo === undefined) return;
    assert.deepEqual((await guarded(fifo, () => list_files.run({}, p.ctx))).split('\n'), ['.gitignore', 'a.ts']);
  });

  test('a named pipe as .git/info/exclude does not block list_files', async (t) => {
    const p = await project(t, { '.git/info/.keep': '', 'a.ts': '' });
    const fifo = makeFifo(t, p, '.git/info/exclude');
    if (fifo === undefined) return;
    assert.deepEqual((await guarded(fifo, () => list_files.run({}, p.ctx))).split('\n'), ['a.ts']);
  });

  test('a socket is refused with a clear error, not a raw ENXIO', async (t) => {
    const p = await project(t);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(path.join(p.root, 'agent.sock'), resolve));
    t.after(() => server.close());
    await refused(read_file.run({ path: 'agent.sock' }, p.ctx), NOT_REGULAR);
  });

  test('a folder given to read_file is pointed to list_files', async (t) => {
    const p = await project(t, { 'src/a.ts': '' });
    await refused(read_file.run({ path: 'src' }, p.ctx), /src is a folder; use list_files/);
  });
});

describe('files too large to edit', () => {
  // 12 KB of text (past the 8 KiB binary sniff), to be followed by a hole of zeros.
  const text = Array.from({ length: 300 }, (_, i) => `entry ${i + 1}`.padEnd(39, '.')).join('\n') + '\n';

  test('a file over 10 MiB is read, then refused by edit_file as too large instead of "read it first" forever', async (t) => {
    const p = await project(t, { 'big.log': text });
    await growSparse(path.join(p.root, 'big.log'), MAX_EDITABLE_BYTES + 1);
    const out = await read_file.run({ path: 'big.log' }, p.ctx);
    assert.equal(out.split('\n')[0], numbered(1, 'entry 1'.padEnd(39, '.')));
    assert.equal(p.ctx.seen.size, 0, 'a file this large is never hashed whole');
    const error = await refused(
      edit_file.run({ path: 'big.log', old_str: 'entry 1.', new_str: 'entry one' }, p.ctx),
      /big\.log is too large to edit with edit_file \(10485761 bytes; the limit is 10485760\)/,
    );
    assert.doesNotMatch(error.message, /read big\.log with read_file/);
  });

  test('a file of exactly 10 MiB can still be read and edited', async (t) => {
    const p = await project(t, { 'edge.log': text });
    await growSparse(path.join(p.root, 'edge.log'), MAX_EDITABLE_BYTES);
    const out = await read_file.run({ path: 'edge.log' }, p.ctx);
    assert.equal(out.split('\n').at(-1), '[showing lines 1-300 of 301; use offset=301 to continue]', 'lines counted');
    assert.equal(p.ctx.seen.size, 1);
    await edit_file.run({ path: 'edge.log', old_str: 'entry 1.', new_str: 'ENTRY 1.' }, p.ctx);
    const handle = await open(path.join(p.root, 'edge.log'));
    t.after(() => handle.close());
    const { buffer } = await handle.read(Buffer.alloc(9), 0, 9, 0);
    assert.equal(buffer.toString(), 'ENTRY 1..');
  });
});

describe('line breaks that differ from line to line', () => {
  test('an old_str across a LF line of a mostly-CRLF file is found, and the new lines get CRLF', async (t) => {
    const p = await project(t, { 'mixed.txt': 'a\r\nb\nc\r\n' });
    await read_file.run({ path: 'mixed.txt' }, p.ctx);
    await edit_file.run({ path: 'mixed.txt', old_str: 'a\nb\nc', new_str: 'A\nB\nC' }, p.ctx);
    assert.equal(await readFile(path.join(p.root, 'mixed.txt'), 'utf8'), 'A\r\nB\r\nC\r\n');
  });

  test('an edit in a mostly-LF file with one CRLF line keeps LF for the new lines', async (t) => {
    const p = await project(t, { 'mixed.txt': 'x\r\ny\nz\n' });
    await read_file.run({ path: 'mixed.txt' }, p.ctx);
    await edit_file.run({ path: 'mixed.txt', old_str: 'x\ny', new_str: 'X\nY' }, p.ctx);
    assert.equal(await readFile(path.join(p.root, 'mixed.txt'), 'utf8'), 'X\nY\nz\n');
  });

  test('an old_str with regular-expression characters is matched literally', async (t) => {
    const p = await project(t, { 'a.js': 'const re = /a+(b)?[c]$/;\nconst n = 1;\n' });
    await read_file.run({ path: 'a.js' }, p.ctx);
    await edit_file.run({ path: 'a.js', old_str: '/a+(b)?[c]$/;\nconst n', new_str: '/x/;\nconst m' }, p.ctx);
    assert.equal(await readFile(path.join(p.root, 'a.js'), 'utf8'), 'const re = /x/;\nconst m = 1;\n');
  });

  test('overlapping matches make an old_str ambiguous, as in the file "aaa" for "aa"', async (t) => {
    const p = await project(t, { 'a.txt': 'aaa\n' });
    await read_file.run({ path: 'a.txt' }, p.ctx);
    await refused(edit_file.run({ path: 'a.txt', old_str: 'aa', new_str: 'b' }, p.ctx), /found 2 times/);
  });
});

describe('links that lead nowhere', () => {
  test('a symlink loop is named as a loop, not as a broken symlink', async (t) => {
    const p = await project(t);
    await symlink('ping', path.join(p.root, 'pong'));
    await symlink('pong', path.join(p.root, 'ping'));
    await refused(read_file.run({ path: 'ping' }, p.ctx), /"ping" goes through a symlink loop/);
    await refused(read_file.run({ path: 'ping/x.txt' }, p.ctx), /"ping\/x\.txt" goes through a symlink loop/);
  });

  test('a symlink to nothing is named as a broken symlink', async (t) => {
    const p = await project(t);
    await symlink('nowhere.txt', path.join(p.root, 'gone'));
    await refused(read_file.run({ path: 'gone' }, p.ctx), /"gone" goes through a broken symlink/);
  });
});
