// A fork's two tools (test/tools/fork-tools.ts) as every view shows their calls: the terminal, the session page and the
// editor (--acp) say them in the tool's own words, never as raw JSON, and the editor gets the tool's kind.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createAgent, runTask } from 'reference-harness';
import { reply, say, ScriptedModel, toolUse } from 'reference-harness/scripted-model';
import { FORKED_TOOLS } from '../../test/tools/fork-tools.ts';
import { tempProject } from '../../test/helpers.ts';
import { replayUpdates } from '../acp.ts';
import { type RecordedOptions, SESSION_VERSION, sessionRecorder } from '../session-file.ts';
import { exportSession } from '../session-page/export.ts';
import { type SessionEvent, terminalPrinter } from '../terminal.ts';

const CALLS = [
  { type: 'tool_use' as const, id: 'call_count', name: 'word_count', input: { path: 'notes.txt' } },
  { type: 'tool_use' as const, id: 'call_append', name: 'append_line', input: { path: 'notes.txt', line: 'four' } },
];
const WORDS = ['word_count notes.txt', 'append_line notes.txt (4 characters)'];

/** A run of the fork's agent on the two calls, every event told to `tell`; returns the agent. */
async function forkRun(root: string, tell: (event: SessionEvent) => void) {
  const calls = CALLS.map(({ name, input, id }) => toolUse(name, input, id));
  const model = new ScriptedModel([reply(...calls), say('Counted, and added a line.')]);
  const agent = await createAgent({ root, model, tools: FORKED_TOOLS, contextFiles: false, onEvent: tell });
  assert.equal((await runTask(agent, 'Count the words, then add a line.')).kind, 'accepted');
  return agent;
}

test("the terminal prints a fork's calls in its tools' words", async (t) => {
  let written = '';
  const out = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written += chunk.toString('utf8');
      done();
    },
  });
  const print = terminalPrinter(out, { tools: () => FORKED_TOOLS });
  await forkRun(await tempProject(t, { 'notes.txt': 'one two three\n' }), print);
  for (const words of WORDS) assert.ok(written.includes(`→ ${words}\n`), written);
  assert.doesNotMatch(written, /\{"path"/);
});

test("the session page says a fork's calls in words, and marks the changing one as approved by --yes", async (t) => {
  const root = await tempProject(t, { 'notes.txt': 'one two three\n' });
  const file = path.join(root, 'fork.jsonl');
  const options: RecordedOptions = {
    verify: undefined,
    verifyTimeoutMs: 30_000,
    protect: [],
    budgets: { maxTurns: 25 },
    approval: 'yes',
    tools: FORKED_TOOLS.map((tool) => tool.name),
    contextWindow: undefined,
    contextFiles: false,
    taskModel: undefined,
  };
  const header = {
    type: 'session' as const,
    version: SESSION_VERSION,
    model: 'scripted',
    root,
    startedAt: '',
    options,
  };
  const record = sessionRecorder(file, header, []);
  await forkRun(root, record);
  const { out } = await exportSession(file, path.join(root, 'fork.html'), { tools: FORKED_TOOLS });
  const page = readFileSync(out, 'utf8');
  assert.match(page, /<span class="tool">word_count notes\.txt<\/span>\s*<\/div>/, 'read-only: no approval to show');
  assert.match(
    page,
    /<span class="tool">append_line notes\.txt \(4 characters\)<\/span>\s*<span class="approval yes">approved by --yes/,
  );
});

test("--acp lists a fork's calls in words, with their tools' kinds", () => {
  const root = '/project';
  const updates = replayUpdates(
    [
      { role: 'user', content: [{ type: 'text', text: 'count, then add' }] },
      { role: 'assistant', content: CALLS },
    ],
    new Set(['count, then add']),
    { root, tools: FORKED_TOOLS },
  );
  const calls = updates.flatMap((update) => (update.sessionUpdate === 'tool_call' ? [update] : []));
  assert.deepEqual(
    calls.map(({ title, kind, locations }) => ({ title, kind, locations })),
    [
      { title: WORDS[0], kind: 'read', locations: [{ path: path.join(root, 'notes.txt') }] },
      { title: WORDS[1], kind: 'edit', locations: [{ path: path.join(root, 'notes.txt') }] },
    ],
  );
});
