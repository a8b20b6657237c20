// The loop's acceptance tests (P0–P2), the seed story, and one test per guard in agent.ts,
// each named after the failure it prevents.

import type Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { runTask } from '../../agent.ts';
import { runSeedStory } from '../../lessons/demo.ts';
import { call, reply, say, text, toolUse } from '../../scripted-model.ts';
import { defineTool, type Tool, TOOLS } from '../../tools.ts';
import { scriptedAgent, tempProject, textOf, tokensSpent, unmarked } from '../helpers.ts';

const lastMessage = (messages: Anthropic.MessageParam[]) => unmarked(messages).at(-1)!;
const blocks = (message: Anthropic.MessageParam) => (typeof message.content === 'string' ? [] : message.content);

const echo = defineTool({
  name: 'echo',
  description: 'Echoes its text. A test tool.',
  input: z.strictObject({ text: z.string() }),
  readOnly: true,
  run: async ({ text: said }) => `echo: ${said}`,
});

// The acceptance tests of P0-P4 are the lesson stories, played in test/lessons/acceptance.test.ts (on the
// defaults: acceptance.check.ts).

describe('P1 loop guards', () => {
  test('thinking blocks go back unmodified, or the API would reject the next request', async (t) => {
    const root = await tempProject(t);
    const thinking = { type: 'thinking', thinking: 'Echo first.', signature: 'sig-123' } as const;
    const { agent, model } = await scriptedAgent(root, [reply(thinking, toolUse('echo', { text: 'x' })), say('ok')], {
      tools: [echo],
    });
    await runTask(agent, 'think, then echo');
    assert.deepEqual(blocks(model.requests[1]!.messages[1]!)[0], thinking);
  });

  test("the model's thinking reaches the views as thinking events, apart from its text", async (t) => {
    const root = await tempProject(t);
    const thinking = { type: 'thinking', thinking: 'Say ok.', signature: 'sig-1' } as const;
    const { agent, events } = await scriptedAgent(root, [reply(thinking, text('ok'))]);
    await runTask(agent, 'think, then answer');
    const streamed = events.filter((event) => event.type === 'thinking' || event.type === 'text');
    assert.deepEqual(streamed, [
      { type: 'thinking', delta: 'Say ok.' },
      { type: 'text', delta: 'ok' },
    ]);
  });

  test('a model call that fails is not counted as a turn: the halt says how many replies came back', async (t) => {
    const root = await tempProject(t);
    const overloaded = () => {
      throw new Error('overloaded');
    };
    const { agent, events } = await scriptedAgent(root, [call('echo', { text: 'x' }), overloaded], { tools: [echo] });
    const halt = await runTask(agent, 'echo');
    assert.equal(halt.kind, 'error');
    assert.deepEqual(events.at(-1), { type: 'halt', halt, turns: 1 });
  });

  test('a tool whose run throws before it returns a promise is an error result, and the loop goes on', async (t) => {
    const root = await tempProject(t);
    // Written by hand, not with defineTool: its run is a plain function that throws at once.
    const throwing: Tool = {
      ...echo,
      name: 'throws_at_once',
      run: () => {
        throw new Error('broken before any promise');
      },
    };
    const script = [call('throws_at_once', { text: 'x' }), say('done')];
    const { agent } = await scriptedAgent(root, script, { tools: [throwing] });
    assert.equal((await runTask(agent, 'try it')).kind, 'accepted');
    const result = blocks(agent.messages[2]!)[0];
    assert.deepEqual(result, {
      type: 'tool_result',
      tool_use_id: (blocks(agent.messages[1]!)[0] as Anthropic.ToolUseBlockParam).id,
      content: 'broken before any promise',
      is_error: true,
    });
  });

  test('an empty text block is never sent back, since the API rejects it', async (t) => {
    const root = await tempProject(t);
    const { agent, model } = await scriptedAgent(root, [reply(text(''), toolUse('echo', { text: 'x' })), say('ok')], {
      tools: [echo],
    });
    await runTask(agent, 'echo');
    assert.deepEqual(
      blocks(model.requests[1]!.messages[1]!).map((b) => b.type),
      ['tool_use'],
    );
  });
});

describe('the seed story: same eight replies, two harnesses', () => {
  test('the trusting harness accepts a false "done" at step 5 with the test still failing', async () => {
    const run = await runSeedStory(false);
    assert.deepEqual(run.halt, { kind: 'accepted', verifiedBy: null });
    assert.equal(run.turns, 5);
    assert.equal(run.testReallyPasses, false);
  });

  test('the verifying harness refuses that "done" and accepts at step 8 with the test passing', async () => {
    const run = await runSeedStory(true);
    assert.deepEqual(run.halt, { kind: 'accepted', verifiedBy: 'node test.js' });
    assert.equal(run.turns, 8);
    assert.equal(run.testReallyPasses, true);
    assert.match(run.steps[4]!.outcome, /exit 1: fail, refused/);
  });
});

