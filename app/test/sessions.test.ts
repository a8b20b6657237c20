// P3 hardening, part 2, offline: the session file survives crashes and resumes into a valid
// transcript; read-only calls really run together without changing what the model sees; every
// request is a byte-stable extension of the last; API faults end runs cleanly through the real
// SDK; and a SIGKILLed CLI resumes without losing a message. Each test is named after the failure
// it prevents. Concurrency is proven by rendezvous (each call waits for the other), never by clocks.

import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setImmediate as tick } from 'node:timers/promises';
import { describe, test, type TestContext } from 'node:test';
import { z } from 'zod';
import { AnthropicModel, MAX_PARALLEL_READS, resume, runTask } from '../agent.ts';
import { main } from '../app/main.ts';
import { loadSession, SESSION_VERSION, type SessionEntry, sessionRecorder } from '../app/session-file.ts';
import { call, reply, say, type ScriptEntry, toolUse } from '../scripted-model.ts';
import { defineTool, edit_file, type Tool, TOOLS } from '../tools.ts';
import { requestViolations } from '../lessons/api-rules.ts';
import { fakeMessage, type FakeApi, type FakeStep, startFakeApi } from './fake-api.ts';
import { deferred, scriptedAgent, tempProject, textOf, unmarked, violationsOf, within } from './helpers.ts';

const API_KEY = 'sk-ant-test-SECRET-1234567890';

const header = (root: string): Extract<SessionEntry, { type: 'session' }> => ({
  type: 'session',
  version: SESSION_VERSION,
  model: 'scripted',
  root,
  startedAt: new Date().toISOString(),
});

/** Where the CLI keeps sessions by default; list_files skips .agent, so the tools never see it. */
const sessionIn = (root: string) => path.join(root, '.agent', 'sessions', 'session.jsonl');

const blocks = (message: Anthropic.MessageParam | undefined) =>
  message === undefined || typeof message.content === 'string' ? [] : message.content;

/** The tool results of a request's last message, as [tool_use_id, content, is_error]. */
const resultsOf = (messages: Anthropic.MessageParam[]) =>
  blocks(messages.at(-1)).flatMap((b) =>
    b.type === 'tool_result' ? [[b.tool_use_id, b.content, b.is_error ?? false]] : [],
  );

// =============================================================================================
// 1. The session file

