// A fork's two tools (test/tools/fork-tools.ts: `[...TOOLS, word_count, append_line]`, the second changing files) as
// every view shows their calls: the terminal, the session page and the editor (--acp) say them in the tool's own words,
// never as raw JSON, and treat the changing one as changing (the terminal asks with its preview, the page marks its
// approval, the editor gets its kind); a replay offers them and applies the changing one only with --yes. The eval
// runs the program, whose sessions get PROGRAM_TOOLS as the terminal's and the editor's do.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { test, type TestContext } from 'node:test';
import { approveAll, createAgent, runTask } from 'reference-harness';
import { reply, say, ScriptedModel, toolUse } from 'reference-harness/scripted-model';
import { FORKED_TOOLS } from '../../test/tools/fork-tools.ts';
import { tempProject } from '../../test/helpers.ts';
import { replayUpdates } from '../acp.ts';
import { type Approver } from '../harness.ts';
import { configFromCli, parseCli } from '../options.ts';
import { PROGRAM_TOOLS } from '../program-tools.ts';
import { replaySession } from '../replay.ts';
import { type RecordedOptions, SESSION_VERSION, sessionRecorder } from '../session-file.ts';
import { exportSession } from '../session-page/export.ts';
import { EXIT, type SessionEvent, StatusLine, terminalApprover, terminalPrinter } from '../terminal.ts';

const CALLS = [
  { type: 'tool_use' as const, id: 'call_count', name: 'word_count', input: { path: 'notes.txt' } },
  { type: 'tool_use' as const, id: 'call_append', name: 'append_line', input: { path: 'notes.txt', line: 'four' } },
];
const WORDS = ['word_count notes.txt', 'append_line notes.txt (4 characters)'];

const TASK = 'Count the words, then add a line.';
const NOTES = { 'notes.txt': 'one two three\n' };

/** A run of the fork's agent on the two calls, every event told to `tell`, every change put to `approve`. */
async function forkRun(root: string, tell: (event: SessionEvent) => void, approve: Approver = approveAll) {
  const calls = CALLS.map(({ name, input, id }) => toolUse(name, input, id));
  const model = new ScriptedModel([reply(...calls), say('Counted, and added a line.')]);
  const agent = await createAgent({ root, model, tools: FORKED_TOOLS, contextFiles: false, onEvent: tell, approve });
  tell({ type: 'task', text: TASK });
  assert.equal((await runTask(agent, TASK)).kind, 'accepted');
  return agent;
}

/** The header of a session of the fork's agent, as the command line records one. */
function forkHeader(root: string) {
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
  return { type: 'session' as const, version: SESSION_VERSION, model: 'scripted', root, startedAt: '', options };
}

/** A recorded session of the fork's agent, approved as --yes approves: the session file. */
async function forkSession(t: TestContext): Promise<string> {
  const root = await tempProject(t, NOTES);
  const file = path.join(root, 'fork.jsonl');
  await forkRun(root, sessionRecorder(file, forkHeader(root), []));
  return file;
}

test("the terminal prints a fork's calls in its tools' words, and asks about the changing one with its preview", async (t) => {
  let written = '';
  const answers = new PassThrough();
  const out = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written += chunk.toString('utf8');
      if (chunk.toString('utf8').includes('Allow this ')) setImmediate(() => answers.write('y\n'));
      done();
    },
  });
  const rl = createInterface({ input: answers, output: out, terminal: false });
  t.after(() => rl.close());
  const screen = new StatusLine(out, { rl, input: answers });
  const print = terminalPrinter(out, { screen, tools: () => FORKED_TOOLS });
  const root = await tempProject(t, NOTES);
  await forkRun(root, print, terminalApprover(screen, out));
  for (const words of WORDS) assert.ok(written.includes(`→ ${words}\n`), written);
  assert.doesNotMatch(written, /\{"path"/);
  assert.equal(written.match(/Allow this /g)?.length, 1, 'one question, about the changing call');
  assert.match(written, /\+\+\+ b\/notes\.txt\n[\s\S]*\+four\n[\s\S]*Allow this append_line\?/, 'its preview first');
  assert.equal(readFileSync(path.join(root, 'notes.txt'), 'utf8'), 'one two three\nfour\n');
});

test("the session page says a fork's calls in words, and marks the changing one as approved by --yes", async (t) => {
  const file = await forkSession(t);
  const { out } = await exportSession(file, path.join(path.dirname(file), 'fork.html'), { tools: FORKED_TOOLS });
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

test("a replay offers a fork's tools and applies its changing one only with --yes", async (t) => {
  const file = await forkSession(t);
  const replayed = async (tools: typeof FORKED_TOOLS, ...flags: string[]) => {
    const root = await tempProject(t, NOTES);
    const out = new PassThrough();
    let said = '';
    out.on('data', (chunk: Buffer) => (said += chunk.toString('utf8')));
    const options = parseCli(['--replay', file, '--root', root, ...flags], {});
    const status = await replaySession(file, options, out, tools);
    return { status, said, notes: readFileSync(path.join(root, 'notes.txt'), 'utf8') };
  };
  const yes = await replayed(FORKED_TOOLS, '--yes');
  assert.equal(yes.status, EXIT.accepted, yes.said);
  assert.match(yes.said, /replay: identical/);
  assert.equal(yes.notes, 'one two three\nfour\n');
  const no = await replayed(FORKED_TOOLS);
  assert.equal(no.status, EXIT.notAccepted, no.said);
  assert.match(no.said, /changes are refused/);
  assert.equal(no.notes, 'one two three\n', 'append_line changes files: refused without --yes');
  const shipped = await replayed(PROGRAM_TOOLS, '--yes');
  assert.equal(shipped.status, EXIT.notAccepted, 'a program without the fork has no word_count to offer');
});

test("every session the program starts (the terminal's, the editor's, the eval's) gets PROGRAM_TOOLS", () => {
  const options = parseCli(['--script', 'none.json', 'a task'], {});
  const model = new ScriptedModel([]);
  const made = { root: '/project', model, taskModel: undefined, approve: null };
  assert.equal(configFromCli(options, made, () => {}).tools, PROGRAM_TOOLS);
});
