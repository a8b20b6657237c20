// A stuck model (issue 23): one that makes the identical call forever, refused by the runaway guard from the third
// time on. Its trips must cost the same at 40,000 messages as at 2,000: the guard counts the row as calls arrive and
// never reads it back from the transcript. The harness halts such a model after six calls in a row, so the long
// transcript is built without the loop (a row of identical calls and their refusals) and resumed; each resumed run
// then makes the call six times, and its refused trips are timed.

import type Anthropic from '@anthropic-ai/sdk';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  type Agent,
  type AgentEvent,
  createAgent,
  type LoadedSession,
  type Model,
  resume,
  runTask,
} from '../../agent.ts';
import { median, type Measurement, noop, spreadOf } from './loop.ts';
import { callsReply } from './replay-model.ts';

const SHORT = 2_000;
const LONG = 40_000;
/** Runs at each length, alternated; their trips are pooled into blocks, one ratio per block. */
const PAIRS = 300;
const BLOCKS = 10;
/** The calls the guard refuses before the harness halts the model: the third to the sixth (STUCK_AFTER). */
const FIRST_REFUSED = 3;
const HALTED_AFTER = 6;
/** Far above any transcript here, so compaction never starts (checked): the row times the loop, not a summary. */
const CONTEXT_WINDOW = 1e9;

const STUCK_INPUT = { n: 0 };
const REFUSAL = 'not run: you made this exact call 3 times in a row and its answer will not change';

/** Makes the same call on every request, as a fresh reply (a new id) each time, and does nothing else. */
class StuckModel implements Model {
  readonly name = 'stuck';
  private turn = 0;
  async complete(): Promise<Anthropic.Message> {
    return callsReply(++this.turn, 'noop', [STUCK_INPUT]);
  }
}

/** A session of `count` messages: the task, then the stuck call and its refusal over and over. */
function stuckSession(count: number): LoadedSession {
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: [{ type: 'text', text: 'call noop' }] }];
  for (let i = 0; messages.length < count; i++) {
    const id = `toolu_saved_${i}`;
    messages.push({ role: 'assistant', content: [{ type: 'tool_use', id, name: 'noop', input: STUCK_INPUT }] });
    messages.push({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: id, content: REFUSAL, is_error: true }],
    });
  }
  return { messages, compaction: null, subAgents: 0, repair: null, protectedAtStart: null, warnings: [] };
}

/** Resumes `session` and runs the stuck model to its halt; returns the refused trips that end at a request (request
 *  k to request k + 1, k = 3 to 5), after checking the run went as it must: calls 3 to 6 refused, then the halt. */
async function stuckRun(agent: Agent, events: AgentEvent[], requests: number[], session: LoadedSession) {
  resume(agent, session);
  [events.length, requests.length] = [0, 0];
  const halt = await runTask(agent, 'go on');
  if (halt.kind !== 'error' || !halt.message.includes('stuck')) throw new Error(`halted ${JSON.stringify(halt)}`);
  const results = events.flatMap((e) => (e.type === 'result' ? [e.result] : []));
  const refused = results.map((r) => r.is_error === true && String(r.content).includes('this exact call'));
  const expected = results.map((_, i) => i + 1 >= FIRST_REFUSED);
  if (results.length !== HALTED_AFTER || refused.some((r, i) => r !== expected[i]))
    throw new Error(`expected ${HALTED_AFTER} calls, refused from the third; refused: ${JSON.stringify(refused)}`);
  if (events.some((e) => e.type === 'compaction')) throw new Error('the session compacted');
  const trips: number[] = [];
  for (let k = FIRST_REFUSED; k < HALTED_AFTER; k++) trips.push(requests[k]! - requests[k - 1]!); // request k to k + 1
  return trips;
}

async function stuckAgent(root: string) {
  const events: AgentEvent[] = [];
  const requests: number[] = [];
  const onEvent = (event: AgentEvent) => {
    if (event.type === 'request') requests.push(performance.now());
    if (event.type === 'result' || event.type === 'compaction') events.push(event);
  };
  const config = { root, model: new StuckModel(), tools: [noop], contextFiles: false, subAgents: false };
  const agent = await createAgent({ ...config, contextWindow: CONTEXT_WINDOW, onEvent });
  return (session: LoadedSession) => stuckRun(agent, events, requests, session);
}

export async function stuckTripRatio(): Promise<Measurement> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'bench-stuck-')));
  try {
    const [short, long] = [stuckSession(SHORT), stuckSession(LONG)];
    const [runShort, runLong] = [await stuckAgent(root), await stuckAgent(root)];
    for (let i = 0; i < 20; i++) {
      await runShort(short); // warm-up: the JIT
      await runLong(long);
    }
    const early: number[][] = [];
    const late: number[][] = [];
    for (let i = 0; i < PAIRS; i++) {
      // Each side first in half the pairs, so neither always follows the other's garbage.
      if (i % 2 === 0) [early[i], late[i]] = [await runShort(short), await runLong(long)];
      else [late[i], early[i]] = [await runLong(long), await runShort(short)];
    }
    const size = PAIRS / BLOCKS;
    const block = (runs: number[][], b: number) => runs.slice(b * size, (b + 1) * size).flat();
    const ratios = Array.from({ length: BLOCKS }, (_, b) => median(block(late, b)) / median(block(early, b)));
    const [earlyMs, lateMs] = [median(early.flat()), median(late.flat())];
    return {
      ...spreadOf(ratios),
      note:
        `${PAIRS} runs at each length, alternated, each a resume of ${SHORT.toLocaleString('en')} or ` +
        `${LONG.toLocaleString('en')} messages of one call and its refusal, then the same call ${HALTED_AFTER} ` +
        `times to the stuck halt; timed: its refused trips ending at a request (calls ${FIRST_REFUSED}-` +
        `${HALTED_AFTER - 1}), median ${(1000 * lateMs).toFixed(1)} µs at ${LONG.toLocaleString('en')} and ` +
        `${(1000 * earlyMs).toFixed(1)} µs at ${SHORT.toLocaleString('en')}; the figure: median of ${BLOCKS} ` +
        `blocks of ${size} pairs, each the ratio of its two medians`,
    };
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
