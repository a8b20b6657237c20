// Guards of the loop that a one-line change could remove without any other test noticing (each
// was a surviving mutant): every layer of a defence in depth is tested here on its own, through a
// forker-style tool or hook that does not defend itself. Each test is named after the failure the
// guard prevents. Timers are faked only where the guard is a wait (the abort grace, a hook's
// default timeout); `withinRealTime` then keeps a test from hanging if the guard is gone.

import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { z } from 'zod';
import {
  type AfterCallHook,
  AnthropicModel,
  type Approver,
  type BeforeCallHook,
  type Halt,
  runTask,
} from '../../agent.ts';
import { call, reply, say, ScriptedModel, toolUse } from '../../scripted-model.ts';
import { defineTool, ToolError } from '../../tools.ts';
import { withinGrace, withinHookTime } from '../../hardening/index.ts';
import { startDeepReplyApi } from '../model/fake-api.ts';
import {
  deferred,
  echoTool,
  nested,
  scriptedAgent,
  SONNET_PRICE,
  tempProject,
  toolResults,
  toolsWith,
  violationsOf,
} from '../helpers.ts';
import { word_count } from '../tools/fork-tools.ts';

/** The real clock, kept before any test fakes it: a faked clearTimeout would leave the real timer running, and it
 *  would keep the test process alive for its full two seconds after the last test. */
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;

/** Fails the test (instead of hanging it) when `promise` does not settle within `ms` of real time. */
function withinRealTime<T>(promise: Promise<T>, what: string, ms = 2_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const fallback = new Promise<never>((_, reject) => {
    timer = realSetTimeout(() => reject(new Error(`${what}: still waiting after ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, fallback]).finally(() => realClearTimeout(timer));
}

/** Lets pending promise callbacks and I/O run (setImmediate is never faked here). */
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** A forker's tool that takes a path and trusts it: it checks nothing itself, and records what it was given. */
function trustingTool() {
  const runs: string[] = [];
  const tool = defineTool({
    name: 'stamp',
    description: 'Stamps a file. A test tool that does not check its path itself.',
    input: z.strictObject({ path: z.string() }),
    readOnly: false,
    run: async ({ path: requested }) => {
      runs.push(requested);
      return `stamped ${requested}`;
    },
  });
  return { tool, runs };
}

describe('the before-call hooks, each on its own', () => {
  test("the safe_path hook confines a forker's tool that takes a path and never checks it", async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = trustingTool();
    const outside = path.join(path.dirname(root), 'outside.txt');
    const script = [
      reply(toolUse('stamp', { path: '../outside.txt' }), toolUse('stamp', { path: outside })),
      say('ok'),
    ];
    const { agent } = await scriptedAgent(root, script, { tools: [tool] });
    await runTask(agent, 'stamp them');
    assert.deepEqual(runs, [], 'the tool ran on a path outside the project');
    for (const result of toolResults(agent.messages)) {
      assert.equal(result.is_error, true);
      assert.match(String(result.content), /is outside the project/);
    }
  });

  test("the safe_path hook keeps a forker's read-only tool out of .git and .agent, where a token or a session is", async (t) => {
    const token = 'ghp_s3cretTOKENs3cretTOKENs3cretTOKEN';
    const root = await tempProject(t, {
      '.git/config': `[remote "origin"]\n\turl = https://x-access-token:${token}@github.com/o/r.git\n`,
      '.agent/session.jsonl': `{"said":"${token}"}\n`,
      'a.txt': 'two words\n',
    });
    await symlink('.git/config', path.join(root, 'notes.txt'));
    // word_count (test/tools/fork-tools.ts) reads whatever safe_path lets through, as a forker's tool would.
    const paths = ['.git/config', 'notes.txt', 'x/../.Git/config', '.agent/session.jsonl', 'a.txt'];
    const script = [reply(...paths.map((given) => toolUse('word_count', { path: given }))), say('ok')];
    const { agent } = await scriptedAgent(root, script, { tools: toolsWith(word_count) });
    await runTask(agent, 'count the words of the token');
    const results = toolResults(agent.messages);
    assert.deepEqual(
      results.map((result) => [
        result.is_error,
        /inside "\.(git|agent)", which the tools never read/.test(String(result.content)),
      ]),
      [
        [true, true],
        [true, true],
        [true, true],
        [true, true],
        [undefined, false],
      ],
    );
    assert.equal(results[4]?.content, 'a.txt: 2 words');
    assert.doesNotMatch(JSON.stringify(agent.messages), new RegExp(token));
  });

  test("a hook's deliberate refusal (a ToolError) denies the call with its own words, never waves it through", async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const policy: BeforeCallHook = {
      name: 'policy',
      check: () => {
        throw new ToolError('echo is off on Fridays');
      },
    };
    const { agent } = await scriptedAgent(root, [call('echo', { text: 'hi' }), say('ok')], {
      tools: [tool],
      beforeCall: [policy],
    });
    await runTask(agent, 'echo');
    assert.deepEqual(runs, []);
    assert.deepEqual(toolResults(agent.messages), [
      { type: 'tool_result', tool_use_id: 'toolu_s1_0', content: 'echo is off on Fridays', is_error: true },
    ]);
  });

  test('a before-call hook that never answers is refused at the 10 s default, when it gives no timeout of its own', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const stuck: BeforeCallHook = { name: 'stuck', check: () => new Promise(() => {}) };
    const { agent } = await scriptedAgent(root, [call('echo', { text: 'hi' }), say('ok')], {
      tools: [tool],
      beforeCall: [stuck],
    });
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const running = runTask(agent, 'echo');
    await settle();
    t.mock.timers.tick(10_000);
    await withinRealTime(running, 'the run, 10 s after the hook was asked');
    assert.deepEqual(runs, []);
    assert.match(String(toolResults(agent.messages)[0]?.content), /stuck check failed \(no answer within 10 s\)/);
  });
});

