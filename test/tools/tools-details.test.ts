// The finer points of what each tool answers, pinned so that changing one is a decision, not an
// accident: mutation testing (npm run mutate) found each of these changeable with no test failing.

import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, open, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { capOutput, defineTool, edit_file, exists, list_files, MAX_BYTES, read_file, TOOLS } from '../../tools.ts';
import { growSparse, numbered, project, refused } from './tools-project.ts';
import { checkedFolder, closestLines } from '../../hardening/index.ts';
import { closestLinesHint } from '../../hardening/closest-lines.ts';
import { capStrings } from '../../hardening/index.ts';

/** The file handles Node closed on garbage collection while the test ran: a handle left open is closed there
 *  when a collection comes first (a large file's read can start one), so counting /proc/self/fd alone would miss
 *  it. */
function closedByGc(t: { after: (fn: () => void) => void }): string[] {
  const closed: string[] = [];
  const listen = (warning: Error) => {
    if (/Closing file descriptor \d+ on garbage collection/.test(warning.message)) closed.push(warning.message);
  };
  process.on('warning', listen);
  t.after(() => process.off('warning', listen));
  return closed;
}

describe('the tool definitions', () => {
  // The one test that pins the shipped list: a forker who adds a tool changes this table and nothing else.
  test('the model is offered list_files, read_file and edit_file, in that order; only edit_file changes files', () => {
    assert.deepEqual(
      TOOLS.map((tool) => [tool.name, tool.readOnly, tool.kind]),
      [
        ['list_files', true, 'read'],
        ['read_file', true, 'read'],
        ['edit_file', false, 'edit'],
      ],
    );
  });

  test('a tool defined without a preview has none, so approval is not handed a function that cannot work', () => {
    const plain = defineTool({
      name: 'plain',
      description: 'd',
      input: z.strictObject({}),
      readOnly: true,
      run: async () => 'ok',
    });
    assert.equal(plain.preview, undefined);
    assert.equal(typeof edit_file.preview, 'function');
  });

  test("read_file's description tells the model the window: 2000 lines or 50 KiB", () => {
    assert.match(read_file.description, /at most 2000 lines or 50 KiB/);
  });
});

describe('paths at the edges', () => {
  test('a path of exactly 4,096 characters is not refused for its length', async (t) => {
    const p = await project(t);
    // Twenty folders of 199 characters and a 96-character name: few segments, so few lookups.
    const longest = `${'d'.repeat(199)}/`.repeat(20) + 'f'.repeat(96);
    assert.equal(longest.length, 4096);
    const error = await read_file.run({ path: longest }, p.ctx).then(
      () => assert.fail('a missing file was read'),
      (e: Error) => e,
    );
    assert.doesNotMatch(error.message, /characters long/);
  });

  test('exists says no for a missing path and yes for a dangling symlink (which must be resolved, not skipped)', async (t) => {
    const p = await project(t);
    await symlink('nowhere', path.join(p.root, 'dangling'));
    assert.equal(await exists(path.join(p.root, 'missing')), false);
    assert.equal(await exists(path.join(p.root, 'dangling')), true);
  });
});

describe('list_files answers', () => {
  test('a file given to list_files is pointed to read_file', async (t) => {
    const p = await project(t, { 'a.txt': '' });
    await refused(list_files.run({ path: 'a.txt' }, p.ctx), /a\.txt is a file, not a folder; use read_file/);
  });

  test('a folder\'s entries follow it, yet names that sort before "/" keep their place: one sorted list', async (t) => {
    // Sorted folder by folder: "src.ts" (".", 0x2E) and "src-old/" ("-", 0x2D) come before "src/" ("/", 0x2F),
    // "srcs" after everything in "src/".
    const p = await project(t, {
      'src/a.ts': '',
      'src/lib/b.ts': '',
      'src.ts': '',
      'src-old/c.ts': '',
      srcs: '',
      'src b/d.ts': '',
      '!top': '',
    });
    const lines = (await list_files.run({}, p.ctx)).split('\n');
    assert.deepEqual(lines, [...lines].sort());
    assert.deepEqual(lines, [
      '!top',
      'src b/',
      'src b/d.ts',
      'src-old/',
      'src-old/c.ts',
      'src.ts',
      'src/',
      'src/a.ts',
      'src/lib/',
      'src/lib/b.ts',
      'srcs',
    ]);
  });

  test('an empty folder says it is empty instead of answering nothing', async (t) => {
    const p = await project(t);
    await mkdir(path.join(p.root, 'empty'));
    assert.equal(await list_files.run({ path: 'empty' }, p.ctx), '(empty folder)');
  });
});

