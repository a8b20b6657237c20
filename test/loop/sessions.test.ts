// P3 hardening, part 2, offline: read-only calls really run together without changing what the model sees; every
// request is a byte-stable extension of the last; API faults end runs cleanly through the real SDK; a resumed
// transcript of any length. Each test is named after the failure it prevents. Concurrency is proven by rendezvous
// (each call waits for the other), never by clocks. The session file's half is app/test/sessions.test.ts.

import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setImmediate as tick } from 'node:timers/promises';
import { describe, test, type TestContext } from 'node:test';
import { z } from 'zod';
import { type AgentEvent, AnthropicModel, MAX_PARALLEL_READS, resume, runTask } from '../../agent.ts';
import { call, reply, say, type ScriptEntry, toolUse } from '../../scripted-model.ts';
import { defineTool, type Tool } from '../../tools.ts';
import { stallWatch, transcriptRepair } from '../../hardening/index.ts';
import { fakeApiClient, fakeMessage, messageCalls, textBlock, toolUseBlock } from '../model/fake-api.ts';
import { deferred, scriptedAgent, tempProject, textOf, toolsWith, unmarked, violationsOf, within } from '../helpers.ts';

const blocks = (message: Anthropic.MessageParam | undefined) =>
  message === undefined || typeof message.content === 'string' ? [] : message.content;

/** The tool results of a request's last message, as [tool_use_id, content, is_error]. */
const resultsOf = (messages: Anthropic.MessageParam[]) =>
  blocks(messages.at(-1)).flatMap((b) =>
    b.type === 'tool_result' ? [[b.tool_use_id, b.content, b.is_error ?? false]] : [],
  );