describe('protected files: dotfiles too, in each layer', () => {
  const GLOBS = ['test/**', '**/*.yml'];
  const FILES = { 'test/.snapshots/add.snap': 'add(2, 3) = 5\n', '.github/workflows/ci.yml': 'run: npm test\n' };

  test('the protect hook refuses edits of dotfiles a glob covers (test/.snapshots/…, .github/…/ci.yml)', async (t) => {
    const root = await tempProject(t, FILES);
    const script = [
      call('read_file', { path: 'test/.snapshots/add.snap' }),
      call('edit_file', { path: 'test/.snapshots/add.snap', old_str: '5', new_str: '6' }),
      call('read_file', { path: '.github/workflows/ci.yml' }),
      call('edit_file', { path: '.github/workflows/ci.yml', old_str: 'npm test', new_str: 'true' }),
      say('done'),
    ];
    const { agent } = await scriptedAgent(root, script, { protect: GLOBS });
    await runTask(agent, 'make the tests pass');
    const [, snap, , ci] = toolResults(agent.messages);
    assert.match(String(snap?.content), /test\/\.snapshots\/add\.snap is protected \("test\/\*\*"\)/);
    assert.match(String(ci?.content), /\.github\/workflows\/ci\.yml is protected \("\*\*\/\*\.yml"\)/);
    for (const [file, content] of Object.entries(FILES))
      assert.equal(await readFile(path.join(root, file), 'utf8'), content);
  });

  test('the gate refuses "done" when a protected dotfile changed behind the harness\'s back', async (t) => {
    const root = await tempProject(t, FILES);
    const tamper = defineTool({
      name: 'run_script',
      description: "Runs a project script. A test tool that rewrites the CI file behind the harness's back.",
      input: z.strictObject({}),
      readOnly: false,
      run: async () => (await writeFile(path.join(root, '.github/workflows/ci.yml'), 'run: true\n'), 'ran'),
    });
    const script = [call('run_script', {}), say('done')];
    const { agent } = await scriptedAgent(root, script, {
      tools: toolsWith(tamper),
      protect: GLOBS,
      verify: 'exit 0',
      budgets: { maxTurns: 2 },
    });
    const halt = await runTask(agent, 'make the tests pass');
    assert.deepEqual({ ...halt, spent: undefined }, { kind: 'budget', budget: 'turns', limit: 2, spent: undefined });
    const refusal = agent.messages.at(-1);
    assert.match(
      JSON.stringify(refusal),
      /protected files changed since the session started: \.github\/workflows\/ci\.yml/,
    );
  });
});

