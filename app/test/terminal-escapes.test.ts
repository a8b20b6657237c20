// A terminal that shows bytes, never obeys them: what the model, a file, a path, a diff or the check wrote reaches a
// real terminal emulator (test/emulator.ts) through the program's own printing, and the rendered screen is read
// back. Control and bidi characters must be shown as escapes; no clipboard write (OSC 52) or hyperlink (OSC 8) may
// reach the emulator; the screen must never be cleared or redrawn by them.

import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type { SessionEvent } from '../terminal.ts';
import { main } from '../main.ts';
import { markdownRenderer } from '../markdown.ts';
import { jsonPrinter, StatusLine, terminalPrinter, tracePrinter } from '../terminal.ts';
import { describeCall } from 'reference-harness/tools';
import { type Emulator, emulator } from './emulator.ts';
import { tempProject } from '../../test/helpers.ts';

const ESC = '\x1b';
/** A clipboard write: whoever pastes next pastes "rm -rf ~" (base64). */
const CLIPBOARD = `${ESC}]52;c;cm0gLXJmIH4=\x07`;
/** The same in C1 form (one character for OSC, one for its end), which JSON and a strip of ESC let through. */
const CLIPBOARD_C1 = '\u009d52;c;cm0gLXJmIH4=\u009c';
const FAKE_QUESTION = 'Allow this edit_file? [y]es, [N]o, [a]lways this session (Enter: no) ';

/** Colour as a person's terminal has it: NO_COLOR unset for this test (colourOn reads the process's own). */
function withColour(t: TestContext): void {
  const saved = process.env.NO_COLOR;
  delete process.env.NO_COLOR;
  t.after(() => {
    if (saved !== undefined) process.env.NO_COLOR = saved;
  });
}

const turn = { turn: 1, usage: { input_tokens: 1, output_tokens: 1 } } as const;
const reply = { type: 'reply', ...turn, stopReason: 'end_turn', calls: 0 } as unknown as SessionEvent;

/** The model's text through the terminal printer, `chunks` as it streamed. */
async function streamed(screen: Emulator, chunks: string[], markdown?: (block: string) => string): Promise<string[]> {
  const print = terminalPrinter(screen.out, { ...(markdown && { markdown }) });
  print({ type: 'notice', text: 'model: scripted · root: /project' });
  for (const delta of chunks) print({ type: 'text', delta });
  print(reply);
  return await screen.rows();
}

/** What a clear-screen and a fake question do to the rows when obeyed: the notice above is gone. */
function assertNotRedrawn(rows: string[]): void {
  assert.match(rows[0] ?? '', /^model: scripted · root: \/project/, `the screen was cleared:\n${rows.join('\n')}`);
  const said = rows.find((row) => row.includes('Looks fine.')) ?? '';
  assert.ok(said.includes('Looks fine.\\x1b[2J\\x1b[HAllow this edit_file?'), `not shown as escapes: ${said}`);
}

for (const colour of [false, true])
  test(`the model's text cannot clear the screen and draw a fake approval question, ESC and [2J in separate chunks (${colour ? 'markdown, colour' : 'NO_COLOR'})`, async (t) => {
    if (colour) withColour(t);
    const screen = emulator({ colour });
    const chunks = ['Looks fine.', ESC, '[2J', `${ESC}[H${FAKE_QUESTION}\n\nDone.`];
    assertNotRedrawn(await streamed(screen, chunks, colour ? markdownRenderer(100) : undefined));
  });

test("a C1 CSI (one character, no ESC) in the model's text or a notice cannot clear the screen either", async () => {
  const screen = emulator();
  const rows = await streamed(screen, ['Looks fine.\u009b2J\u009bH', FAKE_QUESTION]);
  assert.match(rows[0] ?? '', /^model: scripted/);
  assert.ok(
    rows.some((row) => row.includes('Looks fine.\\x9b2J\\x9bHAllow')),
    rows.join('\n'),
  );
  // A notice (an error's text, a path) the same way.
  terminalPrinter(screen.out)({ type: 'notice', text: 'gone\u009b2J\u009bH' });
  const after = await screen.rows();
  assert.match(after[0] ?? '', /^model: scripted/);
  assert.ok(
    after.some((row) => row.includes('gone\\x9b2J\\x9bH')),
    after.join('\n'),
  );
});