describe('guards in the loop', () => {
  test('an unknown tool is answered with the real tool names instead of crashing the loop', async (t) => {
    const root = await tempProject(t);
    const { agent, model } = await scriptedAgent(root, [call('shell', { command: 'rm -rf ~' }), say('sorry')]);
    const halt = await runTask(agent, 'clean up');
    assert.equal(halt.kind, 'accepted');
    const [result] = blocks(lastMessage(model.requests[1]!.messages));
    assert.ok(result?.type === 'tool_result' && result.is_error === true);
    assert.match(String(result.content), /unknown tool "shell".*list_files, read_file, edit_file/);
  });

  test('bad arguments are rejected and echoed, never coerced ("5" is not 5)', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'one\ntwo\n' });
    const { agent, model } = await scriptedAgent(root, [call('read_file', { path: 'a.txt', offset: '2' }), say('ok')]);
    await runTask(agent, 'read');
    const [result] = blocks(lastMessage(model.requests[1]!.messages));
    assert.ok(result?.type === 'tool_result' && result.is_error === true);
    assert.match(String(result.content), /invalid arguments for read_file: offset: .*expected number/);
    assert.match(String(result.content), /You sent: \{"path":"a.txt","offset":"2"\}/);
    assert.equal(agent.toolContext.seen.size, 0, 'the tool must not have run');
  });

  test('unknown keys in the arguments are rejected', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'one\n' });
    const { agent, model } = await scriptedAgent(root, [
      call('read_file', { path: 'a.txt', encoding: 'utf8' }),
      say('ok'),
    ]);
    await runTask(agent, 'read');
    const [result] = blocks(lastMessage(model.requests[1]!.messages));
    assert.ok(result?.type === 'tool_result' && result.is_error === true);
    assert.match(String(result.content), /encoding/);
  });

  test('a tool that throws becomes an error result, and the loop goes on', async (t) => {
    const root = await tempProject(t);
    const broken = defineTool({
      name: 'broken',
      description: 'Always fails. A test tool.',
      input: z.strictObject({}),
      readOnly: true,
      run: async () => {
        throw new Error('disk on fire');
      },
    });
    const { agent, model } = await scriptedAgent(root, [call('broken', {}), say('it failed')], { tools: [broken] });
    const halt = await runTask(agent, 'try it');
    assert.equal(halt.kind, 'accepted');
    assert.equal(model.requests.length, 2);
    const [result] = blocks(lastMessage(model.requests[1]!.messages));
    assert.ok(result?.type === 'tool_result' && result.is_error === true && result.content === 'disk on fire');
  });

  test('"done" is refused while the verify command fails, with its exit code and output', async (t) => {
    const root = await tempProject(t);
    const verify = `node -e "const ok = require('fs').existsSync('ok.txt'); console.log(ok ? 'fine' : 'ok.txt is missing'); process.exit(ok ? 0 : 3)"`;
    const script = [say('done'), call('edit_file', { path: 'ok.txt', old_str: '', new_str: 'yes' }), say('done now')];
    const { agent, model } = await scriptedAgent(root, script, { verify });
    const halt = await runTask(agent, 'make it ok');
    const refusal = lastMessage(model.requests[1]!.messages);
    assert.equal(refusal.role, 'user');
    assert.match(textOf(refusal), /not done yet.*exited with code 3/);
    assert.match(textOf(refusal), /ok\.txt is missing/);
    assert.deepEqual(halt, { kind: 'accepted', verifiedBy: verify });
  });

  test('a reply cut off at max_tokens never runs its tool calls, and each still gets an answer', async (t) => {
    const root = await tempProject(t);
    const cut = {
      ...reply(toolUse('edit_file', { path: 'new.txt', old_str: '', new_str: 'half' })),
      stop_reason: 'max_tokens' as const,
    };
    const { agent, model } = await scriptedAgent(root, [cut, say('ok')]);
    await runTask(agent, 'write it');
    await assert.rejects(readFile(path.join(root, 'new.txt')), { code: 'ENOENT' });
    const [result] = blocks(lastMessage(model.requests[1]!.messages));
    assert.ok(result?.type === 'tool_result' && result.is_error === true);
    assert.match(String(result.content), /not executed: your reply was cut off at max_tokens/);
  });

  test('a text reply cut off at max_tokens is not taken as "done"', async (t) => {
    const root = await tempProject(t);
    const cut = { ...say('I will now explain at length'), stop_reason: 'max_tokens' as const };
    const { agent, model } = await scriptedAgent(root, [cut, say('done')]);
    const halt = await runTask(agent, 'explain');
    assert.equal(model.requests.length, 2);
    assert.match(textOf(lastMessage(model.requests[1]!.messages)), /cut off/);
    assert.equal(halt.kind, 'accepted');
  });

  test("the turn budget halts the run, after the last turn's calls are answered", async (t) => {
    const root = await tempProject(t, { 'a.txt': 'a\n' });
    const script = [call('read_file', { path: 'a.txt' }), call('list_files', {}), call('read_file', { path: 'a.txt' })];
    const { agent, events } = await scriptedAgent(root, script, { budgets: { maxTurns: 2 } });
    const halt = await runTask(agent, 'loop forever');
    assert.deepEqual(halt, {
      kind: 'budget',
      budget: 'turns',
      limit: 2,
      spent: { tokens: tokensSpent(events), costUsd: null },
    });
    const [result] = blocks(lastMessage(agent.messages));
    assert.ok(result?.type === 'tool_result' && result.tool_use_id === 'toolu_s2_0');
  });

  test('a failing model call halts with kind error instead of throwing', async (t) => {
    const root = await tempProject(t);
    const { agent } = await scriptedAgent(root, []);
    const halt = await runTask(agent, 'anything');
    assert.equal(halt.kind, 'error');
    assert.match(halt.kind === 'error' ? halt.message : '', /script has 0 replies/);
  });
});

describe('tool schemas', () => {
  test('every tool the model is shown has a description and a strict schema', () => {
    for (const tool of TOOLS) {
      assert.ok(tool.description.length > 40, tool.name);
      assert.equal(tool.input.safeParse({ unexpected: true, path: 'x', old_str: 'a', new_str: 'b' }).success, false);
    }
  });
});
