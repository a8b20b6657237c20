// The fake API is only useful if it behaves like the real one, so these tests drive it with the real SDK.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { fakeMessage, startFakeApi, type FakeApi, type FakeStep } from './fake-api.ts';
import { requestViolations } from '../../lessons/api-rules.ts';

const MODEL = 'claude-fake-1';

const textReply = (text: string): FakeStep => ({
  kind: 'reply',
  message: fakeMessage([{ type: 'text', text, citations: null }]),
});

const toolUse = (id: string): Anthropic.ToolUseBlockParam => ({
  type: 'tool_use',
  id,
  name: 'read_file',
  input: { path: 'a.txt' },
});

const toolResult = (id: string): Anthropic.ToolResultBlockParam => ({
  type: 'tool_result',
  tool_use_id: id,
  content: 'hello',
});

const ask: Anthropic.MessageParam = { role: 'user', content: 'read a.txt' };

const params = (messages: Anthropic.MessageParam[]): Anthropic.MessageCreateParamsNonStreaming => ({
  model: MODEL,
  max_tokens: 1024,
  messages,
});

// Starts a fake, hands a client to the test body, and always closes the fake afterwards.
async function withFake(
  steps: FakeStep[],
  body: (client: Anthropic, fake: FakeApi) => Promise<void>,
  options?: { maxInputTokens?: number; promptTooLongAbove?: number },
): Promise<void> {
  const fake = await startFakeApi(steps, options);
  try {
    await body(new Anthropic({ apiKey: 'test-key', baseURL: fake.baseURL, maxRetries: 2 }), fake);
  } finally {
    await fake.close();
  }
}

async function rejectsWith400(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof Anthropic.BadRequestError, `expected BadRequestError, got ${String(error)}`);
    assert.match(error.apiMessage ?? '', pattern);
    return true;
  });
}

const scripted = fakeMessage(
  [
    { type: 'thinking', thinking: 'The user wants a.txt, so I should read it first.', signature: 'scripted' },
    { type: 'text', text: 'Let me read that file for you.', citations: null },
    {
      type: 'tool_use',
      id: 'toolu_01',
      name: 'read_file',
      input: { path: 'a.txt', lines: [1, 20], note: 'ünïcødé ✓' },
      caller: { type: 'direct' },
    },
  ],
  'tool_use',
);

/** A block as the real API sends it: no field that is null (a text block's `citations`) or at its default (a
 *  tool_use's `caller`), though the SDK's types have a test write them. */
const asSent = (block: Anthropic.ContentBlock) =>
  Object.fromEntries(
    Object.entries(block).filter(([key, value]) => value !== null && !(key === 'caller' && block.type === 'tool_use')),
  );

test('a streamed reply assembles through the SDK into the scripted message, as the API sends it: no null or default fields', async () => {
  await withFake([{ kind: 'reply', message: scripted }], async (client, fake) => {
    const stream = client.messages.stream(params([{ role: 'user', content: 'read a.txt' }]));
    const final = await stream.finalMessage();

    const [thinking] = final.content;
    assert.ok(thinking?.type === 'thinking');
    assert.notEqual(thinking.signature, 'scripted', 'the fake signs thinking blocks itself');
    assert.ok(thinking.signature.length > 20);
    const expected = scripted.content.map((block) =>
      block.type === 'thinking' ? { ...block, signature: thinking.signature } : asSent(block),
    );
    assert.deepEqual(Object.keys(final.content[1] ?? {}), ['type', 'text'], 'a text block has no citations: null');
    assert.deepEqual(final.content, expected);
    assert.equal(final.stop_reason, 'tool_use');
    assert.equal(final.stop_sequence, null);
    assert.deepEqual(final.usage, scripted.usage);
    assert.equal(final.id, scripted.id);
    assert.equal(stream.request_id, 'req_fake_1');
    assert.equal(fake.requests.length, 1);
    assert.equal(fake.requests[0]?.path, '/v1/messages');
  });
});

test('a non-streaming request gets the message as plain JSON', async () => {
  await withFake([textReply('plain')], async (client) => {
    const message = await client.messages.create(params([{ role: 'user', content: 'hi' }]));
    assert.deepEqual(message.content, [{ type: 'text', text: 'plain' }]);
  });
});

