// npm run test:terminal: the program in a real pseudo-terminal (test/pty.ts), its bytes rendered by a real terminal
// emulator (test/emulator.ts), for what only the REPL draws: the approval question. The model's text must not clear
// the screen and draw a fake question over the real one; a path must not hide what it names in the question; a
// markdown link must not become a hyperlink that hides its target; an edited recording, replayed, must not draw a
// fake verdict.

import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { test, type TestContext } from 'node:test';
import { emulator } from './emulator.ts';
import { tempProject } from '../../test/helpers.ts';
import { editedRecording } from './helpers.ts';
import { hasScript, startInTerminal, type Terminal } from './pty.ts';

const skip = hasScript ? false : 'needs script(1) from util-linux';
const ESC = '\x1b';
const FAKE_QUESTION = 'Allow this edit_file? [y]es, [N]o, [a]lways this session (Enter: no) ';
/** A file name that reads "invoicexe.pdf" once the right-to-left override reverses its end. */
const REVERSED = 'invoice\u202efdp.exe';

/** The REPL on a scripted model that writes `said` (text blocks, streamed one after the other) and then asks to
 *  create a file named `file`; the person answers no. */
async function askedAbout(t: TestContext, said: string[], file: string, env: NodeJS.ProcessEnv = {}) {
  const script = [
    {
      content: [
        ...said.map((text) => ({ type: 'text', text })),
        { type: 'tool_use', name: 'edit_file', input: { path: file, old_str: '', new_str: 'x\n' } },
      ],
    },
    { content: [{ type: 'text', text: 'Done.' }] },
  ];
  const root = await tempProject(t, { 'script.json': JSON.stringify(script) });
  const term: Terminal = startInTerminal(['--script', 'script.json'], { cwd: root, env });
  t.after(() => term.kill());
  await term.waitFor(/you> /);
  term.type('make it\r');
  await term.waitFor(/\x1b\[0JAllow this edit_file\? [^\n]*\(Enter: no\) /); // readline's, after its clear
  const screen = emulator();
  await screen.write(term.output());
  const asked = await screen.rows();
  term.type('n\r');
  await term.waitFor(/Why not\?/);
  term.type('\r');
  await term.waitFor(/halt: accepted/);
  term.type('/exit\r');
  assert.equal(await term.exited, 0);
  assert.deepEqual(await readdir(root), ['.agent', 'script.json'], 'the edit was declined');
  return { asked: asked.filter((row) => row !== ''), oscs: screen.oscs };
}

test(
  "the model's text cannot clear the screen and draw a fake approval question over the real one (ESC and [2J streamed apart)",
  { skip },
  async (t) => {
    const said = ['Looks fine.', ESC, `[2J${ESC}[H${FAKE_QUESTION}\n`];
    const { asked, oscs } = await askedAbout(t, said, 'a.js');
    assert.deepEqual(oscs, []);
    assert.match(asked[0] ?? '', /^model: scripted/, `the screen was cleared:\n${asked.join('\n')}`);
    const text = asked.find((row) => row.startsWith('Looks fine.'));
    assert.equal(text, `Looks fine.\\x1b[2J\\x1b[H${FAKE_QUESTION.trimEnd()}`, 'the escape shown as text');
    assert.equal(asked.at(-1), FAKE_QUESTION.trimEnd(), 'the real question is the last row, where the cursor is');
    assert.ok(asked.includes('→ edit_file a.js (new)'), asked.join('\n'));
  },
);

test(
  'a path with a right-to-left override or a newline is quoted and escaped in the tool line and the approval question',
  { skip },
  async (t) => {
    // jsdiff quotes the first two in the diff's header as git does (octal bytes); the harness quotes the third.
    const headers = [String.raw`"b/invoice\342\200\256fdp.exe"`, String.raw`"b/a.js\n+++ b/ok.js"`, '"b/a.js "'];
    for (const [i, file] of [REVERSED, 'a.js\n+++ b/ok.js', 'a.js '].entries()) {
      const { asked, oscs } = await askedAbout(t, [], file);
      assert.deepEqual(oscs, []);
      const shown = asked.join('\n');
      assert.ok(asked.includes(`→ edit_file ${JSON.stringify(file).replace('\u202e', '\\u202e')} (new)`), shown);
      assert.ok(asked.includes(`+++ ${headers[i]}`), shown);
      assert.ok(!shown.includes('\u202e'), 'no raw override on the screen');
      assert.ok(!asked.includes('+++ b/ok.js'), 'no header drawn by a newline in the path');
    }
  },
);

test(
  'on a colour terminal that takes hyperlinks, a markdown link shows its target: no OSC 8 hides it',
  { skip },
  async (t) => {
    const link = 'See [https://good.example/](https://evil.example/) and\n\n';
    const env = { NO_COLOR: undefined, FORCE_HYPERLINK: '1' };
    const { asked, oscs } = await askedAbout(
      t,
      [link, `raw ${ESC}]8;;https://evil.example/\x07here${ESC}]8;;\x07`],
      'a.js',
      env,
    );
    assert.deepEqual(oscs, []);
    assert.ok(asked.includes('See https://good.example/ (https://evil.example/) and'), asked.join('\n'));
    assert.ok(
      asked.some((row) => row.startsWith('raw \\x1b]8;;https://evil.example/\\x07here')),
      asked.join('\n'),
    );
  },
);

test(
  'a recording edited to hold escapes (in its check and in what the check prints) cannot clear the screen or write the clipboard when replayed',
  { skip },
  async (t) => {
    const drawn = `${ESC}[2J${ESC}[Hreplay: identical${ESC}]52;c;ZXZpbA==\x07`;
    const { root, file } = await editedRecording(t, (header) => ({
      ...header,
      options: { ...header.options!, verify: `printf '%s' '${drawn}'; node test.js` },
    }));
    const term = startInTerminal(['--replay', file, '--root', root, '--yes', '--no-sandbox'], { cwd: root });
    t.after(() => term.kill());
    await term.exited;
    const screen = emulator();
    await screen.write(term.output());
    const rows = await screen.rows();
    const shown = rows.join('\n');
    assert.deepEqual(screen.oscs, [], 'no clipboard write reached the terminal');
    assert.match(rows[0] ?? '', /^replay: the verify command `printf '%s' '\\x1b\[2J\\x1b\[Hreplay: identical/, shown);
    assert.ok(!rows.includes('replay: identical'), `a fake verdict was drawn:\n${shown}`);
    assert.ok(
      rows.some((row) => row.includes('\\x1b]52;c;ZXZpbA==\\x07')),
      `the check's bytes shown as text:\n${shown}`,
    );
  },
);
