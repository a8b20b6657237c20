'use strict';
const assert = require('node:assert/strict');
const { test } = require('node:test');
const { highlight } = require('./highlight.js');

test('every occurrence is marked, whatever its case', () => {
  assert.equal(highlight('Node and node', 'node'), '<mark>Node</mark> and <mark>node</mark>');
});

test('a dot in the term matches only a dot', () => {
  assert.equal(highlight('v1.5 and v105', '1.5'), 'v<mark>1.5</mark> and v105');
});

test('terms with regex characters are searched as written', () => {
  assert.equal(highlight('I like C++ and C#', 'c++'), 'I like <mark>C++</mark> and C#');
  assert.equal(highlight('f(x) = x', 'f(x)'), '<mark>f(x)</mark> = x');
  assert.equal(highlight('costs $5 [approx.]', '[approx.]'), 'costs $5 <mark>[approx.]</mark>');
});

test('an empty term marks nothing', () => {
  assert.equal(highlight('anything', ''), 'anything');
});
