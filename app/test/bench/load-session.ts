// Child process for the resume rows: what --resume does with a session file, then one task on it, and nothing else,
// so its times and peak RSS are the session's own (plus Node and tsx, reported apart).
// Usage: node --import tsx app/test/bench/load-session.ts <file> <context window in tokens>
// Prints one JSON object: {"loadMs":…,"resumeMs":…,"messages":…,"resumedKiB":…,"turnMs":…,"summaries":…,…}; on a
// failure, what was measured before it, and the step and its error. Progress goes to stderr every 100 summaries.

import type Anthropic from '@anthropic-ai/sdk';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import {
  type AgentEvent,
  createAgent,
  type Model,
  type ModelRequest,
  resume,
  runTask,
  textOfMessage,
} from 'reference-harness';
import { loadSession } from '../../session-file.ts';
import { median } from '../../../test/bench/loop.ts';
import { textReply } from '../../../test/bench/replay-model.ts';
import { describeHalt } from '../../describe-halt.ts';

/** What the harness's summary request says (SUMMARY_INSTRUCTIONS in agent.ts), and nothing else sends. */
const SUMMARY_REQUEST = 'Write a summary';

/** Answers a summary request with a short summary and anything else with "done", at once; it keeps nothing of the
 *  request (ScriptedModel's copy of every request would copy gigabytes). */
class SummarisingModel implements Model {
  readonly name = 'summariser';
  summaries = 0;
  others = 0;
  /** When each summary request came in (performance.now()). */
  readonly summaryTimes: number[] = [];
  /** The most messages one summary request carried: each piece must fit half the window. */
  largestPiece = 0;

  async complete(request: ModelRequest): Promise<Anthropic.Message> {
    const last = request.messages.at(-1);
    if (last === undefined || !textOfMessage(last).includes(SUMMARY_REQUEST)) {
      return textReply(this.summaries + ++this.others, 'done');
    }
    this.largestPiece = Math.max(this.largestPiece, request.messages.length - 1);
    this.summaryTimes.push(performance.now());
    if (++this.summaries % 100 === 0) {
      const seconds = ((this.summaryTimes.at(-1)! - this.summaryTimes[0]!) / 1000).toFixed(1);
      process.stderr.write(`${this.summaries} summaries, ${seconds} s since the first\n`);
    }
    const summary =
      `Goal: read every module under src/. Done: the reads summarised in ${this.summaries} pieces so far. ` +
      'Next steps: go on reading.';
    return textReply(this.summaries + this.others, summary);
  }
}

const [file, window] = process.argv.slice(2);
if (file === undefined || window === undefined) throw new Error('usage: load-session.ts <file> <context window>');
const report: Record<string, unknown> = { beforeKiB: process.resourceUsage().maxRSS };
let step = 'loadSession';
try {
  const started = performance.now();
  const loaded = await loadSession(file);
  report.loadMs = performance.now() - started;
  step = 'resume';
  const model = new SummarisingModel();
  const config = { root: os.tmpdir(), model, tools: [], contextFiles: false, contextWindow: Number(window) };
  // What was summarised, by the harness's own estimate (uncut: the request cuts long strings to 2,000 characters).
  let [compactions, summarisedTokens] = [0, 0];
  const onEvent = (event: AgentEvent) => {
    if (event.type === 'compaction')
      [compactions, summarisedTokens] = [compactions + 1, summarisedTokens + event.tokensBefore];
  };
  const agent = await createAgent({ ...config, onEvent });
  resume(agent, loaded);
  const resumed = performance.now();
  Object.assign(report, {
    resumeMs: resumed - started,
    messages: agent.messages.length,
    resumedKiB: process.resourceUsage().maxRSS,
  });
  step = 'the turn after the resume';
  const halt = await runTask(agent, 'go on');
  const turnMs = performance.now() - resumed;
  const { summaries, others: replies, largestPiece, summaryTimes: at } = model;
  // The cost of a piece early in the turn and late in it: a cost growing with the pieces done would show here.
  const gaps = at.slice(1).map((t, i) => t - at[i]!);
  const [earlyPieceMs, latePieceMs] = [median(gaps.slice(0, 500)), median(gaps.slice(-500))];
  const pieces = { firstSummaryMs: (at[0] ?? NaN) - resumed, earlyPieceMs, latePieceMs };
  const turn = { halt: describeHalt(halt), accepted: halt.kind === 'accepted', summaries, compactions, replies };
  Object.assign(report, { turnMs, ...turn, summarisedTokens, largestPiece, ...pieces });
} catch (error) {
  report.failed = `${step} failed: ${error instanceof Error ? error.message : String(error)}`;
}
report.peakKiB = process.resourceUsage().maxRSS;
console.log(JSON.stringify(report));