test('an unanswered tool_use is a 400 naming the id, and does not consume a step', async () => {
  await withFake([textReply('after the fix')], async (client, fake) => {
    const call: Anthropic.MessageParam = { role: 'assistant', content: [toolUse('toolu_lost')] };
    await rejectsWith400(
      client.messages.create(params([ask, call, { role: 'user', content: 'well?' }])),
      /tool_use ids were found without tool_result blocks immediately after: toolu_lost/,
    );
    const answered = await client.messages.create(
      params([ask, call, { role: 'user', content: [toolResult('toolu_lost')] }]),
    );
    assert.equal(answered.content[0]?.type === 'text' && answered.content[0].text, 'after the fix');
    assert.equal(fake.requests.length, 2, 'a 400 is not retried by the SDK');
  });
});

test('malformed conversations are rejected with 400', async () => {
  await withFake([], async (client) => {
    await rejectsWith400(
      client.messages.create(
        params([
          ask,
          { role: 'assistant', content: [toolUse('toolu_1')] },
          { role: 'user', content: [{ type: 'text', text: 'here you go' }, toolResult('toolu_1')] },
        ]),
      ),
      /tool_result blocks must come first/,
    );
    await rejectsWith400(
      client.messages.create(params([{ role: 'user', content: [{ type: 'text', text: '' }] }])),
      /non-whitespace text/,
    );
    const marked = Array.from({ length: 5 }, (_, i): Anthropic.TextBlockParam => ({
      type: 'text',
      text: `part ${i}`,
      cache_control: { type: 'ephemeral' },
    }));
    await rejectsWith400(client.messages.create(params([{ role: 'user', content: marked }])), /maximum of 4/);
  });
});

test('thinking blocks must come back unmodified', async () => {
  await withFake([{ kind: 'reply', message: scripted }, textReply('done')], async (client) => {
    const first = await client.messages.stream(params([ask])).finalMessage();
    const answer: Anthropic.MessageParam = { role: 'user', content: [toolResult('toolu_01')] };
    const altered = first.content.map((block) =>
      block.type === 'thinking' ? { ...block, thinking: `${block.thinking} (edited)` } : block,
    );

    await rejectsWith400(
      client.messages.create(params([ask, { role: 'assistant', content: altered }, answer])),
      /thinking block was modified/,
    );
    const ok = await client.messages.create(params([ask, { role: 'assistant', content: first.content }, answer]));
    assert.equal(ok.stop_reason, 'end_turn');
  });
});

test('with thinking on, a tool-use turn sent back without its thinking is refused, as the API refuses it', async () => {
  await withFake([{ kind: 'reply', message: scripted }, textReply('done')], async (client) => {
    const thinking = { thinking: { type: 'enabled', budget_tokens: 1024 } } as const;
    const first = await client.messages.stream({ ...params([ask]), ...thinking, max_tokens: 2048 }).finalMessage();
    const answer: Anthropic.MessageParam = { role: 'user', content: [toolResult('toolu_01')] };
    const dropped = first.content.filter((block) => block.type !== 'thinking');
    const sent = (content: Anthropic.ContentBlockParam[]) => ({
      ...params([ask, { role: 'assistant', content }, answer]),
      ...thinking,
      max_tokens: 2048,
    });
    await rejectsWith400(
      client.messages.create(sent(dropped)),
      /Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is enabled/,
    );
    const ok = await client.messages.create(sent(first.content));
    assert.equal(ok.stop_reason, 'end_turn');
  });
});

test('a 529 is retried by the SDK itself and then succeeds', async () => {
  await withFake([{ kind: 'status', status: 529 }, textReply('recovered')], async (client, fake) => {
    const started = Date.now();
    const { data, request_id } = await client.messages.create(params([{ role: 'user', content: 'hi' }])).withResponse();
    assert.equal(data.content[0]?.type === 'text' && data.content[0].text, 'recovered');
    assert.equal(fake.requests.length, 2);
    assert.equal(fake.requests[1]?.headers['x-stainless-retry-count'], '1');
    assert.equal(request_id, 'req_fake_2');
    assert.ok(Date.now() - started < 300, 'retry-after-ms keeps the SDK from backing off for 0.5s');
  });
});

