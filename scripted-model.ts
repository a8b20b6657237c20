// A fake model that replays canned replies, so every lesson runs offline and the same way each
// time. It implements `Model` and nothing else: the loop cannot tell it from the real API.

import type Anthropic from '@anthropic-ai/sdk';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { Model, ModelCallOptions, ModelRequest, Price } from './agent.ts';

/** A reply as a script writes it: the blocks, and optionally how it stopped and what it cost. */
export interface ScriptedReply {
  content: ScriptedBlock[];
  /** Default: `tool_use` when the reply has tool calls, else `end_turn`. */
  stop_reason?: Anthropic.StopReason;
  usage?: Partial<
    Pick<
      Anthropic.Usage,
      'input_tokens' | 'output_tokens' | 'cache_creation_input_tokens' | 'cache_read_input_tokens'
    >
  >;
  /** How long the model "thinks" before it answers (`delay_ms` in a script file), so that Ctrl-C
   *  and steering can be practised offline. An abort ends the wait early and rejects, like a real
   *  call. */
  delayMs?: number;
}

export type ScriptedBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; name: string; input: unknown; id?: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string };

/** A script entry may also look at the request, e.g. to answer a summary request differently, or
 *  throw, to play a call that fails; either way it answers one request. */
export type ScriptEntry = ScriptedReply | ((request: ModelRequest) => ScriptedReply);

// Small helpers, so a test reads like the conversation it scripts.
export const text = (t: string): ScriptedBlock => ({ type: 'text', text: t });
export const toolUse = (name: string, input: unknown, id?: string): ScriptedBlock =>
  id === undefined ? { type: 'tool_use', name, input } : { type: 'tool_use', name, input, id };
export const reply = (...content: ScriptedBlock[]): ScriptedReply => ({ content });
export const say = (t: string): ScriptedReply => reply(text(t));
export const call = (name: string, input: unknown): ScriptedReply => reply(toolUse(name, input));

export class ScriptedModel implements Model {
  /** Every request received, deep-copied, so a test can check exactly what the model was sent. */
  readonly requests: ModelRequest[] = [];
  /** Replies given so far: an aborted request gives none, and its reply answers the next
   *  request. */
  private answered = 0;

  constructor(
    private readonly script: readonly ScriptEntry[],
    readonly name = 'scripted',
    readonly price?: Price,
  ) {}

  async complete(
    request: ModelRequest,
    { signal, onText, onThinking }: ModelCallOptions,
  ): Promise<Anthropic.Message> {
    signal.throwIfAborted();
    this.requests.push(structuredClone(request));
    const turn = this.requests.length;
    const entry = this.script[this.answered];
    if (entry === undefined) {
      throw new Error(
        `scripted model: the script has ${this.script.length} replies and request ${turn} has none`,
      );
    }
    let scripted: ScriptedReply;
    try {
      scripted = typeof entry === 'function' ? entry(request) : entry;
    } catch (error) {
      // A call that fails (the entry throws) is answered too: the next request gets the next entry.
      this.answered++;
      throw error;
    }
    if (scripted.delayMs !== undefined) await sleep(scripted.delayMs, undefined, { signal });
    this.answered++;
    const message = toMessage(scripted, turn, request);
    for (const block of message.content) {
      if (block.type === 'text') onText(block.text);
      if (block.type === 'thinking') onThinking?.(block.thinking);
    }
    return message;
  }
}