describe('the session file', () => {
  test('a saved session resumes into the same transcript, and the continued run sends a request the API accepts', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const file = sessionIn(root);
    const first = await scriptedAgent(root, [call('read_file', { path: 'a.txt' }), say('a.txt says alpha.')], {
      onEvent: sessionRecorder(file, header(root), [API_KEY]),
    });
    assert.equal((await runTask(first.agent, 'what does a.txt say?')).kind, 'accepted');

    const loaded = await loadSession(file);
    assert.deepEqual(loaded.warnings, []);
    assert.equal(loaded.repair, null);
    const second = await scriptedAgent(root, [say('Still alpha.')], {
      onEvent: sessionRecorder(file, null, [API_KEY]),
    });
    resume(second.agent, loaded);
    assert.deepEqual(second.agent.messages, first.agent.messages);

    assert.equal((await runTask(second.agent, 'keep going')).kind, 'accepted');
    const sent = second.model.requests[0]!;
    assert.deepEqual(violationsOf(sent), []);
    assert.deepEqual(
      unmarked(sent.messages).slice(0, first.agent.messages.length),
      first.agent.messages,
      'the model was sent the old transcript',
    );
    assert.deepEqual(
      (await loadSession(file)).messages,
      second.agent.messages,
      'the continued run was appended to the same file',
    );
  });

  test('a resumed session (also by /resume) asks for a fresh read before an edit: the file may have changed meanwhile', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const file = sessionIn(root);
    const first = await scriptedAgent(root, [call('read_file', { path: 'a.txt' }), say('read')], {
      onEvent: sessionRecorder(file, header(root), []),
    });
    await runTask(first.agent, 'read a.txt');
    resume(first.agent, await loadSession(file));
    await assert.rejects(
      edit_file.run({ path: 'a.txt', old_str: 'alpha', new_str: 'beta' }, first.agent.toolContext),
      /read a\.txt with read_file before editing it/,
    );
  });

  test('a last line torn by a crash mid-write is dropped with a warning instead of making the session unloadable', async (t) => {
    const root = await tempProject(t);
    const file = sessionIn(root);
    const { agent } = await scriptedAgent(root, [say('Hello.')], { onEvent: sessionRecorder(file, header(root), []) });
    await runTask(agent, 'hi');
    const line = JSON.stringify({
      type: 'message',
      message: { role: 'user', content: 'this line was being written when the power went' },
    });
    appendFileSync(file, line.slice(0, line.length / 2));

    const loaded = await loadSession(file);
    assert.deepEqual(loaded.messages, agent.messages);
    assert.equal(loaded.warnings.length, 1);
    assert.match(loaded.warnings[0]!, /cut off/);
  });

  test('a torn last line does not swallow the first entry written after a resume', async (t) => {
    const root = await tempProject(t);
    const file = sessionIn(root);
    const first = await scriptedAgent(root, [say('Hello.')], { onEvent: sessionRecorder(file, header(root), []) });
    await runTask(first.agent, 'hi');
    appendFileSync(file, '{"type":"message","message":{"role":"us');

    const second = await scriptedAgent(root, [say('Going on.')], { onEvent: sessionRecorder(file, null, []) });
    resume(second.agent, await loadSession(file));
    await runTask(second.agent, 'keep going');
    const reloaded = await loadSession(file);
    assert.deepEqual(reloaded.messages, second.agent.messages);
  });

  test('a call left without a result by a crash is answered "not run" at load, appended to the file, and the transcript stays valid', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const file = sessionIn(root);
    const dying: Anthropic.MessageParam = {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Reading both.' },
        { type: 'tool_use', id: 'toolu_dead_1', name: 'read_file', input: { path: 'a.txt' } },
        { type: 'tool_use', id: 'toolu_dead_2', name: 'list_files', input: {} },
      ],
    };
    const entries: SessionEntry[] = [
      header(root),
      { type: 'message', message: { role: 'user', content: 'read a.txt' } },
      { type: 'message', message: dying },
    ];
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, entries.map((e) => `${JSON.stringify(e)}\n`).join(''));
    const before = await readFile(file);

    const loaded = await loadSession(file);
    const notRun = 'not run: the session ended before this call finished';
    assert.deepEqual(loaded.repair, {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_dead_1', content: notRun, is_error: true },
        { type: 'tool_result', tool_use_id: 'toolu_dead_2', content: notRun, is_error: true },
      ],
    });
    assert.match(loaded.warnings.join('\n'), /2 call\(s\) had no result/);

    const { agent, model } = await scriptedAgent(root, [say('I will read it again.')], {
      onEvent: sessionRecorder(file, null, []),
    });
    resume(agent, loaded);
    const after = await readFile(file);
    assert.ok(
      after.subarray(0, before.length).equals(before),
      'append-only: the bytes already in the file are unchanged',
    );
    const appended = after.subarray(before.length).toString('utf8');
    assert.equal(appended.indexOf('\n'), appended.length - 1, 'one line');
    const { at, ...entry } = JSON.parse(appended) as { at: string };
    assert.deepEqual(entry, { type: 'message', message: loaded.repair });
    assert.ok(Date.parse(at) > 0, 'with the time it was written');
    assert.equal(agent.toolContext.seen.size, 0, 'the dead call was answered, not run');

    await runTask(agent, 'keep going');
    assert.deepEqual(violationsOf(model.requests[0]!), []);
  });

  test('the API key never reaches the session file, even when a tool result or a reply contains it', async (t) => {
    const root = await tempProject(t, { '.env': `ANTHROPIC_API_KEY=${API_KEY}\n` });
    const file = sessionIn(root);
    const script = [call('read_file', { path: '.env' }), say(`The key is ${API_KEY}.`)];
    const { agent, model } = await scriptedAgent(root, script, {
      onEvent: sessionRecorder(file, header(root), [API_KEY]),
    });
    await runTask(agent, `is ${API_KEY} in .env?`);
    assert.ok(JSON.stringify(model.requests[1]).includes(API_KEY), 'the tool result really held the key');

    const written = await readFile(file, 'utf8');
    assert.equal(written.includes(API_KEY), false);
    assert.equal(
      written.split('[redacted]').length - 1,
      4,
      'task, tool result, reply (as message and as reply) redacted',
    );
    assert.equal(
      (await loadSession(file)).messages.length,
      agent.messages.length,
      'redaction keeps every line valid JSON',
    );
  });

  test('the header written by the CLI names the format version, model, root and start time, so a resume knows what it continues', async (t) => {
    const root = await tempProject(t);
    const script = path.join(root, 'script.json');
    await writeFile(script, JSON.stringify([say('Hello.')]));
    const file = sessionIn(root);
    t.mock.timers.enable({ apis: ['Date'], now: Date.parse('2030-01-02T03:04:05.678Z') });
    const printed = t.mock.method(process.stdout, 'write', () => true);
    const code = await main(
      ['--script', script, '--root', root, '--session', file, '--yes', '--model', 'claude-header-test', 'hi'],
      {},
    ).finally(() => printed.mock.restore());
    assert.equal(code, 0);

    const first = JSON.parse((await readFile(file, 'utf8')).split('\n')[0]!);
    assert.deepEqual(Object.keys(first).sort(), [
      'contextWindow',
      'model',
      'options',
      'protected',
      'root',
      'startedAt',
      'type',
      'version',
    ]);
    assert.equal(first.type, 'session');
    assert.equal(first.version, SESSION_VERSION);
    assert.equal(first.model, 'claude-header-test');
    assert.equal(first.root, root);
    assert.equal(first.startedAt, '2030-01-02T03:04:05.678Z', "the start time is the clock's, as ISO 8601");
  });

  test('a session written in another format version is refused instead of misread', async (t) => {
    const root = await tempProject(t);
    const file = path.join(root, 'old.jsonl');
    await writeFile(file, `${JSON.stringify({ ...header(root), version: SESSION_VERSION + 1 })}\n`);
    await assert.rejects(loadSession(file), {
      message: `${file}: session format ${SESSION_VERSION + 1}, this harness reads 1 and ${SESSION_VERSION}`,
    });
  });
});

