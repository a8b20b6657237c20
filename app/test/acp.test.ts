// --acp's decisions that need no editor: how a halt ends a prompt turn, what a prompt becomes as a task, where a
// session id may point, how a recorded transcript is shown again, and what the command line refuses beside --acp.
// The program itself, spoken to over stdio, is app/test/acp.check.ts (npm run test:acp).

import * as acp from '@agentclientprotocol/sdk';
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import type { Halt } from '../../agent.ts';
import { TOOLS } from '../../tools.ts';
import { hunks, replayUpdates, sessionFile, stopReasonFor, taskText } from '../acp.ts';
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
  assert.equal(taskText(prompt, ROOT), 'Fix @src/add.js so that @/elsewhere/spec.md, please');
});

test('a prompt with an image, or with no text, is refused as invalid params, not sent to the model', () => {
  const image: acp.ContentBlock = { type: 'image', data: 'AAAA', mimeType: 'image/png' };
  assert.throws(
    () => taskText([{ type: 'text', text: 'look' }, image], ROOT),
    (error: unknown) =>
      error instanceof acp.RequestError && error.code === -32602 && /text and file links/.test(error.message),
  );
  assert.throws(
    () => taskText([{ type: 'text', text: '  ' }], ROOT),
    (error: unknown) => error instanceof acp.RequestError && /no text/.test(error.message),
  );
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

test('a one-line edit to a large file is shown as its hunk with three lines of context, at its line, not the file', () => {
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
  // One line of 200,000 characters (a minified file), and a change in many places: still a bounded message.
  const minified = 'x'.repeat(200_000);
  for (const [old, changed] of [
    [minified, minified.replace('x', 'y')],
    [before, before.replace(/= (\d+)0;/g, '= $10 + 1;')],
    [null, minified],
  ] as const) {
    const size = JSON.stringify(hunks('/p/big.js', old, changed).content).length;
    assert.ok(size < 16_000, `${size} characters`);
  }
  assert.match(JSON.stringify(hunks('/p/big.js', before, before.replace(/= (\d+)0;/g, '= $10 + 1;'))), /more hunk/);
  assert.equal(hunks('/p/new.md', null, 'hi\n').line, 1);
});
