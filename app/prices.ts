// What Anthropic's models cost, so a budget in dollars can be kept: the program gives each Model its price from here
// (or from --price). The harness knows no price list; a model it is given without a price has an unknown cost.

import { type Model, type Price } from './harness.ts';

/** When the table was last checked against Anthropic's own pages (the pricing page and each model's overview on
 *  platform.claude.com): every model listed there as available on the Claude API, legacy ones included. */
export const PRICES_CHECKED = '2026-12-01';

/** Dollars per million input and output tokens. A model missing here, and given no --price, has an unknown cost.
 *
 *  Cache writes cost 1.25× and cache reads 0.1× the input price (costOf, hardening/spending.ts)
 *  unless a model's entry says otherwise, as Opus 5.5's (0.05×) and Fable and Mythos 5.1's (0.025×) do.
 *  Sonnet 5.5's cut to 0.05× is known only from third-party notes (2026-10-07), so it keeps 0.1×: its
 *  cached input may be over-counted, an upper bound that keeps a --max-cost budget safe. */
const PRICES: Record<string, Price> = {
  'claude-fable-5-1': { input: 10, output: 50, cacheRead: 0.025 },
  'claude-mythos-5-1': { input: 10, output: 50, cacheRead: 0.025 }, // limited availability
  'claude-fable-5': { input: 10, output: 50 }, // legacy
  'claude-mythos-5': { input: 10, output: 50 }, // legacy, limited availability
  'claude-opus-5-5': { input: 4, output: 20, cacheRead: 0.05 },
  'claude-opus-5': { input: 5, output: 25 }, // legacy
  'claude-opus-4-8': { input: 5, output: 25 },
  'claude-opus-4-7': { input: 5, output: 25 },
  'claude-opus-4-6': { input: 5, output: 25 },
  'claude-opus-4-5': { input: 5, output: 25 },
  'claude-sonnet-5-5': { input: 2, output: 10 }, // the default model (DEFAULT_MODEL in agent.ts)
  'claude-sonnet-5': { input: 2, output: 10 }, // legacy
  'claude-sonnet-4-6': { input: 3, output: 15 },
  'claude-sonnet-4-5': { input: 3, output: 15 },
  // Haiku 5.5 costs $0.10 / $0.50 for a request whose prompt is up to 100,000 tokens and $0.50 / $2.50 above that.
  // A price here is one rate for every request, so it is the higher one: an upper bound, five times the real cost
  // of short requests. Give --price 0.1,0.5 to count short requests exactly (and long ones under their cost).
  'claude-haiku-5-5': { input: 0.5, output: 2.5 },
  'claude-haiku-4-5': { input: 1, output: 5 },
};

/** The models the table prices: what an editor is offered to pick from (app/acp.ts). */
export const PRICED_MODELS = Object.keys(PRICES);

/** The model's own price (--price), else the table's for its name (a dated name is priced as its family). */
export function priceOf(model: Pick<Model, 'name' | 'price'>): Price | undefined {
  return model.price ?? PRICES[model.name.replace(/-\d{8}$/, '')];
}

/** The model with its price, --price's if given, else the table's; as it is when neither knows one. */
export function priced(model: Model, price = priceOf(model)): Model {
  return price === undefined || price === model.price ? model : withPrice(model, price);
}

/** The same model with the price --price gave it. */
function withPrice(model: Model, price: Price): Model {
  return {
    name: model.name,
    price,
    complete: (request, options) => model.complete(request, options),
    ...(model.contextWindow && { contextWindow: model.contextWindow.bind(model) }),
  };
}
