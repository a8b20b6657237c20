import assert from 'node:assert/strict';
import { test } from 'node:test';
import { splitBill } from './split.js';

const cents = (dollars) => Math.round(dollars * 100);
const sumCents = (shares) => shares.reduce((sum, share) => sum + cents(share), 0);

test('an even split', () => {
  assert.deepEqual(splitBill(10, 4), [2.5, 2.5, 2.5, 2.5]);
});

test('the leftover cents go to the first people, one each', () => {
  assert.deepEqual(splitBill(100, 3), [33.34, 33.33, 33.33]);
  assert.deepEqual(splitBill(0.07, 3), [0.03, 0.02, 0.02]);
});

test('the shares always add up to the total, to the cent', () => {
  for (const [total, people] of [
    [100, 3],
    [0.3, 2],
    [19.99, 7],
    [1234.56, 9],
    [0.01, 2],
  ]) {
    const shares = splitBill(total, people);
    assert.equal(shares.length, people);
    assert.equal(sumCents(shares), cents(total), `${total} between ${people}: ${shares.join(' + ')}`);
    assert.ok(Math.max(...shares.map(cents)) - Math.min(...shares.map(cents)) <= 1);
  }
});
