// One test per guard in tools.ts, each named after the failure it prevents: delete a guard and
// its story fails. Every project lives in a temporary folder next to an "outside" folder holding
// a sentinel (test/tools/tools-project.ts), so an escape shows up as a read of the sentinel or a change next to it.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  appendFile,
  chmod,
  link,
  mkdir,
  readdir,
  readFile,
  readlink,
  rename,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { z } from 'zod';
import {
  capOutput,
  edit_file,
  list_files,
  MAX_BYTES,
  MAX_EDITABLE_BYTES,
  MAX_LINES,
  MAX_LIST_ENTRIES,
  read_file,
  schemaProblem,
  type Tool,
} from '../../tools.ts';
import { assertOutsideUntouched, growSparse, numbered, OUTSIDE, project, refused } from './tools-project.ts';
import { closestLinesHint } from '../../hardening/closest-lines.ts';

// ---------------------------------------------------------------------------------------------

describe('safe_path: no tool can reach outside the project', () => {
  test('a path with .. cannot escape the project', async (t) => {
    const p = await project(t, { 'src/a.ts': 'inside\n' });
    await refused(read_file.run({ path: '../outside/secret.txt' }, p.ctx), OUTSIDE);
    await refused(read_file.run({ path: 'src/../../outside/secret.txt' }, p.ctx), OUTSIDE);
    await refused(list_files.run({ path: '../outside' }, p.ctx), OUTSIDE);
    await refused(list_files.run({ path: '..' }, p.ctx), OUTSIDE);
    await refused(edit_file.run({ path: '../outside/new.txt', old_str: '', new_str: 'pwned' }, p.ctx), OUTSIDE);
    await refused(
      edit_file.run({ path: '../outside/secret.txt', old_str: 'SECRET', new_str: 'pwned' }, p.ctx),
      OUTSIDE,
    );
    await assertOutsideUntouched(p);
  });

  test('a path spelled outside the project is refused by its spelling, even where a link there leads back in', async (t) => {
    // Only the lexical check stands here: the real path of elsewhere/back/a.txt is inside the project.
    const p = await project(t, { 'a.txt': 'inside\n' });
    const elsewhere = path.join(path.dirname(p.root), 'elsewhere');
    await mkdir(elsewhere);
    await symlink(p.root, path.join(elsewhere, 'back'));
    await refused(read_file.run({ path: '../elsewhere/back/a.txt' }, p.ctx), OUTSIDE);
    await refused(list_files.run({ path: '../elsewhere/back' }, p.ctx), OUTSIDE);
    await refused(edit_file.run({ path: '../elsewhere/back/new.txt', old_str: '', new_str: 'x' }, p.ctx), OUTSIDE);
    assert.deepEqual(await readdir(p.root), ['a.txt']);
  });

  test('a path outside is refused before the disk there is probed: a broken link outside is not revealed', async (t) => {
    const p = await project(t);
    await symlink(path.join(p.outside, 'gone'), path.join(path.dirname(p.root), 'dangling'));
    const error = await refused(read_file.run({ path: '../dangling/x.txt' }, p.ctx), OUTSIDE);
    assert.doesNotMatch(error.message, /symlink/);
  });

  test('an absolute path cannot reach a file outside the project', async (t) => {
    const p = await project(t);
    const secret = path.join(p.outside, 'secret.txt');
    await refused(read_file.run({ path: '/etc/passwd' }, p.ctx), OUTSIDE);
    await refused(read_file.run({ path: secret }, p.ctx), OUTSIDE);
    await refused(list_files.run({ path: p.outside }, p.ctx), OUTSIDE);
    await refused(list_files.run({ path: '/' }, p.ctx), OUTSIDE);
    await refused(
      edit_file.run({ path: path.join(p.outside, 'new.txt'), old_str: '', new_str: 'pwned' }, p.ctx),
      OUTSIDE,
    );
    await refused(edit_file.run({ path: secret, old_str: 'SECRET', new_str: 'pwned' }, p.ctx), OUTSIDE);
    await assertOutsideUntouched(p);
  });

  test('a path of thousands of missing segments is refused up front instead of costing a lookup each', async (t) => {
    const p = await project(t);
    await refused(read_file.run({ path: 'a/'.repeat(2_500) + 'x' }, p.ctx), /characters long; the limit is 4096/);
  });

  test('a NUL byte in a path is refused as a tool error, never handed to the OS', async (t) => {
    const p = await project(t, { 'a.txt': 'inside\n' });
    await refused(read_file.run({ path: 'a.txt\0../../outside/secret.txt' }, p.ctx), /NUL byte/);
    await refused(list_files.run({ path: '.\0' }, p.ctx), /NUL byte/);
    await refused(edit_file.run({ path: 'new.txt\0.sh', old_str: '', new_str: 'x' }, p.ctx), /NUL byte/);
    assert.deepEqual((await readdir(p.root)).sort(), ['a.txt']);
  });

  test('a symlink to a file outside cannot be read or edited through', async (t) => {
    const p = await project(t);
    await symlink(path.join(p.outside, 'secret.txt'), path.join(p.root, 'notes.txt'));
    await refused(read_file.run({ path: 'notes.txt' }, p.ctx), OUTSIDE);
    await refused(edit_file.run({ path: 'notes.txt', old_str: 'SECRET', new_str: 'pwned' }, p.ctx), OUTSIDE);
    await assertOutsideUntouched(p);
  });

  test('a symlink to a folder outside cannot be read or listed through', async (t) => {
    const p = await project(t);
    await symlink(p.outside, path.join(p.root, 'docs'));
    await refused(read_file.run({ path: 'docs/secret.txt' }, p.ctx), OUTSIDE);
    await refused(list_files.run({ path: 'docs' }, p.ctx), OUTSIDE);
    await refused(list_files.run({ path: 'docs/' }, p.ctx), OUTSIDE);
  });

  test('a new file cannot be created under a symlinked folder that points outside', async (t) => {
    const p = await project(t);
    const drop = path.join(p.outside, 'drop');
    await mkdir(drop);
    await symlink(drop, path.join(p.root, 'out'));
    await refused(edit_file.run({ path: 'out/new.txt', old_str: '', new_str: 'pwned' }, p.ctx), OUTSIDE);
    await refused(edit_file.run({ path: 'out/deep/er/new.txt', old_str: '', new_str: 'pwned' }, p.ctx), OUTSIDE);
    assert.deepEqual(await readdir(drop), []);
  });

  test('a dangling symlink pointing outside cannot be written through', async (t) => {
    const p = await project(t);
    const target = path.join(p.outside, 'not-yet.txt');
    await symlink(target, path.join(p.root, 'later.txt'));
    await refused(
      edit_file.run({ path: 'later.txt', old_str: '', new_str: 'pwned' }, p.ctx),
      /broken symlink|outside the project/,
    );
    await assert.rejects(stat(target), { code: 'ENOENT' });
    assert.equal(await readlink(path.join(p.root, 'later.txt')), target, 'the link itself is left alone');
    await assertOutsideUntouched(p);
  });
});

