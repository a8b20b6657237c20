// Guards of agent.ts that `npm run mutate:agent` (P1–P3), or a run over the lines of later guards
// (test/mutation/MUTATION-SURVIVORS.md), found unpinned: each test here was written against a surviving mutant, and fails with
// that mutant applied. Named, like every guard test, after the failure it prevents.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import {
  type AfterCallHook,
  type Agent,
  type AgentEvent,
  approveAll,
  type BeforeCallHook,
  estimateTokens,
  type LoadedSession,
  type Model,
  type ModelRequest,
  resume,
  runTask,
  steer,
  withdrawSteering,
} from '../../agent.ts';
import { call, reply, say, ScriptedModel, text, toolUse } from '../../scripted-model.ts';
import { defineTool } from '../../tools.ts';
import {
  echoTool,
  HAIKU_PRICE,
  scriptedAgent,
  tempProject,
  textOf,
  toolResults,
  toolsWith,
  violationsOf,
} from '../helpers.ts';
import { pathOf } from '../../tools.ts';
import { estimateMessages } from '../../hardening/index.ts';

describe('the gate says what is wrong', () => {
  test('a protected file deleted, or one added under a protected glob, is named as deleted or added, not "changed"', async (t) => {
    const root = await tempProject(t, { 'test/x.test.js': 'check();\n' });
    const swap = defineTool({
      name: 'run_script',
      description: "Runs a project script. A test tool that swaps the test file behind the harness's back.",
      input: z.strictObject({}),
      readOnly: false,
      run: async () => {
        await rm(path.join(root, 'test/x.test.js'));
        await writeFile(path.join(root, 'test/y.test.js'), 'pass();\n');
        return 'script ran';
      },
    });
    const script = [call('run_script', {}), say('done')];
    const { agent } = await scriptedAgent(root, script, {
      tools: toolsWith(swap),
      protect: ['test/**'],
      verify: 'exit 0',
      budgets: { maxTurns: 2 },
    });
    await runTask(agent, 'make the tests pass');
    assert.match(
      textOf(agent.messages.at(-1)),
      /since the session started: test\/x\.test\.js \(deleted\), test\/y\.test\.js \(added\)\. /,
    );
  });

  test('a refusal over a changed protected file names the verify command it did not run, or "(none)", not the other', async (t) => {
    const gates: { command: string; reason: string }[] = [];
    for (const verify of ['exit 0', undefined]) {
      const root = await tempProject(t, { 'test/x.test.js': 'check();\n' });
      const tamper = () => (writeFileSync(path.join(root, 'test/x.test.js'), 'pass();\n'), say('done'));
      const { agent, events } = await scriptedAgent(root, [tamper], {
        verify,
        protect: ['test/**'],
        budgets: { maxTurns: 1 },
      });
      await runTask(agent, 'make the tests pass');
      for (const event of events)
        if (event.type === 'gate') gates.push({ command: event.command, reason: event.reason });
    }
    assert.deepEqual(gates, [
      { command: 'exit 0', reason: 'protected files changed' },
      { command: '(none)', reason: 'protected files changed' },
    ]);
  });

  test('a verify command cut off by its time limit is reported with that limit in seconds, to the model and the user', async (t) => {
    const root = await tempProject(t);
    const { agent, events } = await scriptedAgent(root, [say('done')], {
      verify: 'sleep 5',
      verifyTimeoutMs: 50,
      budgets: { maxTurns: 1 },
    });
    await runTask(agent, 'work');
    const gate = events.find((event) => event.type === 'gate');
    assert.equal(gate?.type === 'gate' && gate.reason, 'did not finish within 0.05 s');
    assert.match(
      textOf(agent.messages.at(-1)),
      /^The task is not done yet: the check `sleep 5` did not finish within 0\.05 s\./,
    );
  });
});

