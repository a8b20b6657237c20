import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reportLine } from './report.js';
import { median, slowest } from './stats.js';

test('median of an odd count is the middle value by size', () => {
  assert.equal(median([10, 9, 2]), 9);
  assert.equal(median([250, 40, 1200, 95, 8]), 95);
});

test('median of an even count is the mean of the two middle values', () => {
  assert.equal(median([3, 40, 100, 8]), 24);
});

test('median of nothing is undefined', () => {
  assert.equal(median([]), undefined);
});

test('slowest gives the largest values, largest first', () => {
  assert.deepEqual(slowest([5, 100, 20, 3, 9], 2), [100, 20]);
});

test('the input is left as it was', () => {
  const timings = [30, 4, 200];
  median(timings);
  slowest(timings, 1);
  assert.deepEqual(timings, [30, 4, 200]);
});

test('the report line', () => {
  assert.equal(reportLine('/search', [80, 120, 95, 1500, 7]), '/search: median 95 ms, slowest 1500, 120, 95 ms');
});
