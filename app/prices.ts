// What Anthropic's models cost, so a budget in dollars can be kept: the program gives each Model its price from here
// (or from --price). The harness knows no price list; a model it is given without a price has an unknown cost.

import type { Model, Price } from '../agent.ts';

/** Dollars per million input and output tokens. A model missing here, and given no --price, has an unknown cost. */
const PRICES: Record<string, Price> = {
  'claude-opus-4-5': { input: 5, output: 25 },
  'claude-opus-4-6': { input: 5, output: 25 },
  'claude-sonnet-4-5': { input: 3, output: 15 },
  'claude-sonnet-4-6': { input: 3, output: 15 },
  'claude-haiku-4-5': { input: 1, output: 5 },
};

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
