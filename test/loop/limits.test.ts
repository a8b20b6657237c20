// What a session of any size, or a model stuck in any way, cannot break: each request stays one the API takes and
// the harness estimates to fit the window, and a model that will not stop is stopped.

import type Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import {
  type AgentEvent,
  estimateTokens,
  type LoadedSession,
  type ModelRequest,
  resume,
  runTask,
} from '../../agent.ts';
import { call, say, ScriptedModel, type ScriptedReply, toolUse } from '../../scripted-model.ts';
import { echoTool, scriptedAgent, tempProject, textOf, tokensSpent, toolResults, violationsOf } from '../helpers.ts';

const requestsOf = (events: AgentEvent[]) => events.filter((event) => event.type === 'request');
const isSummary = (request: ModelRequest) => JSON.stringify(request.messages.at(-1)).includes('Write a summary');
/** A scripted reply, unless the request asks for a summary: then a short one. */
const orSummary = (reply: ScriptedReply) => (request: ModelRequest) =>
  isSummary(request) ? say('SUMMARY: the story so far.') : reply;

test('a tool input that is not an object is answered with an error, and stored so that the next request is one the API takes', async (t) => {
  const root = await tempProject(t, { 'a.txt': 'alpha\n' });
  for (const input of [[1, 2], 'x', null]) {
    const script = [{ content: [toolUse('read_file', input as unknown as Record<string, unknown>)] }, say('ok')];
    const { agent, model } = await scriptedAgent(root, script);
    assert.equal((await runTask(agent, 'read')).kind, 'accepted', JSON.stringify(input));
    const [result] = toolResults(agent.messages);
    assert.equal(result?.is_error, true);
    assert.match(String(result?.content), /^invalid arguments for read_file: not an object: /);
    assert.deepEqual(violationsOf(model.requests[1]!), [], `after an input of ${JSON.stringify(input)}`);
  }
});

test('a huge edit is applied whole, but the transcript keeps its ends only, with a note, so no later request outgrows the window', async (t) => {
  const root = await tempProject(t, { 'a.txt': 'alpha\n' });
  const huge = `${'x'.repeat(200_000)}END`;
  const script = [
    call('read_file', { path: 'a.txt' }),
    call('edit_file', { path: 'a.txt', old_str: 'alpha', new_str: huge }),
    say('done'),
  ];
  const { agent, events } = await scriptedAgent(
    root,
    script.map(orSummary).flatMap((e) => [e, e]),
    {
      contextWindow: 20_000,
    },
  );
  assert.deepEqual(await runTask(agent, 'grow a.txt'), { kind: 'accepted', verifiedBy: null });
  assert.equal(await readFile(path.join(root, 'a.txt'), 'utf8'), `${huge}\n`, 'the edit ran with its whole input');
  assert.match(JSON.stringify(agent.messages), /characters left out/);
  for (const request of requestsOf(events)) assert.ok(request.estimatedTokens <= 20_000, `${request.estimatedTokens}`);
});

test('a task far larger than the window is cut with a note, and the model gets a request that fits', async (t) => {
  const root = await tempProject(t);
  const { agent, model } = await scriptedAgent(root, [say('ok')], { contextWindow: 20_000 });
  assert.equal((await runTask(agent, `${'word '.repeat(100_000)}the end`)).kind, 'accepted');
  const sent = textOf(model.requests[0]!.messages[0]);
  assert.match(sent, /characters left out/);
  assert.match(sent, /the end$/, 'the tail is kept');
  assert.ok(estimateTokens(model.requests[0]) < 20_000);
});

test('a view the estimate puts past the window, with nothing left to cut, still goes out: the API decides, not the estimate', async (t) => {
  const root = await tempProject(t);
  // A forker's context hook that shows the model more than the estimate says the window holds. The estimate errs
  // high, so the request may well fit; a real refusal ("prompt is too long") compacts once, then halts (endurance).
  const flood = async (messages: readonly Anthropic.MessageParam[]) => [
    ...messages,
    { role: 'user' as const, content: 'y'.repeat(100_000) },
  ];
  const { agent, model } = await scriptedAgent(root, [say('done')], { contextWindow: 10_000, contextHooks: [flood] });
  const halt = await runTask(agent, 'go');
  assert.deepEqual(halt, { kind: 'accepted', verifiedBy: null });
  assert.equal(model.requests.length, 1);
});

test('a history larger than the window is summarised a piece at a time, each summary request within the window', async (t) => {
  const root = await tempProject(t);
  const window = 8_000;
  const answer = (request: ModelRequest): ScriptedReply =>
    say(isSummary(request) ? 'SUMMARY: the story so far.' : 'ok');
  const { agent, model, events } = await scriptedAgent(root, Array(40).fill(answer), { contextWindow: window });
  const older: Anthropic.MessageParam[] = Array.from({ length: 60 }, (_, i) => ({
    role: i % 2 ? 'assistant' : 'user',
    content: `${i}: ${'a long line of the earlier session. '.repeat(30)}`,
  }));
  const saved: LoadedSession = {
    messages: older,
    compaction: null,
    subAgents: 0,
    repair: null,
    protectedAtStart: null,
    warnings: [],
  };
  resume(agent, saved);
  assert.ok(estimateTokens(older) > 2 * window, 'the history is more than twice the window');
  assert.equal((await runTask(agent, 'go on')).kind, 'accepted');
  const summaries = model.requests.filter(isSummary);
  assert.ok(summaries.length >= 3, `${summaries.length} pieces`);
  for (const request of model.requests) assert.ok(estimateTokens(request) <= window, `${estimateTokens(request)}`);
  assert.equal(events.filter((event) => event.type === 'compaction').length, summaries.length);
});

test('a summary that comes back empty is reported with what it cost, so the spending of the run adds up', async (t) => {
  const root = await tempProject(t, { 'a.txt': 'alpha\n'.repeat(300) });
  const taskCall = toolUse('task', { description: 'look', prompt: 'Read a.txt.' });
  const empty: ScriptedReply = { content: [], usage: { input_tokens: 700, output_tokens: 3 } };
  let reads = 0;
  const childTurn = (request: ModelRequest) =>
    isSummary(request) ? empty : call('read_file', { path: 'a.txt', offset: (reads++ % 50) + 1 });
  const child = new ScriptedModel(Array(20).fill(childTurn));
  const { agent, events } = await scriptedAgent(root, [{ content: [taskCall] }, say('done')], {
    taskModel: child,
    contextWindow: 4_000,
  });
  await runTask(agent, 'look');
  const failed = events.filter((event) => event.type === 'subagent' && event.event.type === 'compaction-failed');
  assert.equal(failed.length, 1, 'the empty summary is reported');
  const { input, output, cacheRead, cacheWrite } = agent.usage;
  assert.equal(input + output + cacheRead + cacheWrite, tokensSpent(events), 'and counted once, in the totals');
});

test('a model that keeps repeating a refused call is halted as stuck, after the guard refused it', async (t) => {
  const root = await tempProject(t);
  const { tool, runs } = echoTool();
  const same = call('echo', { text: 'again' });
  const { agent, model } = await scriptedAgent(root, Array(20).fill(same), { tools: [tool] });
  const halt = await runTask(agent, 'echo');
  assert.deepEqual(halt, {
    kind: 'error',
    message: 'the model made the same call 6 times in a row, refused from the third on: it is stuck',
  });
  assert.deepEqual(runs, ['again', 'again']);
  assert.equal(model.requests.length, 6);
});
