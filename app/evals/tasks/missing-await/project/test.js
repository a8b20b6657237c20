import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULTS, loadSettings } from './settings.js';

const fixture = (name) => new URL(`./fixtures/${name}`, import.meta.url);

test('saved settings win over the defaults', async () => {
  assert.deepEqual(await loadSettings(fixture('user.json')), { theme: 'dark', fontSize: 16, wordWrap: true });
});

test('a missing file gives the defaults', async () => {
  assert.deepEqual(await loadSettings(fixture('missing.json')), DEFAULTS);
});

test('a broken file gives the defaults', async () => {
  assert.deepEqual(await loadSettings(fixture('broken.json')), DEFAULTS);
});
