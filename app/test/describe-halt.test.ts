// How a halt reads in every view (app/describe-halt.ts).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeHalt } from '../describe-halt.ts';

test('a budget halt says the limit and what was spent, and one from an older session file, without it, still reads', () => {
  const spent = { tokens: 20_894, costUsd: 0.0627 };
  assert.equal(
    describeHalt({ kind: 'budget', budget: 'tokens', limit: 20_000, spent }),
    'budget (tokens: the limit of 20000 tokens was reached; spent 20894 tokens, $0.0627)',
  );
  assert.equal(
    describeHalt({ kind: 'budget', budget: 'time', limit: 60_000, spent: { tokens: 5, costUsd: null } }),
    'budget (time: the limit of 60 s was reached; spent 5 tokens)',
  );
  assert.equal(
    describeHalt({ kind: 'budget', budget: 'turns', limit: 25 }),
    'budget (turns: the limit of 25 turns was reached)',
  );
});
