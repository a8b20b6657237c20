// The session file read back, offline: every entry checked against the schema of its type, a bad
// line reported with its number (a torn last line as a crash, any other as corruption), the
// transcript repaired in both directions until the API's rules hold, and a file of any size
// streamed rather than read into one string. Each test is named after the failure it prevents;
// the oracle for "valid" is the API's rules as lessons/api-rules.ts writes them.

import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import fc from 'fast-check';
import { AnthropicModel, type Compaction, type LoadedSession, resume, runTask } from 'reference-harness';
import { loadSession, RUN_WITHOUT_HALT, SESSION_VERSION, type SessionEntry, sessionRecorder } from '../session-file.ts';
import { requestViolations } from '../../lessons/api-rules.ts';
import { fakeMessage, startFakeApi } from '../../test/model/fake-api.ts';
import { scriptedAgent, tempProject, violationsOf } from '../../test/helpers.ts';
import { runCli, pointSdkAt } from './helpers.ts';

const header = (root: string): SessionEntry => ({
  type: 'session',
  version: SESSION_VERSION,
  model: 'scripted',
  root,
  startedAt: '2026-12-01T00:00:00.000Z',
});

const message = (m: Anthropic.MessageParam): SessionEntry => ({ type: 'message', message: m });
const task = (text: string) => message({ role: 'user', content: text });
const replyCalling = (...ids: string[]): Anthropic.MessageParam => ({
  role: 'assistant',
  content: [
    { type: 'text', text: 'Reading.' },
    ...ids.map((id): Anthropic.ToolUseBlockParam => ({ type: 'tool_use', id, name: 'list_files', input: {} })),
  ],
});
const callsReply = (...ids: string[]) => message(replyCalling(...ids));
const results = (...ids: string[]) =>
  message({
    role: 'user',
    content: ids.map((id) => ({ type: 'tool_result' as const, tool_use_id: id, content: 'a.txt' })),
  });
const finalReply = (text: string) => message({ role: 'assistant', content: [{ type: 'text', text }] });

/** A session file in a fresh project, one line per entry; a string is written as it is (a damaged line). */
async function sessionFile(t: TestContext, lines: (SessionEntry | string)[]) {
  const root = await tempProject(t);
  const file = path.join(root, '.agent', 'sessions', 'session.jsonl');
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, lines.map((line) => `${typeof line === 'string' ? line : JSON.stringify(line)}\n`).join(''));
  return { root, file };
}

/** What a resumed run sends first: the loaded transcript, its repair, then the next task. */
const firstRequestAfter = (loaded: LoadedSession): Anthropic.MessageParam[] => [
  ...loaded.messages,
  ...(loaded.repair ? [loaded.repair] : []),
  { role: 'user', content: 'keep going' },
];

/** The same, as the model sees it after a compaction: the summary, then the verbatim part. */
const compactedRequestAfter = (loaded: LoadedSession, compaction: Compaction) => [
  { role: 'user' as const, content: `[Summary]\n\n${compaction.summary}` },
  ...firstRequestAfter(loaded).slice(compaction.keptFrom),
];