describe('approval', () => {
  test('one "yes" approves one call: the next change is asked again (only "always" stops the asking)', async (t) => {
    const root = await tempProject(t);
    const asked: string[] = [];
    const approve: Approver = async ({ preview }) => (asked.push(preview), { approved: true });
    const script = [
      call('edit_file', { path: 'a.txt', old_str: '', new_str: 'a\n' }),
      call('edit_file', { path: 'b.txt', old_str: '', new_str: 'b\n' }),
      say('done'),
    ];
    const { agent } = await scriptedAgent(root, script, { approve });
    await runTask(agent, 'make two files');
    assert.equal(asked.length, 2);
  });
});

describe('stopping', () => {
  /** A tool that starts and then never finishes, whatever the signal says. */
  function stuckTool() {
    const started = deferred();
    const tool = defineTool({
      name: 'stuck',
      description: 'Starts, then never finishes. A test tool that ignores its signal.',
      input: z.strictObject({}),
      readOnly: false,
      run: () => (started.resolve(), new Promise<string>(() => {})),
    });
    return { tool, started: started.promise };
  }

  test('a stuck tool is abandoned 5 s after Ctrl-C instead of being waited on forever, and its answer is an error', async (t) => {
    const root = await tempProject(t);
    const { tool, started } = stuckTool();
    const { agent } = await scriptedAgent(root, [call('stuck', {}), say('never')], { tools: [tool] });
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const controller = new AbortController();
    let halted: Halt | undefined;
    const running = runTask(agent, 'work', controller.signal).then((halt) => (halted = halt));
    await withinRealTime(started, 'the tool starting');
    controller.abort();
    await settle();
    t.mock.timers.tick(4_999);
    await settle();
    assert.equal(halted, undefined, 'given up on before the 5 s grace was over');
    t.mock.timers.tick(1);
    assert.deepEqual(await withinRealTime(running, 'the run, 5 s after Ctrl-C'), { kind: 'interrupted' });
    assert.deepEqual(toolResults(agent.messages), [
      {
        type: 'tool_result',
        tool_use_id: 'toolu_s1_0',
        content: 'interrupted: the call was still running 5 s after the stop; its effects are unknown',
        is_error: true,
      },
    ]);
  });

  test('a call approved after Ctrl-C is answered "not run" as an error, so the model does not take it as done', async (t) => {
    const root = await tempProject(t);
    const controller = new AbortController();
    const approve: Approver = async () => (controller.abort(), { approved: true });
    const script = [call('edit_file', { path: 'a.txt', old_str: '', new_str: 'a\n' }), say('done')];
    const { agent } = await scriptedAgent(root, script, { approve });
    assert.deepEqual(await runTask(agent, 'make a.txt', controller.signal), { kind: 'interrupted' });
    assert.deepEqual(toolResults(agent.messages), [
      { type: 'tool_result', tool_use_id: 'toolu_s1_0', content: 'not run: the user interrupted', is_error: true },
    ]);
  });
});

describe('after-call hooks', () => {
  const stuckAfter = (timeoutMs?: number): AfterCallHook => ({
    name: 'scan',
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    check: () => new Promise(() => {}),
  });

  test('an after-call hook that never answers withholds the result at its timeout instead of hanging the run', async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    const { agent } = await scriptedAgent(root, [call('echo', { text: 'secret' }), say('ok')], {
      tools: [tool],
      afterCall: [stuckAfter(50)],
    });
    await withinRealTime(runTask(agent, 'echo'), 'the run, past the hook timeout');
    const [result] = toolResults(agent.messages);
    assert.deepEqual(result, {
      type: 'tool_result',
      tool_use_id: 'toolu_s1_0',
      content: 'result withheld: the scan check failed',
      is_error: true,
    });
  });

  test('an after-call hook with no timeout of its own gets the 10 s default, not forever', async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    const { agent } = await scriptedAgent(root, [call('echo', { text: 'secret' }), say('ok')], {
      tools: [tool],
      afterCall: [stuckAfter()],
    });
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const running = runTask(agent, 'echo');
    await settle();
    t.mock.timers.tick(10_000);
    await withinRealTime(running, 'the run, 10 s after the hook was asked');
    assert.equal(toolResults(agent.messages)[0]?.content, 'result withheld: the scan check failed');
  });
});

