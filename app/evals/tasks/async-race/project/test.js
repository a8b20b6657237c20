import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createUserCache } from './users.js';

/** A fake user service that answers after a few milliseconds and counts its calls. */
function fakeService({ failFirst = false } = {}) {
  const calls = [];
  const fetchUser = async (id) => {
    calls.push(id);
    await sleep(5);
    if (failFirst && calls.length === 1) throw new Error('503 from the user service');
    return { id, name: `user ${id}` };
  };
  return { calls, fetchUser };
}

test('a user asked for twice, one after the other, is fetched once', async () => {
  const service = fakeService();
  const getUser = createUserCache(service.fetchUser);
  await getUser(7);
  assert.deepEqual(await getUser(7), { id: 7, name: 'user 7' });
  assert.deepEqual(service.calls, [7]);
});

test('a user asked for twice at the same time is fetched once', async () => {
  const service = fakeService();
  const getUser = createUserCache(service.fetchUser);
  const [a, b] = await Promise.all([getUser(7), getUser(7)]);
  assert.equal(a, b);
  assert.deepEqual(service.calls, [7]);
});

test('a failed fetch is not remembered: the next call tries again', async () => {
  const service = fakeService({ failFirst: true });
  const getUser = createUserCache(service.fetchUser);
  await assert.rejects(getUser(7), /503/);
  assert.deepEqual(await getUser(7), { id: 7, name: 'user 7' });
  assert.deepEqual(service.calls, [7, 7]);
});