test('a 529 that outlasts the retries surfaces as an overloaded error', async () => {
  const overloaded: FakeStep = { kind: 'status', status: 529 };
  await withFake([overloaded, overloaded, overloaded], async (client, fake) => {
    await assert.rejects(client.messages.create(params([{ role: 'user', content: 'hi' }])), (error: unknown) => {
      assert.ok(error instanceof Anthropic.APIError);
      assert.equal(error.status, 529);
      assert.equal(error.type, 'overloaded_error');
      assert.equal(error.requestID, 'req_fake_3');
      return true;
    });
    assert.equal(fake.requests.length, 3);
  });
});

test('running out of scripted steps fails loudly, without retries', async () => {
  await withFake([], async (client, fake) => {
    await assert.rejects(client.messages.create(params([{ role: 'user', content: 'hi' }])), /no scripted step left/);
    assert.equal(fake.requests.length, 1);
  });
});

test('a cut connection makes the SDK stream reject', { timeout: 2000 }, async () => {
  await withFake([{ kind: 'cut', message: scripted, afterEvents: 3 }], async (client, fake) => {
    const stream = client.messages.stream(params([{ role: 'user', content: 'hi' }]));
    let events = 0;
    stream.on('streamEvent', () => events++);
    await assert.rejects(stream.finalMessage(), (error: unknown) => {
      assert.ok(error instanceof Anthropic.AnthropicError);
      assert.ok(!(error instanceof Anthropic.APIUserAbortError));
      return true;
    });
    assert.equal(events, 3, 'the events before the cut arrived');
    assert.equal(fake.requests.length, 1, 'the SDK does not retry a stream that broke mid-body');
  });
});

test('a stalled stream never finishes by itself, and close() still returns', { timeout: 2000 }, async () => {
  const fake = await startFakeApi([{ kind: 'stall', message: scripted, afterEvents: 1 }]);
  const client = new Anthropic({ apiKey: 'test-key', baseURL: fake.baseURL, maxRetries: 2 });
  const abort = new AbortController();
  const stream = client.messages.stream(params([{ role: 'user', content: 'hi' }]), { signal: abort.signal });
  const firstEvent = new Promise<void>((resolve) => stream.once('streamEvent', () => resolve()));
  const final = stream.finalMessage();
  final.catch(() => {});

  await firstEvent;
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(stream.ended, false, 'still waiting 50ms after the first event');
  abort.abort();
  await assert.rejects(final, Anthropic.APIUserAbortError);
  await fake.close();
});

test('close() ends a stall nobody aborted', { timeout: 2000 }, async () => {
  const fake = await startFakeApi([{ kind: 'stall', message: scripted, afterEvents: 2 }]);
  const client = new Anthropic({ apiKey: 'test-key', baseURL: fake.baseURL, maxRetries: 0 });
  const stream = client.messages.stream(params([{ role: 'user', content: 'hi' }]));
  await new Promise<void>((resolve) => stream.once('streamEvent', () => resolve()));
  await fake.close();
  await assert.rejects(stream.finalMessage(), Anthropic.AnthropicError);
});

test('a request without credentials gets a 401', async () => {
  await withFake([], async (_client, fake) => {
    // Removing the header is the SDK's documented way to send a request with no authentication.
    const anonymous = new Anthropic({
      apiKey: 'unused',
      baseURL: fake.baseURL,
      defaultHeaders: { Authorization: null },
    });
    await assert.rejects(
      anonymous.messages.create(params([{ role: 'user', content: 'hi' }])),
      Anthropic.AuthenticationError,
    );
    assert.equal(fake.requests[0]?.headers.authorization, undefined);
  });
});

test('the SDK authenticates with a Bearer header and sends anthropic-version', async () => {
  await withFake([textReply('ok')], async (client, fake) => {
    await client.messages.create(params([{ role: 'user', content: 'hi' }]));
    const headers = fake.requests[0]?.headers;
    assert.equal(headers?.authorization, 'Bearer test-key');
    assert.equal(typeof headers?.['anthropic-version'], 'string');
  });
});

test('a prompt above promptTooLongAbove is rejected without consuming a step', async () => {
  await withFake(
    [textReply('short is fine')],
    async (client) => {
      await rejectsWith400(
        client.messages.create(params([{ role: 'user', content: 'x'.repeat(1000) }])),
        /prompt is too long: \d+ tokens > 100 maximum/,
      );
      const ok = await client.messages.create(params([{ role: 'user', content: 'hi' }]));
      assert.equal(ok.stop_reason, 'end_turn');
    },
    { promptTooLongAbove: 100 },
  );
});