// =============================================================================================
// 2. Parallel read-only calls

/** A test tool taking `{ who }`, whose `run` does the waiting and logging a test needs. */
function testTool(name: string, readOnly: boolean, run: (input: { who: string }) => Promise<string>): Tool {
  return defineTool({
    name,
    description: `${name}: a test tool.`,
    input: z.strictObject({ who: z.string() }),
    readOnly,
    run,
  });
}

describe('parallel read-only calls', () => {
  test('two read-only calls in one reply really overlap: each finishes only after the other has started', async (t) => {
    const root = await tempProject(t);
    const started = new Map([
      ['a', deferred()],
      ['b', deferred()],
    ]);
    const meet = testTool('meet', true, async ({ who }) => {
      started.get(who)!.resolve();
      await within(
        started.get(who === 'a' ? 'b' : 'a')!.promise,
        `${who} waiting for the other read to start (the reads ran one after the other)`,
      );
      return `${who} met`;
    });
    const { agent, model } = await scriptedAgent(
      root,
      [reply(toolUse('meet', { who: 'a' }), toolUse('meet', { who: 'b' })), say('done')],
      { tools: [meet] },
    );
    await runTask(agent, 'meet');
    assert.deepEqual(resultsOf(model.requests[1]!.messages), [
      ['toolu_s1_0', 'a met', false],
      ['toolu_s1_1', 'b met', false],
    ]);
  });

  test('results keep call order even when the second call finishes first', async (t) => {
    const root = await tempProject(t);
    const log: string[] = [];
    const bDone = deferred();
    const race = testTool('race', true, async ({ who }) => {
      log.push(`start ${who}`);
      if (who === 'a') await within(bDone.promise, 'a waiting for b to finish');
      log.push(`end ${who}`);
      if (who === 'b') bDone.resolve();
      return `${who} finished`;
    });
    const { agent, model } = await scriptedAgent(
      root,
      [reply(toolUse('race', { who: 'a' }), toolUse('race', { who: 'b' })), say('done')],
      { tools: [race] },
    );
    await runTask(agent, 'race');
    assert.deepEqual(log, ['start a', 'start b', 'end b', 'end a'], 'b really finished first');
    assert.deepEqual(resultsOf(model.requests[1]!.messages), [
      ['toolu_s1_0', 'a finished', false],
      ['toolu_s1_1', 'b finished', false],
    ]);
  });

  test('a read and an edit of the same file in one reply: the edit is decided after the read ran, so it is not refused as unread', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'one\n' });
    const asked: string[] = [];
    const { agent } = await scriptedAgent(
      root,
      [
        reply(
          toolUse('read_file', { path: 'a.txt' }),
          toolUse('edit_file', { path: 'a.txt', old_str: 'one', new_str: 'two' }),
        ),
        say('done'),
      ],
      { approve: async ({ preview }) => (asked.push(preview), { approved: true }) },
    );
    await runTask(agent, 'read a.txt, then change one to two');
    assert.equal(readFileSync(path.join(root, 'a.txt'), 'utf8'), 'two\n', JSON.stringify(agent.messages[2]));
    assert.equal(asked.length, 1, 'the person was shown the edit once, with its diff');
  });

  test('a call that changes something never overlaps a read: the reads before it end first, the reads after it start later', async (t) => {
    const root = await tempProject(t);
    const log: string[] = [];
    const work = async ({ who }: { who: string }) => {
      log.push(`start ${who}`);
      for (let i = 0; i < 3; i++) await tick(); // a few turns of the event loop, in which others could run
      log.push(`end ${who}`);
      return who;
    };
    const tools = [testTool('look', true, work), testTool('change', false, work)];
    const calls = reply(
      toolUse('look', { who: 'r1' }),
      toolUse('look', { who: 'r2' }),
      toolUse('change', { who: 'w' }),
      toolUse('look', { who: 'r3' }),
      toolUse('look', { who: 'r4' }),
    );
    const { agent, model } = await scriptedAgent(root, [calls, say('done')], { tools });
    await runTask(agent, 'look, change, look');

    const at = (entry: string) => log.indexOf(entry);
    assert.ok(at('start r2') < at('end r1'), `the reads before the change overlapped each other: ${log.join(', ')}`);
    assert.ok(at('start r4') < at('end r3'), `the reads after the change overlapped each other: ${log.join(', ')}`);
    for (const read of ['r1', 'r2'])
      assert.ok(at('start w') > at(`end ${read}`), `the change started before ${read} ended: ${log.join(', ')}`);
    for (const read of ['r3', 'r4'])
      assert.ok(at('end w') < at(`start ${read}`), `${read} started before the change ended: ${log.join(', ')}`);
    assert.deepEqual(
      resultsOf(model.requests[1]!.messages).map(([, content]) => content),
      ['r1', 'r2', 'w', 'r3', 'r4'],
    );
  });

  test('no more than 8 read-only calls run at once, however many the model asks for in one reply', async (t) => {
    const root = await tempProject(t);
    let running = 0;
    let most = 0;
    let started = 0;
    const eightRunning = deferred();
    const crowd = testTool('crowd', true, async ({ who }) => {
      running++;
      most = Math.max(most, running);
      if (++started === 8) eightRunning.resolve();
      await within(eightRunning.promise, 'waiting for eight calls to run at once');
      await tick(); // let any ninth call start now, if the limit allowed it
      running--;
      return who;
    });
    const ten = Array.from({ length: 10 }, (_, i) => toolUse('crowd', { who: `c${i}` }));
    const { agent, model } = await scriptedAgent(root, [reply(...ten), say('done')], { tools: [crowd] });
    await runTask(agent, 'crowd');
    assert.equal(MAX_PARALLEL_READS, 8);
    assert.equal(most, 8);
    assert.deepEqual(
      resultsOf(model.requests[1]!.messages),
      ten.map((_, i) => [`toolu_s1_${i}`, `c${i}`, false]),
    );
  });

  test('running reads in parallel changes nothing the model sees: the transcript is byte-identical to a sequential run', async (t) => {
    const files = { 'a.txt': 'alpha\n', 'b.txt': 'beta\n', 'src/c.txt': 'gamma\n' };
    // Reads that take different numbers of event-loop turns, so parallel ones finish out of order.
    const slowTool = (readOnly: boolean, concurrency: { now: number; most: number }) =>
      testTool('slow', readOnly, async ({ who }) => {
        concurrency.most = Math.max(concurrency.most, ++concurrency.now);
        for (let i = 0; i < Number(who.slice(1)); i++) await tick();
        concurrency.now--;
        return `slow ${who}`;
      });
    const script: ScriptEntry[] = [
      reply(
        toolUse('slow', { who: 'n5' }),
        toolUse('read_file', { path: 'a.txt' }),
        toolUse('slow', { who: 'n0' }),
        toolUse('list_files', {}),
        toolUse('slow', { who: 'n2' }),
      ),
      reply(
        toolUse('read_file', { path: 'b.txt' }),
        toolUse('edit_file', { path: 'a.txt', old_str: 'alpha', new_str: 'ALPHA' }),
        toolUse('slow', { who: 'n3' }),
        toolUse('read_file', { path: 'a.txt' }),
        toolUse('slow', { who: 'n1' }),
      ),
      say('done'),
    ];
    const run = async (readOnlyAllowed: boolean) => {
      const root = await tempProject(t, files);
      const concurrency = { now: 0, most: 0 };
      const tools = [...TOOLS, slowTool(true, concurrency)].map((tool) =>
        readOnlyAllowed ? tool : { ...tool, readOnly: false },
      );
      const { agent } = await scriptedAgent(root, script, { tools });
      assert.equal((await runTask(agent, 'read, change, read')).kind, 'accepted');
      return { transcript: JSON.stringify(agent.messages), most: concurrency.most };
    };
    const parallel = await run(true);
    const sequential = await run(false);
    assert.ok(parallel.most > 1, 'the parallel run really ran reads together');
    assert.equal(sequential.most, 1, 'the sequential run really ran one at a time');
    assert.equal(parallel.transcript, sequential.transcript);
  });
});