describe('the time limits themselves, on calls that do answer', () => {
  /** How many timers are pending in this process now. */
  const pendingTimers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

  test('a hook that answers in time leaves no timer behind to hold the program 10 s after the run', async () => {
    const before = pendingTimers();
    assert.equal(await withinHookTime({}, () => 'allowed'), 'allowed');
    assert.equal(pendingTimers(), before);
  });

  test("a call that answers leaves neither a timer nor a listener on the run's signal behind", async () => {
    const before = pendingTimers();
    const stopped = new AbortController();
    stopped.abort();
    assert.equal(await withinGrace(Promise.resolve('answered'), stopped.signal, 'late'), 'answered');
    assert.equal(pendingTimers(), before, 'the grace timer started by the stop is cleared');
    const running = new AbortController();
    assert.equal(await withinGrace(Promise.resolve('answered'), running.signal, 'late'), 'answered');
    running.abort(); // a later Ctrl-C, in the next call
    assert.equal(pendingTimers(), before, 'no grace starts for a call already answered');
  });

  test('a slow call with no stop is waited on, not given up on after the grace', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const answer = deferred<string>();
    const outcome = withinGrace(answer.promise, new AbortController().signal, 'late');
    t.mock.timers.tick(60_000);
    answer.resolve('answered');
    assert.equal(await outcome, 'answered');
  });

  test('a call made after the stop is given up on after the grace, not waited on forever', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const stopped = new AbortController();
    stopped.abort();
    const outcome = withinGrace(new Promise<string>(() => {}), stopped.signal, 'late');
    t.mock.timers.tick(5_000);
    assert.equal(await withinRealTime(outcome, 'the grace after the stop'), 'late');
  });
});

describe('budgets count per task', () => {
  const usage = { input_tokens: 300, output_tokens: 300 };

  test("a token budget counts from the task's start: a second task in the same session is not halted by the first's tokens", async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    const task = [
      { ...call('echo', { text: 'a' }), usage },
      { ...say('done'), usage: { input_tokens: 1, output_tokens: 1 } },
    ];
    const { agent } = await scriptedAgent(root, [...task, ...task], {
      tools: [tool],
      budgets: { maxTurns: 25, maxTokens: 1_000 },
    });
    assert.equal((await runTask(agent, 'first')).kind, 'accepted');
    assert.deepEqual(
      await runTask(agent, 'second'),
      { kind: 'accepted', verifiedBy: null },
      'halted on 1,204 session tokens',
    );
  });

  test("a cost budget counts from the task's start: a second task in the same session is not halted by the first's cost", async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    // claude-sonnet-4-5 costs $3 per million input tokens: $0.30 a task, $0.60 for the session.
    const costly = { input_tokens: 100_000, output_tokens: 0 };
    const task = [
      { ...call('echo', { text: 'a' }), usage: costly },
      { ...say('done'), usage: { input_tokens: 1, output_tokens: 1 } },
    ];
    const model = new ScriptedModel([...task, ...task], 'claude-sonnet-4-5', SONNET_PRICE);
    const { agent } = await scriptedAgent(root, [], {
      model,
      tools: [tool],
      budgets: { maxTurns: 25, maxCostUsd: 0.5 },
    });
    assert.equal((await runTask(agent, 'first')).kind, 'accepted');
    assert.deepEqual(
      await runTask(agent, 'second'),
      { kind: 'accepted', verifiedBy: null },
      'halted on the session cost',
    );
  });
});

