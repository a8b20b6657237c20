'use strict';
const assert = require('node:assert/strict');
const { test } = require('node:test');
const { compareVersions, needsUpdate } = require('./versions.js');
const { outdated } = require('./plugins.js');

test('each part is compared as a number, not as text', () => {
  assert.equal(compareVersions('1.9.0', '1.10.0'), -1);
  assert.equal(compareVersions('1.10.0', '1.9.0'), 1);
  assert.equal(compareVersions('2.0.0', '10.0.0'), -1);
});

test('equal versions compare as 0, and a missing part counts as 0', () => {
  assert.equal(compareVersions('3.1.4', '3.1.4'), 0);
  assert.equal(compareVersions('1.2', '1.2.0'), 0);
  assert.equal(compareVersions('1.2.1', '1.2'), 1);
});

test('needsUpdate only when the installed version is older', () => {
  assert.equal(needsUpdate('1.9.3', '1.10.0'), true);
  assert.equal(needsUpdate('1.10.0', '1.9.3'), false);
  assert.equal(needsUpdate('2.0', '2.0.0'), false);
});

test('the updates badge lists the outdated plugins only', () => {
  const installed = { charts: '2.9.1', export: '1.10.0', maps: '0.4.0' };
  const releases = { charts: '2.10.0', export: '1.9.9', maps: '0.4.0' };
  assert.deepEqual(outdated(installed, releases), ['charts']);
});