describe('the hooks say why they refused', () => {
  test('a hook that gives up because the run was stopped is not blamed as a broken check', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const controller = new AbortController();
    const waits: BeforeCallHook = {
      name: 'waits',
      check: (_planned, _agent, signal) =>
        new Promise((_, reject) => {
          signal.addEventListener('abort', () => reject(new Error('gave up')));
          controller.abort();
        }),
    };
    const script = [call('echo', { text: 'hi' }), say('ok')];
    const { agent } = await scriptedAgent(root, script, { tools: [tool], beforeCall: [waits] });
    assert.deepEqual(await runTask(agent, 'echo', controller.signal), { kind: 'interrupted' });
    assert.deepEqual(runs, []);
    assert.deepEqual(toolResults(agent.messages), [
      {
        type: 'tool_result',
        tool_use_id: 'toolu_s1_0',
        content: 'not run: the run was stopped while this call was being checked',
        is_error: true,
      },
    ]);
  });
});

describe('stopping', () => {
  test('Ctrl-C while the verify command runs halts "interrupted", without telling the model its check failed', async (t) => {
    const root = await tempProject(t);
    const controller = new AbortController();
    const script = [() => (setTimeout(() => controller.abort(), 50), say('done'))];
    const { agent, events } = await scriptedAgent(root, script, { verify: 'sleep 5' });
    assert.deepEqual(await runTask(agent, 'work', controller.signal), { kind: 'interrupted' });
    assert.deepEqual(
      events.filter((event) => event.type === 'gate'),
      [],
    );
    assert.equal(agent.messages.at(-1)?.role, 'assistant');
  });

  test('Ctrl-C after the time budget ran out halts "interrupted": the user stopped it, whatever the clock says', async (t) => {
    const root = await tempProject(t);
    const controller = new AbortController();
    const late = defineTool({
      name: 'late',
      description: 'Outlives the time budget, then the user presses Ctrl-C. A test tool.',
      input: z.strictObject({}),
      readOnly: false,
      run: async () => (await sleep(30), controller.abort(), 'finished'),
    });
    const script = [call('late', {}), say('done')];
    const { agent } = await scriptedAgent(root, script, { tools: [late], budgets: { maxTurns: 5, timeoutMs: 1 } });
    assert.deepEqual(await runTask(agent, 'work', controller.signal), { kind: 'interrupted' });
  });

  test('a final reply that arrives after Ctrl-C halts "interrupted" and ends the transcript: no empty user turn after it', async (t) => {
    const root = await tempProject(t);
    const controller = new AbortController();
    const script = [() => (controller.abort(), say('done'))];
    const { agent, events } = await scriptedAgent(root, script, { verify: 'exit 0' });
    assert.deepEqual(await runTask(agent, 'work', controller.signal), { kind: 'interrupted' });
    assert.deepEqual(
      agent.messages.map((message) => message.role),
      ['user', 'assistant'],
    );
    assert.deepEqual(violationsOf({ messages: agent.messages }), []);
    assert.deepEqual(
      events.filter((event) => event.type === 'gate'),
      [],
    );
  });

  test('after Ctrl-C no further model request is started, even one the model would refuse at once', async (t) => {
    const root = await tempProject(t);
    const controller = new AbortController();
    const stop = defineTool({
      name: 'stop',
      description: 'The user presses Ctrl-C while it runs. A test tool.',
      input: z.strictObject({}),
      readOnly: false,
      run: async () => (controller.abort(), 'finished'),
    });
    const script = [call('stop', {}), say('done')];
    const { agent, events } = await scriptedAgent(root, script, { tools: [stop] });
    assert.deepEqual(await runTask(agent, 'work', controller.signal), { kind: 'interrupted' });
    assert.equal(events.filter((event) => event.type === 'request').length, 1);
  });
});

