// Benchmarks of the loop itself, all offline: parallel read-only calls, the harness's own cost
// per trip, the prompt cache over a session, the fixed prompt size, and prefix stability.
// Each function returns { value, note } for one row of bench/run.ts.

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
} from '../agent.ts';
import { call, reply, say, ScriptedModel, toolUse } from '../scripted-model.ts';
import { defineTool, type Tool, TOOLS } from '../tools.ts';
import { callsReply, PrefixCacheModel, ReplayModel, textReply } from './replay-model.ts';

export interface Measurement {
  value: number;
  note?: string;
}

// ---------------------------------------------------------------------------------------------
// Shared scaffolding

/** A fresh project folder with the given files, always removed afterwards. */
async function withProject<T>(files: Record<string, string>, use: (root: string) => Promise<T>): Promise<T> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'bench-loop-')));
  try {
    for (const [name, content] of Object.entries(files)) await writeFile(path.join(root, name), content);
    return await use(root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** An agent wired as in test/helpers.ts: no verify command, every change approved, no AGENTS.md. */
function benchAgent(
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
async function runChecked(agent: Agent, task: string, events: AgentEvent[]): Promise<void> {
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
      value: median(eight) / median(one),
      note:
        `median of 5: 8 calls ${fixed(median(eight), 1)} ms, 1 call ${fixed(median(one), 1)} ms (tool: ${SLOW_READ_MS} ms timer); ` +
        `at most ${maxRunning} ran at once (MAX_PARALLEL_READS = ${MAX_PARALLEL_READS})`,
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Rows: harness overhead per trip (median, and trip 1,000 vs trip 10), from one shared session

const TRIPS = 1000;

const noop = defineTool({
  name: 'noop',
  description: 'A read-only test tool that does nothing.',
  input: z.strictObject({ n: z.number() }),
  readOnly: true,
  run: async ({ n }) => `ok ${n}`,
});

/** Times between consecutive request events over a session of TRIPS one-call replies;
 *  trips[k - 1] is trip k (request k to request k + 1). */
async function tripTimes(root: string, model: Model): Promise<number[]> {
  const events: AgentEvent[] = [];
  const requests: number[] = [];
  const agent = await benchAgent(root, model, [noop], TRIPS + 1, (event) => {
    if (event.type === 'request') requests.push(performance.now());
    if (event.type === 'result' || event.type === 'compaction') events.push(event);
  });
  await runChecked(agent, 'call noop a thousand times', events);
  if (requests.length !== TRIPS + 1) throw new Error(`expected ${TRIPS + 1} requests, saw ${requests.length}`);
  return requests.slice(1).map((t, i) => t - requests[i]!);
}

const noopScript = (n: number) => Array.from({ length: n }, (_, i) => i);
const replayModel = () =>
  new ReplayModel([...noopScript(TRIPS).map((n) => callsReply(n + 1, 'noop', [{ n }])), textReply(TRIPS + 1, 'done')]);

interface TripStats {
  median: number;
  early: number;
  late: number;
}

const tripStats = (trips: number[]): TripStats => ({
  median: median(trips),
  early: median(trips.slice(4, 15)), // trips 5–15
  late: median(trips.slice(989, 1000)), // trips 990–1000
});

let tripSession: Promise<{ replay: TripStats; scripted: TripStats }> | undefined;

/** One warm-up session, then the measured one; both rows read the same measurement. */
function measureTrips() {
  return (tripSession ??= withProject({}, async (root) => {
    await tripTimes(root, replayModel());
    const replay = tripStats(await tripTimes(root, replayModel()));
    // For the note only: the same session on ScriptedModel, whose structuredClone of every request grows with the transcript.
    const scripted = tripStats(
      await tripTimes(root, new ScriptedModel([...noopScript(TRIPS).map((n) => call('noop', { n })), say('done')])),
    );
    return { replay, scripted };
  }));
}

const TRIP_NOTE =
  'ReplayModel returns prebuilt replies at once (not ScriptedModel: its structuredClone of every request is test instrumentation, not harness overhead); ' +
  'one no-op read-only call per reply; trip = request event to the next';

export async function tripMedian(): Promise<Measurement> {
  const { replay } = await measureTrips();
  return { value: replay.median, note: `${TRIP_NOTE}; ${TRIPS} trips after a warm-up session` };
}

export async function tripGrowth(): Promise<Measurement> {
  const { replay, scripted } = await measureTrips();
  return {
    value: replay.late / replay.early,
    note:
      `median of trips 990–1000 ${fixed(replay.late, 3)} ms / trips 5–15 ${fixed(replay.early, 3)} ms; ` +
      `on ScriptedModel for comparison: median ${fixed(scripted.median, 3)} ms, ${fixed(scripted.late, 3)} / ${fixed(scripted.early, 3)} ms = ${fixed(scripted.late / scripted.early)}×`,
  };
}

// ---------------------------------------------------------------------------------------------
// Sessions of 40 read_file calls, for the cache and prefix rows

const READ_CALLS = 40;
const SMALL_FILES: Record<string, string> = Object.fromEntries(
  ['alpha', 'beta', 'gamma', 'delta'].map((name, i) => [
    `${name}.ts`,
    Array.from(
      { length: 8 + i * 4 },
      (_, line) => `export const ${name}${line} = ${line * (i + 1)}; // line ${line + 1} of ${name}.ts\n`,
    ).join(''),
  ]),
);
/** Cycles through the files, so no call repeats the one before it (the runaway guard). */
const readPath = (i: number) => Object.keys(SMALL_FILES)[i % Object.keys(SMALL_FILES).length]!;

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

export async function cachedShare(): Promise<Measurement> {
  const replies = [
    ...noopScript(READ_CALLS).map((i) => callsReply(i + 1, 'read_file', [{ path: readPath(i) }])),
    textReply(READ_CALLS + 1, 'done'),
  ];
  const { agent } = await readSession(new PrefixCacheModel(replies));
  const { input, cacheWrite, cacheRead } = agent.usage;
  return {
    value: (100 * cacheRead) / (input + cacheWrite + cacheRead),
    note:
      `${READ_CALLS + 1} requests (${READ_CALLS} read_file calls + the final reply) on PrefixCacheModel (bench/replay-model.ts): ` +
      `cache read ${cacheRead}, cache write ${cacheWrite}, uncached ${input} tokens (chars / 4); no 1,024-token minimum modelled`,
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
