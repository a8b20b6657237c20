// Defends against: one huge message (a 5 MB tool result, a pasted log) breaking every later
// request of a session, and a summary request larger than the window. A message appended is kept
// within half the window, its long strings cut to head and tail; a summary request cuts its
// strings too, and summarises the older part in pieces that fit.
// Tests: test/loop/endurance.test.ts, test/tools/tools-details.test.ts ("capStrings"),
// test/loop/limits.test.ts (a huge edit, compaction in pieces), test/loop/guards-mutants.test.ts
// ("compaction in pieces").

import type Anthropic from '@anthropic-ai/sdk';
import { estimateMessages } from './frozen-transcript.ts';
import { isImage } from './pasted-images.ts';

type Messages = readonly Anthropic.MessageParam[];

/** `value` (a message, say) with every string longer than `chars` cut to its head and tail and a
 *  note of how much was left out; thinking blocks stay whole (the API refuses altered ones), and
 *  so do images. */
export function capStrings<T>(value: T, chars: number): T {
  const cut = (item: unknown): unknown => {
    if (typeof item === 'string') return item.length <= chars ? item : keepEnds(item, chars);
    if (typeof item !== 'object' || item === null) return item;
    if ('type' in item && (item.type === 'thinking' || item.type === 'redacted_thinking'))
      return item;
    if (isImage(item)) return item; // cut base64 is no image
    if (Array.isArray(item)) return item.map(cut);
    return Object.fromEntries(Object.entries(item).map(([key, inner]) => [key, cut(inner)]));
  };
  return cut(value) as T;
}

/** `text` cut to about `chars` characters: its head and tail, and how much is left out between. */
export function keepEnds(text: string, chars: number): string {
  const head = Math.floor(chars * 0.75);
  const tail = Math.floor(chars * 0.25);
  const note = `[... ${text.length - head - tail} characters left out ...]`;
  return `${text.slice(0, head)}\n${note}\n${text.slice(-tail)}`;
}

/** `message` as the transcript keeps it: whole, or its long strings cut so that it takes at most
 *  half of a `window`-token context window. */
export function withinShare(
  window: number,
  message: Anthropic.MessageParam,
): Anthropic.MessageParam {
  const room = window * 3.5 * 0.5; // characters, as estimateTokens counts them
  return estimateMessages([message]) * 3.5 <= room ? message : capStrings(message, room / 4);
}

/** Prevents a summary request larger than the window: the rest goes in the next piece. */
export function pieceEnd(messages: Messages, from: number, cut: number, fitTokens: number): number {
  let size = 0;
  let end: number | null = null;
  for (let i = from + 1; i <= cut; i++) {
    size += estimateMessages(messages.slice(i - 1, i)); // measured once, as requests are
    if (messages[i]!.role !== 'assistant') continue;
    if (size > fitTokens) return end ?? i;
    end = i;
  }
  return cut;
}
