// agent.ts on its defaults (the hardening, and the OS sandbox at every gate where this machine has one) against
// every story of P0 to P4, as `npm run lesson -- p4 --check agent.ts` plays them: the acceptance the lessons'
// own harnesses get in test/lessons/acceptance.test.ts, where npm test plays agent.ts on the plain reading path.
// In npm run test:all (test:stories): each gate starts bubblewrap.

import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { before, describe, test } from 'node:test';
import * as agentTs from '../../agent.ts';
import { runLesson } from '../../lessons/run.ts';
import { type Harness, playStory, STORIES, storiesUpTo } from '../../lessons/stories.ts';

const agentHarness: Harness<agentTs.AgentEvent> = agentTs;
const typeOf = (event: unknown) =>
  typeof event === 'object' && event !== null && 'type' in event ? event.type : undefined;

describe('agent.ts reaches p4: npm run lesson -- p4 --check agent.ts', () => {
  let checked = { code: -1, output: 'agent.ts was not checked' };
  before(async () => {
    const out = new PassThrough();
    let output = '';
    out.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const code = await runLesson(['p4', '--check', 'agent.ts', '--stories-only'], out);
    checked = { code, output };
  });

  for (const accepted of storiesUpTo('p4')) {
    test(`${accepted.lesson} acceptance: ${accepted.name}`, () => {
      assert.ok(checked.output.split('\n').includes(`PASS  ${accepted.lesson}  ${accepted.name}`), checked.output);
    });
  }
  test('exits 0: every story passes', () => {
    assert.equal(checked.code, 0, checked.output);
  });

  test('it never prints: a halt event ends every task, and a result event answers every call', async () => {
    const events: unknown[] = [];
    const played = STORIES.find((s) => s.name === 'every call answered')!;
    assert.equal(await playStory(agentHarness, played, { listen: () => (event) => events.push(event) }), null);
    const types = events.map(typeOf);
    assert.equal(types.filter((type) => type === 'halt').length, played.tasks.length);
    assert.equal(types.at(-1), 'halt');
    assert.equal(types.filter((type) => type === 'result').length, 2);
  });
});

describe('agent.ts reaches p4 on the generated scenarios too: it behaves as lessons/p4.ts does', () => {
  test('npm run lesson -- p4 --check agent.ts passes, stories and every generated scenario', async () => {
    const out = new PassThrough();
    let output = '';
    out.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const code = await runLesson(['p4', '--check', 'agent.ts'], out);
    assert.equal(code, 0, output);
    assert.match(output, /every generated scenario pass: agent\.ts reaches p4\./);
  });
});
