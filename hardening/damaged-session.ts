// Defends against: a damaged session file (a lost or repeated line, a crash mid-call) making a
// session that can never resume, since the API refuses a transcript whose calls and results do not
// pair. Read line by line through transcriptRepair, the messages come out valid: a call with no
// result is answered "result lost", a stray result dropped, a repeated call dropped, results moved
// first. Messages are only added or changed at the end, so a compaction's cut keeps its meaning.
// A call the session ended in the middle of is answered "not run", or with what the program knows
// of it (an edit recorded before it was written, checked against the disk: applied or not). resume
// continues a session so read, and keeps the protected files' fingerprints from its first start.
// Tests: test/loop/sessions.test.ts, app/test/session-file.test.ts, app/test/edit-intents.test.ts,
// app/test/crash.check.ts (real processes), test/loop/hardening.test.ts ("not laundered by
// resume").

import type Anthropic from '@anthropic-ai/sdk';
import { withinShare } from './huge-messages.ts';

const userText = (text: string): Anthropic.MessageParam => ({
  role: 'user',
  content: [{ type: 'text', text }],
});

const LOST_RESULT =
  'result lost: the session file has no result for this call (a lost line); ' +
  'it may or may not have run';

const notRunResults = (ids: string[], content: string): Anthropic.ToolResultBlockParam[] =>
  ids.map((id) => ({ type: 'tool_result', tool_use_id: id, content, is_error: true }));

/** What a program knows of a call the session ended in the middle of: the result to give it. */
export interface KnownOutcome {
  content: string;
  isError: boolean;
}

/** Prevents a damaged session file from making a session that can never resume. */
export function transcriptRepair(warn: (text: string) => void) {
  const messages: Anthropic.MessageParam[] = [];
  const callIds = new Set<string>();
  let awaiting: string[] = []; // the last reply's calls, that the next message answers
  const answerLost = (at: string, ids: string[]) => {
    const lost = `${ids.length} call(s) before this line have no result (a lost line)`;
    warn(`${at}: ${lost}; answered "result lost"`);
    return notRunResults(ids, LOST_RESULT);
  };
  const add = (message: Anthropic.MessageParam, at: string) => {
    const blocks: Anthropic.ContentBlockParam[] =
      typeof message.content === 'string'
        ? [{ type: 'text', text: message.content }]
        : message.content;
    let content: Anthropic.ContentBlockParam[];
    if (message.role === 'assistant') {
      if (awaiting.length > 0) messages.push({ role: 'user', content: answerLost(at, awaiting) });
      if (messages.length === 0) {
        const first = 'the first message is a reply (the task before it was lost)';
        warn(`${at}: ${first}; a placeholder task goes first`);
        messages.push(userText('[The first message of this session was lost from its file.]'));
      }
      content = blocks.filter((block) => block.type !== 'tool_use' || !callIds.has(block.id));
      const repeated = blocks.length - content.length;
      const again = `${repeated} call(s) repeat the id of an earlier call (a repeated line?)`;
      if (repeated > 0) warn(`${at}: ${again}; dropped`);
      awaiting = content.flatMap((block) => (block.type === 'tool_use' ? [block.id] : []));
      for (const id of awaiting) callIds.add(id);
    } else {
      const results = blocks.filter((block) => block.type === 'tool_result');
      const unanswered = new Set(awaiting);
      awaiting = [];
      const kept = results.filter((result) => unanswered.delete(result.tool_use_id)); // the first
      const dropped = results.length - kept.length;
      if (dropped > 0) warn(`${at}: ${dropped} result(s) answer no call just before them; dropped`);
      const answers = unanswered.size > 0 ? answerLost(at, [...unanswered]) : [];
      content = [...kept, ...answers, ...blocks.filter((block) => block.type !== 'tool_result')];
      const moved = dropped + answers.length === 0 && content.some((b, i) => b !== blocks[i]);
      if (moved) warn(`${at}: results moved before the text`);
    }
    const same =
      content.length === blocks.length && content.every((block, i) => block === blocks[i]);
    if (same) messages.push(message);
    else if (content.length > 0)
      messages.push({ role: message.role === 'assistant' ? 'assistant' : 'user', content });
  };
  return {
    messages,
    add,
    /** Whether a compaction may cut here (see chooseCut). */
    startsReply: (index: number) => messages[index]?.role === 'assistant',
    /** Answers the calls the session ended in the middle of, with what `known` says of a call (by
     *  id), else "not run"; resume appends it. */
    finish: (known: ReadonlyMap<string, KnownOutcome>): Anthropic.MessageParam | null => {
      if (awaiting.length === 0) return null;
      const died = `${awaiting.length} call(s) had no result (the process died mid-call)`;
      const told = awaiting.filter((id) => known.has(id)).length;
      const others = `${told} answered with what is known of them, the others "not run"`;
      warn(`${died}; ${told === 0 ? 'they are answered "not run"' : others}`);
      const notRun = {
        content: 'not run: the session ended before this call finished',
        isError: true,
      };
      const results = awaiting.map((id): Anthropic.ToolResultBlockParam => {
        const { content, isError } = known.get(id) ?? notRun;
        return {
          type: 'tool_result',
          tool_use_id: id,
          content,
          ...(isError && { is_error: true }),
        };
      });
      return { role: 'user', content: results };
    },
  };
}