describe('a bad entry is reported with its line, never blamed on the model', () => {
  test('a bare null, a null message, a bad role, empty content and a blank text block are each named by line and dropped; the rest resumes', async (t) => {
    const { file } = await sessionFile(t, [
      header('/p'),
      task('list the files'),
      'null',
      '{"type":"message","message":null}',
      '{"type":"message","message":{"role":"robot","content":"beep"}}',
      '{"type":"message","message":{"role":"user","content":""}}',
      '{"type":"message","message":{"role":"assistant","content":[]}}',
      '{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"  "}]}}',
      finalReply('There is a.txt.'),
    ]);
    const loaded = await loadSession(file);
    assert.deepEqual(
      loaded.warnings.map((w) => w.replace(file, 'FILE')),
      [
        'FILE:3 is not a valid entry (not an object with a "type": null); the line was dropped',
        'FILE:4 is not a valid entry (a message entry with message: Invalid input: expected object, received null); ' +
          'the line was dropped',
        'FILE:5 is not a valid entry (a message entry with message.role: Invalid option: expected one of ' +
          '"user"|"assistant"); the line was dropped',
        'FILE:6 is not a valid entry (a message entry with message.content: must hold more than whitespace); ' +
          'the line was dropped',
        'FILE:7 is not a valid entry (a message entry with message.content: must not be an empty list); ' +
          'the line was dropped',
        'FILE:8 is not a valid entry (a message entry with message.content.0.text: must hold more than whitespace); ' +
          'the line was dropped',
      ],
    );
    assert.deepEqual(loaded.messages, [
      { role: 'user', content: 'list the files' },
      { role: 'assistant', content: [{ type: 'text', text: 'There is a.txt.' }] },
    ]);
  });

  test('a block on the wrong side (a tool_result from the assistant, a tool_use from the user) is refused at its line', async (t) => {
    const { file } = await sessionFile(t, [
      task('go'),
      '{"type":"message","message":{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"x"}]}}',
      '{"type":"message","message":{"role":"user","content":[{"type":"tool_use","id":"y","name":"n","input":{}}]}}',
    ]);
    const { warnings, messages } = await loadSession(file);
    assert.match(
      warnings[0]!,
      /:2 is not a valid entry \(a message entry with message\.content\.0: a tool_result block from the assistant\)/,
    );
    assert.match(
      warnings[1]!,
      /:3 is not a valid entry \(a message entry with message\.content\.0: a tool_use block from the user\)/,
    );
    assert.equal(messages.length, 1);
  });

  test('a corrupted line in the middle is called corrupted, not the torn last line of a crash', async (t) => {
    const { file } = await sessionFile(t, [
      header('/p'),
      task('hi'),
      '{"type":"mess#!garbage',
      finalReply('Hello.'),
      '{"type":"usa',
    ]);
    const { warnings } = await loadSession(file);
    assert.equal(warnings.length, 2);
    assert.match(warnings[0]!, /:3 is corrupted \(.*JSON.*\); the line was dropped$/);
    assert.match(warnings[1]!, /:5 was cut off \(the process died while writing it\); the line was dropped$/);
  });

  test('a run killed before its halt (SIGKILL, a crash) is said on load, naming its task; a halted run is not', async (t) => {
    const taskEntry = (text: string): SessionEntry => ({ type: 'task', text });
    const halted: SessionEntry = { type: 'halt', halt: { kind: 'interrupted' } };
    const run = [taskEntry('hi'), task('hi'), finalReply('Hello.')];
    const killed = await sessionFile(t, [header('/p'), ...run, halted, ...run]);
    assert.deepEqual((await loadSession(killed.file)).warnings, [`${killed.file}:6: ${RUN_WITHOUT_HALT}`]);
    const ended = await sessionFile(t, [header('/p'), ...run, halted, ...run, halted]);
    assert.deepEqual((await loadSession(ended.file)).warnings, []);
  });

  test('an entry type from a later version is skipped with one warning per type, naming its first line', async (t) => {
    const { file } = await sessionFile(t, [
      header('/p'),
      task('hi'),
      '{"type":"checkpoint","files":["a.txt"]}',
      finalReply('Hello.'),
      '{"type":"checkpoint","files":[]}',
    ]);
    const { warnings, messages } = await loadSession(file);
    assert.deepEqual(
      warnings.map((w) => w.replace(file, 'FILE')),
      ['FILE:3: 2 entries of type "checkpoint", unknown to this version, were skipped'],
    );
    assert.equal(messages.length, 2);
  });

  test('an entry nested absurdly deep is refused at its line, before anything (JSON.stringify) can overflow the stack on it', async (t) => {
    const deep = `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`;
    const call = `{"type":"tool_use","id":"t","name":"n","input":${deep}}`;
    const line = `{"type":"message","message":{"role":"assistant","content":[${call}]}}`;
    const { file } = await sessionFile(t, [task('hi'), line, finalReply('Hello.')]);
    const loaded = await loadSession(file);
    assert.match(loaded.warnings[0]!, /:2 is not a valid entry \(nested deeper than 72 levels\)/);
    assert.deepEqual(violationsOf({ messages: firstRequestAfter(loaded) }), []);
    assert.doesNotThrow(() => JSON.stringify(loaded.messages), 'what is loaded can be sent');
  });

  test('a warning flood is capped: a file of bad lines lists twenty, then a count', async (t) => {
    const { file } = await sessionFile(t, [task('hi'), ...Array.from({ length: 50 }, () => 'null'), finalReply('ok')]);
    const { warnings } = await loadSession(file);
    assert.equal(warnings.length, 21);
    assert.equal(warnings.at(-1), '... and 30 more warnings like these');
  });
});