// =============================================================================================
// 3. Byte-stable requests

/** A multi-turn run with tool calls, a refused "done" and a second task: six requests. */
async function longRun(t: TestContext) {
  const root = await tempProject(t, { 'a.txt': 'alpha\n' });
  const verify = 'grep -q ALPHA a.txt';
  const script = [
    reply(toolUse('read_file', { path: 'a.txt' }), toolUse('list_files', {})),
    say('done'),
    call('edit_file', { path: 'a.txt', old_str: 'alpha', new_str: 'ALPHA' }),
    say('done now'),
    call('read_file', { path: 'a.txt' }),
    say('It says ALPHA.'),
  ];
  const { agent, model } = await scriptedAgent(root, script, { verify });
  assert.equal((await runTask(agent, 'make a.txt shout')).kind, 'accepted');
  assert.equal((await runTask(agent, 'what does it say now?')).kind, 'accepted');
  assert.equal(model.requests.length, 6);
  return { agent, requests: model.requests };
}

/** Each request's messages are the previous request's messages plus new ones, as `view` shows them. */
function assertGrowsByAppending(
  requests: { messages: Anthropic.MessageParam[] }[],
  view: (m: Anthropic.MessageParam) => unknown,
) {
  for (let i = 1; i < requests.length; i++) {
    const earlier = unmarked(requests[i - 1]!.messages);
    const later = unmarked(requests[i]!.messages);
    assert.ok(later.length > earlier.length, `request ${i + 1} is longer than request ${i}`);
    earlier.forEach((message, k) => {
      assert.equal(
        JSON.stringify(view(later[k]!)),
        JSON.stringify(view(message)),
        `request ${i + 1}, message ${k} differs from request ${i}`,
      );
    });
  }
}

