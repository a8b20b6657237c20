// hardening/read-window.ts at its edges, through readWindow itself: the byte cap on whole lines,
// the line limit and whether a window reached the end, files read whole or in chunks at the
// MAX_EDITABLE_BYTES boundary, a line across two chunks, the binary sniff's first 8 KiB, and what
// is refused. Each test is named after the failure it prevents.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { MAX_BYTES, MAX_EDITABLE_BYTES, MAX_LINES, type ToolContext, ToolError } from '../../tools.ts';
import { readWindow } from '../../hardening/read-window.ts';
import { growSparse, project } from './tools-project.ts';

/** The file `name` with `content` in a fresh project, and the context to read it with. */
async function fileWith(t: TestContext, name: string, content: string | Buffer) {
  const { root, ctx } = await project(t, { [name]: content });
  return { file: path.join(root, name), ctx };
}

/** The refusal readWindow throws, as a ToolError's message. */
async function refusal(file: string, ctx: ToolContext): Promise<string> {
  const error: unknown = await readWindow(file, 1, ctx).then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof ToolError, String(error));
  return error.message;
}

/** The first chunk a huge file is read in (chunksFrom's buffer). */
const CHUNK = 1024 * 1024;

describe('the byte cap counts whole lines and their line breaks', () => {
  test('two lines that with the break between them are exactly MAX_BYTES are both shown', async (t) => {
    const first = 'a'.repeat(1000);
    const second = 'b'.repeat(MAX_BYTES - 1000 - 1);
    const { file, ctx } = await fileWith(t, 'f.txt', `${first}\n${second}\n`);
    const read = await readWindow(file, 1, ctx);
    assert.deepEqual(read.lines, [first, second]);
    assert.equal(read.toEnd, true);
  });

  test('a second line one byte past the cap is left out whole, not cut, and the window says it did not reach the end', async (t) => {
    const first = 'a'.repeat(1000);
    const second = 'b'.repeat(MAX_BYTES - 1000);
    const { file, ctx } = await fileWith(t, 'f.txt', `${first}\n${second}\n`);
    const read = await readWindow(file, 1, ctx);
    assert.deepEqual(read.lines, [first]);
    assert.equal(read.toEnd, false);
  });

  test('one line of exactly MAX_BYTES is shown uncut', async (t) => {
    const line = 'c'.repeat(MAX_BYTES);
    const { file, ctx } = await fileWith(t, 'f.txt', `${line}\n`);
    const read = await readWindow(file, 1, ctx);
    assert.deepEqual(read.lines, [line]);
    assert.equal(read.toEnd, true);
  });

  test('one line a byte longer than MAX_BYTES shows its first MAX_BYTES, and not as the end', async (t) => {
    const { file, ctx } = await fileWith(t, 'f.txt', `${'c'.repeat(MAX_BYTES)}d\nnext\n`);
    const read = await readWindow(file, 1, ctx);
    assert.deepEqual(read.lines, ['c'.repeat(MAX_BYTES)]);
    assert.equal(read.toEnd, false);
  });
});