test('GET /v1/models/:id reports the configured context window', async () => {
  await withFake(
    [],
    async (client) => {
      const info = await client.models.retrieve(MODEL);
      assert.equal(info.id, MODEL);
      assert.equal(info.type, 'model');
      assert.equal(info.max_input_tokens, 50_000);
      assert.equal(info.max_tokens, 64_000);
    },
    { maxInputTokens: 50_000 },
  );
});

// --- requestViolations on hand-written bodies ---

const validBody = () => ({
  model: MODEL,
  max_tokens: 100,
  system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
  tools: [{ name: 'read_file', input_schema: { type: 'object', properties: {} } }],
  messages: [
    { role: 'user', content: 'read a.txt and b.txt' },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'two reads', signature: 'sig' },
        { type: 'text', text: 'Reading both.' },
        { type: 'tool_use', id: 'toolu_a', name: 'read_file', input: {} },
        { type: 'tool_use', id: 'toolu_b', name: 'read_file', input: {} },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_b', content: 'B' },
        { type: 'tool_result', tool_use_id: 'toolu_a', content: 'A' },
        { type: 'text', text: 'results are in any order' },
      ],
    },
    { role: 'assistant', content: 'Both read.' },
  ],
});

type Body = ReturnType<typeof validBody>;

function violationsAfter(edit: (body: Body) => void): string[] {
  const body = validBody();
  edit(body);
  return requestViolations(JSON.parse(JSON.stringify(body)));
}

test('requestViolations accepts a valid body', () => {
  assert.deepEqual(requestViolations(validBody()), []);
  assert.deepEqual(
    requestViolations(validBody(), (_thinking, signature) => signature === 'sig'),
    [],
  );
});

