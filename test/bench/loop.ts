// Benchmarks of the loop itself, all offline: parallel read-only calls, the harness's own cost per trip (bare, at
// 40,000 messages, and with a real tool, the session file and the printer), the prompt cache over a session, the
// fixed prompt size, and prefix stability. Each function returns a Measurement for one row of bench/run.ts.

import type Anthropic from '@anthropic-ai/sdk';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import {
  type Agent,
  type AgentEvent,
  approveAll,
  createAgent,
  MAX_PARALLEL_READS,
  type Model,
  runTask,
} from '../../agent.ts';
import { call, reply, say, ScriptedModel, toolUse } from '../../scripted-model.ts';
import { defineTool, type Tool, TOOLS } from '../../tools.ts';
import { callsReply, PrefixCacheModel, ReplayModel, textReply } from './replay-model.ts';

export interface Measurement {
  /** The figure: for one measured several times, the median. */
  value: number;
  /** For a figure measured several times (each a pair, where it is a ratio): the lowest, the highest, how many. */
  spread?: { min: number; max: number; runs: number };
  note?: string;
}

/** Thrown by a row that cannot measure on this machine, with the reason: the table says "skipped", not "FAILED". */
export class RowSkipped extends Error {}

/** The median of several runs, with their spread. */
export function spreadOf(values: number[]): Pick<Measurement, 'value' | 'spread'> {
  return { value: median(values), spread: { min: Math.min(...values), max: Math.max(...values), runs: values.length } };
}

// ---------------------------------------------------------------------------------------------
// Shared scaffolding

