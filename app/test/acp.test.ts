// --acp's decisions that need no editor: how a halt ends a prompt turn, what a prompt becomes as a task, where a
// session id may point, how a recorded transcript is shown again, and what the command line refuses beside --acp.
// The program itself, spoken to over stdio, is app/test/acp.check.ts (npm run test:acp).

import * as acp from '@agentclientprotocol/sdk';
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import type { Halt } from 'reference-harness';
import { TOOLS } from 'reference-harness/tools';
import { hunks, promptTask, replayUpdates, sessionFile, stopReasonFor } from '../acp.ts';
import { parseCli, UsageError } from '../options.ts';

const ROOT = path.join(path.sep, 'work', 'project');
const spent = { tokens: 10, costUsd: null };

test('each halt ends the prompt turn with the stop reason the protocol has for it, and end_turn where it has none', () => {
  const halts: [Halt, acp.StopReason][] = [
    [{ kind: 'accepted', verifiedBy: 'npm test' }, 'end_turn'],
    [{ kind: 'accepted', verifiedBy: null }, 'end_turn'],
    [{ kind: 'interrupted' }, 'cancelled'],
    [{ kind: 'budget', budget: 'turns', limit: 25, spent }, 'max_turn_requests'],
    [{ kind: 'budget', budget: 'tokens', limit: 1000, spent }, 'max_tokens'],
    [{ kind: 'budget', budget: 'cost', limit: 1, spent }, 'end_turn'],
    [{ kind: 'budget', budget: 'time', limit: 60_000, spent }, 'end_turn'],
    [{ kind: 'error', message: 'overloaded' }, 'end_turn'],
  ];
  for (const [halt, reason] of halts) assert.equal(stopReasonFor(halt), reason, JSON.stringify(halt));
  const refused: Halt = { kind: 'error', message: 'the model refused to continue (refusal)' };
  assert.equal(stopReasonFor(refused, 'refusal'), 'refusal');
  assert.equal(stopReasonFor({ kind: 'interrupted' }, 'refusal'), 'cancelled');
});

test('a prompt becomes the task as typed, a linked file its path in the project, spaced like the words around it', () => {
  const link = (file: string): acp.ContentBlock => ({
    type: 'resource_link',
    name: path.basename(file),
    uri: `file://${file}`,
  });
  const prompt: acp.ContentBlock[] = [
    { type: 'text', text: 'Fix' },
    link(path.join(ROOT, 'src', 'add.js')),
    { type: 'text', text: ' so that ' },
    link('/elsewhere/spec.md'),
    { type: 'text', text: ', please' },
  ];
  assert.equal(promptTask(prompt, ROOT), 'Fix @src/add.js so that @/elsewhere/spec.md, please');
});

test("a file the editor embeds reaches the model as its text, marked as the editor's copy, in a fence it cannot close; a selection names its lines", () => {
  const text = 'const add = (a, b) => a - b; // unsaved\n```\n';
  const prompt: acp.ContentBlock[] = [
    { type: 'text', text: 'Fix' },
    { type: 'resource', resource: { uri: `file://${path.join(ROOT, 'add.js')}`, text, mimeType: 'text/javascript' } },
    { type: 'resource', resource: { uri: `file://${path.join(ROOT, 'logo.png')}`, blob: 'AAAA' } },
    { type: 'resource', resource: { uri: `file://${path.join(ROOT, 'sub.js')}#L3:4`, text: 'a\nb\n' } },
  ];
  assert.equal(
    promptTask(prompt, ROOT),
    "Fix @add.js (the editor's copy, perhaps unsaved: the file on disk may differ):\n````\n" +
      text +
      '````\n@logo.png (a binary file the editor attached; its bytes are not shown)' +
      " @sub.js#L3:4 (the editor's copy, perhaps unsaved: the file on disk may differ):\n```\na\nb\n```\n",
  );
});

test('a pasted image becomes an image block between the text around it; a prompt of text alone stays a string', () => {
  const image: acp.ContentBlock = { type: 'image', data: 'AAAA', mimeType: 'image/png' };
  const asBlock = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } };
  assert.deepEqual(promptTask([{ type: 'text', text: 'look' }, image, { type: 'text', text: ' and fix it' }], ROOT), [
    { type: 'text', text: 'look' },
    asBlock,
    { type: 'text', text: ' and fix it' },
  ]);
  assert.deepEqual(promptTask([image, { type: 'text', text: '  ' }], ROOT), [asBlock]);
  assert.equal(promptTask([{ type: 'text', text: 'look' }], ROOT), 'look');
});