describe('repair in both directions: every resumed transcript obeys the API', () => {
  test('a lost line that held a call: its orphaned result is dropped with a warning, and the resume is accepted by the rule-enforcing API', async (t) => {
    const { root, file } = await sessionFile(t, [
      header('/p'),
      task('what is here?'),
      callsReply('toolu_1'),
      results('toolu_1'),
      finalReply('There is a.txt.'),
      task('and now?'),
      JSON.stringify(callsReply('toolu_2')).slice(0, 90) + '\u0000#', // damaged in place
      results('toolu_2'),
      finalReply('Still a.txt.'),
    ]);
    const loaded = await loadSession(file);
    assert.match(loaded.warnings[0]!, /:7 is corrupted/);
    assert.match(loaded.warnings[1]!, /:8: 1 result\(s\) answer no call just before them; dropped/);

    const api = await startFakeApi([
      { kind: 'reply', message: fakeMessage([{ type: 'text', text: 'Done.', citations: null }]) },
    ]);
    t.after(() => api.close());
    const client = new Anthropic({ apiKey: 'test-key', baseURL: api.baseURL, maxRetries: 0 });
    const { agent } = await scriptedAgent(root, [], {
      model: new AnthropicModel('claude-test', client),
      onEvent: sessionRecorder(file, null, []),
    });
    resume(agent, loaded);
    assert.deepEqual(await runTask(agent, 'keep going'), { kind: 'accepted', verifiedBy: null });
    const sent = api.requests.filter((r) => r.path === '/v1/messages');
    assert.equal(sent.length, 1, 'one request, and the fake API accepted it');
    assert.deepEqual(requestViolations(sent[0]!.body), []);
  });

  test('the same file resumed from the command line (ANTHROPIC_BASE_URL at the fake API) prints each warning with its line and exits 0', async (t) => {
    const { root, file } = await sessionFile(t, [
      header('/p'),
      task('what is here?'),
      callsReply('toolu_1'),
      'null',
      '{"type":"message","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_2","na',
      results('toolu_2'),
      finalReply('a.txt.'),
    ]);
    const api = await startFakeApi([
      { kind: 'reply', message: fakeMessage([{ type: 'text', text: 'Done.', citations: null }]) },
    ]);
    t.after(() => api.close());
    pointSdkAt(t, api.baseURL);
    const run = await runCli(['--root', root, '--resume', file, '--yes', 'keep going'], {
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: api.baseURL,
    });
    assert.equal(run.status, 0, run.stdout);
    const said = run.stdout.replace(/\n  /g, ' '); // a notice wider than 100 columns is wrapped
    assert.match(said, /session\.jsonl:4 is not a valid entry \(not an object with a "type": null\)/);
    assert.match(said, /session\.jsonl:5 is corrupted/);
    assert.match(said, /session\.jsonl:6: 1 result\(s\) answer no call just before them; dropped/);
    assert.match(said, /session\.jsonl:6: 1 call\(s\) before this line have no result/);
    const sent = api.requests.filter((r) => r.path === '/v1/messages');
    assert.equal(sent.length, 1);
    assert.deepEqual(requestViolations(sent[0]!.body), []);
  });

  test('a lost line that held the results: the calls are answered "result lost" (is_error), not left dangling', async (t) => {
    const { file } = await sessionFile(t, [task('go'), callsReply('toolu_1', 'toolu_2'), finalReply('Done.')]);
    const loaded = await loadSession(file);
    assert.match(
      loaded.warnings[0]!,
      /:3: 2 call\(s\) before this line have no result \(a lost line\); answered "result lost"/,
    );
    assert.deepEqual(loaded.messages[2], {
      role: 'user',
      content: ['toolu_1', 'toolu_2'].map((id) => ({
        type: 'tool_result',
        tool_use_id: id,
        content: 'result lost: the session file has no result for this call (a lost line); it may or may not have run',
        is_error: true,
      })),
    });
    assert.deepEqual(violationsOf({ messages: firstRequestAfter(loaded) }), []);
  });

  test('a task typed after results were lost gets the missing answers put before it, in the same message', async (t) => {
    const { file } = await sessionFile(t, [task('go'), callsReply('toolu_1'), task('stop, do something else')]);
    const loaded = await loadSession(file);
    assert.equal(loaded.messages.length, 3);
    const last = loaded.messages[2]!;
    assert.ok(Array.isArray(last.content));
    assert.deepEqual(
      last.content.map((block) => block.type),
      ['tool_result', 'text'],
    );
    assert.deepEqual(violationsOf({ messages: firstRequestAfter(loaded) }), []);
  });

  test('results written after other text (a hand-edited line) are moved first, where the API wants them', async (t) => {
    const { file } = await sessionFile(t, [
      task('go'),
      callsReply('toolu_1'),
      message({
        role: 'user',
        content: [
          { type: 'text', text: 'also: be quick' },
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.txt' },
        ],
      }),
    ]);
    const loaded = await loadSession(file);
    assert.match(loaded.warnings[0]!, /:3: results moved before the text/);
    assert.deepEqual(violationsOf({ messages: firstRequestAfter(loaded) }), []);
  });

  test('a lost first line: a transcript never starts with a reply, a placeholder task goes first', async (t) => {
    const { file } = await sessionFile(t, [header('/p'), '{"type":"message","messa', finalReply('Hello.')]);
    const loaded = await loadSession(file);
    assert.equal(loaded.messages[0]!.role, 'user');
    assert.match(loaded.warnings[1]!, /:3: the first message is a reply \(the task before it was lost\)/);
    assert.deepEqual(violationsOf({ messages: firstRequestAfter(loaded) }), []);
  });

  test('a repeated line (two writers, a bad copy) cannot send one call id twice: the repeat is dropped', async (t) => {
    const { file } = await sessionFile(t, [
      task('go'),
      callsReply('toolu_1'),
      results('toolu_1'),
      callsReply('toolu_1'),
      results('toolu_1'),
      finalReply('Done.'),
    ]);
    const loaded = await loadSession(file);
    assert.match(loaded.warnings.join('\n'), /:4: 1 call\(s\) repeat the id of an earlier call/);
    assert.match(loaded.warnings.join('\n'), /:5: 1 result\(s\) answer no call just before them/);
    assert.deepEqual(violationsOf({ messages: firstRequestAfter(loaded) }), []);
  });

  test('a compaction whose cut no longer lands on a reply is not used, so the model is never shown an orphaned result', async (t) => {
    const summary = (keptFrom: number): SessionEntry => ({
      type: 'compaction',
      summary: 'We listed the files.',
      keptFrom,
      usage: fakeMessage([]).usage,
    });
    const { file } = await sessionFile(t, [
      task('go'),
      callsReply('toolu_1'),
      results('toolu_1'),
      summary(1),
      summary(2),
      finalReply('Done.'),
    ]);
    const loaded = await loadSession(file);
    assert.deepEqual(loaded.compaction, { summary: 'We listed the files.', keptFrom: 1 });
    assert.match(loaded.warnings[0]!, /:5: the summary's cut \(message 2\) is not at a reply; the summary is not used/);
  });

  test('adjacent messages of one role that the harness itself writes (a task after a failed run, a paused turn) load untouched', async (t) => {
    const entries = [
      task('go'),
      callsReply('toolu_1'),
      results('toolu_1'),
      task('the model call failed; go on'),
      finalReply('Searching…'),
      finalReply('Found it.'),
    ];
    const { file } = await sessionFile(t, entries);
    const loaded = await loadSession(file);
    assert.deepEqual(loaded.warnings, []);
    assert.deepEqual(
      loaded.messages,
      entries.map((e) => (e.type === 'message' ? e.message : null)),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Random damage: whatever happens to the lines of a valid session, the resume obeys the API's rules.

const DAMAGE = [
  'drop',
  'garble',
  'truncate',
  'repeat',
  'swap',
  'null',
  'nullMessage',
  'badRole',
  'empty',
  'unknown',
] as const;
type Damage = { kind: (typeof DAMAGE)[number]; at: number };
/** A line of the file, and whether no valid entry can be read from it: the load must name each such line. */
type Line = { text: string; bad: boolean };

/** A valid session from a plan of steps: a task, a round of calls and their results, a final reply, a summary. */
function validSession(plan: { step: number; calls: number; steer: boolean }[], diesMidCall: boolean) {
  const entries: SessionEntry[] = [header('/p')];
  const messages: Anthropic.MessageParam[] = [];
  let ids = 0;
  let compaction: Compaction | null = null;
  const add = (m: Anthropic.MessageParam) => (messages.push(m), entries.push(message(m)));
  add({ role: 'user', content: 'start' });
  for (const { step, calls, steer } of plan) {
    if (step === 0) add({ role: 'user', content: `task ${messages.length}` });
    if (step === 1 || step === 2) {
      const callIds = Array.from({ length: calls }, () => `toolu_${++ids}`);
      add(replyCalling(...callIds));
      entries.push({ type: 'usage', turn: 1, usage: fakeMessage([]).usage });
      const answers = callIds.map((id): Anthropic.ContentBlockParam => ({
        type: 'tool_result',
        tool_use_id: id,
        content: id,
      }));
      add({ role: 'user', content: steer ? [...answers, { type: 'text', text: 'steer' }] : answers });
    }
    if (step === 3) {
      add({ role: 'assistant', content: [{ type: 'text', text: `done ${messages.length}` }] });
      entries.push({ type: 'halt', halt: { kind: 'accepted', verifiedBy: null } });
    }
    const keptFrom = messages.findLastIndex((m) => m.role === 'assistant');
    if (step === 4 && keptFrom > 0) {
      compaction = { summary: `summary ${keptFrom}`, keptFrom };
      entries.push({ type: 'compaction', ...compaction, usage: fakeMessage([]).usage });
    }
  }
  if (diesMidCall) add(replyCalling(`toolu_${++ids}`));
  return { entries, messages, compaction };
}

function damage(lines: Line[], { kind, at }: Damage): Line[] {
  const i = at % lines.length;
  const line = lines[i]!;
  const out = [...lines];
  const bad = (text: string) => out.splice(i, 1, { text, bad: true });
  if (kind === 'drop') out.splice(i, 1);
  if (kind === 'garble') bad('{"type":"message", #garbage');
  if (kind === 'truncate') bad(line.text.slice(0, Math.floor(line.text.length / 2)));
  if (kind === 'repeat') out.splice(i, 0, line);
  if (kind === 'swap' && i + 1 < lines.length) out.splice(i, 2, lines[i + 1]!, line);
  if (kind === 'null') bad('null');
  if (kind === 'nullMessage') bad('{"type":"message","message":null}');
  if (kind === 'badRole') bad('{"type":"message","message":{"role":"system","content":"x"}}');
  if (kind === 'empty') bad('{"type":"message","message":{"role":"assistant","content":[]}}');
  if (kind === 'unknown') out.splice(i, 0, { text: '{"type":"checkpoint","v":2}', bad: false });
  return out;
}

test('random damage to a valid session (lost, garbled, torn, repeated, swapped and invalid lines) always loads into a transcript the API accepts, and names every bad line', async (t) => {
  const root = await tempProject(t);
  const file = path.join(root, 'fuzz.jsonl');
  const step = fc.record({
    step: fc.integer({ min: 0, max: 4 }),
    calls: fc.integer({ min: 1, max: 3 }),
    steer: fc.boolean(),
  });
  const hits = fc.array(fc.record({ kind: fc.constantFrom(...DAMAGE), at: fc.nat() }), { maxLength: 4 });
  await fc.assert(
    fc.asyncProperty(fc.array(step, { maxLength: 12 }), fc.boolean(), hits, async (plan, diesMidCall, damages) => {
      const session = validSession(plan, diesMidCall);
      const lines = damages.reduce(
        damage,
        session.entries.map((entry) => ({ text: JSON.stringify(entry), bad: false })),
      );
      await writeFile(file, lines.map((line) => `${line.text}\n`).join(''));
      const loaded = await loadSession(file);
      const warnings = loaded.warnings.join('\n');
      assert.deepEqual(violationsOf({ messages: firstRequestAfter(loaded) }), [], warnings);
      if (loaded.compaction)
        assert.deepEqual(violationsOf({ messages: compactedRequestAfter(loaded, loaded.compaction) }), [], warnings);
      lines.forEach((line, k) => {
        if (line.bad)
          assert.ok(warnings.includes(`${file}:${k + 1} `), `line ${k + 1} is bad but not named:\n${warnings}`);
      });
      if (damages.length === 0) {
        assert.deepEqual(loaded.messages, session.messages, 'an undamaged session loads exactly as written');
        assert.deepEqual(loaded.compaction, session.compaction);
        assert.equal(loaded.warnings.length, diesMidCall ? 1 : 0, warnings);
      }
    }),
    { numRuns: 100, seed: 20_261_201 },
  );
});

// ---------------------------------------------------------------------------------------------
// Any size

describe('sessions of any size', () => {
  test('a file far longer than one read chunk streams line for line: multibyte characters split across chunks, blank lines and CRLF included', async (t) => {
    const messages: Anthropic.MessageParam[] = Array.from({ length: 3_000 }, (_, i) => ({
      role: i % 2 === 0 ? 'user' : 'assistant',
      content: [{ type: 'text', text: `${i}: ${'é🙂 naïve — ünïcödé '.repeat(1 + (i % 23))}` }],
    }));
    const body = messages.map((m, i) => `${JSON.stringify(message(m))}${i % 10 === 0 ? '\r\n\n' : '\n'}`).join('');
    assert.ok(Buffer.byteLength(body) > 1024 * 1024, 'more than sixteen 64 KiB chunks');
    const { file } = await sessionFile(t, []);
    await writeFile(file, body);
    const loaded = await loadSession(file);
    assert.deepEqual(loaded.warnings, []);
    assert.deepEqual(loaded.messages, messages);
  });
});