describe('absurd inputs', () => {
  const quiet = { input_tokens: 10, output_tokens: 10 }; // given, so the scripted model need not measure the reply

  test('a tool input nested 20,000 deep is refused by validation with a clear reason, and the session and its listeners go on', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const script = [
      { ...call('read_file', { path: nested(20_000) }), usage: quiet },
      { ...say('ok'), usage: quiet },
    ];
    const { agent, model, events } = await scriptedAgent(root, script);
    assert.deepEqual(await runTask(agent, 'read'), { kind: 'accepted', verifiedBy: null });
    const [result] = toolResults(agent.messages);
    assert.equal(result?.is_error, true);
    assert.equal(result?.content, 'invalid arguments for read_file: nested deeper than 64 levels');
    assert.deepEqual(violationsOf(model.requests[1]!), [], 'the next request can be sent');
    const refused = events.flatMap((event) => (event.type === 'result' ? [event.result] : []));
    assert.deepEqual(refused, [result], 'the listeners saw the refused call answered');
  });

  test('through the real SDK, a reply with a 20,000-deep input is refused by validation, not "model call failed"', async (t) => {
    const root = await tempProject(t);
    const { baseURL, bodies } = await startDeepReplyApi(t);
    const model = new AnthropicModel('claude-test', new Anthropic({ apiKey: 'test-key', baseURL }));
    const { agent } = await scriptedAgent(root, [], { model });
    assert.deepEqual(await runTask(agent, 'read'), { kind: 'accepted', verifiedBy: null });
    assert.equal(
      toolResults(agent.messages)[0]?.content,
      'invalid arguments for read_file: nested deeper than 64 levels',
    );
    assert.equal(bodies.length, 2, 'the second request was sent, and accepted');
  });

  test("a hook's rewrite into an absurdly deep input is refused by the same check, not a crash of the loop", async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const deepen: BeforeCallHook = {
      name: 'deepen',
      check: () => ({ action: 'rewrite', input: { text: nested(20_000) } }),
    };
    const { agent } = await scriptedAgent(root, [call('echo', { text: 'hi' }), say('ok')], {
      tools: [tool],
      beforeCall: [deepen],
    });
    assert.equal((await runTask(agent, 'echo')).kind, 'accepted');
    assert.deepEqual(runs, []);
    assert.equal(
      toolResults(agent.messages)[0]?.content,
      'the deepen hook rewrote the call into invalid arguments for echo: nested deeper than 64 levels',
    );
  });

  test("64 levels of arguments are still the schema's to judge; 65 are refused", async (t) => {
    const root = await tempProject(t);
    const runs: unknown[] = [];
    const store = defineTool({
      name: 'store',
      description: 'Stores any JSON value. A test tool.',
      input: z.strictObject({ value: z.unknown() }),
      readOnly: true,
      run: async ({ value }) => (runs.push(value), 'stored'),
    });
    const script = [reply(toolUse('store', { value: nested(63) }), toolUse('store', { value: nested(64) })), say('ok')];
    const { agent } = await scriptedAgent(root, script, { tools: [store] });
    await runTask(agent, 'store');
    assert.equal(runs.length, 1);
    assert.deepEqual(
      toolResults(agent.messages).map((r) => r.content),
      ['stored', 'invalid arguments for store: nested deeper than 64 levels'],
    );
  });
});

describe('configurations that would fail silently', () => {
  test('a dollar budget on a model without a price is refused at createAgent, never silently ignored', async (t) => {
    const root = await tempProject(t);
    await assert.rejects(
      scriptedAgent(root, [say('done')], { budgets: { maxTurns: 5, maxCostUsd: 0.000001 } }),
      /a dollar budget needs a price, and scripted has none/,
    );
  });

  test('a context hook that throws halts with an error naming the hook, not blaming the model', async (t) => {
    const root = await tempProject(t);
    const redact = async (): Promise<Anthropic.MessageParam[]> => {
      throw new Error('the secret list is missing');
    };
    const { agent, model } = await scriptedAgent(root, [say('done')], { contextHooks: [redact] });
    const halt = await runTask(agent, 'hello');
    assert.deepEqual(halt, { kind: 'error', message: 'the context hook redact failed: the secret list is missing' });
    assert.equal(model.requests.length, 0, 'no request was sent without the hook');
  });
});