/** The string shorthand of a message's content as the one text block it stands for. */
const asBlocks = (m: Anthropic.MessageParam) =>
  typeof m.content === 'string' ? { ...m, content: [{ type: 'text', text: m.content }] } : m;

const cacheMarks = (request: unknown) => {
  let marks = 0;
  JSON.stringify(request, (key, value: unknown) => {
    if (key === 'cache_control' && value != null) marks++;
    return value;
  });
  return marks;
};

describe('byte-stable requests', () => {
  test('no earlier message is ever changed or dropped: each request extends the last, so the prompt cache can be read', async (t) => {
    const { requests } = await longRun(t);
    assertGrowsByAppending(requests, asBlocks);
  });

  test('each earlier message is resent as the very same JSON bytes', async (t) => {
    const { requests } = await longRun(t);
    assertGrowsByAppending(requests, (m) => m);
  });

  test('the system prompt and the tool definitions are the same bytes on every request, so the cached prefix is never rewritten', async (t) => {
    const { requests } = await longRun(t);
    const [first, ...rest] = requests;
    for (const [i, request] of rest.entries()) {
      assert.deepEqual(request.system, first!.system, `request ${i + 2}: system`);
      assert.deepEqual(request.tools, first!.tools, `request ${i + 2}: tools`);
      assert.equal(
        JSON.stringify([request.system, request.tools]),
        JSON.stringify([first!.system, first!.tools]),
        `request ${i + 2}: bytes`,
      );
    }
  });

  test('no request carries more than 4 cache marks (the API rejects a fifth), and the marks never leak into the transcript', async (t) => {
    const { agent, requests } = await longRun(t);
    for (const [i, request] of requests.entries()) {
      const marks = cacheMarks(request);
      assert.ok(marks <= 4, `request ${i + 1} has ${marks} cache marks`);
      assert.deepEqual(
        request.cache_control,
        { type: 'ephemeral' },
        `request ${i + 1} asks for automatic caching, so the next request can read this one from the cache`,
      );
      assert.deepEqual(violationsOf(request), [], `request ${i + 1}`);
    }
    assert.equal(
      cacheMarks(agent.messages),
      0,
      'the transcript itself holds no marks, or they would pile up turn after turn',
    );
  });

  test('the system prompt holds no clock or counter: agents made a day apart, after different work, send identical system and tools', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    t.mock.timers.enable({ apis: ['Date'], now: Date.parse('2030-01-01T09:00:00Z') });
    const early = await scriptedAgent(root, [call('read_file', { path: 'a.txt' }), say('done'), say('again')]);
    await runTask(early.agent, 'read it');
    await runTask(early.agent, 'and again');
    t.mock.timers.tick(24 * 60 * 60 * 1000 + 12_345);
    const late = await scriptedAgent(root, [say('hello')]);
    await runTask(late.agent, 'hi');
    const fixedPart = (request: { system?: unknown; tools?: unknown }) =>
      JSON.stringify([request.system, request.tools]);
    assert.equal(fixedPart(late.model.requests[0]!), fixedPart(early.model.requests[0]!));
    assert.equal(fixedPart(early.model.requests.at(-1)!), fixedPart(early.model.requests[0]!));
  });
});