/** A fresh project folder with the given files, always removed afterwards. */
export async function withProject<T>(files: Record<string, string>, use: (root: string) => Promise<T>): Promise<T> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'bench-loop-')));
  try {
    for (const [name, content] of Object.entries(files)) await writeFile(path.join(root, name), content);
    return await use(root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** An agent wired as in test/helpers.ts: no verify command, every change approved, no AGENTS.md. */
export function benchAgent(
  root: string,
  model: Model,
  tools: readonly Tool[],
  maxTurns: number,
  onEvent: (event: AgentEvent) => void,
): Promise<Agent> {
  return createAgent({
    root,
    model,
    tools,
    verify: undefined,
    verifyTimeoutMs: 30_000,
    budgets: { maxTurns },
    protect: [],
    approve: approveAll,
    contextFiles: false,
    onEvent,
  });
}

/** Runs one task and insists it ended accepted with every call answered without error: a benchmark
 *  of a run that went wrong would measure the wrong thing. */
export async function runChecked(agent: Agent, task: string, events: AgentEvent[]): Promise<void> {
  const halt = await runTask(agent, task);
  if (halt.kind !== 'accepted') throw new Error(`the scripted run halted with ${JSON.stringify(halt)}`);
  const failed = events.find((e) => e.type === 'result' && e.result.is_error === true);
  if (failed?.type === 'result') throw new Error(`a call failed: ${String(failed.result.content)}`);
  if (events.some((e) => e.type === 'compaction'))
    throw new Error('the session compacted; this row measures a session without compaction');
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const fixed = (n: number, digits = 2) => n.toFixed(digits);

// ---------------------------------------------------------------------------------------------
// Row: 8 read-only calls in one reply vs 1

const SLOW_READ_MS = 50;

/** A read-only tool that takes a fixed 50 ms and records how many of it ran at once. */
function slowRead(running: { now: number; max: number }): Tool {
  return defineTool({
    name: 'slow_read',
    description: `A read-only test tool that takes ${SLOW_READ_MS} ms.`,
    input: z.strictObject({ n: z.number() }),
    readOnly: true,
    async run({ n }) {
      running.max = Math.max(running.max, ++running.now);
      await sleep(SLOW_READ_MS);
      running.now--;
      return `read ${n}`;
    },
  });
}

/** Wall time of the turn that answers `calls` calls: from its request event to the next one. */
async function callTurnMs(root: string, calls: number): Promise<{ ms: number; maxRunning: number }> {
  const running = { now: 0, max: 0 };
  // Distinct inputs: three identical calls in a row would be refused by the runaway guard.
  const model = new ScriptedModel([
    reply(...Array.from({ length: calls }, (_, n) => toolUse('slow_read', { n }))),
    say('done'),
  ]);
  const events: AgentEvent[] = [];
  const requests: number[] = [];
  const agent = await benchAgent(root, model, [slowRead(running)], 5, (event) => {
    if (event.type === 'request') requests.push(performance.now());
    events.push(event);
  });
  await runChecked(agent, 'read', events);
  return { ms: requests[1]! - requests[0]!, maxRunning: running.max };
}

export async function parallelReads(): Promise<Measurement> {
  return withProject({}, async (root) => {
    await callTurnMs(root, 8); // warm-up: JIT and module caches
    const one: number[] = [];
    const eight: number[] = [];
    let maxRunning = 0;
    for (let i = 0; i < 5; i++) {
      one.push((await callTurnMs(root, 1)).ms);
      const run = await callTurnMs(root, 8);
      eight.push(run.ms);
      maxRunning = Math.max(maxRunning, run.maxRunning);
    }
    return {
      ...spreadOf(eight.map((ms, i) => ms / one[i]!)),
      note:
        `5 pairs, 1 call then 8, alternated: medians 8 calls ${fixed(median(eight), 1)} ms, ` +
        `1 call ${fixed(median(one), 1)} ms (tool: ${SLOW_READ_MS} ms timer); ` +
        `at most ${maxRunning} ran at once (MAX_PARALLEL_READS = ${MAX_PARALLEL_READS})`,
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Rows: harness overhead per trip: the median, and the same at 40,000 messages (a realistic trip, with the session
// file and the printer, is the program's: app/test/bench/trip.ts)

/** A read-only tool that does nothing: a trip's cost without a tool's own. */
export const noop = defineTool({
  name: 'noop',
  description: 'A read-only test tool that does nothing.',
  input: z.strictObject({ n: z.number() }),
  readOnly: true,
  run: async ({ n }) => `ok ${n}`,
});

export const noopScript = (n: number) => Array.from({ length: n }, (_, i) => i);

/** Times between consecutive request events over a session of `trips` one-call replies to a no-op tool, on a model
 *  that answers at once; trips[k - 1] is trip k (request k to request k + 1). */
async function tripTimes(root: string, trips: number): Promise<number[]> {
  const replies = [...noopScript(trips).map((n) => callsReply(n + 1, 'noop', [{ n }])), textReply(trips + 1, 'done')];
  const events: AgentEvent[] = [];
  const requests: number[] = [];
  const agent = await benchAgent(root, new ReplayModel(replies), [noop], trips + 1, (event) => {
    if (event.type === 'request') requests.push(performance.now());
    if (event.type === 'result' || event.type === 'compaction') events.push(event);
  });
  await runChecked(agent, `call noop ${trips} times`, events);
  if (requests.length !== trips + 1) throw new Error(`expected ${trips + 1} requests, saw ${requests.length}`);
  return requests.slice(1).map((t, i) => t - requests[i]!);
}

const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

const TRIPS = 1000;
export const SESSIONS = 3;
const TRIP_NOTE =
  'ReplayModel returns prebuilt replies at once (not ScriptedModel: its structuredClone of every request is test ' +
  'instrumentation, not harness overhead); one no-op read-only call per reply; trip = request event to the next';

export async function tripMedian(): Promise<Measurement> {
  return withProject({}, async (root) => {
    await tripTimes(root, TRIPS); // warm-up session: JIT
    const medians: number[] = [];
    for (let i = 0; i < SESSIONS; i++) medians.push(median(await tripTimes(root, TRIPS)));
    return {
      ...spreadOf(medians),
      note: `${TRIP_NOTE}; median of ${TRIPS.toLocaleString('en')} trips, ${SESSIONS} sessions`,
    };
  });
}

const LONG_TRIPS = 20_000;

/** Each session pairs its own early and late trips, so the ratio never divides figures from different runs. */
export async function tripRatioAt40k(): Promise<Measurement> {
  return withProject({}, async (root) => {
    await tripTimes(root, TRIPS); // warm-up session, so the early trips are not paying for the JIT
    const early: number[] = [];
    const late: number[] = [];
    const medianRatios: number[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const trips = await tripTimes(root, LONG_TRIPS);
      early.push(mean(trips.slice(499, 1000)));
      late.push(mean(trips.slice(-500)));
      medianRatios.push(median(trips.slice(-500)) / median(trips.slice(499, 1000)));
    }
    return {
      ...spreadOf(late.map((ms, i) => ms / early[i]!)),
      note:
        `mean of the last 500 of ${LONG_TRIPS.toLocaleString('en')} trips (~${(2 * LONG_TRIPS).toLocaleString('en')} messages) / mean of trips 500-1,000 ` +
        `(1,000-2,000 messages), both from the same session, ${SESSIONS} sessions: late ` +
        `${late.map((ms) => fixed(ms, 3)).join(', ')} ms, early ${early.map((ms) => fixed(ms, 3)).join(', ')} ms; ` +
        `the same with medians, which a pause of the machine cannot move: ${medianRatios.map((r) => fixed(r)).join(', ')}×`,
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Sessions of 40 read_file calls, for the cache and prefix rows

const READ_CALLS = 40;
export const SMALL_FILES: Record<string, string> = Object.fromEntries(
  ['alpha', 'beta', 'gamma', 'delta'].map((name, i) => [
    `${name}.ts`,
    Array.from(
      { length: 8 + i * 4 },
      (_, line) => `export const ${name}${line} = ${line * (i + 1)}; // line ${line + 1} of ${name}.ts\n`,
    ).join(''),
  ]),
);
/** Cycles through the files, so no call repeats the one before it (the runaway guard). */
export const readPath = (i: number) => Object.keys(SMALL_FILES)[i % Object.keys(SMALL_FILES).length]!;

async function readSession<M extends Model>(model: M): Promise<{ agent: Agent; model: M }> {
  return withProject(SMALL_FILES, async (root) => {
    const events: AgentEvent[] = [];
    const agent = await benchAgent(root, model, TOOLS, READ_CALLS + 1, (event) => events.push(event));
    await runChecked(agent, 'read the four files, ten times over', events);
    return { agent, model };
  });
}

// ---------------------------------------------------------------------------------------------
// Row: cached share of input tokens

/** The fewest tokens a prefix needs before the API caches it: what the simulation assumes. Anthropic's prompt-caching
 *  page did not say it for claude-sonnet-5-5 where we could read it (see the README); 1,024 is what it gives for the
 *  Sonnet 4.x and Sonnet 5 models, and the larger of the figures found for Sonnet 5.5, so the share errs low. */
const MIN_CACHEABLE_TOKENS = 1024;

export async function cachedShare(): Promise<Measurement> {
  const replies = [
    ...noopScript(READ_CALLS).map((i) => callsReply(i + 1, 'read_file', [{ path: readPath(i) }])),
    textReply(READ_CALLS + 1, 'done'),
  ];
  const usageWith = async (minimum: number) => (await readSession(new PrefixCacheModel(replies, minimum))).agent.usage;
  const shareOf = ({ input, cacheWrite, cacheRead }: Agent['usage']) =>
    (100 * cacheRead) / (input + cacheWrite + cacheRead);
  const usage = await usageWith(MIN_CACHEABLE_TOKENS);
  const others = [0, 512, 4096].map(async (minimum) => `${minimum}: ${fixed(shareOf(await usageWith(minimum)), 1)}%`);
  return {
    value: shareOf(usage),
    note:
      `${READ_CALLS + 1} requests (${READ_CALLS} read_file calls + the final reply) on PrefixCacheModel ` +
      `(bench/replay-model.ts), nothing cached under ${MIN_CACHEABLE_TOKENS} tokens: cache read ${usage.cacheRead}, ` +
      `cache write ${usage.cacheWrite}, uncached ${usage.input} tokens (chars / 4); with other minimums: ` +
      `${(await Promise.all(others)).join(', ')}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Row: fixed prompt size

export async function fixedPromptTokens(): Promise<Measurement> {
  return withProject({}, async (root) => {
    const agent = await benchAgent(root, new ReplayModel([]), TOOLS, 1, () => {});
    const system = JSON.stringify(agent.system).length / 4;
    const tools = JSON.stringify(agent.toolDefinitions).length / 4;
    const names = agent.toolDefinitions.map((t) => t.name).join(', ');
    return {
      value: system + tools,
      note:
        `system ${Math.round(system)} + tools ${Math.round(tools)} (${names}), JSON as sent, characters / 4, no AGENTS.md; ` +
        'for comparison pi 0.73 sends about 1,323 and Claude Code 2.1 about 26,900',
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Row: prefix stability

const unmarked = (value: unknown) =>
  JSON.stringify(value, (key, v: unknown) => (key === 'cache_control' ? undefined : v));
/** The string shorthand of a message's content as the one text block it stands for. */
const asBlocks = (m: Anthropic.MessageParam) =>
  typeof m.content === 'string' ? { ...m, content: [{ type: 'text', text: m.content }] } : m;

export async function prefixStability(): Promise<Measurement> {
  const script = [...noopScript(READ_CALLS).map((i) => call('read_file', { path: readPath(i) })), say('done')];
  const { model } = await readSession(new ScriptedModel(script));
  const requests = model.requests;
  const failures: string[] = [];
  let stable = 0;
  let stableAsBlocks = 0;
  for (let i = 1; i < requests.length; i++) {
    const [earlier, later] = [requests[i - 1]!, requests[i]!];
    const sameFixed = unmarked([earlier.system, earlier.tools]) === unmarked([later.system, later.tools]);
    const differs = (view: (m: Anthropic.MessageParam) => unknown) =>
      later.messages.length < earlier.messages.length
        ? -2
        : earlier.messages.findIndex((m, k) => unmarked(view(m)) !== unmarked(view(later.messages[k]!)));
    const exact = differs((m) => m);
    if (sameFixed && exact === -1) stable++;
    else
      failures.push(
        `${i}→${i + 1}: ${!sameFixed ? 'system/tools differ' : exact === -2 ? 'messages shrank' : `message ${exact} differs`}`,
      );
    if (sameFixed && differs(asBlocks) === -1) stableAsBlocks++;
  }
  const pairs = requests.length - 1;
  return {
    value: (100 * stable) / pairs,
    note:
      `${stable} of ${pairs} consecutive request pairs byte-stable (marks removed)` +
      (failures.length === 0
        ? ''
        : `; failed: ${failures.join(', ')}; counting a string content as the text block it stands for: ${stableAsBlocks} of ${pairs}`),
  };
}
