// Two bench-only models. ReplayModel hands back prebuilt replies and does nothing else, so a
// timing of the loop is a timing of the harness. (ScriptedModel deep-copies every request with
// structuredClone so tests can inspect it: test instrumentation, O(transcript) per turn, and not
// what a real run pays.) PrefixCacheModel adds a small simulation of the API's prompt cache.

import type Anthropic from '@anthropic-ai/sdk';
import type { Model, ModelRequest } from '../../agent.ts';
import { usageOf } from '../../scripted-model.ts';

const NO_USAGE: Anthropic.Usage = usage({ input: 1, output: 1, cacheWrite: 0, cacheRead: 0 });

function usage(u: { input: number; output: number; cacheWrite: number; cacheRead: number }): Anthropic.Usage {
  return usageOf({
    input_tokens: u.input,
    output_tokens: u.output,
    cache_creation_input_tokens: u.cacheWrite,
    cache_read_input_tokens: u.cacheRead,
  });
}

function message(turn: number, content: Anthropic.ContentBlock[]): Anthropic.Message {
  const hasCalls = content.some((block) => block.type === 'tool_use');
  return {
    id: `msg_replay_${turn}`,
    type: 'message',
    role: 'assistant',
    model: 'replay',
    content,
    stop_reason: hasCalls ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    stop_details: null,
    container: null,
    diagnostics: null,
    usage: NO_USAGE,
  };
}

/** A reply with one call per entry of `inputs`, all to the tool `name`. */
export const callsReply = (turn: number, name: string, inputs: unknown[]): Anthropic.Message =>
  message(
    turn,
    inputs.map((input, i) => ({
      type: 'tool_use',
      id: `toolu_r${turn}_${i}`,
      name,
      input,
      caller: { type: 'direct' },
    })),
  );

export const textReply = (turn: number, text: string): Anthropic.Message =>
  message(turn, [{ type: 'text', text, citations: null }]);

/** Returns the next prebuilt reply at once: no copy, no serialisation, no await on anything. */
export class ReplayModel implements Model {
  readonly name = 'replay';
  private turn = 0;

  constructor(private readonly replies: readonly Anthropic.Message[]) {}

  async complete(request: ModelRequest): Promise<Anthropic.Message> {
    const reply = this.replies[this.turn++];
    if (reply === undefined) throw new Error(`replay model: no reply for request ${this.turn}`);
    return this.usageFor === undefined ? reply : { ...reply, usage: this.usageFor(request) };
  }

  /** Optional: usage computed from the request (the cache simulation sets it). */
  protected usageFor?(request: ModelRequest): Anthropic.Usage;
}

/**
 * The API's prompt cache, simplified to its one rule that matters for a harness.
 *
 * A request is read as one sequence: tool definitions, then system blocks, then each message's
 * content blocks. A block marked with cache_control ends a cacheable prefix, and the request
 * writes (caches) every such prefix at least `minimumTokens` long: the API caches nothing shorter.
 * The next request reads from the cache the longest prefix written earlier that it starts with
 * byte for byte; tokens are characters / 4:
 *   cache_read     = the longest earlier cached prefix this request starts with
 *   cache_creation = from there to this request's last cacheable mark (written now)
 *   input_tokens   = everything after that
 * The marks themselves are left out of the bytes compared: the API keys the cache on content,
 * which is why moving the mark to the newest block each turn still reads the earlier prefix.
 * Not modelled: the 5-minute lifetime, the 20-block lookback, and the API treating a string
 * `content` like one text block (here they differ byte for byte).
 */
export class PrefixCacheModel extends ReplayModel {
  private readonly cached = new Set<string>();

  constructor(
    replies: readonly Anthropic.Message[],
    private readonly minimumTokens: number,
  ) {
    super(replies);
  }

  protected override usageFor(request: ModelRequest): Anthropic.Usage {
    interface Entry {
      json: unknown;
      marked: boolean;
    }
    const marked = (block: unknown) => (block as { cache_control?: unknown }).cache_control != null;
    const system =
      typeof request.system === 'string' ? [{ type: 'text', text: request.system }] : (request.system ?? []);
    // Each entry: what the bytes hold for one block, and whether a mark ends a prefix there.
    const blocks: Entry[] = [
      ...(request.tools ?? []).map((tool): Entry => ({ json: tool, marked: marked(tool) })),
      ...system.map((block): Entry => ({ json: block, marked: marked(block) })),
      ...request.messages.flatMap((m, n): Entry[] =>
        typeof m.content === 'string'
          ? [{ json: { n, role: m.role, content: m.content }, marked: false }]
          : m.content.map((block) => ({ json: { n, role: m.role, block }, marked: marked(block) })),
      ),
    ];
    let bytes = '';
    const marks: number[] = [];
    for (const block of blocks) {
      bytes += JSON.stringify(block.json, (key, value: unknown) => (key === 'cache_control' ? undefined : value));
      if (block.marked) marks.push(bytes.length);
    }
    const tokens = (chars: number) => Math.round(chars / 4);
    let read = 0;
    for (const prefix of this.cached) if (prefix.length > read && bytes.startsWith(prefix)) read = prefix.length;
    const cacheable = marks.filter((mark) => tokens(mark) >= this.minimumTokens);
    const lastMark = cacheable.at(-1) ?? 0;
    for (const mark of cacheable) this.cached.add(bytes.slice(0, mark));
    return usage({
      cacheRead: tokens(read),
      cacheWrite: tokens(Math.max(lastMark - read, 0)),
      input: tokens(bytes.length - Math.max(lastMark, read)),
      output: 20,
    });
  }
}