// ---------------------------------------------------------------------------------------------

describe('names that only look like escapes', () => {
  test('a file named ..notes inside the project is not mistaken for an escape', async (t) => {
    const p = await project(t, { '..notes': 'inside\n' });
    assert.match(await read_file.run({ path: '..notes' }, p.ctx), /inside/);
  });
});

describe('listing the project', () => {
  test('listing the project does not walk into a symlinked folder outside', async (t) => {
    const p = await project(t, { 'src/a.ts': '' });
    await symlink(p.outside, path.join(p.root, 'docs'));
    const listing = (await list_files.run({}, p.ctx)).split('\n');
    assert.ok(listing.includes('docs'), 'the link itself is listed');
    assert.ok(!listing.some((line) => line.startsWith('docs/')), `listed the outside folder:\n${listing.join('\n')}`);
  });

  test('.git and node_modules do not flood the listing', async (t) => {
    const p = await project(t, { '.git/HEAD': 'ref\n', 'node_modules/pkg/index.js': '', 'src/a.ts': '' });
    const listing = await list_files.run({}, p.ctx);
    assert.ok(listing.split('\n').includes('src/a.ts'), listing);
    assert.doesNotMatch(listing, /\.git|node_modules/);
  });

  test('session transcripts in .agent are never listed to the model', async (t) => {
    const p = await project(t, { '.agent/sessions/2026-12-01.jsonl': '{"type":"session"}\n', 'src/a.ts': '' });
    const listing = await list_files.run({}, p.ctx);
    assert.deepEqual(listing.split('\n'), ['src/', 'src/a.ts']);
  });

  test('a huge tree is cut at 1,000 entries and says how many were left out', async (t) => {
    const p = await project(t, { 'f0000.txt': '' });
    // 1,199 hard links to one empty file: 1,200 entries to list, at a fraction of the cost of 1,200 files.
    const name = (i: number) => path.join(p.root, `f${String(i).padStart(4, '0')}.txt`);
    await Promise.all(Array.from({ length: 1199 }, (_, i) => link(name(0), name(i + 1))));
    const lines = (await list_files.run({}, p.ctx)).split('\n');
    assert.equal(lines.length, MAX_LIST_ENTRIES + 1);
    assert.equal(lines[MAX_LIST_ENTRIES - 1], 'f0999.txt');
    assert.match(lines[MAX_LIST_ENTRIES]!, /\b200 more entries not shown\b/);
  });

  test('a folder is not mistaken for a file: folders end with "/"', async (t) => {
    const p = await project(t, { 'src/lib/util.ts': '', 'README.md': '' });
    assert.deepEqual((await list_files.run({}, p.ctx)).split('\n'), [
      'README.md',
      'src/',
      'src/lib/',
      'src/lib/util.ts',
    ]);
  });

  test('the listing comes out in the same (sorted) order every time', async (t) => {
    // Without sorting, the walk lists the whole root before any subfolder: z.txt before a/b.txt.
    const p = await project(t, { 'z.txt': '', 'a/b.txt': '', 'm.txt': '' });
    const lines = (await list_files.run({}, p.ctx)).split('\n');
    assert.equal(lines.length, 4);
    assert.deepEqual(lines, [...lines].sort());
  });

  test('listed paths can be passed straight back to read_file: relative to the root, also from a subfolder', async (t) => {
    const p = await project(t, { 'src/lib/util.ts': 'export {};\n', 'top.txt': '' });
    const lines = (await list_files.run({ path: 'src' }, p.ctx)).split('\n');
    assert.equal(lines.at(-1), 'src/lib/util.ts');
    assert.equal(await read_file.run({ path: lines.at(-1)! }, p.ctx), numbered(1, 'export {};'));
  });
});