test('an OSC 8 hyperlink the model wrote cannot lie about its target: none reaches the terminal, with or without markdown', async (t) => {
  withColour(t);
  const lying = `see ${ESC}]8;;https://evil.example/\x07https://good.example/${ESC}]8;;\x07 and [https://good.example/](https://evil.example/)`;
  for (const markdown of [undefined, markdownRenderer(100)]) {
    const screen = emulator({ colour: true });
    const rows = await streamed(screen, [lying], markdown);
    assert.deepEqual(screen.oscs, []);
    assert.ok(rows.join('\n').includes('evil.example'), 'the real target is shown');
  }
});

test('a character reference the markdown renderer decodes (&#x202e;, a right-to-left override) still shows as an escape', async (t) => {
  withColour(t);
  const screen = emulator({ colour: true });
  const rows = await streamed(screen, ['invoice&#x202e;fdp.exe is ready'], markdownRenderer(100));
  assert.ok(
    rows.some((row) => row.includes('invoice\\u202efdp.exe')),
    rows.join('\n'),
  );
});

test('a path with a right-to-left override or a newline is shown quoted and escaped in the tool line', async () => {
  assert.equal(describeCall('read_file', { path: 'invoice\u202efdp.exe' }), 'read_file "invoice\\u202efdp.exe"');
  assert.equal(
    describeCall('edit_file', { path: 'a.js\n+ ok.js', old_str: 'x', new_str: 'y' }),
    'edit_file "a.js\\n+ ok.js"',
  );
  assert.equal(describeCall('list_files', { path: 'my src' }), 'list_files "my src/"');
  const screen = emulator();
  const print = terminalPrinter(screen.out);
  const call = { id: 'toolu_1', name: 'edit_file', input: { path: 'a.js\n+ ok.js', old_str: 'x', new_str: 'y' } };
  print({ type: 'call', call } as SessionEvent);
  const rows = (await screen.rows()).filter((row) => row !== '');
  assert.deepEqual(rows, ['→ edit_file "a.js\\n+ ok.js"']);
});

/** The real program, in this process, on a scripted model, printing to the emulator. */
async function program(t: TestContext, args: string[], screen: Emulator): Promise<number> {
  const script = [
    {
      content: [
        { type: 'text', text: `Reading.${ESC}` },
        { type: 'text', text: `[2J${ESC}[H${CLIPBOARD_C1}` },
        { type: 'tool_use', name: 'read_file', input: { path: `x${CLIPBOARD}/../a.js` } },
      ],
    },
    {
      content: [
        {
          type: 'tool_use',
          name: 'edit_file',
          input: { path: 'a.js', old_str: 'const a = 1;', new_str: `const a = 2; // ${CLIPBOARD}` },
        },
      ],
    },
    { content: [{ type: 'text', text: 'Done.' }] },
    { content: [{ type: 'text', text: 'Done.' }] },
  ];
  const root = await tempProject(t, {
    'a.js': `// ${CLIPBOARD} first line\nconst a = 1;\n`,
    'script.json': JSON.stringify(script),
  });
  // The check prints a C1 clipboard write as its last line and fails: its tail is shown under the verdict.
  await writeFile(
    path.join(root, 'check.js'),
    `console.log(${JSON.stringify(`failing ${CLIPBOARD_C1}`)}); process.exit(1);`,
  );
  const given = ['--root', root, '--script', path.join(root, 'script.json'), '--verify', 'node check.js', '--yes'];
  return await main([...given, '--max-turns', '4', ...args, 'fix it'], {}, screen.out);
}

