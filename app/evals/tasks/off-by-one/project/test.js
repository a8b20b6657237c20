import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ordersScreen } from './orders.js';
import { pageCount, pageOf } from './paginate.js';

const numbers = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const items = numbers(1, 25);

test('a full page holds `size` items', () => {
  assert.deepEqual(pageOf(items, 1, 10), numbers(1, 10));
});

test('the second page starts right after the first', () => {
  assert.deepEqual(pageOf(items, 2, 10), numbers(11, 20));
});

test('the last page holds the rest', () => {
  assert.deepEqual(pageOf(items, 3, 10), numbers(21, 25));
});

test('pageCount rounds up, and no items make no pages', () => {
  assert.equal(pageCount(25, 10), 3);
  assert.equal(pageCount(20, 10), 2);
  assert.equal(pageCount(0, 10), 0);
});

test('every order shows up on exactly one page', () => {
  const orders = numbers(1, 30).map((id) => ({ id, placedAt: id * 1000 }));
  const shown = [1, 2, 3].flatMap((page) => ordersScreen(orders, page).orders.map((order) => order.id));
  assert.deepEqual(
    shown.sort((a, b) => a - b),
    numbers(1, 30),
  );
});
