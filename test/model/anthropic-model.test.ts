// The real SDK path, offline: AnthropicModel drives the loop against a local fake of the Messages
// API that streams SSE like the real one and answers 400 to any request that breaks the API's rules.

import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { type AgentEvent, AnthropicModel, runTask } from '../../agent.ts';
import { fakeApiClient, fakeMessage, type FakeStep, messageCalls, textBlock, toolUseBlock } from './fake-api.ts';
import { scriptedAgent, tempProject } from '../helpers.ts';
import { describeModelError, isPromptTooLong, retryNotices } from '../../hardening/index.ts';

async function agentOnFakeApi(t: TestContext, steps: FakeStep[], files: Record<string, string> = {}) {
  const { api, client } = await fakeApiClient(t, steps);
  const root = await tempProject(t, files);
  const { agent, events } = await scriptedAgent(root, [], { model: new AnthropicModel('claude-test', client) });
  return { api, agent, events, root };
}

test('a streamed reply with thinking, text and a tool call is assembled, executed and sent back intact', async (t) => {
  const thinking: Anthropic.ThinkingBlock = {
    type: 'thinking',
    thinking: 'The note is in note.txt.',
    signature: 'replaced-by-the-fake',
  };
  const { api, agent, events } = await agentOnFakeApi(
    t,
    [
      {
        kind: 'reply',
        message: fakeMessage(
          [thinking, textBlock('Reading it.'), toolUseBlock('toolu_1', 'read_file', { path: 'note.txt' })],
          'tool_use',
        ),
      },
      { kind: 'reply', message: fakeMessage([textBlock('It says hello.')]) },
    ],
    { 'note.txt': 'hello\n' },
  );
  const halt = await runTask(agent, 'what does note.txt say?');
  assert.deepEqual(halt, { kind: 'accepted', verifiedBy: null });
  const streamed = events.flatMap((e) => (e.type === 'text' ? [e.delta] : [])).join('');
  assert.equal(streamed, 'Reading it.It says hello.');
  assert.equal(messageCalls(api).length, 2, 'the fake accepted the second request: the transcript kept every API rule');
  const [, assistant, results] = agent.messages;
  assert.ok(Array.isArray(assistant?.content) && assistant.content[0]?.type === 'thinking');
  assert.ok(Array.isArray(results?.content) && results.content[0]?.type === 'tool_result');
  assert.match(String(results.content[0].content), /hello/);
});

test('with a thinking budget the request lets the model think, its thinking streams as events, and every thinking block goes back as received, signature included, across tool turns', async (t) => {
  const thought = (thinking: string): Anthropic.ThinkingBlock => ({
    type: 'thinking',
    thinking,
    signature: 'the-fake-signs',
  });
  const { api, client } = await fakeApiClient(t, [
    {
      kind: 'reply',
      message: fakeMessage(
        [thought('Read a first.'), toolUseBlock('toolu_1', 'read_file', { path: 'a.txt' })],
        'tool_use',
      ),
    },
    {
      kind: 'reply',
      message: fakeMessage([thought('Now b.'), toolUseBlock('toolu_2', 'read_file', { path: 'b.txt' })], 'tool_use'),
    },
    { kind: 'reply', message: fakeMessage([thought('Both read.'), textBlock('a and b.')]) },
  ]);
  const root = await tempProject(t, { 'a.txt': 'a\n', 'b.txt': 'b\n' });
  const model = new AnthropicModel('claude-test', client, { thinkingBudget: 2048 });
  const { agent, events } = await scriptedAgent(root, [], { model });
  const halt = await runTask(agent, 'what do a.txt and b.txt say?');
  assert.deepEqual(halt, { kind: 'accepted', verifiedBy: null }, 'the fake accepted every request');
  const bodies = messageCalls(api).map((call) => call.body as Anthropic.MessageCreateParams);
  assert.equal(bodies.length, 3);
  for (const body of bodies) {
    assert.deepEqual(body.thinking, { type: 'enabled', budget_tokens: 2048 });
    assert.ok(body.max_tokens > 2048);
  }
  const received = agent.messages
    .filter((m) => m.role === 'assistant')
    .map((m) => (m.content as Anthropic.ContentBlockParam[])[0]);
  assert.equal(received.length, 3);
  assert.ok(received.every((block) => block?.type === 'thinking' && block.signature !== 'the-fake-signs'));
  assert.deepEqual((bodies[2]!.messages[1]!.content as Anthropic.ContentBlockParam[])[0], received[0]);
  assert.deepEqual((bodies[2]!.messages[3]!.content as Anthropic.ContentBlockParam[])[0], received[1]);
  const thinking = events.flatMap((e) => (e.type === 'thinking' ? [e.delta] : [])).join('');
  assert.equal(thinking, 'Read a first.Now b.Both read.');
  assert.equal(agent.usage.output, 60, "thinking is output: the replies' 20 tokens each are counted");
});

