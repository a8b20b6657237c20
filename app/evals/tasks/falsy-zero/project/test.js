import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULTS, serverOptions } from './options.js';

test('options left out get their defaults', () => {
  assert.deepEqual(serverOptions(), DEFAULTS);
  assert.deepEqual(serverOptions({ verbose: true }), { ...DEFAULTS, verbose: true });
});

test('port 0 is kept: it asks the system for any free port', () => {
  assert.equal(serverOptions({ port: 0 }).port, 0);
});

test('retries 0 is kept: never retry', () => {
  assert.equal(serverOptions({ retries: 0 }).retries, 0);
});

test('given values win, and null counts as left out', () => {
  assert.deepEqual(serverOptions({ port: 3000, retries: null, timeoutMs: 5_000 }), {
    port: 3000,
    retries: 3,
    timeoutMs: 5_000,
    verbose: false,
  });
});
