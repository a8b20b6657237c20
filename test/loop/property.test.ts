// The loop's invariants, checked on random sessions (fast-check): whatever a model replies, in
// whatever order, the harness only ever sends requests the API accepts, never touches anything
// outside the project, always ends in a halt (never an exception) with the matching exit code,
// never runs a call after Ctrl-C, delivers every steering message exactly once, and never starts a
// model call (its own, a sub-agent's or a summary) once a token or dollar budget is spent, so no run
// overshoots by more than one model call per loop running at the time.
//
// Reproducible: the seed is printed, and a failure prints the seed, the path and the shrunk session.
//   FUZZ_SEED=123 FUZZ_RUNS=10000 node --import tsx --test test/loop/property.test.ts
//   FUZZ_SEED=123 FUZZ_PATH="42:1:0" ...   replays one counterexample (the path fast-check printed)

import type Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { z } from 'zod';
import {
  type Agent,
  type AgentEvent,
  type ApprovalAnswer,
  costOf,
  createAgent,
  type Halt,
  type Model,
  runTask,
} from '../../agent.ts';
import { say, type ScriptedBlock, type ScriptedReply, type ScriptEntry, ScriptedModel } from '../../scripted-model.ts';
import { defineTool } from '../../tools.ts';
import { requestViolations } from '../../lessons/api-rules.ts';
import { HAIKU_PRICE, scriptedAgent, tempProject, toolsWith } from '../helpers.ts';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20_251_130;
const RUNS = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : 500;
const SENTINEL = 'SENTINEL-3f9c: this text lives outside the project and must never reach the model\n';

// ---------------------------------------------------------------------------------------------
// The workspace: one base folder for the whole property, the project inside it reset between runs.
//   base/project/          the root: a.txt, src/b.ts, link -> ../outside, secret-link.txt -> the sentinel
//   base/outside/secret.txt

// A RAM disk when there is one: on ext4, replacing a file (as every edit does) costs ~1 ms, here ~0.05 ms.
const tmp = await stat('/dev/shm').then(
  (info) => (info.isDirectory() ? '/dev/shm' : os.tmpdir()),
  () => os.tmpdir(),
);
const base = await realpath(await mkdtemp(path.join(tmp, 'property-test-')));
const root = path.join(base, 'project');
const outside = path.join(base, 'outside');
const secret = path.join(outside, 'secret.txt');
await mkdir(outside);
await writeFile(secret, SENTINEL);

/** Set when a run may have changed the project; an untouched project is not rebuilt. */
let dirty = true;

// The test's own file work is synchronous: on a small tree that is microseconds, where each
// promise-based call waits for a round trip through libuv's thread pool.
function resetProject(): void {
  if (!dirty) return;
  dirty = false;
  rmSync(root, { recursive: true, force: true });
  mkdirSync(path.join(root, 'src'), { recursive: true });
  writeFileSync(path.join(root, 'a.txt'), 'alpha\n');
  writeFileSync(path.join(root, 'src', 'b.ts'), 'export const b = 1;\n');
  symlinkSync(outside, path.join(root, 'link'));
  symlinkSync(secret, path.join(root, 'secret-link.txt'));
}

/** Nothing outside the root changed: the same names beside it, the same sentinel. */
function assertOutsideUntouched(): void {
  assert.deepEqual(readdirSync(base).sort(), ['outside', 'project'], 'something appeared beside the project');
  assert.deepEqual(readdirSync(outside), ['secret.txt'], 'something appeared in the outside folder');
  assert.equal(readFileSync(secret, 'utf8'), SENTINEL, 'the sentinel outside the project changed');
}

// ---------------------------------------------------------------------------------------------
// Test tools. They are defined once; `session` is what the run in progress lets them reach.

interface Live {
  agent: Agent | undefined;
  abort: () => void;
  steer: () => void;
}
let session: Live = { agent: undefined, abort: () => {}, steer: () => {} };