// ---------------------------------------------------------------------------------------------

describe('reading within the caps', () => {
  const lines9000 = Array.from({ length: 9000 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

  test('a long file does not flood the context: 2,000 lines with the offset that continues, which the cap never cuts', async (t) => {
    const p = await project(t, { 'long.txt': lines9000 });
    const window = await read_file.run({ path: 'long.txt' }, p.ctx);
    const out = window.split('\n');
    assert.equal(out.length, 2000);
    assert.equal(out[0], numbered(1, 'line 1'));
    assert.equal(out[1998], numbered(1999, 'line 1999'));
    assert.equal(out[1999], '[showing lines 1-1999 of 9000; use offset=2000 to continue]');
    assert.equal(capOutput(window), window);
  });

  test('the last line of a file without a trailing newline is not dropped', async (t) => {
    const p = await project(t, { 'a.txt': 'one\ntwo' });
    assert.equal(await read_file.run({ path: 'a.txt' }, p.ctx), [numbered(1, 'one'), numbered(2, 'two')].join('\n'));
  });

  test('limit asks for fewer lines, and says where to continue', async (t) => {
    const p = await project(t, { 'long.txt': lines9000 });
    assert.deepEqual((await read_file.run({ path: 'long.txt', offset: 10, limit: 2 }, p.ctx)).split('\n'), [
      numbered(10, 'line 10'),
      numbered(11, 'line 11'),
      '[showing lines 10-11 of 9000; use offset=12 to continue]',
    ]);
  });

  test('a limit above 2,000 lines cannot flood the context', async (t) => {
    const p = await project(t, { 'long.txt': lines9000 });
    const out = (await read_file.run({ path: 'long.txt', limit: 5000 }, p.ctx)).split('\n');
    assert.equal(out.length, MAX_LINES + 1);
    assert.equal(out.at(-1), '[showing lines 1-2000 of 9000; use offset=2001 to continue]');
  });

  test('a file over 10 MiB gets no phantom line from the previous read chunk', async (t) => {
    // 5,000 lines of "a" (text first: NUL bytes in the first 8 KiB would mean binary), a hole of zeros to 10 MiB, then
    // ~1.5 MiB of short lines: the last 1 MiB read is short, and the buffer behind its end still holds the newlines
    // of the read before. One copy ends with a newline, the other does not.
    const lines = Array.from({ length: 200_000 }, (_, i) => `l${i + 1}`);
    const p = await project(t, { 'big.txt': 'a\n'.repeat(5000), 'big-nl.txt': 'a\n'.repeat(5000) });
    for (const [name, end] of [
      ['big.txt', ''],
      ['big-nl.txt', '\n'],
    ]) {
      await growSparse(path.join(p.root, name!), 10 * 1024 * 1024);
      await appendFile(path.join(p.root, name!), lines.join('\n') + end);
    }
    // Line 5,001 is the hole and "l1"; so "lN" is line N + 5,000.
    const tail = [numbered(204_999, 'l199999'), numbered(205_000, 'l200000')].join('\n');
    assert.equal(await read_file.run({ path: 'big.txt', offset: 204_999 }, p.ctx), tail);
    assert.equal(await read_file.run({ path: 'big-nl.txt', offset: 204_999 }, p.ctx), tail);
  });

  test('offset continues where the last window stopped', async (t) => {
    const p = await project(t, { 'long.txt': lines9000 });
    const out = (await read_file.run({ path: 'long.txt', offset: 2001 }, p.ctx)).split('\n');
    assert.equal(out[0], numbered(2001, 'line 2001'));
    assert.match(out.at(-1)!, /^\[showing lines 2001-\d+ of 9000; use offset=\d+ to continue\]$/);
    const tail = (await read_file.run({ path: 'long.txt', offset: 8999 }, p.ctx)).split('\n');
    assert.deepEqual(tail, [numbered(8999, 'line 8999'), numbered(9000, 'line 9000')]);
  });

  test('long lines do not flood the context: the byte cap cuts on whole lines and says where to go on', async (t) => {
    // 2,000 lines of 100 bytes is 200 KB: under the line cap, four times over the byte cap.
    const line = (n: number) => `line ${n} `.padEnd(99, 'x');
    const p = await project(t, { 'wide.txt': Array.from({ length: 2000 }, (_, i) => line(i + 1)).join('\n') + '\n' });
    const out = await read_file.run({ path: 'wide.txt' }, p.ctx);
    const lines = out.split('\n');
    const hint = lines.pop()!;
    const [, last, next] =
      /^\[showing lines 1-(\d+) of 2000; use offset=(\d+) to continue\]$/.exec(hint) ?? assert.fail(hint);
    assert.equal(Number(next), Number(last) + 1);
    assert.equal(lines.length, Number(last));
    assert.equal(lines.at(-1), numbered(Number(last), line(Number(last))), 'the last line shown is whole');
    const shownBytes = lines.reduce((sum, l) => sum + Buffer.byteLength(l.slice(l.indexOf('\t') + 1)) + 1, 0);
    assert.ok(shownBytes <= MAX_BYTES, `${shownBytes} bytes of the file shown`);
    // The cap counts file bytes; the 7-byte line numbers come on top (about 54 KiB here).
    assert.ok(Buffer.byteLength(out) < 56 * 1024, `${Buffer.byteLength(out)} bytes of output`);
  });

  test('one giant line (minified code) is cut, and the output says so', async (t) => {
    const p = await project(t, { 'bundle.min.js': 'x'.repeat(200 * 1024) });
    const out = await read_file.run({ path: 'bundle.min.js' }, p.ctx);
    assert.match(out, /\[line 1 is longer than 50 KiB and was cut/);
    assert.ok(Buffer.byteLength(out) < MAX_BYTES + 1024, `${Buffer.byteLength(out)} bytes of output`);
  });

  test('one giant line does not promise a continuation that does not exist', async (t) => {
    const p = await project(t, { 'bundle.min.js': 'x'.repeat(200 * 1024) });
    const out = await read_file.run({ path: 'bundle.min.js' }, p.ctx);
    assert.doesNotMatch(out, /use offset=/);
  });

  test('an offset into a run of NUL bytes is refused as binary, not shown as garbage', async (t) => {
    const p = await project(t, {
      'mixed.dat': Buffer.concat([Buffer.from('header\n'.repeat(2000)), Buffer.alloc(100 * 1024)]),
    });
    await refused(read_file.run({ path: 'mixed.dat', offset: 2001 }, p.ctx), /binary/);
  });

  test('a window whose later line is all NUL bytes is refused as binary', async (t) => {
    // The first 8 KiB are text, so only the check on the window's lines sees the NULs.
    const mixed = Buffer.concat([Buffer.from('header\n'.repeat(2000)), Buffer.alloc(100), Buffer.from('\ntext\n')]);
    const p = await project(t, { 'mixed.dat': mixed });
    await refused(read_file.run({ path: 'mixed.dat', offset: 2000 }, p.ctx), /binary/);
  });

  test('a binary file read from past its first NUL bytes is still refused as binary', async (t) => {
    // Lines 3 on look like text: only the check on the start of the file sees that this is binary data.
    const blob = Buffer.concat([Buffer.from('BLOB\n\0\0\x01\n'), Buffer.from('x = 1\n'.repeat(10))]);
    const p = await project(t, { 'data.bin': blob });
    await refused(read_file.run({ path: 'data.bin', offset: 3 }, p.ctx), /binary/);
  });

  test('a binary file is refused instead of shown as garbage', async (t) => {
    const png = Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), Buffer.alloc(64), Buffer.from('IHDR')]);
    const p = await project(t, { 'logo.png': png });
    await refused(read_file.run({ path: 'logo.png' }, p.ctx), /binary/);
  });

  test('a 1 GB file is read without loading it into memory', async (t) => {
    // Sparse: 300 text lines (12 KB, past the 8 KiB binary sniff), then zeros up to 1 GiB.
    const text = Array.from({ length: 300 }, (_, i) => `log line ${i + 1}`.padEnd(39, '.')).join('\n') + '\n';
    const p = await project(t, { 'huge.log': text });
    await growSparse(path.join(p.root, 'huge.log'), 1024 ** 3);
    const rssBefore = process.memoryUsage().rss;
    const out = (await read_file.run({ path: 'huge.log' }, p.ctx)).split('\n');
    const grown = process.memoryUsage().rss - rssBefore;
    assert.ok(grown < 200 * 1024 ** 2, `rss grew by ${Math.round(grown / 1024 ** 2)} MB`);
    assert.equal(out[0], numbered(1, 'log line 1'.padEnd(39, '.')));
    assert.match(out.at(-1)!, /use offset=\d+ to continue|was cut/);
  });
});

