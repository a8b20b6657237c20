'use strict';
const assert = require('node:assert/strict');
const { test } = require('node:test');
const { parseIds } = require('./ids.js');
const { itemsFor } = require('./items.js');

test('every id in the list is parsed', () => {
  assert.deepEqual(parseIds('3,14,15'), [3, 14, 15]);
  assert.deepEqual(parseIds('7'), [7]);
});

test('blank entries and spaces are skipped', () => {
  assert.deepEqual(parseIds('1,,2'), [1, 2]);
  assert.deepEqual(parseIds(' 8, 9 ,10'), [8, 9, 10]);
});

test('GET /items returns every item asked for', () => {
  const catalog = [3, 10, 14, 15].map((id) => ({ id, name: `item ${id}` }));
  assert.deepEqual(
    itemsFor({ ids: '15,3,14' }, catalog).map((item) => item.id),
    [15, 3, 14],
  );
});
