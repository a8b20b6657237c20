// The lessons: each one's acceptance (its scripted stories, the same ones `npm run lesson` plays)
// and the --trace vocabulary. Their "break it" exercises are checked by test/break-it.check.ts.

import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { runLesson } from '../lessons/run.ts';

const LESSONS = ['p0', 'p1', 'p2', 'p3', 'p4'] as const;

async function playLesson(lesson: string): Promise<{ code: number; output: string }> {
  const sink = new PassThrough();
  const chunks: Buffer[] = [];
  sink.on('data', (chunk: Buffer) => chunks.push(chunk));
  const code = await runLesson(lesson, sink);
  return { code, output: Buffer.concat(chunks).toString('utf8') };
}

describe('each lesson plays offline and its acceptance holds', () => {
  for (const lesson of LESSONS) {
    test(`${lesson} acceptance: npm run lesson -- ${lesson} ends with PASS`, async () => {
      const { code, output } = await playLesson(lesson);
      assert.equal(code, 0, output.slice(-2000));
      assert.match(output, /verdict: PASS/);
      assert.doesNotMatch(output, /verdict: FAIL/);
    });
  }

  test('an unknown lesson is a usage error, not a crash', async () => {
    assert.equal((await playLesson('p9')).code, 2);
  });
});

test('--trace names every part of the loop in the P2 stories', async () => {
  const { output } = await playLesson('p2');
  for (const part of [
    'state',
    'prompt builder',
    'model',
    'readout',
    'gate',
    'environment',
    'fold back',
    'halt check',
  ]) {
    assert.match(output, new RegExp(`^\\[\\d+\\] ${part} `, 'm'), `no "${part}" line`);
  }
});
