// A local stand-in for the Anthropic Messages API: it enforces the request rules, replays scripted
// replies as the real event stream, and can fail the ways the network does (errors, cuts, stalls).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createHmac, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import type { TestContext } from 'node:test';
import { requestViolations } from '../../lessons/api-rules.ts';

export type FakeStep =
  | { kind: 'reply'; message: Anthropic.Message } // streamed as SSE (or plain JSON if the request has no stream:true)
  // An error response, e.g. 529 overloaded_error, with any headers the server adds (x-should-retry, retry-after).
  | { kind: 'status'; status: number; errorType?: string; message?: string; headers?: Record<string, string> }
  | { kind: 'cut'; message: Anthropic.Message; afterEvents: number } // send `afterEvents` SSE events then destroy the socket
  | { kind: 'stall'; message: Anthropic.Message; afterEvents: number }; // send `afterEvents` SSE events then nothing until close()

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export interface FakeApi {
  baseURL: string;
  /** Every request received, including rejected ones and model lookups, in arrival order. */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/** The model's window that /v1/models reports, and a prompt length above which a request is refused. */
export interface FakeApiOptions {
  maxInputTokens?: number;
  promptTooLongAbove?: number;
}

export async function startFakeApi(steps: FakeStep[], options: FakeApiOptions = {}): Promise<FakeApi> {
  // A per-server secret makes signatures unforgeable, so a 200 proves the harness echoed thinking verbatim.
  const secret = randomBytes(32);
  const sign = (thinking: string): string => createHmac('sha256', secret).update(thinking).digest('base64');
  const signatureOk = (thinking: string, signature: string): boolean => signature === sign(thinking);

  const queue = [...steps];
  const requests: RecordedRequest[] = [];
  const stalled = new Set<ServerResponse>();
  let responses = 0;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.setHeader('request-id', `req_fake_${++responses}`);
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    const text = await readBody(req);
    let body: unknown = text === '' ? undefined : text;
    let badJson = false;
    try {
      if (text !== '') body = JSON.parse(text);
    } catch {
      badJson = true;
    }
    requests.push({ method: req.method ?? '', path, headers: req.headers, body });

    const { authorization } = req.headers;
    if (!req.headers['x-api-key'] && !(typeof authorization === 'string' && /^Bearer \S/.test(authorization))) {
      return sendError(
        res,
        401,
        'authentication_error',
        'missing authentication: send x-api-key or authorization: Bearer',
      );
    }
    if (!req.headers['anthropic-version']) {
      return sendError(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    }
    if (badJson) return sendError(res, 400, 'invalid_request_error', 'request body is not valid JSON');

    const modelId = req.method === 'GET' && /^\/v1\/models\/([^/]+)$/.exec(path)?.[1];
    if (modelId) return sendJson(res, 200, modelInfo(decodeURIComponent(modelId), options.maxInputTokens));
    if (req.method !== 'POST' || path !== '/v1/messages') {
      return sendError(res, 404, 'not_found_error', `fake API: no route for ${req.method} ${path}`);
    }

    const [violation] = requestViolations(body, signatureOk);
    if (violation) return sendError(res, 400, 'invalid_request_error', violation);
    const tokens = Math.ceil(text.length / 4);
    if (options.promptTooLongAbove !== undefined && tokens > options.promptTooLongAbove) {
      const message = `prompt is too long: ${tokens} tokens > ${options.promptTooLongAbove} maximum`;
      return sendError(res, 400, 'invalid_request_error', message);
    }

    const step = queue.shift();
    if (!step) {
      // No retry: the SDK would otherwise repeat the request and blur what the test sees.
      res.setHeader('x-should-retry', 'false');
      return sendError(res, 500, 'api_error', 'fake API: no scripted step left');
    }
    if (step.kind === 'status') {
      for (const [name, value] of Object.entries(step.headers ?? {})) res.setHeader(name, value);
      const type = step.errorType ?? ERROR_TYPES[step.status] ?? 'api_error';
      return sendError(res, step.status, type, step.message ?? `fake API: scripted ${step.status} ${type}`);
    }

    const message = asTheApiSendsIt(withSignatures(step.message, sign));
    if (!isRecord(body) || body.stream !== true) {
      // Without streaming the reply is one JSON document, so a cut or stall happens before any byte.
      if (step.kind === 'reply') sendJson(res, 200, message);
      else if (step.kind === 'cut') res.destroy();
      else hold(res);
      return;
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    const events = streamEvents(message);
    if (step.kind === 'reply') {
      res.end(sse(events));
      return;
    }
    const partial = sse(events.slice(0, step.afterEvents));
    if (step.kind === 'cut') {
      // Destroy only once the partial events are flushed, so the client really sees them before the cut.
      if (partial) res.write(partial, () => res.destroy());
      else res.destroy();
      return;
    }
    if (partial) res.write(partial);
    hold(res);
  }

  function hold(res: ServerResponse): void {
    stalled.add(res);
    res.on('close', () => stalled.delete(res));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // A bug in the fake must fail the test loudly, not hang it.
      if (!res.headersSent) sendError(res, 500, 'api_error', `fake API crashed: ${String(error)}`);
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      for (const res of stalled) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const sse = (events: Anthropic.RawMessageStreamEvent[]): string =>
  events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join('');

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(res: ServerResponse, status: number, payload: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
}

function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  // The SDK waits this long before its own retries, which keeps retry tests fast.
  res.setHeader('retry-after-ms', '1');
  sendJson(res, status, { type: 'error', error: { type, message } });
}

function modelInfo(id: string, maxInputTokens = 200_000): Anthropic.ModelInfo {
  return {
    type: 'model',
    id,
    display_name: id,
    created_at: '2026-01-01T00:00:00Z',
    capabilities: null,
    deprecated_at: null,
    lifecycle: 'active',
    line: null,
    max_input_tokens: maxInputTokens,
    max_tokens: 64_000,
    retires_at: null,
  };
}

/** A block's fields at their default, which the API leaves out of what it sends, as it leaves out null ones. */
const BLOCK_DEFAULTS: Record<string, Record<string, unknown>> = {
  tool_use: { caller: { type: 'direct' } },
  server_tool_use: { caller: { type: 'direct' } },
};

/** The message as the real API sends it: a block never carries a field that is null or at its default (a text block
 *  is `{"type":"text","text":…}`, without `citations: null`; a tool_use has no `caller`), though the SDK's types
 *  have a test write them. */
function asTheApiSendsIt(message: Anthropic.Message): Anthropic.Message {
  const content = message.content.map((block) => {
    const defaults = BLOCK_DEFAULTS[block.type] ?? {};
    const isDefault = (key: string, value: unknown) =>
      value === null || (key in defaults && JSON.stringify(defaults[key]) === JSON.stringify(value));
    return Object.fromEntries(Object.entries(block).filter(([key, value]) => !isDefault(key, value)));
  });
  return { ...message, content: content as unknown as Anthropic.ContentBlock[] };
}

function withSignatures(message: Anthropic.Message, sign: (thinking: string) => string): Anthropic.Message {
  const content = message.content.map((block) =>
    block.type === 'thinking' ? { ...block, signature: sign(block.thinking) } : block,
  );
  return { ...message, content };
}

// Streamed text arrives in pieces; a few chunks are enough to exercise the client's reassembly.
function chunks(text: string, count = 3): string[] {
  const size = Math.max(1, Math.ceil(text.length / count));
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

type StartBlock = Anthropic.RawContentBlockStartEvent['content_block'];

// Each block starts with its streamed fields empty; every other field is sent as-is so that
// the SDK's assembled snapshot equals the scripted block.
function splitBlock(block: Anthropic.ContentBlock): [StartBlock, Anthropic.RawContentBlockDelta[]] {
  switch (block.type) {
    case 'text':
      return [{ ...block, text: '' }, chunks(block.text).map((text) => ({ type: 'text_delta', text }))];
    case 'thinking':
      return [
        { ...block, thinking: '', signature: '' },
        [
          ...chunks(block.thinking).map((thinking) => ({ type: 'thinking_delta' as const, thinking })),
          { type: 'signature_delta', signature: block.signature },
        ],
      ];
    case 'tool_use':
    case 'server_tool_use':
      return [
        { ...block, input: {} },
        chunks(JSON.stringify(block.input)).map((partial_json) => ({ type: 'input_json_delta', partial_json })),
      ];
    default:
      return [block, []];
  }
}

export function streamEvents(message: Anthropic.Message): Anthropic.RawMessageStreamEvent[] {
  const { usage } = message;
  const start: Anthropic.Message = {
    ...message,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    stop_details: null,
    usage: { ...usage, output_tokens: 0 },
  };
  const events: Anthropic.RawMessageStreamEvent[] = [{ type: 'message_start', message: start }];
  message.content.forEach((block, index) => {
    const [content_block, deltas] = splitBlock(block);
    events.push({ type: 'content_block_start', index, content_block });
    for (const delta of deltas) events.push({ type: 'content_block_delta', index, delta });
    events.push({ type: 'content_block_stop', index });
  });
  events.push(
    {
      type: 'message_delta',
      delta: {
        stop_reason: message.stop_reason,
        stop_sequence: message.stop_sequence,
        stop_details: message.stop_details,
        container: message.container,
      },
      usage: {
        output_tokens: usage.output_tokens,
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        output_tokens_details: usage.output_tokens_details,
        server_tool_use: usage.server_tool_use,
      },
    },
    { type: 'message_stop' },
  );
  return events;
}

/** A fake API serving `steps` until the test ends, and a client of the real SDK pointed at it. */
export async function fakeApiClient(
  t: TestContext,
  steps: FakeStep[],
  { apiKey = 'test-key', maxRetries = 2, ...options }: FakeApiOptions & { apiKey?: string; maxRetries?: number } = {},
): Promise<{ api: FakeApi; client: Anthropic }> {
  const api = await startFakeApi(steps, options);
  t.after(() => api.close());
  return { api, client: new Anthropic({ apiKey, baseURL: api.baseURL, maxRetries }) };
}

/** The requests to the Messages endpoint: the agent also asks /v1/models for the context window. */
export const messageCalls = (api: FakeApi): RecordedRequest[] =>
  api.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages');

/** A text block as the API sends it. */
export const textBlock = (text: string): Anthropic.TextBlock => ({ type: 'text', text, citations: null });

/** A tool call as the API sends it. */
export const toolUseBlock = (id: string, name: string, input: unknown): Anthropic.ToolUseBlock => ({
  type: 'tool_use',
  id,
  name,
  input,
  caller: { type: 'direct' },
});

/** A complete assistant Message with realistic usage, for scripting replies without boilerplate. */
export function fakeMessage(
  content: Anthropic.ContentBlock[],
  stop_reason: Anthropic.StopReason = 'end_turn',
): Anthropic.Message {
  return {
    id: `msg_fake_${randomBytes(6).toString('hex')}`,
    type: 'message',
    role: 'assistant',
    model: 'claude-fake-1',
    content,
    container: null,
    diagnostics: null,
    stop_reason,
    stop_sequence: null,
    stop_details: null,
    usage: {
      input_tokens: 100,
      output_tokens: 20,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: null,
      inference_geo: null,
      output_tokens_details: null,
      server_tool_use: null,
      service_tier: 'standard',
      speed: null,
    },
  };
}

/** A Messages API whose first reply calls read_file with a `path` nested `depth` objects deep, then says "ok".
 *  startFakeApi cannot send it (its own JSON.stringify overflows), so the stream is spliced by hand: the SDK itself
 *  assembles it without trouble. Every request is checked against the API's rules; `bodies` holds them. */
export async function startDeepReplyApi(
  t: TestContext,
  depth = 20_000,
): Promise<{ baseURL: string; bodies: unknown[] }> {
  const calling = fakeMessage(
    [{ type: 'tool_use', id: 'toolu_deep', name: 'read_file', input: {}, caller: { type: 'direct' } }],
    'tool_use',
  );
  const partial_json = `{"path":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`;
  const deepEvents: Anthropic.RawMessageStreamEvent[] = streamEvents(calling).filter(
    (event) => event.type !== 'content_block_delta',
  );
  const delta = { type: 'input_json_delta' as const, partial_json };
  deepEvents.splice(2, 0, { type: 'content_block_delta', index: 0, delta }); // after message_start, block_start
  const replies = [deepEvents, streamEvents(fakeMessage([{ type: 'text', text: 'ok', citations: null }]))];
  const bodies: unknown[] = [];
  const server = createServer(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += String(chunk);
    if (request.method !== 'POST') return void response.writeHead(404).end();
    bodies.push(JSON.parse(body));
    const violations = requestViolations(bodies.at(-1));
    if (violations.length > 0)
      return void response
        .writeHead(400)
        .end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: violations[0] } }));
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.end(
      (replies.shift() ?? []).map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join(''),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return { baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies };
}