describe('read_file windows', () => {
  test('an empty file says it is empty instead of answering nothing', async (t) => {
    const p = await project(t, { 'empty.txt': '' });
    assert.equal(await read_file.run({ path: 'empty.txt' }, p.ctx), '(empty file)');
  });

  test('an offset past the end says so instead of answering nothing', async (t) => {
    const p = await project(t, { 'a.txt': 'one\ntwo\n' });
    assert.equal(
      await read_file.run({ path: 'a.txt', offset: 5 }, p.ctx),
      '[the file has fewer than 5 lines; use a smaller offset]',
    );
  });

  test('a limit on a small file says where to continue, counting a last line without a newline', async (t) => {
    const p = await project(t, { 'a.txt': 'one\ntwo\nthree' });
    assert.deepEqual((await read_file.run({ path: 'a.txt', limit: 2 }, p.ctx)).split('\n'), [
      numbered(1, 'one'),
      numbered(2, 'two'),
      '[showing lines 1-2 of 3; use offset=3 to continue]',
    ]);
  });

  test('the last line of a file is shown when the offset points at it', async (t) => {
    const p = await project(t, { 'a.txt': 'one\ntwo' });
    assert.equal(await read_file.run({ path: 'a.txt', offset: 2 }, p.ctx), numbered(2, 'two'));
  });

  test('a window is the cap: a file of exactly 50 KiB is shown as far as its numbered lines fit, and says where it continues', async (t) => {
    // 49 lines of 1,023 bytes and their newlines, then a last line of 1,024 bytes without one: 51,200 bytes.
    const text = 'a'.repeat(1023).concat('\n').repeat(49) + 'b'.repeat(1024);
    assert.equal(Buffer.byteLength(text), MAX_BYTES);
    const p = await project(t, { 'exact.txt': text });
    const window = await read_file.run({ path: 'exact.txt' }, p.ctx);
    assert.equal(capOutput(window), window, 'the output cap never cuts a window again');
    assert.equal(window.split('\n').at(-1), '[showing lines 1-49 of 50; use offset=50 to continue]');
    const rest = await read_file.run({ path: 'exact.txt', offset: 50 }, p.ctx);
    assert.equal(rest, numbered(50, 'b'.repeat(1024)), 'the offset it gave shows the rest');
  });

  test('a giant line followed by more lines is cut, and the output says where the next line is', async (t) => {
    const p = await project(t, { 'bundle.js': 'x'.repeat(100 * 1024) + '\nnext\n' });
    const out = (await read_file.run({ path: 'bundle.js' }, p.ctx)).split('\n');
    assert.deepEqual(out.slice(1), ['[line 1 is longer than 50 KiB and was cut; use offset=2 to continue]']);
  });

  test('an offset past a giant line shows the line asked for, not the giant one', async (t) => {
    const p = await project(t, { 'bundle.js': 'x'.repeat(100 * 1024) + '\nnext\n' });
    assert.equal(await read_file.run({ path: 'bundle.js', offset: 2 }, p.ctx), numbered(2, 'next'));
  });

  test('a carriage return inside a line is kept; only the one ending a CRLF line is dropped', async (t) => {
    const p = await project(t, { 'a.txt': 'a\rb\r\nc\r\n' });
    assert.equal(await read_file.run({ path: 'a.txt' }, p.ctx), [numbered(1, 'a\rb'), numbered(2, 'c')].join('\n'));
  });

  test('text shown before binary data further on in the file: only the window and the first 8 KiB decide', async (t) => {
    // 70,000 bytes of text, so the binary part starts well past the first 8 KiB, after the lines asked for.
    const text = 'text line\n'.repeat(7000);
    const p = await project(t, { 'mixed.dat': Buffer.concat([Buffer.from(text), Buffer.alloc(100)]) });
    const out = await read_file.run({ path: 'mixed.dat', offset: 6600, limit: 2 }, p.ctx);
    assert.deepEqual(out.split('\n').slice(0, 2), [numbered(6600, 'text line'), numbered(6601, 'text line')]);
  });

  test('every read closes its file: fifty reads leave no handle open', async (t) => {
    if (process.platform !== 'linux') return t.skip('counts /proc/self/fd');
    const p = await project(t, { 'a.txt': 'one\ntwo\n' });
    const gcClosed = closedByGc(t);
    const before = readdirSync('/proc/self/fd').length;
    for (let i = 0; i < 50; i++) await read_file.run({ path: 'a.txt', limit: 1 }, p.ctx);
    assert.ok(readdirSync('/proc/self/fd').length < before + 10, 'file handles left open');
    assert.deepEqual(gcClosed, [], 'file handles left for the garbage collector to close');
  });
});