describe('what the user and the session file are told', () => {
  test('a failing after-call hook is shown to the user as a notice, not swallowed', async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    const broken: AfterCallHook = {
      name: 'scan',
      check: () => {
        throw new Error('scanner offline');
      },
    };
    const script = [call('echo', { text: 'hi' }), say('ok')];
    const { agent, events } = await scriptedAgent(root, script, { tools: [tool], afterCall: [broken] });
    await runTask(agent, 'echo');
    assert.deepEqual(
      events.filter((event) => event.type === 'notice'),
      [{ type: 'notice', text: 'after-call hook scan failed: scanner offline' }],
    );
  });

  test('an allowed call records no hook decision: only refusals, answers and rewrites are decisions worth a line', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const script = [
      reply(toolUse('echo', { text: 'a' }), toolUse('edit_file', { path: 'a.txt', old_str: '', new_str: 'a\n' })),
      say('ok'),
    ];
    const { agent, events } = await scriptedAgent(root, script, { tools: toolsWith(tool) });
    await runTask(agent, 'work');
    assert.deepEqual(runs, ['a']);
    assert.deepEqual(
      events.filter((event: AgentEvent) => event.type === 'decision'),
      [],
    );
  });

  test("a forker's approver that defers to approveAll lets the change run, not refuse it", async (t) => {
    const root = await tempProject(t);
    const script = [call('edit_file', { path: 'a.txt', old_str: '', new_str: 'a\n' }), say('done')];
    const { agent } = await scriptedAgent(root, script, { approve: (request) => approveAll(request) });
    await runTask(agent, 'make a.txt');
    assert.deepEqual(
      toolResults(agent.messages).map((result) => result.is_error),
      [undefined],
    );
  });
});

describe('budgets', () => {
  test('the cost budget halts the run when the spending reaches it exactly, not only once it is passed', async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    // claude-haiku-4-5: $1 per million input tokens, so this reply costs exactly $0.50.
    const script = [
      { ...call('echo', { text: 'a' }), usage: { input_tokens: 500_000, output_tokens: 0 } },
      say('never'),
    ];
    const model = new ScriptedModel(script, 'claude-haiku-4-5', HAIKU_PRICE);
    const { agent } = await scriptedAgent(root, [], {
      model,
      tools: [tool],
      budgets: { maxTurns: 25, maxCostUsd: 0.5 },
    });
    const spent = { tokens: 500_000, costUsd: 0.5 };
    assert.deepEqual(await runTask(agent, 'spend'), { kind: 'budget', budget: 'cost', limit: 0.5, spent });
    assert.equal(model.requests.length, 1);
  });
});

describe('pathOf', () => {
  test('finds no path in null, a string, an object without one, or a non-string one, instead of throwing', () => {
    for (const input of [null, undefined, 'a.txt', 5, {}, { path: 5 }, { path: ['a.txt'] }])
      assert.equal(pathOf(input), undefined, JSON.stringify(input));
    assert.equal(pathOf({ path: 'a.txt' }), 'a.txt');
  });
});