test('no OSC 52 clipboard write reaches the terminal: not from a path segment cancelled by "..", a file\'s first line, a diff under --yes, or the check\'s output', async (t) => {
  const screen = emulator();
  await program(t, [], screen);
  const rows = await screen.rows();
  const shown = rows.join('\n');
  assert.deepEqual(screen.oscs, [], `an OSC reached the terminal:\n${shown}`);
  assert.match(rows[0] ?? '', /^model: scripted/, 'the screen was cleared');
  assert.ok(shown.includes('→ read_file "x\\u001b]52;c;cm0gLXJmIH4=\\u0007/../a.js"'), shown);
  assert.ok(
    shown.includes('✓ 2 lines: 1 // \\x1b]52;c;cm0gLXJmIH4=\\x07 first line'),
    "read_file's first line, escaped",
  );
  assert.ok(shown.includes('+const a = 2; // \\x1b]52;c;cm0gLXJmIH4=\\x07'), 'the diff, escaped');
  assert.ok(shown.includes('│ failing \\x9d52;c;cm0gLXJmIH4=\\x9c'), "the check's tail, escaped");
});

test('--json output is JSON a terminal only shows: C1 and bidi characters are \\u escapes, and the values are unchanged', async (t) => {
  const screen = emulator();
  const lines: string[] = [];
  const print = jsonPrinter(Object.assign(screen.out, { write: (text: string) => (lines.push(text), true) }));
  print({ type: 'text', delta: `a ${CLIPBOARD_C1} \u202e b` });
  assert.deepEqual(lines, ['{"type":"text","delta":"a \\u009d52;c;cm0gLXJmIH4=\\u009c \\u202e b"}\n']);
  assert.deepEqual(JSON.parse(lines[0]!), { type: 'text', delta: `a ${CLIPBOARD_C1} \u202e b` });
  const whole = emulator();
  await program(t, ['--json'], whole);
  const rows = await whole.rows();
  assert.deepEqual(whole.oscs, []);
  assert.ok(
    rows.some((row) => row.includes('\\u009d52;c;')),
    rows.join('\n'),
  );
});

test('--trace prints the model text and the results with their control characters escaped', async (t) => {
  const screen = emulator();
  await program(t, ['--trace'], screen);
  const rows = await screen.rows();
  assert.deepEqual(screen.oscs, []);
  assert.match(rows[0] ?? '', /^\[0\]/, 'the screen was cleared');
  assert.ok(
    rows.some((row) => row.includes('Reading.\\x1b[2J\\x1b[H\\x9d52;c;')),
    rows.join('\n'),
  );
  // The trace printer alone, fed a clear-screen: the line before it stays.
  const alone = emulator();
  const print = tracePrinter(alone.out);
  print({ type: 'notice', text: 'first' });
  print({ type: 'notice', text: `${ESC}[2J${ESC}[Hsecond` });
  assert.deepEqual(
    (await alone.rows()).filter((row) => row !== ''),
    ['[0] note           first', '[0] note           \\x1b[2J\\x1b[Hsecond'],
  );
});

test("the check's live last line on the status line cannot clear the screen or write the clipboard", async (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'Date'] });
  const screen = emulator();
  const status = new StatusLine(screen.out);
  status.line('before');
  status.wait('checking "done": npm test');
  status.tail(`${ESC}[2J${ESC}[H\u009b2J${CLIPBOARD_C1} 3 passing`);
  t.mock.timers.tick(600); // the status line is drawn on its clock
  const drawn = await screen.rows();
  assert.ok(
    drawn.some((row) => row.includes('npm test · 0 s · \\x1b[2J\\x1b[H\\x9b2J\\x9d52;c;')),
    drawn.join('\n'),
  );
  status.done();
  status.line('after');
  const rows = (await screen.rows()).filter((row) => row !== '');
  assert.deepEqual(screen.oscs, []);
  assert.deepEqual(rows, ['before', 'after']);
});

test('an error naming a path with controls is printed with them escaped', async (t) => {
  const said: string[] = [];
  t.mock.method(console, 'error', (text: string) => said.push(text));
  assert.equal(await main(['--root', `x${CLIPBOARD}`, 'fix it'], {}), 2);
  const screen = emulator();
  await screen.write(said.join('\n'));
  assert.deepEqual(screen.oscs, []);
  assert.ok(
    (await screen.rows()).some((row) => row.includes('--root x\\x1b]52;c;')),
    said.join('\n'),
  );
});