/** The parts of a session (agent.ts's Agent) that resume sets; typed here, as agent.ts imports
 *  this file. */
interface ResumableAgent {
  readonly messages: Anthropic.MessageParam[];
  readonly toolContext: { readonly seen: Map<string, string> };
  readonly contextWindow: number;
  readonly protectedAtStart: Map<string, string>;
  readonly config: { onEvent(event: SessionEvent): void };
  compaction: Compaction | null;
  subAgentsStarted: number;
  lastRequest: unknown;
  repeats: { key: string; times: number };
}

/** The events resume reports, as agent.ts's AgentEvent has them. */
type SessionEvent =
  { type: 'message'; message: Anthropic.MessageParam } | { type: 'notice'; text: string };

/** The summary that stands in for messages before keptFrom (agent.ts's Compaction). */
type Compaction = { summary: string; keptFrom: number };

/** A saved session, read through transcriptRepair. */
export interface LoadedSession {
  messages: Anthropic.MessageParam[];
  compaction: Compaction | null;
  subAgents: number;
  repair: Anthropic.MessageParam | null;
  protectedAtStart: Map<string, string> | null;
  warnings: string[];
}

/** Continues a loaded session: its repaired messages are the transcript, each within its share of
 *  the window, and what the session knew of the disk is forgotten (read again before editing). */
export function resume(agent: ResumableAgent, loaded: LoadedSession): void {
  agent.messages.length = 0;
  for (const message of loaded.messages)
    agent.messages.push(withinShare(agent.contextWindow, message));
  agent.toolContext.seen.clear();
  agent.compaction = loaded.compaction;
  agent.subAgentsStarted = loaded.subAgents;
  agent.lastRequest = null;
  agent.repeats = { key: '', times: 0 }; // a new row: see countRepeats in agent.ts
  keepFirstFingerprints(agent, loaded.protectedAtStart);
  for (const warning of loaded.warnings) agent.config.onEvent({ type: 'notice', text: warning });
  if (loaded.repair) {
    const message = withinShare(agent.contextWindow, loaded.repair);
    agent.messages.push(message);
    agent.config.onEvent({ type: 'message', message });
  }
}

/** Prevents laundering a protected file between two runs: the gate compares with the session's
 *  first start, not with this one. */
function keepFirstFingerprints(agent: ResumableAgent, first: Map<string, string> | null): void {
  for (const [file, hash] of first ?? []) {
    if (agent.protectedAtStart.has(file)) agent.protectedAtStart.set(file, hash);
  }
}
