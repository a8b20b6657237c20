'use strict';
const assert = require('node:assert/strict');
const { test } = require('node:test');
const { addItem, checkoutSummary, createCart, itemCount } = require('../src/index.js');

test('a new cart is empty', () => {
  const cart = createCart('alice');
  assert.equal(cart.owner, 'alice');
  assert.equal(itemCount(cart), 0);
});

test('adding the same sku twice adds to its quantity', () => {
  const cart = addItem(addItem(createCart('carol'), 'book', 1), 'book', 2);
  assert.deepEqual(cart.items, [{ sku: 'book', quantity: 3 }]);
});

test("one customer's items never show up in another customer's cart", () => {
  const alice = addItem(createCart('alice'), 'book');
  const bob = createCart('bob');
  assert.equal(itemCount(bob), 0);
  addItem(bob, 'lamp', 2);
  assert.deepEqual(alice.items, [{ sku: 'book', quantity: 1 }]);
});

test('the checkout summary counts this cart only', () => {
  createCart('dave').items.push({ sku: 'lamp', quantity: 5 });
  const erin = addItem(createCart('erin'), 'book', 2);
  assert.deepEqual(checkoutSummary(erin, { book: 1250, lamp: 3999 }), { owner: 'erin', items: 2, totalCents: 2500 });
});
