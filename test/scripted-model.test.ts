// The scripted model's delay: what makes Ctrl-C and steering practicable offline (lesson P3).

import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { runTask } from '../agent.ts';
import { loadScript, say, ScriptedModel, type ScriptedReply } from '../scripted-model.ts';
import { scriptedAgent, tempProject, within } from './helpers.ts';

const noop = () => {};
const request = { messages: [{ role: 'user' as const, content: 'hi' }] };

/** A reply that takes a minute the first time it is asked for, and no time after that. */
function slowOnce(said: string): () => ScriptedReply {
  let asked = 0;
  return () => ({ ...say(said), delayMs: asked++ === 0 ? 60_000 : 0 });
}

test('a scripted delay waits before the reply arrives', async () => {
  const model = new ScriptedModel([{ ...say('thought about it'), delayMs: 30 }]);
  const started = performance.now();
  const reply = await model.complete(request, { signal: new AbortController().signal, onText: noop, onNotice: noop });
  assert.ok(performance.now() - started >= 25, 'answered before the delay was over');
  assert.deepEqual(reply.content, [{ type: 'text', text: 'thought about it', citations: null }]);
});

test('an abort ends a scripted delay at once, rejecting like a real aborted call, and the reply waits for the next request', async () => {
  const model = new ScriptedModel([slowOnce('the answer')]);
  const controller = new AbortController();
  const pending = model.complete(request, { signal: controller.signal, onText: noop, onNotice: noop });
  controller.abort();
  await within(assert.rejects(pending, { name: 'AbortError' }), 'the aborted call', 1_000);
  const next = await model.complete(request, { signal: new AbortController().signal, onText: noop, onNotice: noop });
  assert.deepEqual(next.content, [{ type: 'text', text: 'the answer', citations: null }]);
});

test('Ctrl-C during a slow scripted reply halts interrupted, and "keep going" gets that reply', async (t) => {
  const root = await tempProject(t);
  const { agent, model } = await scriptedAgent(root, [slowOnce('Done thinking.')]);
  const controller = new AbortController();
  const running = runTask(agent, 'think hard', controller.signal);
  setImmediate(() => controller.abort());
  assert.deepEqual(await within(running, 'the interrupted run', 1_000), { kind: 'interrupted' });
  assert.deepEqual(await runTask(agent, 'keep going'), { kind: 'accepted', verifiedBy: null });
  assert.equal(model.requests.length, 2);
  assert.deepEqual(agent.messages.at(-1), {
    role: 'assistant',
    content: [{ type: 'text', text: 'Done thinking.', citations: null }],
  });
});

test('delay_ms in a script file becomes delayMs: lessons/scripts/slow-story.json takes its time', async () => {
  const script = await loadScript(path.join(import.meta.dirname, '..', 'lessons', 'scripts', 'slow-story.json'));
  assert.ok(script.length > 0);
  for (const reply of script) assert.ok((reply.delayMs ?? 0) >= 1_000, JSON.stringify(reply));
});
