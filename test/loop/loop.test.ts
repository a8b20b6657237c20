// The loop's acceptance tests (P0–P2), the seed story, and one test per guard in agent.ts,
// each named after the failure it prevents.

import type Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { describeHalt, runTask } from '../../agent.ts';
import { runSeedStory } from '../../lessons/demo.ts';
import { call, reply, say, text, toolUse } from '../../scripted-model.ts';
import { defineTool, runCommand, type Tool, TOOLS } from '../../tools.ts';
import { scriptedAgent, tempProject, textOf, tokensSpent, unmarked } from '../helpers.ts';

const lastMessage = (messages: Anthropic.MessageParam[]) => unmarked(messages).at(-1)!;
const blocks = (message: Anthropic.MessageParam) => (typeof message.content === 'string' ? [] : message.content);
const never = new AbortController().signal;

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

describe('the verify command runner', () => {
  test('long output keeps its head and tail, so the gate message stays small', async (t) => {
    const root = await tempProject(t);
    const run = await runCommand(`node -e "for (let i = 0; i < 100000; i++) console.log('line ' + i)"`, {
      cwd: root,
      timeoutMs: 30_000,
      signal: never,
    });
    assert.equal(run.exitCode, 0);
    assert.match(run.output, /^line 0\n/);
    assert.match(run.output, /line 99999\n$/);
    assert.match(run.output, /characters of output left out/);
    assert.ok(run.output.length < 20_000);
  });

  test('a short output comes back whole, with nothing said left out, and a silent one says "(no output)"', async (t) => {
    const root = await tempProject(t);
    const short = await runCommand('echo one; echo two >&2', { cwd: root, timeoutMs: 10_000, signal: never });
    assert.deepEqual([short.exitCode, short.output], [0, 'one\ntwo\n']);
    const silent = await runCommand('true', { cwd: root, timeoutMs: 10_000, signal: never });
    assert.deepEqual([silent.exitCode, silent.output], [0, '(no output)']);
  });

  test('output past the head and tail says exactly how much was left out, even when a short piece came first', async (t) => {
    const root = await tempProject(t);
    // One character, then (once the runner has seen it) 20,000 more: the first piece fills no tail.
    const command = 'printf x; while [ ! -e go ]; do sleep 0.01; done; head -c 20000 /dev/zero | tr "\\0" y';
    const onOutput = () => writeFileSync(path.join(root, 'go'), '');
    const run = await runCommand(command, { cwd: root, timeoutMs: 30_000, signal: never, onOutput });
    const kept = 16 * 1024;
    const cut = `\n[... ${20_001 - kept} characters of output left out ...]\n`;
    assert.equal(run.output, `x${'y'.repeat(kept / 2 - 1)}${cut}${'y'.repeat(kept / 2)}`);
  });

  test('a command that reads its input gets end-of-file at once, not a pipe it would wait on until its time limit', async (t) => {
    const root = await tempProject(t);
    // Given a pipe, cat would wait for input until the time limit.
    const run = await runCommand('cat; echo done', { cwd: root, timeoutMs: 5_000, signal: never });
    assert.deepEqual([run.exitCode, run.timedOut, run.output], [0, false, 'done\n']);
  });

  test('a command started after the run was stopped is killed at once, not run to its end', async (t) => {
    const root = await tempProject(t);
    const stopped = AbortSignal.abort();
    const run = await runCommand('sleep 5; echo finished', { cwd: root, timeoutMs: 60_000, signal: stopped });
    assert.deepEqual([run.exitCode, run.timedOut, run.output], [null, false, '(no output)']);
  });

  test('a command running when the run is stopped is killed then, not left to run to its end', async (t) => {
    const root = await tempProject(t);
    const stop = new AbortController();
    const onOutput = () => stop.abort();
    const run = await runCommand('echo started; sleep 10; echo finished', {
      cwd: root,
      timeoutMs: 60_000,
      signal: stop.signal,
      onOutput,
    });
    assert.deepEqual([run.exitCode, run.timedOut, run.output], [null, false, 'started\n']);
  });

  test('a verify command that hangs is killed at its timeout instead of hanging the run', async (t) => {
    const root = await tempProject(t);
    const run = await runCommand('sleep 30', { cwd: root, timeoutMs: 50, signal: never });
    assert.equal(run.timedOut, true);
    assert.equal(run.exitCode, null);
  });
});

describe('halt descriptions and tool schemas', () => {
  test('a budget halt says the limit and what was spent, and one from an older session file, without it, still reads', () => {
    const spent = { tokens: 20_894, costUsd: 0.0627 };
    assert.equal(
      describeHalt({ kind: 'budget', budget: 'tokens', limit: 20_000, spent }),
      'budget (tokens: the limit of 20000 tokens was reached; spent 20894 tokens, $0.0627)',
    );
    assert.equal(
      describeHalt({ kind: 'budget', budget: 'time', limit: 60_000, spent: { tokens: 5, costUsd: null } }),
      'budget (time: the limit of 60 s was reached; spent 5 tokens)',
    );
    assert.equal(
      describeHalt({ kind: 'budget', budget: 'turns', limit: 25 }),
      'budget (turns: the limit of 25 turns was reached)',
    );
  });

  test('every tool the model is shown has a description and a strict schema', () => {
    for (const tool of TOOLS) {
      assert.ok(tool.description.length > 40, tool.name);
      assert.equal(tool.input.safeParse({ unexpected: true, path: 'x', old_str: 'a', new_str: 'b' }).success, false);
    }
  });
});
