'use strict';
// The users who reported the bug are in New Zealand; the tests run on their clock.
process.env.TZ = 'Pacific/Auckland';

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { isOverdue, localDay } = require('./dates.js');

test('the morning of 1 December in Auckland is 1 December', () => {
  assert.equal(localDay(new Date('2026-11-30T19:00:00Z')), '2026-12-01');
});

test('winter time too: 00:30 on 16 June in Auckland', () => {
  assert.equal(localDay(new Date('2026-06-15T12:30:00Z')), '2026-06-16');
});

test('a date made from local parts keeps its day', () => {
  assert.equal(localDay(new Date(2026, 0, 5, 9, 0)), '2026-01-05');
  assert.equal(localDay(new Date(2026, 9, 31, 23, 59)), '2026-10-31');
});

test('a task due today is not overdue; one due yesterday is', () => {
  const morning = new Date('2026-11-30T19:00:00Z');
  assert.equal(isOverdue('2026-12-01', morning), false);
  assert.equal(isOverdue('2026-11-30', morning), true);
});
