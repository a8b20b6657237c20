// How a call is put into words for every view (the terminal, the page, the editor protocol): describeCall,
// describeArguments and shownPath in tools.ts. What the model sent is shown, never obeyed: a path that could hide
// what it names is quoted with its hidden characters escaped. The screen itself is tested in app/test/.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { defineTool, describeArguments, describeCall, read_file, shownPath, toolDefinition } from '../../tools.ts';
import { containedRunner, guardedDisk } from '../../hardening/index.ts';

describe('shownPath', () => {
  test('a plain path is shown as it is, letters beyond ASCII included', () => {
    for (const plain of ['src/a.ts', 'é/ü.txt', 'a😀b']) assert.equal(shownPath(plain), plain);
  });

  test('an empty path is shown as "", not as nothing', () => {
    assert.equal(shownPath(''), '""');
  });

  test('a path with a space, a quote or a backslash is quoted, so it cannot pass for two names', () => {
    assert.equal(shownPath('a b'), '"a b"');
    assert.equal(shownPath('say"hi'), '"say\\"hi"');
    assert.equal(shownPath('a\\b'), '"a\\\\b"');
  });

  test('a newline, a carriage return or a tab in a path is escaped, so it cannot start a fake line', () => {
    assert.equal(shownPath('a\nb'), '"a\\nb"');
    assert.equal(shownPath('a\rb'), '"a\\rb"');
    assert.equal(shownPath('a\tb'), '"a\\tb"');
  });

  test('an escape sequence, a right-to-left override or a zero-width space in a path is escaped, never sent', () => {
    assert.equal(shownPath('\x1b[2Jx'), '"\\u001b[2Jx"');
    assert.equal(shownPath('evil\u202etxt.js'), '"evil\\u202etxt.js"');
    assert.equal(shownPath('a\u200bb'), '"a\\u200bb"');
    assert.equal(shownPath('a\u00a0b'), '"a\\u00a0b"'); // a no-break space looks like a space
    assert.equal(shownPath('a\u0085b'), '"a\\u0085b"'); // C1: a next-line on some terminals
  });

  test('a hidden character outside the BMP is escaped as both of its UTF-16 halves', () => {
    assert.equal(shownPath('a\u{e0041}'), '"a\\udb40\\udc41"'); // a tag character: invisible
  });

  test('in a quoted path the visible characters stay as they are', () => {
    assert.equal(shownPath('é b😀'), '"é b😀"');
  });
});

describe('describeArguments: a tool that says nothing of its own calls', () => {
  test('input that is not an object shows as the bare name, never as "[object Object]" or a crash', () => {
    for (const input of ['text', null, ['a'], 3, undefined]) assert.equal(describeArguments('t', input), 't');
  });

  test('a path shows as it is, other arguments as key=value, a hiding key or value quoted', () => {
    assert.equal(describeArguments('t', { path: 'a b', n: 3, ok: true }), 't "a b" n=3 ok=true');
    assert.equal(describeArguments('t', { 'a key': 'x\ny' }), 't "a key"="x\\ny"');
    assert.equal(describeArguments('t', { path: 7 }), 't path=7'); // a path that is not text is a value
  });

  test('a null argument shows as null, not as a nested value it is not', () => {
    assert.equal(describeArguments('t', { q: null }), 't q=null');
  });

  test('a long string is cut at 40 characters, so one argument cannot fill the screen', () => {
    const forty = 'x'.repeat(40);
    assert.equal(describeArguments('t', { q: forty }), `t q=${forty}`);
    assert.equal(describeArguments('t', { q: `${forty}y` }), `t q=${'x'.repeat(39)}…`);
  });

  test('a nested value is only counted, so a large one cannot fill the screen', () => {
    assert.equal(describeArguments('t', { a: ['x'], b: ['x', 'y'], c: { d: 1 } }), 't a=[1 item] b=[2 items] c={…}');
  });
});

