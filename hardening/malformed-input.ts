// Defends against: a call input that breaks the session for good. A model can send a call whose
// input is not an object, or nests thousands of levels deep; JSON.stringify (the SDK's request,
// the session file) overflows the stack on the second, so every later request would fail. Such an
// input is replaced by a note (under UNUSABLE) that validation refuses, and the model is told.
// Tests: test/loop/guards.test.ts ("absurd inputs"), test/tools/tools-inputs.test.ts,
// test/loop/limits.test.ts ("not an object"), test/loop/guards-mutants.test.ts ("beside text").

import type Anthropic from '@anthropic-ai/sdk';

/** Tool arguments nest a few levels; past this many, a call is refused (see schemaProblem). */
export const MAX_INPUT_DEPTH = 64;

/** Whether objects and arrays in `value` nest more than `levels` deep; the walk stops there, so any
 *  depth is safe. */
export function nestedDeeperThan(value: unknown, levels: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  return levels === 0 || Object.values(value).some((child) => nestedDeeperThan(child, levels - 1));
}

/** The key under which an unusable input's note is stored (agent.ts's withResendableInputs). */
export const UNUSABLE = 'unusable_input';

/** What makes a call's input unusable before its schema is even tried (schemaProblem, tools.ts):
 *  nesting past MAX_INPUT_DEPTH, or the note withResendableInputs left; null if nothing. The depth
 *  comes first: the echo of a refused input, the session file and the SDK all use JSON.stringify,
 *  which overflows the stack a few thousand levels down. */
export function malformedInput(input: unknown): string | null {
  if (nestedDeeperThan(input, MAX_INPUT_DEPTH))
    return `nested deeper than ${MAX_INPUT_DEPTH} levels`;
  if (typeof input === 'object' && input !== null && UNUSABLE in input)
    return String(input[UNUSABLE]);
  return null;
}

/** Prevents one malformed call input from failing later requests: a note replaces it. */
export function withResendableInputs(reply: Anthropic.Message): Anthropic.Message {
  const content = reply.content.map((block) => {
    if (block.type !== 'tool_use') return block;
    const { input } = block;
    let problem: string | null = null;
    if (typeof input !== 'object' || input === null || Array.isArray(input))
      problem = `not an object: ${String(JSON.stringify(input)).slice(0, 200)}`;
    else if (nestedDeeperThan(input, MAX_INPUT_DEPTH))
      problem = `nested deeper than ${MAX_INPUT_DEPTH} levels`;
    return problem ? { ...block, input: { [UNUSABLE]: problem } } : block;
  });
  return { ...reply, content };
}