describe('read_file on a file over 10 MiB (no line count)', () => {
  /** 300 lines of text, a 10 MiB hole of zeros (line 301), then "last line" (302) and a newline. */
  async function bigFile(t: Parameters<typeof project>[0]) {
    const text = Array.from({ length: 300 }, (_, i) => `entry ${i + 1}`.padEnd(39, '.')).join('\n') + '\n';
    const p = await project(t, { 'big.log': text });
    const file = path.join(p.root, 'big.log');
    await growSparse(file, 11 * 1024 * 1024);
    const handle = await open(file, 'r+');
    await handle.write('\nlast line\n', 11 * 1024 * 1024);
    await handle.close();
    return p;
  }

  test('the continuation hint gives the next offset without a total it does not know', async (t) => {
    const p = await bigFile(t);
    const out = (await read_file.run({ path: 'big.log' }, p.ctx)).split('\n');
    assert.equal(out.at(-1), '[showing lines 1-300; use offset=301 to continue]');
  });

  test('the end of the file promises no more lines', async (t) => {
    const p = await bigFile(t);
    assert.equal(await read_file.run({ path: 'big.log', offset: 302 }, p.ctx), numbered(302, 'last line'));
    assert.equal(await read_file.run({ path: 'big.log', offset: 302, limit: 1 }, p.ctx), numbered(302, 'last line'));
  });

  /** `text` at the start of a file over 10 MiB, which read_file reads in 1 MiB chunks instead of whole. */
  async function overTenMiB(t: Parameters<typeof project>[0], text: string) {
    const p = await project(t, { 'big.txt': text });
    await growSparse(path.join(p.root, 'big.txt'), 11 * 1024 * 1024);
    return p;
  }

  test('a window ending exactly at a 1 MiB read boundary still says where to continue', async (t) => {
    // Lines of 64 bytes: line 16,384 ends on byte 1,048,576, the last of the first read.
    const p = await overTenMiB(t, 'x'.repeat(63).concat('\n').repeat(20_000));
    const out = (await read_file.run({ path: 'big.txt', offset: 16_380, limit: 5 }, p.ctx)).split('\n');
    assert.deepEqual(out.slice(-2), [
      numbered(16_384, 'x'.repeat(63)),
      '[showing lines 16380-16384; use offset=16385 to continue]',
    ]);
  });

  test('a window that ends the file on a read boundary promises no more lines', async (t) => {
    // 11 MiB in lines of 1,024 bytes with their newlines; the first is a byte shorter and the last a byte longer, so
    // the file ends on a 1 MiB read boundary; the last 48 lines, numbered, fit the window.
    const lines = [
      'a'.repeat(1022),
      ...Array.from({ length: 11 * 1024 - 2 }, () => 'x'.repeat(1023)),
      'z'.repeat(1024),
    ];
    const p = await overTenMiB(t, lines.join('\n') + '\n');
    assert.equal((await stat(path.join(p.root, 'big.txt'))).size, 11 * 1024 * 1024);
    const out = (await read_file.run({ path: 'big.txt', offset: lines.length - 47 }, p.ctx)).split('\n');
    assert.equal(out.length, 48);
    assert.equal(out.at(-1), numbered(lines.length, 'z'.repeat(1024)));
  });

  test('a line split between two reads comes back whole, its multibyte characters too', async (t) => {
    // The first line and "zz" fill the first read but one byte, so the 2-byte "é" straddles the two reads.
    const before = 'a'.repeat(1024 * 1024 - 4);
    const p = await overTenMiB(t, `${before}\nzzé€\nnext\n`);
    const out = await read_file.run({ path: 'big.txt', offset: 2, limit: 2 }, p.ctx);
    assert.deepEqual(out.split('\n').slice(0, 2), [numbered(2, 'zzé€'), numbered(3, 'next')]);
  });

  test('every read of a file over 10 MiB closes its file: fifty reads leave no handle open', async (t) => {
    // Only these are opened and read chunk by chunk; a smaller file is read whole by readFile, which closes its own.
    if (process.platform !== 'linux') return t.skip('counts /proc/self/fd');
    const p = await overTenMiB(t, 'text line\n'.repeat(1000)); // text past the 8 KiB binary sniff
    const gcClosed = closedByGc(t);
    const before = readdirSync('/proc/self/fd').length;
    for (let i = 0; i < 50; i++) await read_file.run({ path: 'big.txt', limit: 1 }, p.ctx);
    assert.ok(readdirSync('/proc/self/fd').length < before + 10, 'file handles left open');
    assert.deepEqual(gcClosed, [], 'file handles left for the garbage collector to close');
  });

  test(
    'a read far into a huge file stops when the run is stopped, instead of scanning on for minutes',
    { timeout: 10_000 },
    async (t) => {
      const p = await project(t, { 'huge.log': 'x\n'.repeat(5000) });
      await growSparse(path.join(p.root, 'huge.log'), 2 ** 40);
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      await assert.rejects(
        read_file.run({ path: 'huge.log', offset: 1e9 }, { ...p.ctx, signal: controller.signal }),
        /stopped: the run was interrupted while the file was being read/,
      );
    },
  );
});