// =============================================================================================
// 1. The session file

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
      const tools = toolsWith(slowTool(true, concurrency)).map((tool) =>
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
  // The first four tests read four properties of the same six requests: the run is made once, by the first to ask.
  let made: ReturnType<typeof longRun> | undefined;
  const sharedRun = (t: TestContext) => (made ??= longRun(t));

  test('no earlier message is ever changed or dropped: each request extends the last, so the prompt cache can be read', async (t) => {
    const { requests } = await sharedRun(t);
    assertGrowsByAppending(requests, asBlocks);
  });

  test('each earlier message is resent as the very same JSON bytes', async (t) => {
    const { requests } = await sharedRun(t);
    assertGrowsByAppending(requests, (m) => m);
  });

  test('the system prompt and the tool definitions are the same bytes on every request, so the cached prefix is never rewritten', async (t) => {
    const { requests } = await sharedRun(t);
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
    const { agent, requests } = await sharedRun(t);
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

describe('API faults through the real SDK', () => {
  test('an API overloaded twice (529, 529) is retried until it answers, and each retry is shown, not silent', async (t) => {
    const { api, client } = await fakeApiClient(t, [
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
      const { api, client } = await fakeApiClient(t, [{ kind: 'stall', message, afterEvents: 3 }]);
      const root = await tempProject(t);
      const { agent } = await scriptedAgent(root, [], {
        model: new AnthropicModel('claude-test', client, { idleMs: 200 }),
      });
      const halt = await runTask(agent, 'write x.txt');
      assert.equal(halt.kind, 'error');
      assert.match(halt.kind === 'error' ? halt.message : '', /stalled: no data for 0\.2 s/);
      assert.equal(messageCalls(api).length, 1, 'one request, not retried');
      assert.deepEqual(agent.messages.map(textOf), ['write x.txt'], 'only the task: nothing of the stalled reply');
    },
  );

  test('a stream that keeps sending, for longer in all than the idle limit, is not cut off as stalled', async (t) => {
    // A clock of the test's own: Node 20's mock timers do not honour a timer's refresh().
    let now = 0;
    type Timer = { at: number; run: () => void; refresh: () => Timer };
    const timers = new Set<Timer>();
    t.mock.method(globalThis, 'setTimeout', (run: () => void, ms: number) => {
      const timer: Timer = { at: now + ms, run, refresh: () => ((timer.at = now + ms), timer) };
      timers.add(timer);
      return timer;
    });
    t.mock.method(globalThis, 'clearTimeout', (timer: Timer) => timers.delete(timer));
    const advance = (ms: number) => {
      now += ms;
      for (const timer of [...timers].filter(({ at }) => at <= now)) timers.delete(timer) && timer.run();
    };
    const { signal, watch } = stallWatch(200);
    let finish = (_text: string) => {};
    const stream = Object.assign(new EventEmitter(), {
      finalMessage: () =>
        new Promise<string>((resolve, reject) => {
          finish = resolve;
          signal.addEventListener('abort', () => reject(signal.reason));
        }),
    });
    const answer = watch(stream as unknown as Parameters<typeof watch>[0]);
    stream.emit('connect');
    for (let event = 0; event < 5; event++) {
      advance(150);
      stream.emit('streamEvent');
    }
    finish('the whole reply');
    assert.equal(await answer, 'the whole reply');
  });

  test('a long wait between retries (a 529 asking for retry-after) is not mistaken for a stalled stream', async (t) => {
    const { client: direct, api } = await fakeApiClient(t, [
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
    const { agent } = await scriptedAgent(root, [], {
      model: new AnthropicModel('claude-test', client, { idleMs: 200 }),
    });
    assert.deepEqual(await runTask(agent, 'hi'), { kind: 'accepted', verifiedBy: null });
    assert.equal(messageCalls(api).length, 2);
  });
});

// =============================================================================================
// 5. SIGKILL mid-call, then --resume: one real child process

describe('a damaged session file, repaired', () => {
  const task: Anthropic.MessageParam = { role: 'user', content: [{ type: 'text', text: 'task' }] };
  const calls = (...ids: string[]): Anthropic.MessageParam => ({
    role: 'assistant',
    content: ids.map((id) => ({ type: 'tool_use', id, name: 'read_file', input: { path: 'a.txt' } })),
  });
  const result = (id: string): Anthropic.ToolResultBlockParam => ({
    type: 'tool_result',
    tool_use_id: id,
    content: 'a',
  });
  const note: Anthropic.TextBlockParam = { type: 'text', text: 'note' };
  /** The messages and the warnings of a file whose lines are `lines`. */
  const repaired = (...lines: Anthropic.MessageParam[]) => {
    const warnings: string[] = [];
    const repair = transcriptRepair((text) => warnings.push(text));
    lines.forEach((line, i) => repair.add(line, `line ${i + 1}`));
    return { messages: repair.messages, warnings };
  };

  test('a reply that repeats an earlier call stays a reply when the repeat is dropped', () => {
    const repeat: Anthropic.ToolUseBlockParam = { type: 'tool_use', id: 'a', name: 'read_file', input: {} };
    const again: Anthropic.MessageParam = { role: 'assistant', content: [note, repeat] };
    const { messages } = repaired(task, calls('a'), { role: 'user', content: [result('a')] }, again);
    assert.deepEqual(messages[3], { role: 'assistant', content: [note] });
  });

  test('"results moved before the text" is warned only when results were moved, not dropped or answered lost', () => {
    const moved = (...lines: Anthropic.MessageParam[]) =>
      repaired(...lines).warnings.filter((warning) => warning.endsWith('results moved before the text')).length;
    assert.equal(moved(task, calls('a'), { role: 'user', content: [note, result('a')] }), 1);
    assert.equal(moved(task, calls('a', 'b'), { role: 'user', content: [result('a'), note, result('b')] }), 1);
    assert.equal(moved(task, calls('a', 'b'), { role: 'user', content: [note, result('a')] }), 0);
    assert.equal(moved(task, calls('a', 'b'), { role: 'user', content: [note, result('a'), result('x')] }), 0);
  });
});

describe('resume', () => {
  test('a call the process died in is answered with what the program knows of it (an edit that landed), not "not run"; the others "not run"', () => {
    const repair = transcriptRepair(() => {});
    repair.add({ role: 'user', content: 'edit' }, 'line 1');
    const calls = ['e1', 'e2'].map((id) => toolUseBlock(id, 'edit_file', {}));
    repair.add({ role: 'assistant', content: calls }, 'line 2');
    const known = new Map([['e1', { content: 'applied: the edit landed', isError: false }]]);
    assert.deepEqual(resultsOf([repair.finish(known)!]), [
      ['e1', 'applied: the edit landed', false],
      ['e2', 'not run: the session ended before this call finished', true],
    ]);
  });

  test('a disk can tie a write to its call: the tool context names the call being run (a session file records an edit by it)', async (t) => {
    const ids: (string | undefined)[] = [];
    const probe = defineTool({
      name: 'probe',
      description: 'Says which call it is.',
      input: z.strictObject({}),
      readOnly: true,
      run: async (_input, ctx) => (ids.push(ctx.callId), 'ok'),
    });
    const script = [reply(toolUse('probe', {}), toolUse('probe', {})), say('done')];
    const { agent } = await scriptedAgent(await tempProject(t), script, { tools: toolsWith(probe) });
    await runTask(agent, 'probe');
    assert.deepEqual(ids.sort(), ['toolu_s1_0', 'toolu_s1_1']);
  });

  test('a session whose process died mid-call resumes with those calls answered last, and the views see the answer', async (t) => {
    const root = await tempProject(t);
    const events: AgentEvent[] = [];
    const { agent } = await scriptedAgent(root, [say('ok')], { onEvent: (event) => events.push(event) });
    const repair: Anthropic.MessageParam = {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'not run', is_error: true }],
    };
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'task' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: {} }] },
    ];
    resume(agent, { messages, compaction: null, subAgents: 0, repair, protectedAtStart: null, warnings: [] });
    assert.deepEqual(agent.messages.at(-1), repair);
    assert.deepEqual(events, [{ type: 'message', message: repair }]);
  });

  test('resuming 300,000 messages does not overflow the argument limit (no push(...all))', async (t) => {
    const root = await tempProject(t);
    const messages: Anthropic.MessageParam[] = Array.from({ length: 300_000 }, (_, i) => ({
      role: i % 2 === 0 ? 'user' : 'assistant',
      content: 'x',
    }));
    const { agent } = await scriptedAgent(root, [say('ok')]);
    resume(agent, { messages, compaction: null, subAgents: 0, repair: null, protectedAtStart: null, warnings: [] });
    assert.equal(agent.messages.length, 300_000);
  });
});
