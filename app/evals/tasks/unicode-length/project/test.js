import assert from 'node:assert/strict';
import { test } from 'node:test';
import { preview } from './preview.js';
import { truncate } from './truncate.js';

test('short text is left alone', () => {
  assert.equal(truncate('short', 10), 'short');
});

test('long text is cut to `max` characters, the last one an ellipsis', () => {
  assert.equal(truncate('hello world', 5), 'hell…');
});

test('emoji count as one character each and are never cut in half', () => {
  assert.equal(truncate('👍👍👍', 3), '👍👍👍');
  assert.equal(truncate('ok 👍👍👍', 4), 'ok …');
  assert.equal(truncate('ok 👍👍👍', 5), 'ok 👍…');
});

test('a character is what the reader sees as one: flags, families, accents', () => {
  assert.equal(truncate('🇫🇷🇩🇪', 2), '🇫🇷🇩🇪');
  assert.equal(truncate('👨‍👩‍👧👨‍👩‍👧👨‍👩‍👧', 2), '👨‍👩‍👧…');
  assert.equal(truncate('cafe\u0301 au lait', 5), 'cafe\u0301…');
});

test('the lock-screen preview', () => {
  assert.equal(preview('Ana', 'Party at 7, bring snacks 🎉🎉🎉🎉'), 'Ana: Party at 7, bring snacks 🎉🎉🎉🎉');
});