/** Read-only, so it may run in a batch with reads: it crashes, steers or presses Ctrl-C. */
const chaos = defineTool({
  name: 'chaos',
  description: 'Crashes, or pushes a steering message as if the user typed one, or presses Ctrl-C. A test tool.',
  input: z.strictObject({ do: z.enum(['throw', 'steer', 'stop']) }),
  readOnly: true,
  run: async ({ do: what }) => {
    if (what === 'throw') throw new TypeError('chaos: the tool crashed');
    if (what === 'steer') session.steer();
    else session.abort();
    return `done: ${what}`;
  },
});
/** Creates or deletes the file `ok` that the verify command checks: "done" passes or fails with it. */
const toggle = defineTool({
  name: 'toggle',
  description: 'Creates the file ok if it is missing, deletes it if it is there. A test tool.',
  input: z.strictObject({}),
  readOnly: false,
  run: async () => {
    const ok = path.join(root, 'ok');
    const existed = await rm(ok).then(
      () => true,
      () => false,
    );
    if (!existed) await writeFile(ok, 'ok\n');
    return existed ? 'deleted ok' : 'created ok';
  },
});
const FUZZ_TOOLS = toolsWith(chaos, toggle);
/** A shell builtin only: a verify gate costs one `sh` spawn, no other process. */
const VERIFY = '[ -f ok ]';

// ---------------------------------------------------------------------------------------------
// What a session is made of: the replies of a model, and how the run around it is set up.

type Input = Record<string, unknown>;
interface Call {
  name: string;
  input: Input;
}
interface Step {
  reply: ScriptedReply;
  /** Done inside the model call, before the reply comes back: Ctrl-C, or the user typing. */
  during?: 'abort' | 'steer';
}
interface Session {
  steps: Step[];
  maxTurns: number;
  maxTokens: number | undefined;
  maxCostUsd: number | undefined;
  /** After its steps, the model never says done: it keeps reading until a budget (or the script's end) stops it. */
  endless: boolean;
  verify: boolean;
  protect: readonly string[];
  /** The approver's answers, used in turn (cycling): seeded like everything else. */
  approvals: ('yes' | 'no' | 'always')[];
  abortBeforeStart: boolean;
  contextWindow: number | undefined;
  subAgents: boolean;
}

const call = (name: string, input: Input): Call => ({ name, input });
const paths = fc.constantFrom('a.txt', 'src/b.ts', 'new/n0.txt', 'new/n1.txt', 'ok', 'src');

const validCall = fc.oneof(
  { weight: 4, arbitrary: paths.map((p) => call('read_file', { path: p })) },
  {
    weight: 1,
    arbitrary: fc
      .record({ p: paths, offset: fc.integer({ min: 1, max: 3 }), limit: fc.integer({ min: 1, max: 3 }) })
      .map(({ p, offset, limit }) => call('read_file', { path: p, offset, limit })),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      call('list_files', {}),
      call('list_files', { path: 'src' }),
      call('list_files', { path: '.' }),
    ),
  },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom('new/n0.txt', 'new/n1.txt', 'src/c.ts')
      .map((p) => call('edit_file', { path: p, old_str: '', new_str: 'hello\n' })),
  },
  {
    weight: 3,
    arbitrary: fc
      .constantFrom(['alpha', 'beta'], ['beta', 'alpha'], ['hello', 'bye'])
      .chain(([from, to]) => paths.map((p) => call('edit_file', { path: p, old_str: from!, new_str: to! }))),
  },
);

const badArguments = fc.constantFrom(
  call('read_file', { path: 5 }),
  call('read_file', {}),
  call('read_file', { path: 'a.txt', offset: '5' }),
  call('read_file', { path: 'a.txt', offset: 0 }),
  call('read_file', { path: 'a.txt', limit: 1.5 }),
  call('read_file', { path: 'a.txt', extra: true }),
  call('list_files', { dir: 'src' }),
  call('list_files', { path: null }),
  call('edit_file', { path: 'a.txt', old_str: 'alpha' }),
  call('edit_file', { path: 'a.txt', old_str: 'alpha', new_str: 'alpha' }),
  call('edit_file', { path: ['a.txt'], old_str: '', new_str: 'x' }),
  call('edit_file', { path: 'a.txt', old_str: '', new_str: 'x', replace_all: true }),
  call('chaos', { do: 'explode' }),
  call('chaos', {}),
);