describe('capOutput: no tool output floods the context', () => {
  test('ten thousand short lines are cut at 2,000, and the output says how many were shown', () => {
    const lines = Array.from({ length: 10_000 }, (_, i) => `${i + 1}`);
    const out = capOutput(lines.join('\n')).split('\n');
    assert.equal(out.length, MAX_LINES + 1);
    assert.equal(out[MAX_LINES - 1], '2000');
    assert.equal(out[MAX_LINES], '[output cut: 2000 of 10000 lines shown]');
  });

  test('a few very long lines are cut at 50 KiB, on a whole line', () => {
    const line = 'x'.repeat(1023);
    const out = capOutput(Array.from({ length: 100 }, () => line).join('\n')).split('\n');
    assert.equal(out.at(-1), '[output cut: 50 of 100 lines shown]');
    assert.ok(out.slice(0, -1).every((shown) => shown === line));
  });

  test('one line longer than 50 KiB is cut to its first 50 KiB', () => {
    const out = capOutput('y'.repeat(200 * 1024)).split('\n');
    assert.deepEqual(out, ['y'.repeat(MAX_BYTES), '[output cut: 0 of 1 lines shown]']);
  });

  test('output within the caps is passed on unchanged, up to exactly 50 KiB and 2,000 lines', () => {
    const exactly = Array.from({ length: 50 }, () => 'z'.repeat(1023)).join('\n') + 'z';
    assert.equal(Buffer.byteLength(exactly), MAX_BYTES);
    assert.equal(capOutput(exactly), exactly);
    assert.match(capOutput(exactly + 'z'), /\[output cut: 49 of 50 lines shown\]$/);
    const lines = Array.from({ length: MAX_LINES }, () => 'ok').join('\n');
    assert.equal(capOutput(lines), lines);
    assert.match(capOutput(lines + '\nok'), /\[output cut: 2000 of 2001 lines shown\]$/);
  });
});

