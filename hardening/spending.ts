// Defends against a run that spends more dollars than the person allowed. It prices each call as
// the API bills it, cache writes and reads as multiples of input, so the dollar budget counts what
// was really paid. It refuses a dollar budget for a model without a price, since nothing could halt
// that budget. The loop (agent.ts) adds the costs up and checks the budget before each model call.
// Tests: test/loop/guards.test.ts ("a dollar budget on a model without a price is refused"),
// test/loop/hardening.test.ts ("the cost budget halts the run once the priced usage reaches it"),
// test/loop/guards-mutants.test.ts ("the cost budget halts the run when the spending reaches it
// exactly"), test/loop/property.test.ts (spending adds up across sub-agents and summaries).

import type Anthropic from '@anthropic-ai/sdk';

/** The tokens a call used, by kind, as the API's usage counts them. */
export type TokenCounts = Pick<Anthropic.Usage, 'input_tokens' | 'output_tokens'> &
  Partial<Pick<Anthropic.Usage, 'cache_creation_input_tokens' | 'cache_read_input_tokens'>>;

/** Dollars per million tokens; cache writes and reads as multiples of input. */
export type Price = { input: number; output: number; cacheWrite?: number; cacheRead?: number };

/** Cache reads cost a tenth of input, writes a quarter more: why stable requests matter. */
export function costOf(price: Price | undefined, usage: TokenCounts): number | null {
  if (!price) return null;
  const { cacheWrite = 1.25, cacheRead = 0.1 } = price;
  const written = cacheWrite * (usage.cache_creation_input_tokens ?? 0);
  const cached = written + cacheRead * (usage.cache_read_input_tokens ?? 0);
  const inputLike = usage.input_tokens + cached;
  return (inputLike * price.input + usage.output_tokens * price.output) / 1_000_000;
}

/** Prevents a dollar budget that could never halt: a model without a price costs nothing known. */
export function refuseUnpricedBudget(
  budgets: { maxCostUsd?: number } | undefined,
  models: readonly { name: string; price?: Price }[],
): void {
  const unpriced = models.find((model) => !model.price);
  if (budgets?.maxCostUsd !== undefined && unpriced)
    throw new Error(
      `a dollar budget needs a price, and ${unpriced.name} has none (give the Model a price)`,
    );
}