describe('the line limit, and whether a window reached the end', () => {
  const lines = (count: number) => Array.from({ length: count }, (_, i) => `l${i + 1}`);

  test('a file of exactly MAX_LINES + 1 lines is read to its end', async (t) => {
    const { file, ctx } = await fileWith(t, 'f.txt', `${lines(MAX_LINES + 1).join('\n')}\n`);
    const read = await readWindow(file, 1, ctx);
    assert.equal(read.lines.length, MAX_LINES + 1);
    assert.equal(read.toEnd, true);
    assert.equal(read.total, MAX_LINES + 1);
  });

  test('a file of MAX_LINES + 2 lines is not read to its end: the last line is not claimed shown', async (t) => {
    const { file, ctx } = await fileWith(t, 'f.txt', `${lines(MAX_LINES + 2).join('\n')}\n`);
    const read = await readWindow(file, 1, ctx);
    assert.deepEqual(read.lines, lines(MAX_LINES + 1));
    assert.equal(read.toEnd, false);
    assert.equal(read.total, MAX_LINES + 2);
  });

  test('a last line without a line break is shown and counted', async (t) => {
    const { file, ctx } = await fileWith(t, 'f.txt', lines(MAX_LINES + 1).join('\n'));
    const read = await readWindow(file, 1, ctx);
    assert.deepEqual(read.lines, lines(MAX_LINES + 1));
    assert.equal(read.toEnd, true);
    assert.equal(read.total, MAX_LINES + 1);
  });

  test('the lines before the offset are skipped, not shown', async (t) => {
    const { file, ctx } = await fileWith(t, 'f.txt', 'one\ntwo\nthree\n');
    const read = await readWindow(file, 2, ctx);
    assert.deepEqual(read.lines, ['two', 'three']);
    assert.equal(read.toEnd, true);
    assert.equal(read.total, 3);
  });
});

describe('line ends and empty files', () => {
  test('a final line break makes no empty last line', async (t) => {
    const { file, ctx } = await fileWith(t, 'f.txt', 'a\nb\n');
    const read = await readWindow(file, 1, ctx);
    assert.deepEqual(read.lines, ['a', 'b']);
    assert.equal(read.total, 2);
  });

  test('Windows line breaks lose their \\r', async (t) => {
    const { file, ctx } = await fileWith(t, 'f.txt', 'a\r\nb\r\n');
    assert.deepEqual((await readWindow(file, 1, ctx)).lines, ['a', 'b']);
  });

  test('an empty file has no lines, is read to its end, and is whole (so it can be edited)', async (t) => {
    const { file, ctx } = await fileWith(t, 'f.txt', '');
    const read = await readWindow(file, 1, ctx);
    assert.deepEqual(read.lines, []);
    assert.equal(read.total, 0);
    assert.equal(read.toEnd, true);
    assert.deepEqual(read.whole, Buffer.alloc(0));
  });
});

describe('read whole up to MAX_EDITABLE_BYTES, in chunks above it', () => {
  test('a file of exactly MAX_EDITABLE_BYTES is read whole: the bytes an edit is checked against, and its lines counted', async (t) => {
    const { file, ctx } = await fileWith(t, 'f.txt', 'text\n'.repeat(2000));
    await growSparse(file, MAX_EDITABLE_BYTES);
    const read = await readWindow(file, 1, ctx);
    assert.equal(read.whole?.length, MAX_EDITABLE_BYTES);
    assert.equal(read.total, 2001);
    assert.equal(read.size, MAX_EDITABLE_BYTES);
  });

  test('a byte more and it is never loaded whole: no bytes to edit against, no line count', async (t) => {
    const { file, ctx } = await fileWith(t, 'f.txt', 'text\n'.repeat(2000));
    await growSparse(file, MAX_EDITABLE_BYTES + 1);
    const read = await readWindow(file, 1, ctx);
    assert.equal(read.whole, null);
    assert.equal(read.total, null);
    assert.equal(read.size, MAX_EDITABLE_BYTES + 1);
    assert.equal(read.lines.length, 2000, 'the text lines; the run of zeros after them passes the byte cap');
    assert.equal(read.toEnd, false);
  });

  test('a line across the first chunk boundary of a huge file is read whole, from both chunks', async (t) => {
    // "start\n", then lines of 1023 x's: the one that begins 6 + 1023 * 1024 bytes in crosses 1 MiB.
    const crossing = 'x'.repeat(1023);
    const { file, ctx } = await fileWith(t, 'f.txt', `start\n${`${crossing}\n`.repeat(1024)}`);
    await growSparse(file, MAX_EDITABLE_BYTES + 1);
    assert.ok(6 + 1023 * 1024 < CHUNK && 6 + 1024 * 1024 > CHUNK);
    const read = await readWindow(file, 1025, ctx);
    assert.deepEqual(read.lines, [crossing]);
  });

  test('a skipped line across the chunk boundary is counted once: the window starts at the right line', async (t) => {
    // Line 1025, the last of the x's, crosses 1 MiB and is skipped; line 1026 is "last".
    const { file, ctx } = await fileWith(t, 'f.txt', `start\n${`${'x'.repeat(1023)}\n`.repeat(1024)}last\n`);
    await growSparse(file, MAX_EDITABLE_BYTES + 1);
    assert.deepEqual((await readWindow(file, 1026, ctx)).lines, ['last']);
  });
});