/** Fills in what the API would (ids, stop reason, usage), so scripts stay short. */
function toMessage(
  scripted: ScriptedReply,
  turn: number,
  request: ModelRequest,
): Anthropic.Message {
  const content: Anthropic.ContentBlock[] = scripted.content.map((block, i) => {
    switch (block.type) {
      case 'text':
        return { type: 'text', text: block.text, citations: null };
      case 'thinking':
      case 'redacted_thinking':
        return { ...block };
      case 'tool_use':
        return {
          type: 'tool_use',
          id: block.id ?? `toolu_s${turn}_${i}`,
          name: block.name,
          input: block.input,
          caller: { type: 'direct' },
        };
    }
  });
  const hasCalls = content.some((block) => block.type === 'tool_use');
  return {
    id: `msg_scripted_${turn}`,
    type: 'message',
    role: 'assistant',
    model: 'scripted',
    content,
    stop_reason: scripted.stop_reason ?? (hasCalls ? 'tool_use' : 'end_turn'),
    stop_sequence: null,
    stop_details: null,
    container: null,
    diagnostics: null,
    usage: usageOf({
      input_tokens: scripted.usage?.input_tokens ?? defaultInputTokens(request),
      output_tokens: scripted.usage?.output_tokens ?? Math.ceil(JSON.stringify(content).length / 4),
      cache_creation_input_tokens: scripted.usage?.cache_creation_input_tokens ?? null,
      cache_read_input_tokens: scripted.usage?.cache_read_input_tokens ?? null,
    }),
  };
}

/** A request's size as a default input usage: a token for each 4 characters of its system prompt
 *  and messages. The tool definitions are left out, so a tool added to TOOLS (or a longer
 *  description) moves no script's spending, budget or recording. */
function defaultInputTokens({ tools: _left, ...request }: ModelRequest): number {
  return Math.ceil(JSON.stringify(request).length / 4);
}

type TokenCounts = Pick<Anthropic.Usage, 'input_tokens' | 'output_tokens'> &
  Partial<Pick<Anthropic.Usage, 'cache_creation_input_tokens' | 'cache_read_input_tokens'>>;

/** A whole `Usage` from its token counts: the fields a fake reply has no value for are null, as the
 *  API's may be. */
export function usageOf(counts: TokenCounts): Anthropic.Usage {
  return {
    cache_creation_input_tokens: null,
    cache_read_input_tokens: null,
    ...counts,
    cache_creation: null,
    inference_geo: null,
    output_tokens_details: null,
    server_tool_use: null,
    service_tier: null,
    speed: null,
  };
}

const scriptFile = z.array(
  z.strictObject({
    content: z.array(
      z.discriminatedUnion('type', [
        z.strictObject({ type: z.literal('text'), text: z.string() }),
        z.strictObject({
          type: z.literal('tool_use'),
          name: z.string(),
          input: z.unknown(),
          id: z.string().optional(),
        }),
        z.strictObject({
          type: z.literal('thinking'),
          thinking: z.string(),
          signature: z.string(),
        }),
      ]),
    ),
    delay_ms: z.number().int().nonnegative().optional(),
    stop_reason: z
      .enum([
        'end_turn',
        'max_tokens',
        'stop_sequence',
        'tool_use',
        'pause_turn',
        'refusal',
        'model_context_window_exceeded',
      ])
      .optional(),
  }),
);

/** Reads a `--script` file: a JSON array of replies. A malformed file is one clear line naming the
 *  file and the first problem (where in the file, and what), not a crash later nor a validator's
 *  report. */
export async function loadScript(file: string): Promise<ScriptedReply[]> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new Error(`${file}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`);
  });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(
      `${file} is not valid JSON: ` +
        jsonProblem(text, error instanceof Error ? error.message : ''),
    );
  }
  const parsed = scriptFile.safeParse(json);
  if (parsed.success) {
    return parsed.data.map(({ delay_ms, ...scripted }) =>
      delay_ms === undefined ? scripted : { ...scripted, delayMs: delay_ms },
    );
  }
  const [issue] = parsed.error.issues;
  const where = issue!.path
    .map((key) => (typeof key === 'number' ? `[${key}]` : `.${String(key)}`))
    .join('');
  throw new Error(
    `${file} is not a script of replies: ` +
      `${where === '' ? 'the file' : `at ${where}`}: ${issue!.message}`,
  );
}

/** V8's message without the copy of the input it may quote, its "position N" as a line and
 *  column. */
function jsonProblem(text: string, message: string): string {
  const problem = message
    .replace(/, ".*" is not valid JSON$/s, '')
    .replace(/ in JSON at position (\d+).*$/s, '');
  const position = /at position (\d+)/.exec(message)?.[1];
  if (position === undefined) return problem;
  const before = text.slice(0, Number(position)).split('\n');
  return `${problem} (line ${before.length}, column ${before.at(-1)!.length + 1})`;
}