// =============================================================================================
// 4. API faults, through the real SDK against the local fake API

const textBlock = (text: string): Anthropic.TextBlock => ({ type: 'text', text, citations: null });
const toolUseBlock = (id: string, name: string, input: unknown): Anthropic.ToolUseBlock => ({
  type: 'tool_use',
  id,
  name,
  input,
  caller: { type: 'direct' },
});

/** Only the Messages calls: the agent also asks /v1/models for the context window. */
const messageCalls = (api: FakeApi) => api.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages');

async function fakeApi(t: TestContext, steps: FakeStep[]) {
  const api = await startFakeApi(steps);
  t.after(() => api.close());
  return { api, client: new Anthropic({ apiKey: API_KEY, baseURL: api.baseURL, maxRetries: 2 }) };
}

describe('API faults through the real SDK', () => {
  test('an API overloaded twice (529, 529) is retried until it answers, and each retry is shown, not silent', async (t) => {
    const { api, client } = await fakeApi(t, [
      { kind: 'status', status: 529 },
      { kind: 'status', status: 529 },
      { kind: 'reply', message: fakeMessage([textBlock('Done.')]) },
    ]);
    const root = await tempProject(t);
    const { agent, events } = await scriptedAgent(root, [], { model: new AnthropicModel('claude-test', client) });
    const halt = await runTask(agent, 'hi');
    assert.deepEqual(halt, { kind: 'accepted', verifiedBy: null });
    assert.equal(messageCalls(api).length, 3);
    const notices = events.flatMap((e) => (e.type === 'notice' ? [e.text] : []));
    assert.equal(notices.filter((text) => /529.*retr/i.test(text)).length, 2, notices.join('\n'));
  });

  test(
    'a stream that stalls mid-reply is aborted by the idle timeout, halting with an error and leaving no half reply',
    { timeout: 10_000 },
    async (t) => {
      const message = fakeMessage(
        [
          textBlock('I will now edit the file, and then'),
          toolUseBlock('toolu_1', 'edit_file', { path: 'x.txt', old_str: '', new_str: 'x' }),
        ],
        'tool_use',
      );
      const { api, client } = await fakeApi(t, [{ kind: 'stall', message, afterEvents: 3 }]);
      const root = await tempProject(t);
      const { agent } = await scriptedAgent(root, [], { model: new AnthropicModel('claude-test', client, 200) });
      const halt = await runTask(agent, 'write x.txt');
      assert.equal(halt.kind, 'error');
      assert.match(halt.kind === 'error' ? halt.message : '', /stalled/);
      assert.equal(messageCalls(api).length, 1, 'one request, not retried');
      assert.deepEqual(agent.messages.map(textOf), ['write x.txt'], 'only the task: nothing of the stalled reply');
    },
  );

  test('a long wait between retries (a 529 asking for retry-after) is not mistaken for a stalled stream', async (t) => {
    const { client: direct, api } = await fakeApi(t, [
      { kind: 'status', status: 529 },
      { kind: 'reply', message: fakeMessage([textBlock('Done.')]) },
    ]);
    // The fake always asks for a 1 ms wait; this client sees the 529 ask for 400 ms, twice the idle limit.
    const askToWait: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (response.status !== 529) return response;
      const headers = new Headers(response.headers);
      headers.set('retry-after-ms', '400');
      return new Response(response.body, { status: response.status, headers });
    };
    const client = direct.withOptions({ fetch: askToWait });
    const root = await tempProject(t);
    const { agent } = await scriptedAgent(root, [], { model: new AnthropicModel('claude-test', client, 200) });
    assert.deepEqual(await runTask(agent, 'hi'), { kind: 'accepted', verifiedBy: null });
    assert.equal(messageCalls(api).length, 2);
  });

  test('a stream cut mid-reply halts with an error, the session file keeps everything before it, and a resume carries on', async (t) => {
    const root = await tempProject(t, { 'note.txt': 'hello\n' });
    const file = sessionIn(root);
    const cut = fakeMessage(
      [
        textBlock('Now I will write the answer into a file called'),
        toolUseBlock('toolu_2', 'edit_file', { path: 'x.txt', old_str: '', new_str: 'x' }),
      ],
      'tool_use',
    );
    const first = await fakeApi(t, [
      {
        kind: 'reply',
        message: fakeMessage(
          [textBlock('Reading.'), toolUseBlock('toolu_1', 'read_file', { path: 'note.txt' })],
          'tool_use',
        ),
      },
      { kind: 'cut', message: cut, afterEvents: 4 },
    ]);
    const { agent } = await scriptedAgent(root, [], {
      model: new AnthropicModel('claude-test', first.client),
      onEvent: sessionRecorder(file, header(root), [API_KEY]),
    });
    const halt = await runTask(agent, 'what does note.txt say?');
    assert.equal(halt.kind, 'error');
    assert.equal(agent.messages.length, 3, 'task, the first reply, its result; nothing of the cut reply');

    const loaded = await loadSession(file);
    assert.deepEqual(loaded.messages, agent.messages);
    assert.equal(loaded.repair, null);
    assert.match(readFileSync(file, 'utf8').trimEnd().split('\n').at(-1)!, /"type":"halt".*"kind":"error"/);

    const second = await fakeApi(t, [{ kind: 'reply', message: fakeMessage([textBlock('It says hello.')]) }]);
    const resumed = await scriptedAgent(root, [], {
      model: new AnthropicModel('claude-test', second.client),
      onEvent: sessionRecorder(file, null, [API_KEY]),
    });
    resume(resumed.agent, loaded);
    assert.deepEqual(await runTask(resumed.agent, 'keep going'), { kind: 'accepted', verifiedBy: null });
    const [sent] = messageCalls(second.api);
    assert.ok(sent, 'the resumed run reached the API');
    assert.deepEqual(requestViolations(sent.body), []);
    assert.deepEqual((await loadSession(file)).messages, resumed.agent.messages);
    assert.equal(readFileSync(file, 'utf8').includes(API_KEY), false);
  });
});

// =============================================================================================
// 5. SIGKILL mid-call, then --resume: one real child process