test('an image of a type the model cannot read, audio, or a prompt with no text is refused as invalid params, not sent to the model', () => {
  const invalid = (pattern: RegExp) => (error: unknown) =>
    error instanceof acp.RequestError && error.code === -32602 && pattern.test(error.message);
  const tiff: acp.ContentBlock = { type: 'image', data: 'AAAA', mimeType: 'image/tiff' };
  assert.throws(
    () => promptTask([{ type: 'text', text: 'look' }, tiff], ROOT),
    invalid(/image\/tiff: the model reads/),
  );
  const audio: acp.ContentBlock = { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' };
  assert.throws(() => promptTask([{ type: 'text', text: 'hear' }, audio], ROOT), invalid(/text, files and images/));
  assert.throws(() => promptTask([{ type: 'text', text: '  ' }], ROOT), invalid(/no text/));
});

test('a session id that would name a file outside the sessions folder is refused', () => {
  assert.equal(
    sessionFile(ROOT, '2026-12-01T10-00-00-000Z-a1b2c3'),
    path.join(ROOT, '.agent', 'sessions', '2026-12-01T10-00-00-000Z-a1b2c3.jsonl'),
  );
  for (const id of ['../../etc/passwd', 'a/b', '..', '.hidden', '/abs', 'a\\b', '']) {
    assert.throws(
      () => sessionFile(ROOT, id),
      (error: unknown) => error instanceof acp.RequestError && error.code === -32602,
      `"${id}" was taken`,
    );
  }
});

test("a loaded session is shown again as it happened: the person's words as theirs, the harness's as the agent's", () => {
  const updates = replayUpdates(
    [
      { role: 'user', content: [{ type: 'text', text: 'fix add' }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'read it first', signature: 's' },
          { type: 'text', text: 'Reading.' },
          { type: 'tool_use', id: 'call_1', name: 'read_file', input: { path: 'add.js' } },
        ],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'no such file', is_error: true }],
      },
      { role: 'user', content: [{ type: 'text', text: 'The task is not done yet: ...' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_2', name: 'edit_file', input: { path: 'add.js', old_str: '-', new_str: '+' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_2', content: 'edited add.js' }] },
    ],
    new Set(['fix add']),
    { root: ROOT, tools: TOOLS },
  );
  assert.deepEqual(
    updates.map((update) => update.sessionUpdate),
    [
      'user_message_chunk',
      'agent_thought_chunk',
      'agent_message_chunk',
      'tool_call',
      'tool_call_update',
      'agent_message_chunk',
      'tool_call',
      'tool_call_update',
    ],
  );
  assert.deepEqual(updates[3], {
    sessionUpdate: 'tool_call',
    toolCallId: 'call_1',
    status: 'pending',
    title: 'read_file add.js',
    kind: 'read',
    locations: [{ path: path.join(ROOT, 'add.js') }],
  });
  assert.equal((updates[4] as { status: string }).status, 'failed');
  assert.deepEqual(updates[7], {
    sessionUpdate: 'tool_call_update',
    toolCallId: 'call_2',
    status: 'completed',
    content: [
      { type: 'diff', path: path.join(ROOT, 'add.js'), oldText: '-', newText: '+' },
      { type: 'content', content: { type: 'text', text: 'edited add.js' } },
    ],
  });
});

test('--acp refuses what the editor gives (a folder, a task, session files) and what would print on stdout', () => {
  for (const args of [
    ['--root', '.'],
    ['a task'],
    ['--resume', 'x.jsonl'],
    ['--json'],
    ['--trace'],
    ['--session', 's'],
  ]) {
    assert.throws(() => parseCli(['--acp', ...args], {}), UsageError, args.join(' '));
  }
  assert.throws(() => parseCli(['--acp', '--json', 'fix it'], {}), /--acp takes no --json, a task: /);
  const options = parseCli(['--acp', '--verify', 'npm test', '--protect', 'test/**', '--max-turns', '5', '--yes'], {});
  assert.equal(options.acp, true);
  assert.deepEqual([options.verify, options.protect, options.budgets.maxTurns], ['npm test', ['test/**'], 5]);
});

test('a one-line edit to a large file is shown as its hunk with three lines of context, at its line, not the file; a change in many places as every hunk; one too large to show says so, whole: false', () => {
  const lines = Array.from({ length: 4000 }, (_, i) => `const line${i} = ${i}; // some padding to make it long`);
  const before = `${lines.join('\n')}\n`;
  assert.ok(before.length > 100_000);
  const after = before.replace('const line2000 = 2000;', 'const line2000 = 2001;');
  const shown = hunks('/p/big.js', before, after);
  assert.equal(shown.line, 2001);
  assert.deepEqual(shown.content, [
    {
      type: 'diff',
      path: '/p/big.js',
      oldText: `${lines.slice(1997, 2004).join('\n')}\n`,
      newText: `${lines.slice(1997, 2004).join('\n')}\n`.replace('2000 = 2000', '2000 = 2001'),
    },
  ]);
  assert.equal(shown.whole, true);
  // Nineteen changes far apart: nineteen hunks, every one shown, not four and a count.
  const spread = before.replace(/= (\d+)00;/g, (match, n: string) => (Number(n) % 2 === 0 ? `= ${n}00 + 1;` : match));
  const many = hunks('/p/big.js', before, spread);
  assert.equal(many.whole, true);
  assert.equal(many.content.length, 19);
  assert.ok(many.content.every((part) => part.type === 'diff' && part.newText.includes(' + 1;')));
  // One line of 200,000 characters (a minified file), a change on every tenth line, a large new file: each too large
  // to show, said so in a message of a few hundred characters, never cut to a part.
  const minified = 'x'.repeat(200_000);
  for (const [old, changed] of [
    [minified, minified.replace('x', 'y')],
    [before, before.replace(/= (\d+)0;/g, '= $10 + 1;')],
    [null, minified],
  ] as const) {
    const large = hunks('/p/big.js', old, changed);
    assert.equal(large.whole, false);
    assert.ok(JSON.stringify(large.content).length < 500, JSON.stringify(large.content));
    assert.match(JSON.stringify(large.content), /too large to show here \(\d+ characters in \d+ hunk\(s\)\)/);
  }
  assert.equal(hunks('/p/new.md', null, 'hi\n').line, 1);
});
