// A halt in words, for every view: the terminal, the session page, the editor protocol. The harness
// returns a tagged Halt; saying it is the program's part.

import type { Halt } from './harness.ts';

/** `accepted (verified by \`npm test\`)`, `budget (turns: the limit of 25 turns was reached)`, … */
export function describeHalt(halt: Halt): string {
  switch (halt.kind) {
    case 'interrupted':
      return 'interrupted';
    case 'error':
      return `error: ${halt.message}`;
    case 'accepted':
      if (halt.verifiedBy === null) return 'accepted (unverified: no verify command was given)';
      return `accepted (verified by \`${halt.verifiedBy}\`)`;
  }
  const { budget, limit, spent } = halt;
  let of = `${limit} ${budget}`;
  if (budget === 'cost') of = `$${limit}`;
  if (budget === 'time') of = `${limit / 1000} s`;
  const reached = `${budget}: the limit of ${of} was reached`;
  if (spent === undefined) return `budget (${reached})`;
  const cost = spent.costUsd === null ? '' : `, $${spent.costUsd.toFixed(4)}`;
  return `budget (${reached}; spent ${spent.tokens} tokens${cost})`;
}
