// Defends against: a message the model has seen changing afterwards (a hook or a view that edits
// it, or edits the array it is shown), which would break the prompt cache and make the session
// file disagree with what was sent; and against measuring the whole transcript again every turn.
// A message is frozen once it is in the transcript, so its length is measured once; a context
// hook sees the array read-only.
// Tests: test/loop/endurance.test.ts ("cannot corrupt the transcript", "measured once").

import type Anthropic from '@anthropic-ai/sdk';
import { measuredLength } from './pasted-images.ts';

type View = readonly Anthropic.MessageParam[];

const measuredChars = new WeakMap<Anthropic.MessageParam, number>();

/** estimateTokens(messages), each measured once: a frozen message keeps its length. */
export function estimateMessages(messages: View): number {
  let chars = messages.length === 0 ? 2 : messages.length + 1; // brackets and commas
  for (const message of messages) {
    let length = measuredChars.get(message);
    if (length === undefined) measuredChars.set(message, (length = measuredLength(message)));
    chars += length;
  }
  return Math.ceil(chars / 3.5);
}

/** Prevents changes to a message the model may have seen (the cache, the session file). */
export function freezeNewMessages(messages: Anthropic.MessageParam[]): Anthropic.MessageParam[] {
  // Back from the end to the first frozen one; messages[-1] is undefined, which counts as frozen.
  for (let i = messages.length - 1; !Object.isFrozen(messages[i]); i--) deepFreeze(messages[i]);
  return messages;
}

export function deepFreeze<T>(value: T): T {
  if (Object.isFrozen(value)) return value; // true of every primitive and null: objects go on
  Object.freeze(value);
  for (const child of Object.values(value as object)) deepFreeze(child);
  return value;
}

/** Prevents a context hook from changing the array it is shown: a write to it throws. */
export async function runReadOnly(
  messages: View,
  hook: (shown: View) => Promise<View>,
): Promise<View> {
  const refuse = (): never => {
    throw new TypeError('a context hook may not change the array it is shown: return a new one');
  };
  const shown = new Proxy(messages, { defineProperty: refuse, deleteProperty: refuse }); // sets too
  const returned = await hook(shown);
  return returned === shown ? messages : returned;
}