// The fake asks the SDK to wait 1 ms before a retry (retry-after-ms), which keeps these tests fast.
const notices = (events: AgentEvent[]) => events.flatMap((e) => (e.type === 'notice' ? [e.text] : []));

test('the context window is asked of the API once, not again for every sub-agent', async (t) => {
  const { api, agent } = await agentOnFakeApi(t, [
    { kind: 'reply', message: fakeMessage([toolUseBlock('toolu_1', 'task', { description: 'a', prompt: 'a?' })]) },
    { kind: 'reply', message: fakeMessage([textBlock('Found a.')]) },
    { kind: 'reply', message: fakeMessage([toolUseBlock('toolu_2', 'task', { description: 'b', prompt: 'b?' })]) },
    { kind: 'reply', message: fakeMessage([textBlock('Found b.')]) },
    { kind: 'reply', message: fakeMessage([textBlock('Done.')]) },
  ]);
  assert.deepEqual(await runTask(agent, 'ask twice'), { kind: 'accepted', verifiedBy: null });
  assert.equal(messageCalls(api).length, 5, 'two sub-agents ran');
  assert.equal(api.requests.filter((r) => r.path.startsWith('/v1/models')).length, 1);
});

test('an overloaded API (529) is retried by the SDK itself, and the run succeeds', async (t) => {
  const { api, agent, events } = await agentOnFakeApi(t, [
    { kind: 'status', status: 529 },
    { kind: 'reply', message: fakeMessage([textBlock('Done.')]) },
  ]);
  const halt = await runTask(agent, 'hi');
  assert.equal(halt.kind, 'accepted');
  assert.equal(messageCalls(api).length, 2);
  assert.deepEqual(notices(events), [
    'the API answered 529; the SDK retries in under a second (retry 1, 1 more left)…',
  ]);
});

test('a retry notice never promises a retry the SDK will not make: the server said no, or none are left', async (t) => {
  const refused = await agentOnFakeApi(t, [{ kind: 'status', status: 500, headers: { 'x-should-retry': 'false' } }]);
  assert.equal((await runTask(refused.agent, 'hi')).kind, 'error');
  assert.equal(messageCalls(refused.api).length, 1, 'the SDK obeyed the header');
  assert.deepEqual(notices(refused.events), ['the API answered 500, and said not to retry (x-should-retry: false)']);

  const overloaded = { kind: 'status', status: 529 } as const;
  const spent = await agentOnFakeApi(t, [overloaded, overloaded, overloaded]);
  assert.equal((await runTask(spent.agent, 'hi')).kind, 'error');
  assert.equal(messageCalls(spent.api).length, 3, 'the first attempt and the two retries');
  assert.deepEqual(notices(spent.events), [
    'the API answered 529; the SDK retries in under a second (retry 1, 1 more left)…',
    'the API answered 529; the SDK retries in under a second (retry 2, 0 more left)…',
    'the API answered 529; no retries left (2 made), so the call fails',
  ]);
});

type Middleware = ReturnType<typeof retryNotices>;

/** The notices retryNotices gives for one attempt that ends in `answer` (a response, or a connection error). */
async function noticesOf(answer: Response | Error, headers: Record<string, string> = {}, withOptions = true) {
  const notices: string[] = [];
  const middleware = retryNotices(2, new AbortController().signal, (text) => notices.push(text));
  const request = { url: 'http://localhost/v1/messages', method: 'POST', headers: new Headers(headers) };
  const next = async () => (answer instanceof Error ? Promise.reject(answer) : answer);
  const context = { options: withOptions ? { maxRetries: 2 } : undefined };
  const settled = await middleware(
    request as unknown as Parameters<Middleware>[0],
    next,
    context as unknown as Parameters<Middleware>[2],
  ).then(
    (response) => response.status,
    (error: unknown) => error,
  );
  return { notices, settled };
}
const answered = (status: number, headers: Record<string, string> = {}) => new Response('{}', { status, headers });

test('a retry notice follows the SDK rule: 408, 409, 429, every 5xx and what x-should-retry says are retried', async () => {
  for (const status of [408, 409, 429, 500, 503]) {
    assert.deepEqual((await noticesOf(answered(status))).notices, [
      `the API answered ${status}; the SDK retries shortly (retry 1, 1 more left)…`,
    ]);
  }
  assert.deepEqual((await noticesOf(answered(400))).notices, []);
  assert.deepEqual((await noticesOf(answered(400, { 'x-should-retry': 'true' }))).notices, [
    'the API answered 400; the SDK retries shortly (retry 1, 1 more left)…',
  ]);
});