describe('P1: what is sent back and what is recorded', () => {
  test('a paused turn ending in a thinking block is resent without a cache mark on it, which the API would refuse', async (t) => {
    const root = await tempProject(t);
    const thinking = { type: 'thinking', thinking: 'Still searching.', signature: 'sig-1' } as const;
    const script = [{ ...reply(text('Searching…'), thinking), stop_reason: 'pause_turn' as const }, say('Found it.')];
    const { agent, model } = await scriptedAgent(root, script);
    await runTask(agent, 'search');
    const last = model.requests[1]!.messages.at(-1)!;
    assert.deepEqual(Array.isArray(last.content) ? last.content.at(-1) : last.content, thinking);
  });

  test('a reply of nothing but empty text adds no empty assistant message, which the API would refuse', async (t) => {
    const root = await tempProject(t);
    const script = [say(''), say('done')];
    const { agent } = await scriptedAgent(root, script, { verify: 'exit 1', budgets: { maxTurns: 2 } });
    await runTask(agent, 'work');
    assert.deepEqual(
      agent.messages.map((message) => message.role),
      ['user', 'user', 'assistant', 'user'],
    );
  });

  test("a call a hook refuses is recorded as that hook's decision, so the trace and session file say who refused", async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    const policy: BeforeCallHook = { name: 'policy', check: () => ({ action: 'deny', reason: 'not today' }) };
    const script = [call('echo', { text: 'hi' }), say('ok')];
    const { agent, events } = await scriptedAgent(root, script, { tools: [tool], beforeCall: [policy] });
    await runTask(agent, 'echo');
    const decisions = events.flatMap((event) => (event.type === 'decision' ? [event] : []));
    assert.deepEqual(
      decisions.map(({ call: decided, hook, decision }) => ({ id: decided.id, hook, decision })),
      [{ id: 'toolu_s1_0', hook: 'policy', decision: { action: 'deny', reason: 'not today' } }],
    );
  });

  test('a rewrite refused by the schema is an error result, so the model does not take it as the answer', async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    const broken: BeforeCallHook = { name: 'broken', check: () => ({ action: 'rewrite', input: { text: 42 } }) };
    const script = [call('echo', { text: 'hi' }), say('ok')];
    const { agent } = await scriptedAgent(root, script, { tools: [tool], beforeCall: [broken] });
    await runTask(agent, 'echo');
    assert.deepEqual(
      toolResults(agent.messages).map((result) => result.is_error),
      [true],
    );
    assert.deepEqual(violationsOf({ messages: agent.messages }), []);
  });

  test('a paused turn ending in a redacted thinking block is resent without a cache mark on it either', async (t) => {
    const root = await tempProject(t);
    const redacted = { type: 'redacted_thinking', data: 'opaque-1' } as const;
    const script = [{ ...reply(text('Searching…'), redacted), stop_reason: 'pause_turn' as const }, say('Found it.')];
    const { agent, model } = await scriptedAgent(root, script);
    await runTask(agent, 'search');
    const last = model.requests[1]!.messages.at(-1)!;
    assert.deepEqual(Array.isArray(last.content) ? last.content.at(-1) : last.content, redacted);
  });

  test("every request's cache mark is { type: 'ephemeral' }: the API refuses a cache_control without its type", async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    const script = [call('echo', { text: 'hi' }), say('ok')];
    const { agent, model } = await scriptedAgent(root, script, { tools: [tool] });
    await runTask(agent, 'echo');
    const marks = model.requests.map((request) => [request.cache_control, request.system]);
    const system = [{ type: 'text', text: agent.system[0]!.text, cache_control: { type: 'ephemeral' } }];
    assert.deepEqual(marks, [
      [{ type: 'ephemeral' }, system],
      [{ type: 'ephemeral' }, system],
    ]);
  });

  test('a reply of nothing but whitespace adds no assistant message: the API refuses a text block of only whitespace', async (t) => {
    const root = await tempProject(t);
    const script = [say(' \n\t'), say('done')];
    const { agent } = await scriptedAgent(root, script, { verify: 'exit 1', budgets: { maxTurns: 2 } });
    await runTask(agent, 'work');
    assert.deepEqual(
      agent.messages.map((message) => message.role),
      ['user', 'user', 'assistant', 'user'],
    );
    assert.deepEqual(violationsOf({ messages: agent.messages }), []);
  });

  test('a "prompt is too long" answer whose compaction fails halts with that error instead of resending the refused request', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const tooLong = Object.assign(new Error('400 prompt is too long: 250000 tokens > 200000 maximum'), {
      status: 400,
      apiMessage: 'prompt is too long: 250000 tokens > 200000 maximum',
    });
    const refused = () => {
      throw tooLong;
    };
    // The summary comes back empty, so the compaction throws and nothing was cut: the same request would be refused.
    const script = [call('read_file', { path: 'a.txt' }), refused, say(''), say('done')];
    const { agent, model } = await scriptedAgent(root, script);
    const halt = await runTask(agent, 'read a.txt');
    assert.match(halt.kind === 'error' ? halt.message : halt.kind, /^model call failed: HTTP 400 .*prompt is too long/);
    assert.equal(model.requests.length, 3, 'the call, the refused request and the summary; no second refused request');
    assert.equal(agent.compaction, null);
  });
});

