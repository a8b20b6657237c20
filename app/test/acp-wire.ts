// The program in --acp mode as an editor sees it: a child process whose stdout is read line by line, each line checked
// against the protocol's own JSON Schema (shipped with @agentclientprotocol/sdk) before a client reads it.

import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import type { TestContext } from 'node:test';
import { z } from 'zod';

const program = path.join(import.meta.dirname, '..', 'main.ts');
/** tsx by its full address, so the program can start in any folder. */
const tsx = import.meta.resolve('tsx');

const protocol = createRequire(import.meta.url)('@agentclientprotocol/sdk/schema/v1/schema.json') as {
  $defs: Record<string, unknown>;
};

/** One definition of the protocol's schema (e.g. SessionNotification) as a zod schema. */
export const protocolSchema = (name: string) =>
  z.fromJSONSchema({ $defs: protocol.$defs, $ref: `#/$defs/${name}` } as Parameters<typeof z.fromJSONSchema>[0]);

/** What the agent may send, by method: its notifications and its requests to the editor. */
const SENT_BY_AGENT: Record<string, z.ZodType> = {
  'session/update': protocolSchema('SessionNotification'),
  'session/request_permission': protocolSchema('RequestPermissionRequest'),
};

export interface JsonRpcMessage {
  jsonrpc: string;
  id?: number | string | null;
  method?: string;
  params?: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

export interface AcpChild {
  child: ChildProcessWithoutNullStreams;
  /** stdout, for a client to read: each line was recorded (and checked) before it passes on. */
  output: ReadableStream<Uint8Array>;
  /** Every message the agent wrote, in order. */
  messages: JsonRpcMessage[];
  /** What was wrong with a line: not JSON-RPC, or a notification or request the schema rejects. */
  problems: string[];
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Starts `node --import tsx app/main.ts --acp ...args` in `cwd` (with `env` added to this process's); killed when
 *  the test ends. */
export function startAcp(t: TestContext, cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): AcpChild {
  const child = spawn(process.execPath, ['--import', tsx, program, '--acp', ...args], {
    cwd,
    env: { ...process.env, ...env },
  });
  t.after(() => child.kill());
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdin.on('error', () => {}); // a message after the program ended goes nowhere
  const messages: JsonRpcMessage[] = [];
  const problems: string[] = [];
  let partial = '';
  const decoder = new TextDecoder();
  const record = (line: string) => {
    let message: JsonRpcMessage;
    try {
      message = JSON.parse(line) as JsonRpcMessage;
    } catch {
      return void problems.push(`not JSON: ${line.slice(0, 200)}`);
    }
    if (message.jsonrpc !== '2.0') problems.push(`not JSON-RPC 2.0: ${line.slice(0, 200)}`);
    messages.push(message);
    const schema = message.method === undefined ? undefined : SENT_BY_AGENT[message.method];
    const checked = schema?.safeParse(message.params);
    if (checked?.success === false) problems.push(`${message.method}: ${checked.error.message} in ${line}`);
  };
  // Recorded as the bytes pass, before the client reads them: once the client has an answer, every message before it
  // is in `messages`.
  const tap = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      const lines = (partial + decoder.decode(chunk, { stream: true })).split('\n');
      partial = lines.pop()!;
      for (const line of lines) if (line.trim() !== '') record(line);
      controller.enqueue(chunk);
    },
  });
  const output = (Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>).pipeThrough(tap);
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, output, messages, problems, stderr: () => stderr, exited };
}

/** The session updates among messages, from index `from` on. */
export const updatesIn = (messages: readonly JsonRpcMessage[], from = 0) =>
  messages
    .slice(from)
    .filter((message) => message.method === 'session/update')
    .map((message) => (message.params as { update: Record<string, unknown> & { sessionUpdate: string } }).update);

/** The text of the agent's message chunks among updates, joined. */
export const agentTextOf = (updates: ReturnType<typeof updatesIn>) =>
  updates
    .filter((update) => update.sessionUpdate === 'agent_message_chunk')
    .map((update) => (update.content as { text: string }).text)
    .join('');

/** A JSON-RPC client of a few lines: requests with ids, and the agent's own requests answered by method. */
export function rawClient({ child, output }: ReturnType<typeof startAcp>) {
  const waiting = new Map<number, (message: JsonRpcMessage) => void>();
  const handlers = new Map<string, (params: unknown) => unknown>();
  const asked: string[] = [];
  let id = 0;
  const send = (message: object) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  createInterface({ input: Readable.fromWeb(output as Parameters<typeof Readable.fromWeb>[0]) }).on('line', (line) => {
    const message = JSON.parse(line) as JsonRpcMessage;
    if (message.method !== undefined && message.id !== undefined) {
      asked.push(message.method);
      const handler = handlers.get(message.method);
      send(
        handler
          ? { id: message.id, result: handler(message.params) }
          : { id: message.id, error: { code: -32601, message: 'no' } },
      );
    } else if (typeof message.id === 'number') {
      waiting.get(message.id)?.(message);
    }
  });
  return {
    asked,
    notify: (method: string, params: object) => send({ method, params }),
    request: (method: string, params: object) =>
      new Promise<JsonRpcMessage>((resolve) => {
        waiting.set(++id, resolve);
        send({ id, method, params });
      }),
    onRequest: (method: string, handler: (params: unknown) => unknown) => handlers.set(method, handler),
  };
}