test("a window that ends exactly at a huge file's chunk boundary is not taken for the file's end", async (t) => {
  // Line 1 (skipped) and the window's MAX_LINES + 1 lines of "a" fill the first chunk to its last byte.
  const window = MAX_LINES + 1;
  const first = 'x'.repeat(CHUNK - 2 * window - 1);
  const { file, ctx } = await fileWith(t, 'f.txt', `${first}\n${'a\n'.repeat(window)}more\n`);
  await growSparse(file, MAX_EDITABLE_BYTES + 1);
  const read = await readWindow(file, 2, ctx);
  assert.equal(read.lines.length, window);
  assert.equal(read.toEnd, false);
});

describe('the binary sniff reads the first 8 KiB', () => {
  test('a NUL byte at offset 8191 makes the file binary, refused with its size', async (t) => {
    const bytes = Buffer.alloc(9000, 'a');
    bytes[8191] = 0;
    const { file, ctx } = await fileWith(t, 'f.bin', bytes);
    assert.equal(await refusal(file, ctx), 'f.bin is a binary file (9000 bytes); read_file shows text only');
  });

  test('a NUL byte at offset 8192 does not: the file is read (read_file refuses it for the NUL it shows)', async (t) => {
    const bytes = Buffer.alloc(9000, 'a');
    bytes[8192] = 0;
    const { file, ctx } = await fileWith(t, 'f.txt', bytes);
    const read = await readWindow(file, 1, ctx);
    assert.equal(read.lines.length, 1);
    assert.equal(read.lines[0]!.length, 9000);
  });

  test("only the first chunk is sniffed: a huge text file's zeros past its first 8 KiB do not make it binary", async (t) => {
    const { file, ctx } = await fileWith(t, 'f.txt', 'text\n'.repeat(2000));
    await growSparse(file, MAX_EDITABLE_BYTES + 1);
    const read = await readWindow(file, 2001, ctx);
    assert.equal(read.lines.length, 1);
    assert.equal(read.lines[0], '\0'.repeat(MAX_BYTES), 'the zeros shown as one line, cut at the byte cap');
  });
});

describe('what is refused, and a read that outlives its run', () => {
  test('a folder is refused, pointing to list_files', async (t) => {
    const { root, ctx } = await project(t);
    await mkdir(path.join(root, 'src'));
    assert.equal(await refusal(path.join(root, 'src'), ctx), 'src is a folder; use list_files');
  });

  test('a named pipe is refused, never opened to block', async (t) => {
    const { root, ctx } = await project(t);
    const fifo = path.join(root, 'pipe');
    try {
      execFileSync('mkfifo', [fifo], { stdio: 'ignore' });
    } catch {
      t.skip('no mkfifo on this platform');
      return;
    }
    assert.match(await refusal(fifo, ctx), /^pipe is not a regular file/);
  });

  test("a huge file's read stops when the run has stopped", async (t) => {
    const { file, ctx } = await fileWith(t, 'f.txt', 'text\n');
    await growSparse(file, MAX_EDITABLE_BYTES + 1);
    const stopped = { ...ctx, signal: AbortSignal.abort() };
    assert.match(await refusal(file, stopped), /^stopped: the run was interrupted/);
  });
});