const unknownTool = fc.constantFrom(
  call('bash', { command: 'cat ../outside/secret.txt' }),
  call('Read_File', { path: 'a.txt' }),
  call('read_files', { path: 'a.txt' }),
);

const testToolCall = fc.constantFrom(
  call('chaos', { do: 'throw' }),
  call('chaos', { do: 'steer' }),
  call('chaos', { do: 'stop' }),
  call('toggle', {}),
);

const ESCAPES = [
  '../outside/secret.txt',
  secret,
  outside,
  '..',
  '/',
  'link/secret.txt',
  'link',
  'secret-link.txt',
  'src/../../outside/secret.txt',
  'a\0b',
  '../outside/new.txt',
  'link/new.txt',
];
const escape = fc
  .record({ p: fc.constantFrom(...ESCAPES), how: fc.constantFrom('read', 'list', 'create', 'change') })
  .map(({ p, how }) => {
    if (how === 'read') return call('read_file', { path: p });
    if (how === 'list') return call('list_files', { path: p });
    if (how === 'create') return call('edit_file', { path: p, old_str: '', new_str: 'PWNED\n' });
    return call('edit_file', { path: p, old_str: 'SENTINEL', new_str: 'PWNED' });
  });

const TASK = call('task', { description: 'look around', prompt: 'Which files hold "alpha"?' });
const taskCall = fc.constant(TASK);

const anyCall: fc.Arbitrary<Call> = fc.oneof(
  { weight: 10, arbitrary: validCall },
  { weight: 3, arbitrary: badArguments },
  { weight: 1, arbitrary: unknownTool },
  { weight: 3, arbitrary: testToolCall },
  { weight: 3, arbitrary: escape },
  { weight: 1, arbitrary: taskCall },
);

const words = fc.constantFrom('Done.', 'I have finished the task.', '', ' \n', 'Let me look.');
const toBlock = ({ name, input }: Call): ScriptedBlock => ({ type: 'tool_use', name, input });
const thinking: ScriptedBlock = { type: 'thinking', thinking: 'Let me think.', signature: 'sig' };

const reply: fc.Arbitrary<ScriptedReply> = fc.oneof(
  // Tool calls, sometimes after some text or thinking; sometimes cut off at max_tokens.
  {
    weight: 10,
    arbitrary: fc
      .record({
        calls: fc.array(anyCall, { minLength: 1, maxLength: 3 }),
        lead: fc.option(words, { freq: 3 }),
        think: fc.boolean(),
        cut: fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      })
      .map(({ calls, lead, think, cut }) => {
        const content: ScriptedBlock[] = [
          ...(think ? [thinking] : []),
          ...(lead === null ? [] : [{ type: 'text' as const, text: lead }]),
          ...calls.map(toBlock),
        ];
        return cut ? { content, stop_reason: 'max_tokens' as const } : { content };
      }),
  },
  // A claim of "done", or text that ends for another reason.
  {
    weight: 4,
    arbitrary: fc
      .record({
        said: words,
        think: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
        stop: fc.oneof(
          { weight: 8, arbitrary: fc.constant(undefined) },
          {
            weight: 1,
            arbitrary: fc.constantFrom(
              'max_tokens' as const,
              'pause_turn' as const,
              'stop_sequence' as const,
              'refusal' as const,
              'model_context_window_exceeded' as const,
            ),
          },
        ),
      })
      .map(({ said, think, stop }) => {
        const content: ScriptedBlock[] = [...(think ? [thinking] : []), { type: 'text', text: said }];
        return stop === undefined ? { content } : { content, stop_reason: stop };
      }),
  },
  // Nothing at all.
  { weight: 1, arbitrary: fc.constant<ScriptedReply>({ content: [] }) },
);

const during = fc.oneof(
  { weight: 12, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constantFrom('abort' as const, 'steer' as const) },
);
/** A reply that starts several sub-agents at once: they run side by side, on one budget. */
const fanOut: fc.Arbitrary<Step[]> = fc
  .integer({ min: 2, max: 4 })
  .map((n) => [{ reply: { content: Array.from({ length: n }, () => toBlock(TASK)) } }]);