// ---------------------------------------------------------------------------------------------

describe('editing only what the model has seen', () => {
  test('a file the model never read cannot be edited', async (t) => {
    const p = await project(t, { 'a.txt': 'one\ntwo\n' });
    await refused(
      edit_file.run({ path: 'a.txt', old_str: 'two', new_str: 'TWO' }, p.ctx),
      /read a\.txt with read_file before editing/,
    );
    assert.equal(await readFile(path.join(p.root, 'a.txt'), 'utf8'), 'one\ntwo\n');
  });

  test('a file changed on disk since it was read is not overwritten, and the model gets the fresh contents', async (t) => {
    const p = await project(t, { 'a.txt': 'one\ntwo\n' });
    await read_file.run({ path: 'a.txt' }, p.ctx);
    const theirs = 'one\ntwo\nthree, added by the user\n';
    await writeFile(path.join(p.root, 'a.txt'), theirs);
    const error = await refused(
      edit_file.run({ path: 'a.txt', old_str: 'two', new_str: 'TWO' }, p.ctx),
      /changed on disk/,
    );
    assert.match(error.message, /three, added by the user/);
    assert.equal(await readFile(path.join(p.root, 'a.txt'), 'utf8'), theirs);
  });

  test('a file replaced while it is being read pins the version the model was shown, not one it never saw', async (t) => {
    // Another program keeps replacing the file. Were the window and the hash read separately, a replacement in
    // between would pin a version the model never saw, and an edit of that version would go through.
    const p = await project(t, { 'a.txt': 'version 0\n' });
    const file = path.join(p.root, 'a.txt');
    let replacing = true;
    const replacer = (async () => {
      for (let i = 1; replacing; i++) {
        await writeFile(`${file}.new`, `version ${i}\n`);
        await rename(`${file}.new`, file);
      }
    })();
    try {
      for (let i = 0; i < 100; i++) {
        const out = await read_file.run({ path: 'a.txt' }, p.ctx);
        const shown = `${out.slice(out.indexOf('\t') + 1)}\n`;
        assert.equal(p.ctx.seen.get(file), createHash('sha256').update(shown).digest('hex'), `read ${i}: ${out}`);
      }
    } finally {
      replacing = false;
      await replacer;
    }
  });

  test('a file grown past 10 MiB since it was read is refused as too large, not loaded whole', async (t) => {
    const p = await project(t, { 'log.txt': 'start\n' });
    await read_file.run({ path: 'log.txt' }, p.ctx);
    await growSparse(path.join(p.root, 'log.txt'), MAX_EDITABLE_BYTES + 1);
    await refused(
      edit_file.run({ path: 'log.txt', old_str: 'start', new_str: 'begin' }, p.ctx),
      /too large to edit with edit_file/,
    );
  });

  test('an ambiguous edit is refused instead of changing the first match', async (t) => {
    const p = await project(t, { 'a.ts': 'x = 1;\ny = 2;\nx = 1;\n' });
    await read_file.run({ path: 'a.ts' }, p.ctx);
    await refused(edit_file.run({ path: 'a.ts', old_str: 'x = 1;', new_str: 'x = 3;' }, p.ctx), /2 times/);
    assert.equal(await readFile(path.join(p.root, 'a.ts'), 'utf8'), 'x = 1;\ny = 2;\nx = 1;\n');
  });

  test('an old_str that is not in the file is refused, with the closest line and a hint to read again', async (t) => {
    const source = 'export function add(a, b) {\n  return a + b;\n}\n';
    const p = await project(t, { 'add.js': source });
    await read_file.run({ path: 'add.js' }, p.ctx);
    const input = { path: 'add.js', old_str: '  return a - b;', new_str: '  return b + a;' };
    const error = await refused(edit_file.run(input, p.ctx), /read the file again/);
    // The hint comes from the default after-call hook (hardening/closest-lines.ts).
    const outcome = { content: error.message, isError: true };
    const hinted = await closestLinesHint.check({ tool: edit_file, input }, outcome, { toolContext: p.ctx });
    assert.ok(hinted.content.includes(numbered(2, '  return a + b;')), hinted.content);
    assert.equal(await readFile(path.join(p.root, 'add.js'), 'utf8'), source);
  });

  test('an edit that would change nothing is refused, so the model does not think it made progress', async (t) => {
    const p = await project(t, { 'a.txt': 'same\n' });
    await read_file.run({ path: 'a.txt' }, p.ctx);
    await refused(edit_file.run({ path: 'a.txt', old_str: 'same', new_str: 'same' }, p.ctx), /nothing would change/);
  });

  test('a file that is not UTF-8 is refused by edit_file instead of being corrupted', async (t) => {
    const latin1 = Buffer.from('caf\xe9 = 1\n', 'latin1');
    const p = await project(t, { 'menu.txt': latin1 });
    await read_file.run({ path: 'menu.txt' }, p.ctx);
    await refused(edit_file.run({ path: 'menu.txt', old_str: '= 1', new_str: '= 2' }, p.ctx), /not UTF-8/);
    assert.deepEqual(await readFile(path.join(p.root, 'menu.txt')), latin1);
  });

  test('an edit written with \\n keeps a CRLF file CRLF', async (t) => {
    const p = await project(t, { 'win.txt': 'one\r\ntwo\r\nthree\r\n' });
    assert.equal(
      await read_file.run({ path: 'win.txt' }, p.ctx),
      [numbered(1, 'one'), numbered(2, 'two'), numbered(3, 'three')].join('\n'),
    );
    await edit_file.run({ path: 'win.txt', old_str: 'one\ntwo', new_str: 'one\n2\nand a half' }, p.ctx);
    assert.equal(await readFile(path.join(p.root, 'win.txt'), 'utf8'), 'one\r\n2\r\nand a half\r\nthree\r\n');
  });
});

