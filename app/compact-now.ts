// /compact, in the terminal and the editor: a summary now, kept only if it makes what the model sees
// smaller (the harness's compaction keeps any summary that is not empty).

import { compact, errorText } from 'reference-harness';
import type { Agent } from './harness.ts';

/** Returns why nothing was summarised, or null when a summary now stands in for the older part. */
export async function compactNow(agent: Agent, signal: AbortSignal): Promise<string | null> {
  const compacted = await compact(agent, signal, notSmaller).catch(errorText);
  if (compacted === 'nothing to cut') return 'nothing old enough to summarise yet';
  return compacted === 'done' || compacted === 'more left' ? null : compacted;
}

/** Prevents a /compact that makes the view larger: a summary longer than what it replaces. */
function notSmaller(tokensBefore: number, tokensAfter: number): string | null {
  if (tokensAfter < tokensBefore) return null;
  const sizes = `(~${tokensAfter} tokens, against ~${tokensBefore} now)`;
  return `declined: the summary ${sizes} would not make what the model sees smaller; nothing changed`;
}