const step: fc.Arbitrary<Step[]> = fc.oneof(
  { weight: 2, arbitrary: fanOut },
  {
    weight: 8,
    arbitrary: fc
      .record({ reply, during })
      .map(({ reply, during }) => [during === undefined ? { reply } : { reply, during }]),
  },
  // A runaway model: the same call three times in a row.
  { weight: 1, arbitrary: anyCall.map((c) => Array.from({ length: 3 }, () => ({ reply: { content: [toBlock(c)] } }))) },
);

const sometimes = <T>(arbitrary: fc.Arbitrary<T>, weight = 1, otherwise = 4) =>
  fc.oneof({ weight: otherwise, arbitrary: fc.constant(undefined) }, { weight, arbitrary });

const sessionArb: fc.Arbitrary<Session> = fc
  .record({
    steps: fc
      .record({ body: fc.array(step, { maxLength: 4 }), finish: fc.boolean() })
      .map(({ body, finish }) => [
        ...body.flat(),
        ...(finish ? [{ reply: { content: [{ type: 'text' as const, text: 'Done.' }] } }] : []),
      ]),
    maxTurns: fc.integer({ min: 1, max: 12 }),
    maxTokens: sometimes(fc.integer({ min: 500, max: 30_000 })),
    // claude-haiku-4-5 prices a scripted call of ~1,000 tokens at about $0.001.
    maxCostUsd: sometimes(fc.integer({ min: 500, max: 20_000 }).map((micro) => micro / 1e6)),
    endless: fc.boolean(),
    // Each gate spawns a shell, ~10 ms of CPU to fork this process: on in one session out of fifty,
    // that is ~8 gates per 500 sessions (~0.08 s), and ~160 in a `npm run fuzz`.
    verify: fc.oneof({ weight: 49, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    // A protected run walks the project when the agent is made and at every gate.
    protect: fc.oneof(
      { weight: 8, arbitrary: fc.constant([]) },
      { weight: 1, arbitrary: fc.constantFrom(['ok'], ['src/**'], ['a.txt']) },
    ),
    approvals: fc.array(fc.constantFrom('yes' as const, 'no' as const, 'always' as const), {
      minLength: 1,
      maxLength: 6,
    }),
    abortBeforeStart: fc.oneof(
      { weight: 40, arbitrary: fc.constant(false) },
      { weight: 1, arbitrary: fc.constant(true) },
    ),
    // A small window makes the loop compact: one more model call, and a different view of the transcript.
    contextWindow: sometimes(fc.constantFrom(1_000, 1_500, 2_500), 1, 6),
    subAgents: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  })
  // A model that never says done only under a token or dollar budget: the budget must end it, and it stays cheap.
  .map((s) => ({ ...s, endless: s.endless && (s.maxTokens !== undefined || s.maxCostUsd !== undefined) }));

// ---------------------------------------------------------------------------------------------
// One session through the real loop, then every invariant.

/** Every session runs on a priced model, so a dollar budget can be kept. */
const PRICED = 'claude-haiku-4-5';
/** What an endless model does after its steps: cheap reads, forever (until the script runs out). */
const ENDLESS: ScriptedReply[] = Array.from({ length: 16 }, (_, i) => ({
  content: [
    toBlock(
      [call('list_files', {}), call('read_file', { path: 'a.txt' }), call('list_files', { path: 'src' })][i % 3]!,
    ),
  ],
}));

/** Watches the spending as the loop counts it (every usage its events report, sub-agents' and summaries included)
 *  and every model call as it starts: none may start once a limit is reached, and no loop may have two under way
 *  (the loops: the sub-agents running, or else the parent). */
function watchSpending(inner: Model, limits: { maxTokens?: number; maxCostUsd?: number }) {
  const spent = { tokens: 0, costUsd: 0 };
  const largestCall = { tokens: 0, costUsd: 0 };
  const problems: string[] = [];
  const children = new Set<string>(); // the parent's task calls that are running
  let underWay = 0; // model calls started and not returned yet
  let mostLoops = 1;
  const model: Model = {
    name: inner.name,
    ...(inner.price && { price: inner.price }),
    async complete(request, options) {
      const { maxTokens, maxCostUsd } = limits;
      if (maxTokens !== undefined && spent.tokens >= maxTokens)
        problems.push(`a model call started with ${spent.tokens} of ${maxTokens} tokens spent`);
      if (maxCostUsd !== undefined && spent.costUsd >= maxCostUsd)
        problems.push(`a model call started with $${spent.costUsd} of $${maxCostUsd} spent`);
      const loops = Math.max(children.size, 1);
      if (underWay >= loops) problems.push(`${underWay + 1} model calls under way with ${loops} loop(s)`);
      underWay++;
      try {
        return await inner.complete(request, options);
      } finally {
        underWay--;
      }
    },
  };
  const onEvent = (event: AgentEvent) => {
    if (event.type === 'running' && event.call.name === 'task') children.add(event.call.id);
    if (event.type === 'result') children.delete(event.call.id);
    mostLoops = Math.max(mostLoops, children.size);
    const counted = event.type === 'subagent' ? event.event : event;
    if (!('usage' in counted)) return; // every call the run paid for: replies, summaries, and failed summaries
    const { usage } = counted;
    const cached = (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
    const tokens = usage.input_tokens + usage.output_tokens + cached;
    const costUsd = costOf(HAIKU_PRICE, usage)!;
    spent.tokens += tokens;
    spent.costUsd += costUsd;
    largestCall.tokens = Math.max(largestCall.tokens, tokens);
    largestCall.costUsd = Math.max(largestCall.costUsd, costUsd);
  };
  return { model, onEvent, spent, largestCall, problems, mostLoops: () => mostLoops };
}

const HALT_KINDS: readonly Halt['kind'][] = ['accepted', 'budget', 'interrupted', 'error'];
const stats = new Map<string, number>();
const count = (key: string) => stats.set(key, (stats.get(key) ?? 0) + 1);

/** The API's rules, on a request as a model received it (which carries no model or max_tokens). */
const violations = (request: object) => requestViolations({ model: 'm', max_tokens: 1, ...request });

async function runSession(s: Session): Promise<void> {
  resetProject();
  const controller = new AbortController();
  const events: AgentEvent[] = [];
  const steered: string[] = [];
  let abortedAt = -1;
  let requestsAtAbort = 0;
  session = {
    agent: undefined,
    abort: () => {
      if (abortedAt < 0) [abortedAt, requestsAtAbort] = [events.length, model.requests.length];
      controller.abort();
    },
    steer: () => {
      const said = `steering #${steered.length}: use tabs, not spaces`;
      steered.push(said);
      session.agent!.steering.push(said);
    },
  };
  const live = session;
  const script: ScriptEntry[] = s.steps.map(({ reply, during }) => {
    if (during === undefined) return reply;
    return () => {
      if (during === 'abort') live.abort();
      else live.steer();
      return reply;
    };
  });
  const model = new ScriptedModel(s.endless ? [...script, ...ENDLESS] : script, PRICED, HAIKU_PRICE);
  const limits = {
    ...(s.maxTokens === undefined ? {} : { maxTokens: s.maxTokens }),
    ...(s.maxCostUsd === undefined ? {} : { maxCostUsd: s.maxCostUsd }),
  };
  const spending = watchSpending(model, limits);
  let asked = 0;
  const agent = await createAgent({
    root,
    model: spending.model,
    tools: FUZZ_TOOLS,
    verify: s.verify ? VERIFY : undefined,
    verifyTimeoutMs: 10_000,
    budgets: { maxTurns: s.maxTurns, ...limits },
    protect: s.protect,
    approve: async (): Promise<ApprovalAnswer> => {
      const answer = s.approvals[asked++ % s.approvals.length]!;
      return answer === 'no' ? { approved: false, reason: 'not now' } : { approved: true, always: answer === 'always' };
    },
    contextFiles: false,
    subAgents: s.subAgents,
    ...(s.contextWindow === undefined ? {} : { contextWindow: s.contextWindow }),
    onEvent: (event) => {
      events.push(event);
      spending.onEvent(event);
    },
  });
  live.agent = agent;
  if (s.abortBeforeStart) live.abort();
  dirty = true; // until the run is over and shown to have changed nothing

  // No exception may escape the loop: a rejection here fails the property with its stack.
  const halt = await runTask(agent, 'Fix the bug in a.txt.', controller.signal);
  // Only edit_file and toggle write to the project; a run that ran neither leaves it as it was.
  dirty = events.some((e) => e.type === 'running' && (e.call.name === 'edit_file' || e.call.name === 'toggle'));

  count(`halt ${halt.kind}${halt.kind === 'budget' ? ` (${halt.budget})` : ''}`);
  for (const e of events) {
    if (e.type === 'compaction' || e.type === 'gate') count(e.type);
    if (e.type === 'request') count('turns');
    if (e.type === 'running') count('calls run');
    if (e.type === 'call') count('calls');
    if (e.type === 'subagent' && e.event.type === 'request') count('sub-agent turns');
  }
  if (abortedAt >= 0) count('aborted');

  // Every request the model received is one the API accepts.
  for (const [i, request] of model.requests.entries()) {
    assert.deepEqual(violations(request), [], `request ${i + 1} of ${model.requests.length} breaks the API's rules`);
  }
  // So is the transcript left behind, with the user's next message appended.
  const next: Anthropic.MessageParam[] =
    agent.messages.at(-1)?.role === 'assistant' ? [{ role: 'user', content: 'And now?' }] : [];
  assert.deepEqual(
    violations({ messages: [...agent.messages, ...next] }),
    [],
    'the final transcript cannot be sent on',
  );

  // The run ended in a halt of a known kind (app/test/loop.test.ts pins the exit code each kind means).
  assert.ok(HALT_KINDS.includes(halt.kind), `unknown halt ${JSON.stringify(halt)}`);
  const top = events.filter((e) => e.type === 'request').length;
  assert.ok(top <= s.maxTurns, `${top} model calls with --max-turns ${s.maxTurns}`);
  if (halt.kind === 'budget' && halt.budget === 'turns') assert.equal(top, s.maxTurns);

  // No model call started once a budget was spent, and no loop had two under way: so whatever the sub-agents
  // did side by side, the run overshot by at most one call per loop running at the time. The halt says so.
  assert.deepEqual(spending.problems, []);
  const { spent, largestCall } = spending;
  const loops = spending.mostLoops();
  if (s.maxTokens !== undefined)
    assert.ok(spent.tokens <= s.maxTokens + loops * largestCall.tokens, `${spent.tokens} tokens spent`);
  if (s.maxCostUsd !== undefined)
    assert.ok(spent.costUsd <= s.maxCostUsd + loops * largestCall.costUsd, `$${spent.costUsd} spent`);
  if (halt.kind === 'budget') {
    assert.equal(halt.spent?.tokens, spent.tokens, 'the halt says what was spent');
    assert.ok(Math.abs(halt.spent!.costUsd! - spent.costUsd) < 1e-12, 'the halt says what was spent, in dollars');
  }
  // A sub-agent stopped by the run's budget: the parent halts on a budget too, right after answering its calls.
  const childStoppedBySpend = events.some(
    (e) =>
      e.type === 'result' &&
      /^\[the sub-agent stopped: \{"kind":"budget","budget":"(tokens|cost)"/.test(String(e.result.content)),
  );
  if (childStoppedBySpend) {
    count('sub-agent stopped by the budget');
    const onSpend = halt.kind === 'budget' && (halt.budget === 'tokens' || halt.budget === 'cost');
    assert.ok(onSpend || halt.kind === 'interrupted', `a sub-agent ran out of budget, then ${JSON.stringify(halt)}`);
  }
  if (loops > 1) count('sub-agents side by side');

  // Nothing outside the project was changed or read.
  assertOutsideUntouched();
  assert.ok(
    !JSON.stringify(model.requests).includes('SENTINEL-3f9c'),
    'the sentinel outside the project reached the model',
  );

  // After Ctrl-C: no further model call, no call decided afterwards runs, and the halt says so.
  if (abortedAt >= 0) {
    assert.equal(model.requests.length, requestsAtAbort, 'the model was called again after Ctrl-C');
    const after = events.slice(abortedAt);
    const decidedAfter = new Set(after.flatMap((e) => (e.type === 'call' ? [e.call.id] : [])));
    const ranAfter = after.filter((e) => e.type === 'running' && decidedAfter.has(e.call.id));
    assert.deepEqual(ranAfter, [], 'a call made after Ctrl-C ran');
    assert.deepEqual(halt, { kind: 'interrupted' }, 'a run stopped by Ctrl-C must halt "interrupted"');
  }

  // A reply cut off at max_tokens may carry truncated arguments: none of its calls runs.
  // The runaway guard refuses the third identical call in a row, "in a row" meaning in the calls the model made,
  // whatever became of them: a call skipped, refused or cut off still breaks a row (and still counts in one).
  const ran = new Set(events.flatMap((e) => (e.type === 'running' ? [e.call.id] : [])));
  let lastAssistant: Anthropic.ContentBlockParam[] = [];
  let [lastKey, repeats] = ['', 0];
  for (const e of events) {
    if (e.type === 'request') lastAssistant = []; // a reply of only empty text appends no message
    if (e.type === 'message' && e.message.role === 'assistant' && Array.isArray(e.message.content))
      lastAssistant = e.message.content;
    if (e.type === 'reply' && e.stopReason === 'max_tokens') {
      for (const block of lastAssistant)
        if (block.type === 'tool_use')
          assert.ok(!ran.has(block.id), `${block.name} ran from a reply cut off at max_tokens`);
    }
    if (e.type === 'call') {
      const key = JSON.stringify([e.call.name, e.call.input]);
      repeats = key === lastKey ? repeats + 1 : 1;
      lastKey = key;
      assert.ok(repeats < 3 || !ran.has(e.call.id), `the same call ran ${repeats} times in a row: ${key}`);
    }
  }

  // Every steering message reaches the model exactly once, or is still waiting for the next task.
  const delivered = agent.messages.flatMap((m) =>
    m.role === 'user' && Array.isArray(m.content) ? m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])) : [],
  );
  for (const said of steered) {
    const times = delivered.filter((t) => t === said).length + agent.steering.filter((t) => t === said).length;
    assert.equal(times, 1, `"${said}" was delivered ${times} times`);
  }
}

test(`the loop's invariants hold on ${RUNS} random sessions (seed ${SEED})`, async (t) => {
  t.after(() => rm(base, { recursive: true, force: true }));
  t.diagnostic(`seed ${SEED}, ${RUNS} runs (set FUZZ_SEED / FUZZ_RUNS to change them)`);
  const started = performance.now();
  const cpu = process.cpuUsage();
  await fc.assert(fc.asyncProperty(sessionArb, runSession), {
    seed: SEED,
    numRuns: RUNS,
    verbose: true,
    includeErrorInReport: true,
    ...(process.env.FUZZ_PATH ? { path: process.env.FUZZ_PATH } : {}),
  });
  const ms = performance.now() - started;
  const { user, system } = process.cpuUsage(cpu);
  const cpuMs = (user + system) / 1000;
  t.diagnostic(
    `${RUNS} sessions in ${Math.round(ms)} ms wall, ${Math.round(cpuMs)} ms CPU (${(ms / RUNS).toFixed(2)} / ${(cpuMs / RUNS).toFixed(2)} ms each)`,
  );
  t.diagnostic(
    [...stats]
      .sort()
      .map(([k, v]) => `${k}: ${v}`)
      .join(', '),
  );
});

// Found while writing the property above (not generated by it: no tool can make a symlink).
test('a symlinked folder that appears under a protected glob during the run ends it in a halt, not an exception', async (t) => {
  const project = await tempProject(t, { 'src/a.ts': 'export {};\n', 'test/a.test.ts': 'ok\n' });
  // What a build or a test run might do while the agent works: link a fixtures folder.
  const linkFixtures = () => (symlinkSync('../src', path.join(project, 'test', 'fixtures')), say('Done.'));
  const { agent } = await scriptedAgent(project, [linkFixtures, say('Done.')], {
    protect: ['test/**'],
    contextFiles: false,
  });
  const halt = await runTask(agent, 'Fix it.').catch((error: unknown) =>
    assert.fail(`runTask threw: ${String(error)}`),
  );
  assert.ok(HALT_KINDS.includes(halt.kind));
});