describe('creating and writing files', () => {
  test('creating a file in a folder that does not exist yet makes the folders', async (t) => {
    const p = await project(t);
    await edit_file.run({ path: 'src/deep/new.ts', old_str: '', new_str: 'export const x = 1;\n' }, p.ctx);
    assert.equal(await readFile(path.join(p.root, 'src/deep/new.ts'), 'utf8'), 'export const x = 1;\n');
  });

  test('creating a file cannot overwrite one that already exists', async (t) => {
    const p = await project(t, { 'a.txt': 'keep me\n' });
    await refused(edit_file.run({ path: 'a.txt', old_str: '', new_str: 'overwritten\n' }, p.ctx), /already exists/);
    assert.equal(await readFile(path.join(p.root, 'a.txt'), 'utf8'), 'keep me\n');
  });

  test('a crash mid-edit cannot leave half a file: the new version replaces the old in one rename', async (t) => {
    const p = await project(t, { 'a.txt': 'one\ntwo\n' });
    const file = path.join(p.root, 'a.txt');
    const inodeBefore = (await stat(file)).ino;
    await read_file.run({ path: 'a.txt' }, p.ctx);
    await edit_file.run({ path: 'a.txt', old_str: 'two', new_str: 'TWO' }, p.ctx);
    assert.equal(await readFile(file, 'utf8'), 'one\nTWO\n');
    // Written in place, the file would keep its inode; a complete temp file renamed over it has a new one.
    assert.notEqual((await stat(file)).ino, inodeBefore);
    assert.deepEqual(await readdir(p.root), ['a.txt'], 'no temp file is left behind');
  });

  test('an edit keeps the file mode (a script stays executable, a shared file stays group-writable)', async (t) => {
    // The mode a file is created with is masked by the umask; pin it so the test means the same everywhere.
    const umask = process.umask(0o022);
    t.after(() => process.umask(umask));
    const p = await project(t, { 'run.sh': '#!/bin/sh\necho one\n', 'shared.sh': '#!/bin/sh\necho one\n' });
    for (const [name, mode] of [
      ['run.sh', 0o755],
      ['shared.sh', 0o775],
    ] as const) {
      await chmod(path.join(p.root, name), mode);
      await read_file.run({ path: name }, p.ctx);
      await edit_file.run({ path: name, old_str: 'one', new_str: 'two' }, p.ctx);
      assert.equal((await stat(path.join(p.root, name))).mode & 0o777, mode, `${name} mode`);
    }
  });
});

