// Guards of agent.ts's P1–P3 that `npm run mutate:agent` found unpinned: each test here was written against a
// surviving mutant, and fails with that mutant applied. Named, like every guard test, after the failure it prevents.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { type AfterCallHook, type AgentEvent, approveAll, type BeforeCallHook, pathOf, runTask } from '../agent.ts';
import { call, reply, say, ScriptedModel, text, toolUse } from '../scripted-model.ts';
import { defineTool, TOOLS } from '../tools.ts';
import { echoTool, HAIKU_PRICE, scriptedAgent, tempProject, textOf, toolResults, violationsOf } from './helpers.ts';

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
      tools: [...TOOLS, swap],
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
    const { agent, events } = await scriptedAgent(root, script, { tools: [...TOOLS, tool] });
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