// The guards added with the window limits, the sandbox and the stuck-model halt (a second run, over P1-P3's new lines
// and P4's compaction in pieces, withinShare and withResendableInputs): each test fails with its mutant applied.
describe('the window, compaction in pieces, steering and the sandbox', () => {
  /** A resumed history: `count` messages of about 330 tokens each, user and assistant in turn. */
  const history = (count: number): LoadedSession => ({
    messages: Array.from({ length: count }, (_, i) => ({
      role: i % 2 ? ('assistant' as const) : ('user' as const),
      content: `${i}: ${'a long line of the earlier session. '.repeat(30)}`,
    })),
    compaction: null,
    subAgents: 0,
    repair: null,
    protectedAtStart: null,
    warnings: [],
  });
  const isSummary = (request: ModelRequest) => JSON.stringify(request.messages.at(-1)).includes('Write a summary');
  const summaryOr = (answer: string) => (request: ModelRequest) =>
    say(isSummary(request) ? 'SUMMARY: the story so far.' : answer);

  test('a request exactly the size of the window is sent as it is: not refused as too large, not compacted', async (t) => {
    const root = await tempProject(t);
    const measured = await scriptedAgent(root, [say('ok')], { contextWindow: 1_000_000 });
    resume(measured.agent, history(2));
    await runTask(measured.agent, 'go on');
    const size = measured.events.find((event) => event.type === 'request')?.estimatedTokens ?? 0;
    const { agent, model } = await scriptedAgent(root, [summaryOr('ok')], { contextWindow: size, compactAt: 1 });
    resume(agent, history(2));
    assert.deepEqual(await runTask(agent, 'go on'), { kind: 'accepted', verifiedBy: null });
    assert.equal(model.requests.length, 1, 'one request, and no summary before it');
  });

  test('a request over the compaction threshold with nothing older to summarise is sent, not failed or summarised', async (t) => {
    const root = await tempProject(t);
    const { agent, model, events } = await scriptedAgent(root, [summaryOr('ok')], {
      contextWindow: 10_000,
      compactAt: 0.3,
    });
    assert.equal((await runTask(agent, 'word '.repeat(2_800))).kind, 'accepted');
    assert.equal(model.requests.length, 1);
    assert.deepEqual(
      events.filter((event) => event.type === 'compaction'),
      [],
    );
  });

  test('a message of exactly half the window is kept whole, and one as large as the window is cut to fit', async (t) => {
    const root = await tempProject(t);
    const task = 'word '.repeat(7_000);
    const size = estimateMessages([{ role: 'user', content: [{ type: 'text', text: task }] }]);
    const half = await scriptedAgent(root, [say('ok')], { contextWindow: 2 * size });
    assert.equal((await runTask(half.agent, task)).kind, 'accepted');
    assert.equal(textOf(half.model.requests[0]!.messages[0]), task, 'half the window: sent whole');
    const whole = await scriptedAgent(root, [say('ok')], { contextWindow: size });
    assert.equal((await runTask(whole.agent, task)).kind, 'accepted', 'the whole window: cut, and sent');
    assert.match(textOf(whole.model.requests[0]!.messages[0]), /characters left out/);
  });

  test('each piece of a long history is summarised within half the window, and in as few pieces as that allows', async (t) => {
    const root = await tempProject(t);
    const window = 8_000;
    for (let count = 50; count <= 62; count++) {
      const { agent, model } = await scriptedAgent(root, Array(40).fill(summaryOr('ok')), { contextWindow: window });
      resume(agent, history(count));
      assert.equal((await runTask(agent, 'go on')).kind, 'accepted', `${count} messages`);
      const pieces = model.requests.filter(isSummary);
      for (const piece of pieces) {
        const summarised = piece.messages.slice(0, -1).filter((message) => !textOf(message).includes('SUMMARY'));
        assert.ok(estimateMessages(summarised) <= window / 2, `${count} messages: ${estimateMessages(summarised)}`);
        assert.equal(summarised.at(-1)?.role, 'user', 'a piece ends before a reply, so no result loses its call');
      }
      assert.ok(pieces.length <= Math.ceil((count * 330) / (window / 2)) + 1, `${count} messages: ${pieces.length}`);
    }
  });

  test('a piece exactly half the window long is summarised whole, not cut one reply short', async (t) => {
    const root = await tempProject(t);
    const saved = history(30);
    const upToReply = saved.messages.slice(0, 9); // the first piece ends before the reply at index 9
    const { agent, model } = await scriptedAgent(root, Array(40).fill(summaryOr('ok')), {
      contextWindow: 2 * upToReply.reduce((sum, message) => sum + estimateMessages([message]), 0),
    });
    resume(agent, saved);
    assert.equal((await runTask(agent, 'go on')).kind, 'accepted');
    const first = model.requests.find(isSummary)!;
    assert.equal(first.messages.length - 1, 9, 'the nine messages before the reply, then the instruction');
  });

  test('a piece ends at a reply even when the messages before the first reply pass half the window', async (t) => {
    const root = await tempProject(t);
    const saved = history(30);
    const long = (i: number) => ({ role: 'user' as const, content: `${i}: ${'words of a long task. '.repeat(380)}` });
    saved.messages.splice(0, 1, long(0), long(1), long(2)); // past half the window at the third, before a reply
    const { agent, events } = await scriptedAgent(root, Array(40).fill(summaryOr('ok')), { contextWindow: 8_000 });
    resume(agent, saved);
    assert.equal((await runTask(agent, 'go on')).kind, 'accepted');
    const cuts = events.flatMap((event) => (event.type === 'compaction' ? [event.keptFrom] : []));
    assert.ok(cuts.length > 0);
    for (const cut of cuts) assert.equal(agent.messages[cut]?.role, 'assistant', `cut at ${cut}`);
  });

  test("a compaction reports the summary's size, and the summary call's notices reach the user", async (t) => {
    const root = await tempProject(t);
    const scripted = new ScriptedModel(Array(4).fill(summaryOr('ok')));
    const model: Model = {
      name: 'noisy',
      complete: async (request, options) => {
        if (isSummary(request)) options.onNotice('retrying the summary');
        return await scripted.complete(request, options);
      },
    };
    const { agent, events } = await scriptedAgent(root, [], { model, contextWindow: 8_000 });
    resume(agent, history(30));
    assert.equal((await runTask(agent, 'go on')).kind, 'accepted');
    assert.ok(events.some((event) => event.type === 'notice' && event.text === 'retrying the summary'));
    const compactions = events.filter((event) => event.type === 'compaction');
    assert.ok(compactions.length > 0);
    const summaryText = estimateTokens('SUMMARY: the story so far.');
    for (const made of compactions) assert.ok(made.tokensAfter >= summaryText && made.tokensAfter < made.tokensBefore);
  });

  test('a bad tool input beside text in one reply is still stored resendably, its note short however long the input', async (t) => {
    const root = await tempProject(t);
    const script = [reply(text('Reading.'), toolUse('read_file', 'x'.repeat(5_000))), say('ok')];
    const { agent, model } = await scriptedAgent(root, script);
    assert.equal((await runTask(agent, 'read')).kind, 'accepted');
    const [result] = toolResults(agent.messages);
    assert.match(String(result?.content), /^invalid arguments for read_file: not an object: "x+"?$/);
    assert.ok(String(result?.content).length < 300, `${String(result?.content).length} characters`);
    assert.deepEqual(violationsOf(model.requests[1]!), []);
  });

  test('a message typed while a call runs skips the calls after it and reaches the model with the results', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    let agentRef: Agent | undefined;
    const typing = defineTool({
      name: 'slow_step',
      description: 'A test tool during which the user types a message.',
      input: z.strictObject({}),
      readOnly: false,
      run: async () => (steer(agentRef!, 'stop: use b.txt instead'), 'step done'),
    });
    const script = [reply(toolUse('slow_step', {}), toolUse('echo', { text: 'next' })), say('ok')];
    const { agent, model } = await scriptedAgent(root, script, { tools: [typing, tool] });
    agentRef = agent;
    await runTask(agent, 'work');
    assert.deepEqual(runs, []);
    const [, skipped] = toolResults(agent.messages);
    assert.match(String(skipped?.content), /^skipped: the user sent a message/);
    assert.match(JSON.stringify(model.requests[1]!.messages.at(-1)), /stop: use b\.txt instead/);
  });

  // The gate's use of the OS sandbox, asked for and missing or there, starts bubblewrap or a second harness: those
  // two tests are test/sandbox/sandbox.check.ts's (describe "the gate's sandbox policy"), in test:all.

  test("the check's output streams to the user as gate-output events while it runs", async (t) => {
    const root = await tempProject(t);
    const { agent, events } = await scriptedAgent(root, [say('done')], {
      verify: 'echo checking now',
      sandbox: false,
    });
    assert.equal((await runTask(agent, 'work')).kind, 'accepted');
    const streamed = events.flatMap((event) => (event.type === 'gate-output' ? [event.text] : []));
    assert.match(streamed.join(''), /checking now/);
  });

  test('a long check is never invisible: a gate-start with its command comes before its output', async (t) => {
    const root = await tempProject(t);
    const { agent, events } = await scriptedAgent(root, [say('done')], { verify: 'echo ok', sandbox: false });
    assert.equal((await runTask(agent, 'work')).kind, 'accepted');
    const gateEvents = events.filter((event) => event.type.startsWith('gate'));
    assert.deepEqual(
      gateEvents.map((event) => event.type),
      ['gate-start', 'gate-output', 'gate'],
    );
    assert.deepEqual(gateEvents[0], { type: 'gate-start', command: 'echo ok' });
  });
});