describe('edit_file answers', () => {
  test('the summary names the line the edit starts at and how many lines it replaced', async (t) => {
    const p = await project(t, { 'a.txt': 'one\ntwo\nthree\nfour\n' });
    await read_file.run({ path: 'a.txt' }, p.ctx);
    assert.equal(
      await edit_file.run({ path: 'a.txt', old_str: 'three\nfour', new_str: 'THREE' }, p.ctx),
      'edited a.txt: replaced 2 line(s) at line 3 with 1 line(s)',
    );
    assert.equal(
      await edit_file.run({ path: 'a.txt', old_str: 'two\n', new_str: '' }, p.ctx),
      'edited a.txt: replaced 2 line(s) at line 2 with 0 line(s)',
    );
    assert.equal(
      await edit_file.run({ path: 'b.txt', old_str: '', new_str: 'x\ny\n' }, p.ctx),
      'created b.txt (3 line(s))',
    );
  });

  test('the approval preview of a new file shows every line as added', async (t) => {
    const p = await project(t);
    const preview = await edit_file.preview!({ path: 'new.txt', old_str: '', new_str: 'alpha\nbeta\n' }, p.ctx);
    assert.match(preview, /^@@ -0,0 \+1,2 @@\n\+alpha\n\+beta$/m);
  });

  test('the approval preview shows three lines of context around a change', async (t) => {
    const lines = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`);
    const p = await project(t, { 'a.txt': lines.join('\n') + '\n' });
    await read_file.run({ path: 'a.txt' }, p.ctx);
    const preview = await edit_file.preview!({ path: 'a.txt', old_str: 'line 10\n', new_str: 'LINE 10\n' }, p.ctx);
    assert.match(preview, /^@@ -7,7 \+7,7 @@$/m);
  });

  test('a tie between CRLF and LF line breaks writes LF, the plain default', async (t) => {
    const p = await project(t, { 'tie.txt': 'a\r\nb\n' });
    await read_file.run({ path: 'tie.txt' }, p.ctx);
    await edit_file.run({ path: 'tie.txt', old_str: 'a\nb', new_str: 'A\nB' }, p.ctx);
    assert.equal(await readFile(path.join(p.root, 'tie.txt'), 'utf8'), 'A\nB\n');
  });

  test('an edit after the second CRLF line break lands on its own text, not shifted onto a line break', async (t) => {
    const p = await project(t, { 'crlf.txt': 'one\r\ntwo\r\nthree\r\n' });
    await read_file.run({ path: 'crlf.txt' }, p.ctx);
    await edit_file.run({ path: 'crlf.txt', old_str: 'three', new_str: 'THREE' }, p.ctx);
    assert.equal(await readFile(path.join(p.root, 'crlf.txt'), 'utf8'), 'one\r\ntwo\r\nTHREE\r\n');
  });

  test('a file changed on disk is shown to the model numbered, as read_file would show it', async (t) => {
    const p = await project(t, { 'a.txt': 'one\n' });
    await read_file.run({ path: 'a.txt' }, p.ctx);
    await writeFile(path.join(p.root, 'a.txt'), 'a\rb\r\nc\r\n');
    const error = await refused(edit_file.run({ path: 'a.txt', old_str: 'one', new_str: '1' }, p.ctx), /changed/);
    assert.ok(error.message.endsWith(['', numbered(1, 'a\rb'), numbered(2, 'c'), numbered(3, '')].join('\n')));
  });
});

describe('closest lines, when old_str is not found', () => {
  /** The lines edit_file offers instead of an old_str that is not in the file. */
  async function closest(t: Parameters<typeof project>[0], file: string, oldStr: string): Promise<string[]> {
    const p = await project(t, { 'f.txt': file });
    await read_file.run({ path: 'f.txt' }, p.ctx);
    await refused(edit_file.run({ path: 'f.txt', old_str: oldStr, new_str: 'x' }, p.ctx), /not found/);
    return closestLines(await readFile(path.join(p.root, 'f.txt'), 'utf8'), oldStr).split('\n');
  }

  test('only an edit_file answer "not found" gets the closest lines: not another error, a success, or another tool', async (t) => {
    const p = await project(t, { 'f.txt': 'return a + b;\n' });
    const notFound = { content: 'old_str was not found in f.txt', isError: true };
    const hint = (tool: typeof edit_file | typeof read_file, input: unknown, outcome = notFound) =>
      closestLinesHint.check({ tool, input }, outcome, { toolContext: p.ctx });
    const edit = { path: 'f.txt', old_str: 'return a - b;', new_str: 'x' };
    assert.equal(
      (await hint(edit_file, edit)).content,
      `${notFound.content}. Closest lines:\n${numbered(1, 'return a + b;')}`,
    );
    const unchanged: [typeof edit_file | typeof read_file, unknown, typeof notFound][] = [
      [edit_file, edit, { content: 'f.txt changed on disk since it was read', isError: true }],
      [edit_file, edit, { content: 'old_str was not found, the file says', isError: false }],
      [read_file, edit, notFound],
      [edit_file, { old_str: 'return a - b;' }, notFound],
      [edit_file, { path: 'f.txt', old_str: 7 }, notFound],
    ];
    for (const [tool, input, outcome] of unchanged)
      assert.deepEqual(await hint(tool, input, outcome), outcome, `${tool.name} ${JSON.stringify([input, outcome])}`);
  });

  test('a file too big to read whole gets no closest lines, rather than being loaded for them', async (t) => {
    const p = await project(t, { 'big.txt': 'return a + b;\n'.repeat(800_000) }); // 11 MB
    const outcome = { content: 'old_str was not found in big.txt', isError: true };
    const input = { path: 'big.txt', old_str: 'return a - b;', new_str: 'x' };
    assert.deepEqual(
      await closestLinesHint.check({ tool: edit_file, input }, outcome, { toolContext: p.ctx }),
      outcome,
    );
  });

  test('at most three lines, the closest ones, shown in file order', async (t) => {
    // Closest first: line 3 (a Dice score of 0.83), 6 (0.8), 5 (0.69); then 1 (0.67) and 4 (0.6) are left out.
    const file = ['return a * c;', 'unrelated', 'return a + b;', 'return x;', 'return a + b + c;', 'return b;'];
    assert.deepEqual(await closest(t, file.join('\n'), 'return a - b;'), [
      numbered(3, 'return a + b;'),
      numbered(5, 'return a + b + c;'),
      numbered(6, 'return b;'),
    ]);
  });

  test('only lines with something in common are offered', async (t) => {
    assert.deepEqual(await closest(t, 'return a + b;\nzzz\nqqq\n', 'return a - b;'), [numbered(1, 'return a + b;')]);
  });

  test('no line in common says so', async (t) => {
    assert.deepEqual(await closest(t, 'zzz\nqqq\n', 'return a - b;'), ['(no similar lines)']);
  });

  test('equally close lines are offered in file order, the first three', async (t) => {
    const file = ['return a * b;', 'return a / b;', 'return a % b;', 'return a + b;'];
    assert.deepEqual(await closest(t, file.join('\n'), 'return a - b;'), [
      numbered(1, 'return a * b;'),
      numbered(2, 'return a / b;'),
      numbered(3, 'return a % b;'),
    ]);
  });

  test("a line's indentation does not count against it", async (t) => {
    const file = [`${' '.repeat(20)}return a + b;`, 'return a * b;', 'return a / b;', 'return a % b;'];
    assert.deepEqual(await closest(t, file.join('\n'), 'return a - b;'), [
      numbered(1, file[0]!),
      numbered(2, 'return a * b;'),
      numbered(3, 'return a / b;'),
    ]);
  });

  test("old_str is compared by its first non-blank line, without the line's indentation", async (t) => {
    // Untrimmed, "    return" would share "  " and " r" with line 4 and rank it above line 3.
    const file = ['return a + b;', 'return a * b;', 'return a / b;', 'x =  return a % b;'];
    assert.deepEqual(await closest(t, file.join('\n'), '   \n    return a - b;\n  }'), [
      numbered(1, 'return a + b;'),
      numbered(2, 'return a * b;'),
      numbered(3, 'return a / b;'),
    ]);
  });

  test('the lines of a CRLF file are offered without their line-ending \\r, keeping one inside', async (t) => {
    assert.deepEqual(await closest(t, 'return a + b;\r\nreturn\ra * b;\r\n', 'return a - b;'), [
      numbered(1, 'return a + b;'),
      numbered(2, 'return\ra * b;'),
    ]);
  });

  test('an old_str of only blank lines gets a refusal the model can read, not a crash', async (t) => {
    assert.deepEqual(await closest(t, 'a\nb\n', '   \n  '), ['(no similar lines)']);
  });
});

describe('capStrings: the cap on what is resent', () => {
  test('a string over the cap keeps its first three quarters and last quarter, and says exactly how much is cut', () => {
    const text = `${'a'.repeat(60)}${'m'.repeat(40)}${'z'.repeat(20)}`; // 120 characters, cap 80: 60 + 20 kept
    assert.equal(capStrings(text, 80), `${'a'.repeat(60)}\n[... 40 characters left out ...]\n${'z'.repeat(20)}`);
    assert.equal(capStrings('x'.repeat(80), 80), 'x'.repeat(80), 'a string exactly at the cap is kept whole');
  });

  test('every string in a message is capped, at any depth; numbers, null and thinking blocks stay as they are', () => {
    const long = 'y'.repeat(100);
    const thinking = { type: 'thinking', thinking: long, signature: 'sig' };
    const message = { role: 'user', n: 3, none: null, content: [{ type: 'text', text: long }, thinking, [long]] };
    const cut = capStrings(long, 40);
    assert.deepEqual(capStrings(message, 40), {
      role: 'user',
      n: 3,
      none: null,
      content: [{ type: 'text', text: cut }, thinking, [cut]],
    });
    const redacted = { type: 'redacted_thinking', data: long };
    assert.deepEqual(capStrings([redacted], 40), [redacted]);
  });
});

describe("checkedFolder: macOS's write folder, tried here", () => {
  test('a folder inside the project is written in, a new one made on the way; a link out is refused', async (t) => {
    const p = await project(t);
    const folder = await checkedFolder(p.ctx, path.join(p.root, 'new', 'deep'));
    assert.equal(folder.path, path.join(p.root, 'new', 'deep'));
    await writeFile(path.join(folder.path, 'a.txt'), 'a\n');
    await folder.check('a.txt');
    await folder.close();
    await symlink(p.outside, path.join(p.root, 'out'));
    await assert.rejects(checkedFolder(p.ctx, path.join(p.root, 'out')), /^Error: out changed into a link/);
  });

  test('a written file that turns out to be outside (a link put in its place) is removed there, and refused', async (t) => {
    const p = await project(t);
    const folder = await checkedFolder(p.ctx, p.root);
    await writeFile(path.join(p.outside, 'landed.txt'), 'x\n');
    await symlink(path.join(p.outside, 'landed.txt'), path.join(p.root, 'a.txt'));
    await assert.rejects(folder.check('a.txt'), /^Error: \. changed into a link while it was written to/);
    assert.equal(existsSync(path.join(p.outside, 'landed.txt')), false);
  });
});

describe('what the tools leave open', () => {
  test('reads and writes close every file and folder they open, a refused write too, so a long session never runs out', async (t) => {
    if (!existsSync('/proc/self/fd')) return t.skip('no /proc/self/fd to count open files in');
    // big.txt is over 10 MiB: read in chunks, through a handle of its own.
    const big = 'line\n'.repeat(2_300_000);
    const p = await project(t, { 'a.txt': 'one\n', 'big.txt': big, 'in/the/way': 'a file\n' });
    const gcClosed = closedByGc(t);
    const open = () => readdirSync('/proc/self/fd').length;
    const before = open();
    for (let i = 0; i < 40; i++) {
      await read_file.run({ path: i % 2 === 0 ? 'a.txt' : 'big.txt', limit: 1 }, p.ctx);
      await edit_file.run({ path: `new/f${i}.txt`, old_str: '', new_str: 'x\n' }, p.ctx);
      await edit_file.run({ path: 'in/the/way/f.txt', old_str: '', new_str: 'x\n' }, p.ctx).catch(() => {});
    }
    assert.ok(open() - before < 10, `${open() - before} more files open after 120 calls`);
    assert.deepEqual(gcClosed, [], 'files and folders left for the garbage collector to close');
  });

  test('a file where a new file\'s folder should be is the plain error it is, not "changed into a link"', async (t) => {
    const p = await project(t, { 'a.txt': 'x\n' });
    await assert.rejects(edit_file.run({ path: 'a.txt/b.txt', old_str: '', new_str: 'y' }, p.ctx), { code: 'ENOTDIR' });
  });
});