// ---------------------------------------------------------------------------------------------

describe('input schemas', () => {
  test('a string where a number belongs is refused, not silently coerced', () => {
    assert.equal(read_file.input.safeParse({ path: 'a', offset: '5' }).success, false);
    assert.equal(read_file.input.safeParse({ path: 'a', offset: 5 }).success, true);
  });

  test('an unknown key is refused, not silently dropped', () => {
    assert.equal(read_file.input.safeParse({ path: 'a', extra: 1 }).success, false);
    assert.equal(edit_file.input.safeParse({ path: 'a', old_str: '', new_str: 'x', replace_all: true }).success, false);
    assert.equal(list_files.input.safeParse({ dir: 'src' }).success, false);
  });

  test("an unknown key is refused even when a forker's schema is a plain z.object, which would drop it", () => {
    const loose: Tool = { ...read_file, name: 'loose_read', input: z.object({ path: z.string() }) };
    assert.match(schemaProblem(loose, { path: 'a', extra: 1 }) ?? '', /invalid arguments for loose_read: .*extra/);
    assert.equal(schemaProblem(loose, { path: 'a' }), null);
  });

  test("a call's arguments are checked without building its tool's schema again (zod compiles each anew)", () => {
    const input = z.object({ path: z.string() });
    let built = 0;
    const strict = input.strict.bind(input);
    input.strict = (...args) => {
      built++;
      return strict(...args);
    };
    const counted: Tool = { ...read_file, name: 'counted_read', input };
    for (let i = 0; i < 3; i++) assert.equal(schemaProblem(counted, { path: 'a' }), null);
    assert.equal(built, 1);
  });
});