describe('what views and the program are told (found by npm run mutate:agent, 2026-12-03)', () => {
  test('the gate event of a check refused over a changed protected file says not passed, not run, not contained', async (t) => {
    const root = await tempProject(t, { 'test/x.test.js': 'check();\n' });
    const tamper = () => (writeFileSync(path.join(root, 'test/x.test.js'), 'pass();\n'), say('done'));
    const { agent, events } = await scriptedAgent(root, [tamper, say('done')], {
      protect: ['test/**'],
      verify: 'exit 0',
      budgets: { maxTurns: 1 },
    });
    await runTask(agent, 'work');
    const gate = events.find((event) => event.type === 'gate');
    assert.ok(gate?.type === 'gate');
    assert.deepEqual(
      { passed: gate.passed, exitCode: gate.exitCode, sandboxed: gate.sandboxed, reason: gate.reason },
      { passed: false, exitCode: null, sandboxed: false, reason: 'protected files changed' },
    );
  });

  test('the running event names the call that starts, so a view can show which one is running', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const { agent, events } = await scriptedAgent(root, [call('read_file', { path: 'a.txt' }), say('done')]);
    await runTask(agent, 'read');
    const running = events.find((event) => event.type === 'running');
    assert.ok(running?.type === 'running');
    assert.equal(running.call.name, 'read_file');
    assert.deepEqual(running.call.input, { path: 'a.txt' });
  });

  test("a forker's tool that forgets safe_path still cannot take a path outside the project", async (t) => {
    const root = await tempProject(t);
    const reached: string[] = [];
    const careless = defineTool({
      name: 'peek',
      description: 'A test tool that uses its path as given, without safe_path.',
      input: z.strictObject({ path: z.string() }),
      readOnly: true,
      run: async (input) => {
        reached.push(input.path);
        return 'peeked';
      },
    });
    const script = [call('peek', { path: '../outside.txt' }), call('peek', { path: 'inside.txt' }), say('done')];
    const { agent } = await scriptedAgent(root, script, { tools: toolsWith(careless) });
    await runTask(agent, 'peek');
    assert.deepEqual(reached, ['inside.txt']);
  });

  test('withdrawing steering hands back what the model never read, and leaves none to send', async (t) => {
    const root = await tempProject(t);
    const { agent } = await scriptedAgent(root, [say('done')]);
    steer(agent, 'first');
    steer(agent, 'second');
    assert.deepEqual(withdrawSteering(agent), ['first', 'second']);
    assert.deepEqual(withdrawSteering(agent), []);
  });

  test('a Ctrl-C during a call halts as interrupted even when the token budget ran out in the same turn', async (t) => {
    const root = await tempProject(t);
    const stop = new AbortController();
    const ctrlC = defineTool({
      name: 'press_ctrl_c',
      description: 'A test tool: the person presses Ctrl-C while it runs.',
      input: z.strictObject({}),
      readOnly: true,
      run: async () => {
        stop.abort();
        return 'pressed';
      },
    });
    const { agent } = await scriptedAgent(root, [call('press_ctrl_c', {}), say('done')], {
      tools: toolsWith(ctrlC),
      budgets: { maxTurns: 25, maxTokens: 1 },
    });
    assert.deepEqual(await runTask(agent, 'work', stop.signal), { kind: 'interrupted' });
  });
});