test('requestViolations names each broken rule', () => {
  const cases: [string, (body: Body) => void, RegExp][] = [
    ['empty model', (b) => void (b.model = ''), /model/],
    ['fractional max_tokens', (b) => void (b.max_tokens = 1.5), /max_tokens/],
    ['no messages', (b) => void (b.messages = []), /messages: must be a non-empty array/],
    ['assistant first', (b) => void b.messages.shift(), /first message must use the "user" role/],
    ['system role', (b) => void (b.messages[0] = { role: 'system', content: 'x' }), /must be "user" or "assistant"/],
    [
      'a reply appended whole',
      (b) => void Object.assign(b.messages[3]!, { id: 'msg_1', stop_reason: 'end_turn' }),
      /messages\.3\.id: Extra inputs are not permitted/,
    ],
    ['missing result', (b) => void (b.messages[2]!.content as unknown[]).splice(1, 1), /toolu_a/],
    ['result not first', (b) => void (b.messages[2]!.content as unknown[]).reverse(), /must come first/],
    [
      'trailing tool_use',
      (b) => void b.messages.splice(2),
      /without tool_result blocks immediately after: toolu_a, toolu_b/,
    ],
    [
      'unknown result id',
      (b) => void (b.messages[2]!.content as unknown[]).unshift({ type: 'tool_result', tool_use_id: 'toolu_x' }),
      /unexpected tool_use_id found in tool_result blocks: toolu_x/,
    ],
    [
      'duplicate result',
      (b) => void (b.messages[2]!.content as unknown[]).unshift({ type: 'tool_result', tool_use_id: 'toolu_a' }),
      /duplicate tool_result/,
    ],
    [
      'duplicate tool_use id',
      (b) =>
        b.messages.push(
          { role: 'user', content: 'again' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_a', name: 'read_file', input: {} }] },
        ),
      /tool_use ids must be unique/,
    ],
    ['empty text', (b) => void ((b.messages[1]!.content as { text?: string }[])[1]!.text = ''), /non-whitespace/],
    ['blank text', (b) => void ((b.messages[1]!.content as { text?: string }[])[1]!.text = ' \n'), /non-whitespace/],
    ['empty string content', (b) => void (b.messages[3]!.content = ''), /non-empty content/],
    ['empty array content', (b) => void (b.messages[0]!.content = []), /non-empty content/],
    [
      'thinking in a user message',
      (b) => void (b.messages[0]!.content = [{ type: 'thinking', thinking: 't', signature: 's' }]),
      /thinking blocks may only appear in assistant messages/,
    ],
    [
      'redacted_thinking without data',
      (b) => void (b.messages[1]!.content as unknown[]).unshift({ type: 'redacted_thinking' }),
      /redacted_thinking blocks need a string "data"/,
    ],
    [
      'five cache_control markers',
      (b) => {
        // One on the system block already, three on the results, one on a tool.
        for (const block of b.messages[2]!.content as Record<string, unknown>[])
          block.cache_control = { type: 'ephemeral' };
        Object.assign(b.tools[0]!, { cache_control: { type: 'ephemeral' } });
      },
      /Found 5/,
    ],
    ['bad tool name', (b) => void (b.tools[0]!.name = 'read file'), /tools\.0\.name/],
    ['duplicate tool name', (b) => void b.tools.push(b.tools[0]!), /tool names must be unique/],
    ['tool schema not an object', (b) => void (b.tools[0]!.input_schema.type = 'string'), /input_schema/],
  ];
  for (const [name, edit, pattern] of cases) {
    const violations = violationsAfter(edit);
    assert.ok(
      violations.some((v) => pattern.test(v)),
      `${name}: expected ${pattern}, got ${JSON.stringify(violations)}`,
    );
  }
});

test('requestViolations takes an image as the API does: base64 jpeg, png, gif or webp, or a URL, in a user message', () => {
  const data = Buffer.from('not really a png').toString('base64');
  const image = (source: Record<string, unknown>) => ({ type: 'image', source });
  const asked = (...content: unknown[]) => ({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content }] });
  for (const media_type of ['image/jpeg', 'image/png', 'image/gif', 'image/webp']) {
    const body = asked({ type: 'text', text: 'what is this?' }, image({ type: 'base64', media_type, data }));
    assert.deepEqual(requestViolations(body), [], media_type);
  }
  assert.deepEqual(requestViolations(asked(image({ type: 'url', url: 'https://example.com/a.png' }))), []);
  const refused: [unknown, RegExp][] = [
    [image({ type: 'base64', media_type: 'image/bmp', data }), /media_type: Input should be one of 'image\/jpeg'/],
    [image({ type: 'base64', media_type: 'image/png', data: '' }), /data: must be non-empty base64/],
    [image({ type: 'base64', media_type: 'image/png', data: 'not base64!' }), /data: must be non-empty base64/],
    [image({ type: 'file', file_id: 'f' }), /must be a base64 or url image source/],
  ];
  for (const [block, pattern] of refused) assert.match(requestViolations(asked(block)).join('\n'), pattern);
  const answered = { ...asked({ type: 'text', text: 'hi' }) };
  answered.messages.push({ role: 'assistant', content: [image({ type: 'base64', media_type: 'image/png', data })] });
  assert.match(requestViolations(answered).join('\n'), /image blocks may only appear in user messages/);
});

test('requestViolations takes a thinking budget of at least 1,024 tokens, below max_tokens', () => {
  const asked = (thinking: unknown, max_tokens = 4096) => ({
    model: MODEL,
    max_tokens,
    thinking,
    messages: [{ role: 'user', content: 'think' }],
  });
  assert.deepEqual(requestViolations(asked({ type: 'enabled', budget_tokens: 1024 })), []);
  assert.deepEqual(requestViolations(asked({ type: 'disabled' })), []);
  assert.match(
    requestViolations(asked({ type: 'enabled', budget_tokens: 1000 })).join(),
    /greater than or equal to 1024/,
  );
  assert.match(
    requestViolations(asked({ type: 'enabled', budget_tokens: 4096 })).join(),
    /`max_tokens` must be greater/,
  );
  assert.match(requestViolations(asked({ type: 'on' })).join(), /thinking: must be/);
});

test('requestViolations checks thinking signatures when given a verifier', () => {
  const violations = requestViolations(validBody(), () => false);
  assert.deepEqual(violations, [
    'messages.1.content.0: invalid signature in thinking block (thinking block was modified)',
  ]);
});

test('requestViolations rejects a body that is not an object', () => {
  assert.deepEqual(requestViolations('hello'), ['request body must be a JSON object']);
});