test('a retry notice gives the wait the API asked for, and "shortly" for a wait of 0', async () => {
  const waits: [Record<string, string>, string][] = [
    [{ 'retry-after': '3' }, 'in 3 s'],
    [{ 'retry-after-ms': '1000' }, 'in 1 s'],
    [{ 'retry-after-ms': '200' }, 'in under a second'],
    [{ 'retry-after': '0' }, 'shortly'],
  ];
  for (const [headers, when] of waits) {
    assert.deepEqual((await noticesOf(answered(529, headers))).notices, [
      `the API answered 529; the SDK retries ${when} (retry 1, 1 more left)…`,
    ]);
  }
});

test('a successful answer brings no retry notice, whatever its headers say', async () => {
  assert.deepEqual(await noticesOf(answered(200, { 'x-should-retry': 'false' })), { notices: [], settled: 200 });
});

test('a connection that fails is told as a retry and still fails the attempt, for the SDK to retry', async () => {
  const cut = new Error('socket hang up');
  assert.deepEqual(await noticesOf(cut), {
    notices: ['the connection failed (socket hang up); the SDK retries shortly (retry 1, 1 more left)…'],
    settled: cut,
  });
});

test("a request without per-request options (the client's own token traffic) counts the client's retries", async () => {
  const { notices } = await noticesOf(answered(529), { 'x-stainless-retry-count': '1' }, false);
  assert.deepEqual(notices, ['the API answered 529; the SDK retries shortly (retry 2, 0 more left)…']);
});

test('a 400 the SDK does not retry says nothing of retries: the error halt says what went wrong', async (t) => {
  const { agent, events } = await agentOnFakeApi(t, [{ kind: 'status', status: 400 }]);
  assert.equal((await runTask(agent, 'hi')).kind, 'error');
  assert.deepEqual(notices(events), []);
});

test('a failing API halts with kind error and a readable one-line message, not a crash', async (t) => {
  const { agent } = await agentOnFakeApi(t, [
    { kind: 'status', status: 400, errorType: 'invalid_request_error', message: 'max_tokens: too large' },
  ]);
  const halt = await runTask(agent, 'hi');
  assert.equal(halt.kind, 'error');
  assert.match(
    halt.kind === 'error' ? halt.message : '',
    /^model call failed: HTTP 400 invalid_request_error: max_tokens: too large \(request id req_fake_\d+\)$/,
  );
});

test('a failed call that is no API error is reported in its own words, not as "HTTP undefined"', () => {
  assert.equal(describeModelError(new Error('socket hang up')), 'model call failed: socket hang up');
  assert.equal(
    describeModelError(Object.assign(new Error('spawn failed'), { status: 1 })),
    'model call failed: spawn failed',
  );
  assert.equal(describeModelError('a thrown string'), 'model call failed: a thrown string');
});

test('only a 400 that says "prompt is too long" compacts: not another 400, another status, or no API error', () => {
  const apiError = (status: number, message: string) =>
    Object.assign(new Error(`${status} ${message}`), { status, apiMessage: message });
  assert.equal(isPromptTooLong(apiError(400, 'prompt is too long: 250000 tokens > 200000 maximum')), true);
  assert.equal(isPromptTooLong(apiError(400, 'max_tokens: too large')), false);
  assert.equal(isPromptTooLong(apiError(413, 'prompt is too long')), false);
  assert.equal(isPromptTooLong(Object.assign(new Error('prompt is too long'), { status: 400 })), false);
  assert.equal(isPromptTooLong(new Error('400 prompt is too long')), false);
});

test('a connection cut mid-stream ends the run as an error halt and leaves no half reply behind', async (t) => {
  const message = fakeMessage(
    [
      textBlock('I will now edit the file, which'),
      toolUseBlock('toolu_1', 'edit_file', { path: 'x.txt', old_str: '', new_str: 'x' }),
    ],
    'tool_use',
  );
  const { agent, root } = await agentOnFakeApi(t, [{ kind: 'cut', message, afterEvents: 4 }]);
  const halt = await runTask(agent, 'write x.txt');
  assert.equal(halt.kind, 'error');
  assert.deepEqual(agent.messages, [{ role: 'user', content: [{ type: 'text', text: 'write x.txt' }] }]);
  await assert.rejects(readFile(path.join(root, 'x.txt')));
});