describe('describeCall', () => {
  test("a shipped tool's call is in its own words", () => {
    assert.equal(describeCall('read_file', { path: 'a.js', offset: 10, limit: 5 }), 'read_file a.js (lines 10–14)');
    assert.equal(describeCall('list_files', {}), 'list_files .');
    assert.equal(describeCall('edit_file', { path: 'a b.js', old_str: '', new_str: 'x' }), 'edit_file "a b.js" (new)');
  });

  test('a call to a tool the program does not have is shown by its arguments, not dropped', () => {
    assert.equal(describeCall('nope', { path: 'p', q: 1 }), 'nope p q=1');
    assert.equal(describeCall('read_file', { path: 'a.js', offset: 10 }, []), 'read_file a.js offset=10');
  });

  test('a call given by its tool is in that tool\'s own words, not "[object Object]" and its arguments', () => {
    assert.equal(describeCall(read_file, { path: 'a.js', offset: 10, limit: 5 }, []), 'read_file a.js (lines 10–14)');
  });
});

test("each shipped tool's words for a call say what the call will do: which lines, which folder, a new file or not", () => {
  assert.equal(describeCall('read_file', { path: 'a.js' }), 'read_file a.js');
  assert.equal(describeCall('read_file', { path: 'a.js', offset: 10 }), 'read_file a.js (from line 10)');
  assert.equal(describeCall('read_file', { path: 'a.js', limit: 5 }), 'read_file a.js (lines 1–5)');
  assert.equal(describeCall('list_files', { path: '.' }), 'list_files .');
  assert.equal(describeCall('list_files', { path: 'src' }), 'list_files src/');
  assert.equal(describeCall('list_files', { path: 'src/' }), 'list_files src/');
  assert.equal(describeCall('list_files', { path: 'a b' }), 'list_files "a b/"');
  assert.equal(describeCall('edit_file', { path: 'a.js', old_str: 'x', new_str: 'y' }), 'edit_file a.js');
});

describe('defineTool: what a forker gets without saying it', () => {
  const root = { root: '/nowhere', seen: new Map(), disk: guardedDisk, runner: containedRunner };
  const plain = defineTool({
    name: 'plain',
    description: 'a tool that says nothing of its calls',
    input: z.strictObject({ n: z.number() }),
    readOnly: true,
    run: async ({ n }) => `n is ${n}`,
  });
  const worded = defineTool({
    name: 'worded',
    description: 'a tool that says what it does',
    input: z.strictObject({ n: z.number() }),
    readOnly: false,
    kind: 'search',
    describe: ({ n }) => `worded ${n * 2}`,
    run: async ({ n }) => `n is ${n}`,
    preview: async ({ n }) => `would change ${n}`,
  });

  test('a tool that names no kind is of kind other, so an editor never shows it as a read or an edit', () => {
    assert.equal(plain.kind, 'other');
    assert.equal(worded.kind, 'search');
  });

  test('a tool without describe, or a call its schema refuses, is described by its arguments, never thrown on', () => {
    assert.equal(plain.describe({ n: 2 }), 'plain n=2');
    assert.equal(worded.describe({ n: 2 }), 'worded 4');
    assert.equal(worded.describe({ n: 'two' }), 'worded n=two');
  });

  test('run and preview see the parsed input, and a tool without preview has none', async () => {
    assert.equal(await plain.run({ n: 1 }, root), 'n is 1');
    await assert.rejects(async () => plain.run({ n: 1, extra: true }, root));
    assert.equal(plain.preview, undefined);
    assert.equal(await worded.preview?.({ n: 3 }, root), 'would change 3');
  });
});

describe('toolDefinition: a tool as the model is shown it', () => {
  const defaulted = defineTool({
    name: 'defaulted',
    description: 'a tool with an argument that has a default',
    input: z.object({ n: z.number().default(1), q: z.string() }),
    readOnly: true,
    run: async ({ n, q }) => `${q} ${n}`,
  });

  test('an argument with a default is not required of the model, though the parsed input always has it', () => {
    const schema = toolDefinition(defaulted).input_schema;
    assert.deepEqual(schema.required, ['q']);
    assert.equal(schema.type, 'object');
  });

  test("a tool's definition is built once and shared, not converted again for every agent", () => {
    assert.equal(toolDefinition(defaulted), toolDefinition(defaulted));
  });
});
