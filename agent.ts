// agent.ts — a coding agent in one file. Part I is the agent, in the order of the lessons (P0–P4); Part II, behind
// its banner, is the program around it: the real model, the command runner, prices, the session file, the CLI.
//
// The whole loop, in pseudo-code:
//
//   transcript = [task]
//   loop:
//     reply = model(system prompt, tools, transcript)   // the model only ever writes text
//     append reply to transcript
//     if reply asks for tools:  append one result per call, in call order      (every call gets an answer)
//     else if the verify command passes:  halt "accepted"                        (done is a claim until checked)
//     else:  append "not done yet" and the command's output
//     if a budget ran out or the user pressed Ctrl-C:  halt and say which
//
// The model proposes, the harness disposes: every guarantee lives in plain code below, never in the prompt.

// Types only: the SDK itself (slow to load) is imported when a real model is first made, in chooseModel.
import type Anthropic from '@anthropic-ai/sdk';
import type { APIError } from '@anthropic-ai/sdk';
import { Minimatch } from 'minimatch';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, closeSync, createReadStream, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { clearScreenDown, cursorTo, moveCursor } from 'node:readline';
import { createInterface, type Interface } from 'node:readline/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs, styleText } from 'node:util';
import { z } from 'zod';
import { loadScript, say, type ScriptedBlock, ScriptedModel, type ScriptedReply } from './scripted-model.ts';
import type { ScriptEntry } from './scripted-model.ts';
import { capOutput, defineTool, exists, safe_path, ToolError, TOOLS, walk } from './tools.ts';
import type { Tool, ToolContext } from './tools.ts';

// =====================================================================================================================
// Part I — the agent
// =====================================================================================================================
// P0 — the model and the transcript. The API is stateless: the transcript is all the model knows of the task.

/** What one model call is given: the same three things, in full, on every turn. */
export type ModelRequest = Pick<Anthropic.MessageCreateParamsNonStreaming, RequestPart>;
type RequestPart = 'system' | 'tools' | 'messages' | 'tool_choice';

/** A model takes the whole transcript and returns one assistant message; it remembers nothing between calls.
 *  Contract: the reply comes back exactly as the API sent it (thinking blocks included); a failed call throws.
 *  The request is lent for the call: the next request reuses its messages array, so copy what you keep. */
export interface Model {
  readonly name: string;
  /** Dollars per million tokens, if known here; otherwise the price table in Part II is asked by name. */
  readonly price?: Price;
  complete(request: ModelRequest, options: ModelCallOptions): Promise<Anthropic.Message>;
  /** The context window in tokens, if the provider says; null if it does not. */
  contextWindow?(): Promise<number | null>;
}

export interface ModelCallOptions {
  signal: AbortSignal;
  onText: (delta: string) => void; // each piece of text as it streams in
  onNotice: (text: string) => void; // what the call has to say that is not text, e.g. "retrying"
}

/** All createAgent needs is `{ root, model, tools }`: every later lesson's options have defaults. */
export interface AgentConfig extends Partial<GateOptions>, Partial<GuardOptions>, EnduranceOptions {
  /** The project root: the tools cannot reach outside it. */
  root: string;
  model: Model;
  tools: readonly Tool[];
  /** The loop never prints: it reports everything here (printers, the session file). Default: nowhere. */
  onEvent?: (event: AgentEvent) => void;
  systemPrompt?: string;
}

/** The configuration as the loop reads it: the root resolved through symlinks, every default filled in. */
export type Settings = AgentConfig & GateOptions & GuardOptions & { onEvent: (event: AgentEvent) => void };

/** What the loop reports; each lesson adds its own kinds of event (and Part II the person's own actions). */
export type AgentEvent = LoopEvent | GateEvent | GuardEvent | EnduranceEvent | ProgramEvent;

/** A session: the configuration, the transcript, and what the guards remember between calls. */
export interface Agent {
  readonly config: Settings;
  readonly messages: Anthropic.MessageParam[]; // all the model knows, resent every turn (after P4, its view)
  readonly toolContext: ToolContext;
  /** Built once: the same bytes on every request, so the prompt cache keeps working. */
  readonly system: Anthropic.TextBlockParam[];
  readonly toolDefinitions: Anthropic.Tool[]; // built once per tool and shared by every agent: never changed
  // P3 — the guards: hooks, messages typed meanwhile, spending, the protected files.
  readonly beforeCall: readonly BeforeCallHook[];
  readonly afterCall: readonly AfterCallHook[];
  readonly steering: string[]; // what the user typed while the agent worked, sent with the next results
  readonly usage: UsageTotals;
  /** The run in progress: what it and its sub-agents spent, against its limits (P3; its sums are in Part II). */
  ledger: Ledger;
  /** Hashes of the protected files when the session started: a later run cannot launder a change. */
  readonly protectedAtStart: Map<string, string>;
  // P4 — endurance: the window, what fills it, and the summary of what no longer fits.
  readonly contextWindow: number;
  readonly contextFiles: ContextFile[];
  readonly contextHooks: readonly ContextHook[];
  /** The latest summary and where the verbatim part starts; the transcript itself is never cut. */
  compaction: Compaction | null;
  /** Tokens of the last request and how many messages it covered: the base of the next estimate. */
  lastRequest: { tokens: number; messages: number; keptFrom: number } | null;
  subAgentsStarted: number;
}

/** Builds a session in a few named steps, one per lesson; the tool definitions are made once, here. */
export async function createAgent(config: AgentConfig): Promise<Agent> {
  const settings = await withDefaults(config);
  const contextFiles = settings.contextFiles === false ? [] : await loadContextFiles(settings.root); // P4
  const agent: Agent = {
    config: settings,
    messages: [],
    toolContext: { root: settings.root, seen: new Map() },
    // One cache mark after the system prompt caches the whole fixed prefix: tools, then system.
    system: [{ type: 'text', text: systemPrompt(settings, contextFiles), cache_control: { type: 'ephemeral' } }],
    toolDefinitions: [],
    ...(await guardState(settings)), // P3: the hooks in order, budgets' counters, protected files
    ...(await enduranceState(settings, contextFiles)), // P4: the window and its compaction
  };
  if (settings.subAgents !== false) settings.tools = [...settings.tools, taskTool(agent)]; // P4: a second loop
  agent.toolDefinitions.push(...settings.tools.map(toolDefinition));
  return agent;
}

/** User text as a block, the form it takes once it carries a cache mark: the same bytes on every request. */
const userText = (text: string): Anthropic.MessageParam => ({ role: 'user', content: [{ type: 'text', text }] });

/** Appends to the transcript; the event lets the session file record it as it happens. */
function append(agent: Agent, message: Anthropic.MessageParam): void {
  agent.messages.push(message);
  agent.config.onEvent({ type: 'message', message });
}

// ---------------------------------------------------------------------------------------------------------------------
// P1 — the loop: call the model, append its reply, answer every call, and go round until a halt.

/** Runs one task to a halt: call the model, append its reply, answer its calls, until a halt.
 *  A sub-agent's run is given its parent's ledger, so the two spend from one budget. */
export async function runTask(agent: Agent, task: string, userSignal?: AbortSignal, ledger?: Ledger): Promise<Halt> {
  const run = startRun(agent, userSignal, ledger);
  append(agent, userText(task));
  for (let turn = 1; ; turn++) {
    const reply = await callModel(agent, run, turn);
    if ('kind' in reply) return halt(agent, reply, turn - 1); // no reply came back this turn
    appendReply(agent, reply);
    countUsage(agent, reply, turn); // after the append: the next estimate starts from this reply
    const calls = reply.content.filter((block) => block.type === 'tool_use');
    if (calls.length > 0) {
      append(agent, { role: 'user', content: await answerCalls(agent, run, reply, calls) });
    } else if (reply.stop_reason !== 'pause_turn') {
      // a paused turn is continued as it stands
      const verdict = await judgeFinalReply(agent, run, reply);
      if ('halt' in verdict) return halt(agent, verdict.halt, turn);
      append(agent, { role: 'user', content: [{ type: 'text', text: verdict.goOn }, ...takeSteering(agent)] });
    }
    const stop = stopCheck(agent, run, turn);
    if (stop) return halt(agent, stop, turn);
  }
}

/** Every run ends in exactly one of these, and says which. Halts are values, never exceptions. */
export type Halt =
  | { kind: 'accepted'; verifiedBy: string | null }
  | { kind: 'budget'; budget: BudgetName; limit: number; spent?: Spent } // spent: missing only in older session files
  | { kind: 'interrupted' }
  | { kind: 'error'; message: string };

/** The loop's own events; printers and the session file subscribe to them. */
export type LoopEvent =
  | { type: 'request'; turn: number; messages: number; estimatedTokens: number }
  | { type: 'text'; delta: string }
  | {
      type: 'reply';
      turn: number;
      stopReason: Anthropic.StopReason | null;
      calls: number;
      content: Anthropic.ContentBlock[]; // the reply as received: what a replay answers with
      usage: Anthropic.Usage;
      totals: UsageTotals;
    }
  | { type: 'message'; message: Anthropic.MessageParam }
  | { type: 'call'; call: Anthropic.ToolUseBlock }
  | { type: 'running'; call: Anthropic.ToolUseBlock }
  | { type: 'result'; call: Anthropic.ToolUseBlock; result: Anthropic.ToolResultBlockParam }
  | { type: 'notice'; text: string }
  | { type: 'halt'; halt: Halt; turns: number }; // turns: the model's replies in this run

/** Every halt goes through here, so every run says how it ended. */
function halt(agent: Agent, reached: Halt, turns: number): Halt {
  agent.config.onEvent({ type: 'halt', halt: reached, turns });
  return reached;
}

/** Prevents a failed API call from killing the program: it becomes a halt of kind error.
 *  A "prompt is too long" answer gets one forced compaction and one retry. */
async function callModel(agent: Agent, run: Run, turn: number): Promise<Anthropic.Message | Halt> {
  const { config } = agent;
  const options = {
    signal: run.signal,
    onText: (delta: string) => config.onEvent({ type: 'text', delta }),
    onNotice: (text: string) => config.onEvent({ type: 'notice', text }),
  };
  for (let attempt = 1; ; attempt++) {
    try {
      const view = await contextView(agent, run.signal);
      const overspent = overBudget(agent); // after any compaction, right before the call
      if (overspent) return overspent;
      const estimatedTokens = estimateNextRequest(agent, view);
      config.onEvent({ type: 'request', turn, messages: view.length, estimatedTokens });
      const messages = markCacheBreakpoint(view);
      const request = { system: agent.system, tools: agent.toolDefinitions, messages };
      return withShallowInputs(await config.model.complete(request, options)); // only replies that can be resent
    } catch (error) {
      if (run.signal.aborted) return stoppedHalt(agent, run);
      const retry = attempt === 1 && isPromptTooLong(error) && !overBudget(agent); // a summary is a call too
      if (retry && (await compact(agent, run.signal).catch(() => false))) continue;
      return { kind: 'error', message: describeModelError(error) };
    }
  }
}

/** Marks the last block so the next request can read all before it from the prompt cache (with the system mark: 2
 *  of 4), on a copy: the view [task, call, result] goes out as [task, call, result*]. The transcript is never changed,
 *  nor copied whole: the next request extends the same array (requestCopy) to [task, call, result, call2, result2*]. */
function markCacheBreakpoint(view: readonly Anthropic.MessageParam[]): Anthropic.MessageParam[] {
  const messages = requestCopy(view);
  const last = messages.at(-1);
  if (last === undefined || last.role === 'system') return messages;
  const content: Anthropic.ContentBlockParam[] =
    typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : [...last.content];
  const final = content.at(-1);
  // The API takes no cache mark on a thinking block (and it must go back unmodified anyway).
  if (final === undefined || final.type === 'thinking' || final.type === 'redacted_thinking') return messages;
  content[content.length - 1] = { ...final, cache_control: { type: 'ephemeral' } };
  messages[messages.length - 1] = { ...last, content };
  return messages;
}

/** Prevents a transcript the API rejects: empty text blocks are dropped; everything else is kept
 *  exactly as received, thinking blocks included, because the API refuses altered ones. */
function appendReply(agent: Agent, reply: Anthropic.Message): void {
  const content = reply.content.filter((block) => block.type !== 'text' || block.text.trim() !== '');
  if (content.length > 0) append(agent, { role: 'assistant', content });
}

/** Answers every call, in call order, in one list: each tool_use gets exactly one tool_result.
 *  The hooks decide in order; consecutive read-only calls then run together, anything else alone. */
async function answerCalls(agent: Agent, run: Run, reply: Anthropic.Message, calls: Anthropic.ToolUseBlock[]) {
  const results: Anthropic.ToolResultBlockParam[] = [];
  let batch: { planned: PlannedCall; index: number }[] = [];
  const flush = async () => {
    const running = batch.map(
      ({ planned }) =>
        () =>
          runUnlessStopped(agent, run, reply, planned),
    );
    const outcomes = await runConcurrently(running, MAX_PARALLEL_READS);
    batch.forEach(({ planned, index }, i) => (results[index] = answer(agent, planned.call, outcomes[i]!)));
    batch = [];
  };
  for (const [index, call] of calls.entries()) {
    // A call that may change something is decided after the reads before it ran, so its checks see what they did.
    if (!agent.config.tools.find((tool) => tool.name === call.name)?.readOnly) await flush();
    agent.config.onEvent({ type: 'call', call });
    const notRun = notRunReason(agent, run, reply);
    const decided = notRun ? { content: notRun, isError: true } : await decide(agent, run, call);
    if ('content' in decided) {
      results[index] = answer(agent, call, decided);
    } else if (decided.tool.readOnly) {
      batch.push({ planned: decided, index });
      if (batch.length === MAX_PARALLEL_READS) await flush();
    } else {
      results[index] = answer(agent, call, await runUnlessStopped(agent, run, reply, decided));
    }
  }
  await flush();
  return [...results, ...takeSteering(agent)];
}

export const MAX_PARALLEL_READS = 8;

/** What became of one call: the text the model reads, and whether it is an error. */
export interface ToolOutcome {
  content: string;
  isError: boolean;
}

/** Prevents a call from going unanswered: every outcome, refusals included, becomes a result with the call's id. */
function answer(agent: Agent, call: Anthropic.ToolUseBlock, outcome: ToolOutcome): Anthropic.ToolResultBlockParam {
  const result: Anthropic.ToolResultBlockParam = {
    type: 'tool_result',
    tool_use_id: call.id,
    content: outcome.content,
  };
  if (outcome.isError) result.is_error = true;
  agent.config.onEvent({ type: 'result', call, result });
  return result;
}

/** Prevents a call nobody checked from running: an unknown tool is an error result, then every before-call hook
 *  (P3), in order, until one refuses or answers. */
async function decide(agent: Agent, run: Run, call: Anthropic.ToolUseBlock): Promise<PlannedCall | ToolOutcome> {
  const tool = agent.config.tools.find((t) => t.name === call.name);
  if (!tool) {
    const names = agent.config.tools.map((t) => t.name).join(', ');
    return { content: `unknown tool "${call.name}"; the tools are: ${names}`, isError: true };
  }
  let planned: PlannedCall = { call, tool, input: call.input };
  for (const hook of agent.beforeCall) {
    const decision = await askHook(hook, run.signal, () => hook.check(planned, agent, run.signal));
    if (decision.action !== 'allow') agent.config.onEvent({ type: 'decision', call, hook: hook.name, decision });
    if (decision.action === 'deny') return { content: decision.reason, isError: true };
    if (decision.action === 'answer') return { content: decision.content, isError: false };
    if (decision.action === 'rewrite') {
      // A rewrite is checked against the schema like the model's own arguments were.
      const problem = schemaProblem(tool, decision.input);
      if (problem) return { content: `the ${hook.name} hook rewrote the call into ${problem}`, isError: true };
      planned = { ...planned, input: decision.input };
    }
  }
  return planned;
}

/** Prevents any tool failure from crashing the loop, and an abort from waiting forever on a tool:
 *  a running call gets 5 s after Ctrl-C to finish. The after-call hooks (P3) see the result first. */
async function execute(agent: Agent, run: Run, planned: PlannedCall): Promise<ToolOutcome> {
  agent.config.onEvent({ type: 'running', call: planned.call });
  const running = planned.tool.run(planned.input, { ...agent.toolContext, signal: run.signal }).then(
    (content): ToolOutcome => ({ content, isError: false }),
    (error: unknown): ToolOutcome => ({ content: errorText(error), isError: true }),
  );
  let outcome = await settleOrAbandon(running, run.signal, ABORT_GRACE_MS, ABANDONED);
  for (const hook of agent.afterCall) outcome = await checkResult(agent, hook, planned, outcome);
  return outcome;
}

const ABORT_GRACE_MS = 5_000;
const ABANDONED = {
  content: `interrupted: the call was still running ${ABORT_GRACE_MS / 1000} s after the stop; its effects are unknown`,
  isError: true,
};

// ---------------------------------------------------------------------------------------------------------------------
// P2 — the gate: a reply without tool calls claims "done", and plain code checks the claim.

export interface GateOptions {
  /** The command whose exit code 0 is the only acceptable "done"; undefined: trust the model. */
  verify: string | undefined;
  verifyTimeoutMs: number;
}

export type GateEvent = { type: 'gate'; command: string; exitCode: number | null; passed: boolean; reason: string };

/** Either the run halts, or the loop goes on with this message to the model. */
type Verdict = { halt: Halt } | { goOn: string };

/** Prevents a cut-off or refused reply from passing as "done": only an ordinary end goes to the gate. */
async function judgeFinalReply(agent: Agent, run: Run, reply: Anthropic.Message): Promise<Verdict> {
  if (run.signal.aborted) return { halt: stoppedHalt(agent, run) }; // a reply that came in after Ctrl-C decides nothing
  switch (reply.stop_reason) {
    case 'max_tokens':
      return { goOn: CUT_OFF_REPLY };
    case 'refusal':
      return { halt: { kind: 'error', message: 'the model refused to continue (stop reason: refusal)' } };
    case 'model_context_window_exceeded':
      return { halt: { kind: 'error', message: "the conversation no longer fits the model's context window" } };
    default:
      return await verifyGate(agent, run);
  }
}

/** Prevents a false "done": plain code runs the verify command, and only exit code 0 ends the run.
 *  It also refuses "done" when a protected file changed (P3), however that happened. */
async function verifyGate(agent: Agent, run: Run): Promise<Verdict> {
  const { verify, root, verifyTimeoutMs, protect } = agent.config;
  const tampered = changedFiles(agent.protectedAtStart, await hashProtected(root, protect));
  if (tampered.length > 0) {
    const reason = 'protected files changed';
    agent.config.onEvent({ type: 'gate', command: verify ?? '(none)', exitCode: null, passed: false, reason });
    return {
      goOn:
        `The task is not done: protected files changed since the session started: ${tampered.join(', ')}. ` +
        'Restore them; the task must be done without changing them.',
    };
  }
  if (verify === undefined) return { halt: { kind: 'accepted', verifiedBy: null } };
  const result = await runCommand(verify, root, verifyTimeoutMs, run.signal);
  if (run.signal.aborted) return { halt: stoppedHalt(agent, run) };
  const passed = result.exitCode === 0;
  const how = result.timedOut
    ? `did not finish within ${verifyTimeoutMs / 1000} s`
    : `exited with code ${result.exitCode}`;
  agent.config.onEvent({ type: 'gate', command: verify, exitCode: result.exitCode, passed, reason: how });
  if (passed) return { halt: { kind: 'accepted', verifiedBy: verify } };
  const output = `Its output:\n\n${result.output}\n\nFix the cause, then say you are done.`;
  return { goOn: `The task is not done yet: the check \`${verify}\` ${how}. ${output}` };
}

// ---------------------------------------------------------------------------------------------------------------------
// P3 — hardening: hooks around every call (failing closed), budgets, Ctrl-C and steering, protected files.

export interface GuardOptions {
  budgets: Budgets;
  /** Globs of files the model may not change, e.g. "test/**": the defence against "silent green". */
  protect: readonly string[];
  /** Asks the person at the keyboard before a call that changes something; default: approve all. */
  approve: Approver;
  /** A forker's own hooks: run after validation, before safe_path, protect, runaway and approval. */
  beforeCall?: readonly BeforeCallHook[];
  afterCall?: readonly AfterCallHook[];
}

/** A run's limits. Tokens and dollars count every model call of the run, its sub-agents' and summaries included. */
export interface Budgets {
  /** A turn is one model call. */
  maxTurns: number;
  /** Input (cache reads and writes included) plus output tokens, from the API's usage. */
  maxTokens?: number;
  maxCostUsd?: number;
  timeoutMs?: number;
}

export type BudgetName = 'turns' | 'tokens' | 'cost' | 'time';

export type GuardEvent = { type: 'decision'; call: Anthropic.ToolUseBlock; hook: string; decision: Decision };

/** A call as it will run: the model's arguments, unless a hook rewrote them. */
export interface PlannedCall {
  readonly call: Anthropic.ToolUseBlock;
  readonly tool: Tool;
  readonly input: unknown;
}

/** What a before-call hook decides: run it, refuse it, run it with other arguments, or answer instead. */
export type Decision =
  | { action: 'allow' }
  | { action: 'deny'; reason: string }
  | { action: 'rewrite'; input: unknown }
  | { action: 'answer'; content: string };

/** Runs before a call. Fails closed: a hook that throws or times out denies the call; a rewrite is checked against
 *  the tool's schema again; a ToolError's message goes to the model as the reason. */
export interface BeforeCallHook {
  readonly name: string;
  /** Default 10 s; Infinity for hooks that wait for a person. */
  readonly timeoutMs?: number;
  /** `signal` aborts when the run stops: a hook that waits (for a person, say) should stop waiting. */
  check(planned: PlannedCall, agent: Agent, signal: AbortSignal): Decision | Promise<Decision>;
}

/** Sees a result before the model does. Fails closed: a hook that throws or times out withholds the result. */
export interface AfterCallHook {
  readonly name: string;
  readonly timeoutMs?: number;
  check(planned: PlannedCall, outcome: ToolOutcome, agent: Agent): ToolOutcome | Promise<ToolOutcome>;
}

export type ApprovalAnswer = { approved: true; always?: boolean } | { approved: false; reason?: string };
/** Asks the person at the keyboard about one call that would change something. */
export type Approver = (request: { tool: string; preview: string; signal: AbortSignal }) => Promise<ApprovalAnswer>;

export const approveAll: Approver = async () => ({ approved: true });

type GuardState = Pick<Agent, 'beforeCall' | 'afterCall' | 'steering' | 'usage' | 'ledger' | 'protectedAtStart'>;

/** P3's part of a session: the hooks in their order, the counters the budgets read, the protected files' hashes. */
async function guardState(settings: Settings): Promise<GuardState> {
  return {
    // A forker's hooks come after validation and before the safety checks and approval, so
    // whatever they rewrite is still confined, protected, and shown to the user as it will run.
    beforeCall: [
      validateInput,
      ...(settings.beforeCall ?? []),
      safePathCheck,
      protectedFiles(settings.protect),
      runawayGuard,
      approval(settings.approve),
    ],
    afterCall: [capToolOutput, ...(settings.afterCall ?? [])],
    steering: [],
    usage: noUsage(settings.model),
    ledger: openLedger(settings),
    protectedAtStart: await hashProtected(settings.root, settings.protect),
  };
}

// --- The hooks: the gate in front of every call, and the check of every result.

/** Prevents a broken guard from waving a call through: a hook that throws or times out denies it.
 *  A ToolError is a deliberate refusal, and its message goes to the model as it is. */
async function askHook(
  hook: BeforeCallHook,
  signal: AbortSignal,
  check: () => Decision | Promise<Decision>,
): Promise<Decision> {
  try {
    return await withTimeout(Promise.resolve().then(check), hook.timeoutMs ?? HOOK_TIMEOUT_MS);
  } catch (error) {
    if (error instanceof ToolError) return { action: 'deny', reason: error.message };
    if (signal.aborted)
      return { action: 'deny', reason: 'not run: the run was stopped while this call was being checked' };
    return {
      action: 'deny',
      reason: `not run: the ${hook.name} check failed (${errorText(error)}), so the call was refused`,
    };
  }
}

/** Prevents a broken after-call hook from leaking what it should have checked: its failure withholds the result. */
async function checkResult(agent: Agent, hook: AfterCallHook, planned: PlannedCall, outcome: ToolOutcome) {
  const checking = Promise.resolve().then(() => hook.check(planned, outcome, agent));
  return await withTimeout(checking, hook.timeoutMs ?? HOOK_TIMEOUT_MS).catch((error: unknown): ToolOutcome => {
    // The error goes to the user only: its text may quote the very result it was meant to hide.
    agent.config.onEvent({ type: 'notice', text: `after-call hook ${hook.name} failed: ${errorText(error)}` });
    return { content: `result withheld: the ${hook.name} check failed`, isError: true };
  });
}

const HOOK_TIMEOUT_MS = 10_000;
const ALLOW: Decision = { action: 'allow' };

/** Prevents a tool from ever seeing input that breaks the schema the model was shown.
 *  Nothing is coerced: "5" is not 5, and an unknown key is an error, so the transcript never lies. */
export const validateInput: BeforeCallHook = {
  name: 'validate',
  check: ({ tool, input }) => {
    const problem = schemaProblem(tool, input);
    return problem ? { action: 'deny', reason: problem } : ALLOW;
  },
};

/** The `path` argument of a call, if it has one: what the path hooks check. A forker's hook may use it too. */
export const pathOf = (input: unknown): string | undefined =>
  typeof input === 'object' && input !== null && 'path' in input && typeof input.path === 'string'
    ? input.path
    : undefined;

/** Prevents any tool, a forker's included, from touching a path outside the project: every call whose arguments
 *  have a top-level `path` string (a forker's tool that takes paths under other names checks them itself). */
export const safePathCheck: BeforeCallHook = {
  name: 'safe_path',
  async check({ input }, agent) {
    const requested = pathOf(input);
    if (requested !== undefined) await safe_path(agent.toolContext.root, requested);
    return ALLOW;
  },
};

/** Prevents "silent green": the model may not change the files it is judged by. */
export function protectedFiles(globs: readonly string[]): BeforeCallHook {
  const protectedBy = globMatcher(globs);
  return {
    name: 'protect',
    async check({ tool, input }, agent) {
      const requested = pathOf(input);
      if (tool.readOnly || requested === undefined || globs.length === 0) return ALLOW;
      const relative = path.relative(agent.toolContext.root, await safe_path(agent.toolContext.root, requested));
      const glob = protectedBy(relative.split(path.sep).join('/'));
      if (glob === undefined) return ALLOW;
      const reason = `${requested} is protected (--protect "${glob}"): change the code, not the files that check it`;
      return { action: 'deny', reason };
    },
  };
}

/** Prevents a model stuck in a loop from repeating itself forever: the third identical call in a row is refused.
 *  "In a row" is in the calls the model made, as the transcript holds them: one refused, skipped or cut off still
 *  counts, and a different one in between breaks the row, whatever became of it. */
export const runawayGuard: BeforeCallHook = {
  name: 'runaway',
  check({ call }, agent) {
    const repeats = timesInARow(agent.messages, call);
    if (repeats < 3) return ALLOW;
    const reason = `not run: you made this exact call ${repeats} times in a row and its answer will not change`;
    return { action: 'deny', reason: `${reason}; try something different` };
  },
};

/** Prevents unreviewed changes: a call that changes something runs only once the user approved its preview. */
export function approval(approve: Approver): BeforeCallHook {
  let always = approve === approveAll; // with --yes nobody would read a preview, so none is built
  return {
    name: 'approval',
    timeoutMs: Infinity,
    async check({ tool, input }, agent, signal) {
      if (tool.readOnly || always) return ALLOW;
      const preview = tool.preview ? await tool.preview(input, agent.toolContext) : JSON.stringify(input, null, 2);
      const answer = await approve({ tool: tool.name, preview, signal });
      if (!answer.approved) {
        const why = answer.reason ? `: ${answer.reason}` : '';
        return { action: 'deny', reason: `the user declined this ${tool.name} call${why}` };
      }
      always ||= answer.always === true;
      return ALLOW;
    },
  };
}

/** Prevents one huge result from flooding the context, whatever tool produced it. */
export const capToolOutput: AfterCallHook = {
  name: 'output cap',
  check: (_planned, outcome) => ({ ...outcome, content: capOutput(outcome.content) }),
};

// --- What stops a call or a run: a cut-off reply, Ctrl-C, a message typed meanwhile, a budget.

/** Prevents calls from running when they must not: a cut-off reply's arguments may be truncated
 *  (the SDK drops them silently), the user pressed Ctrl-C, the time ran out, or the user spoke. */
function notRunReason(agent: Agent, run: Run, reply: Anthropic.Message): string | null {
  if (reply.stop_reason === 'max_tokens') {
    return 'not executed: your reply was cut off at max_tokens, the arguments may be incomplete; issue the call again';
  }
  if (run.timeUp?.aborted) return 'not run: the time budget of this run ran out';
  if (run.signal.aborted) return 'not run: the user interrupted';
  if (agent.steering.length > 0) return 'skipped: the user sent a message; read it before going on';
  return null;
}

/** Prevents a call from starting after a stop: a Ctrl-C, a timeout or a message typed while the hooks (or the user,
 *  asked for approval) were deciding still stops a call that has not started. */
async function runUnlessStopped(agent: Agent, run: Run, reply: Anthropic.Message, planned: PlannedCall) {
  const notRun = notRunReason(agent, run, reply);
  return notRun ? { content: notRun, isError: true } : await execute(agent, run, planned);
}

/** What the user typed while the agent worked: it follows the results (or the gate's answer) in the
 *  same user turn, so the model reads it next. */
function takeSteering(agent: Agent): Anthropic.TextBlockParam[] {
  return agent.steering.splice(0).map((text) => ({ type: 'text', text }));
}

/** What stops one run (one task): Ctrl-C, or its time running out. Its spending is in `agent.ledger`. */
interface Run {
  signal: AbortSignal;
  userSignal: AbortSignal;
  timeUp: AbortSignal | undefined;
}

/** A run opens a new ledger, unless it is a sub-agent's, which spends from its parent's. */
function startRun(agent: Agent, userSignal = new AbortController().signal, ledger = openLedger(agent.config)): Run {
  const { timeoutMs } = agent.config.budgets;
  const timeUp = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
  const signal = timeUp ? AbortSignal.any([userSignal, timeUp]) : userSignal;
  agent.ledger = ledger;
  return { signal, userSignal, timeUp };
}

/** Why a stopped run stopped: its time budget, or the user. */
function stoppedHalt(agent: Agent, run: Run): Halt {
  if (run.timeUp?.aborted && !run.userSignal.aborted) return budgetHalt(agent, 'time', agent.config.budgets.timeoutMs);
  return { kind: 'interrupted' };
}

/** Prevents a run from going on past Ctrl-C, its time, its turns, or what its sub-agents spent: checked after every
 *  turn's calls were answered, so the transcript stays valid. */
function stopCheck(agent: Agent, run: Run, turn: number): Halt | null {
  const { maxTurns } = agent.config.budgets;
  if (run.signal.aborted) return stoppedHalt(agent, run);
  return overBudget(agent) ?? (turn >= maxTurns ? budgetHalt(agent, 'turns', maxTurns) : null);
}

/** Prevents runaway spending, by one loop or by sub-agents running side by side: checked before every model
 *  call (a summary's too), so a run overshoots by at most the one call each of its loops has under way. */
function overBudget(agent: Agent): Halt | null {
  const { maxTokens, maxCostUsd, spent } = agent.ledger;
  if (maxTokens !== undefined && totalTokens(spent) >= maxTokens) return budgetHalt(agent, 'tokens', maxTokens);
  const costUsd = spent.costUsd ?? 0; // an unknown price cannot be budgeted: --max-cost refuses it
  return maxCostUsd !== undefined && costUsd >= maxCostUsd ? budgetHalt(agent, 'cost', maxCostUsd) : null;
}

/** What changed between two fingerprints: `changedFiles({a: 1, b: 2}, {a: 1, b: 3, c: 4})` is
 *  `["b (changed)", "c (added)"]`. */
function changedFiles(before: Map<string, string>, after: Map<string, string>): string[] {
  const changed = [...before]
    .filter(([file, hash]) => after.get(file) !== hash)
    .map(([file]) => `${file} (${after.has(file) ? 'changed' : 'deleted'})`);
  return [...changed, ...[...after.keys()].filter((file) => !before.has(file)).map((file) => `${file} (added)`)];
}

// ---------------------------------------------------------------------------------------------------------------------
// P4 — endurance: what the model is shown (a context hook), compaction, AGENTS.md, and the sub-agent.

export interface EnduranceOptions {
  /** Used when the model's metadata does not say; default 200,000. */
  contextWindow?: number;
  /** Compact when the next request would pass this share of the window; default 0.75. */
  compactAt?: number;
  /** Read AGENTS.md files into the system prompt; default true. */
  contextFiles?: boolean;
  /** Offer the `task` tool (a sub-agent); default true. A sub-agent gets false. */
  subAgents?: boolean;
  /** The model sub-agents run on; default: the same model. */
  taskModel?: Model;
  /** A forker's own context hooks, run after compaction. */
  contextHooks?: readonly ContextHook[];
}

export type EnduranceEvent =
  | ({ type: 'compaction'; usage: Anthropic.Usage; tokensBefore: number; tokensAfter: number } & Compaction)
  | { type: 'context'; breakdown: ContextBreakdown }
  | { type: 'subagent'; id: string; description: string; event: AgentEvent };

/** Gets the messages before every request and returns what the model should see: them as they are, or a new array
 *  that is afterwards only ever appended to. They are the session's own, uncopied and read-only: changing the array
 *  or a message throws. Compaction is one; a forker might attach a git diff. */
export type ContextHook = (
  messages: readonly Anthropic.MessageParam[],
  agent: Agent,
  signal: AbortSignal,
) => Promise<readonly Anthropic.MessageParam[]>;

/** The model sees the summary, then the transcript from `keptFrom` on, word for word. */
export interface Compaction {
  summary: string;
  keptFrom: number;
}

type EnduranceState = Pick<
  Agent,
  'contextWindow' | 'contextFiles' | 'contextHooks' | 'compaction' | 'lastRequest' | 'subAgentsStarted'
>;

/** P4's part of a session: the window (from the model if it says), the context hooks, no summary yet. */
async function enduranceState(settings: Settings, contextFiles: ContextFile[]): Promise<EnduranceState> {
  return {
    contextWindow: (await settings.model.contextWindow?.()) ?? settings.contextWindow ?? DEFAULT_CONTEXT_WINDOW,
    contextFiles,
    contextHooks: [compaction, ...(settings.contextHooks ?? [])],
    compaction: null,
    lastRequest: null,
    subAgentsStarted: 0,
  };
}

export const DEFAULT_CONTEXT_WINDOW = 200_000;
const KEEP_VERBATIM_TOKENS = 20_000;

/** Estimated tokens, rounded up: about 3.5 characters a token, so the estimate errs high. */
export const estimateTokens = (value: unknown) =>
  Math.ceil((typeof value === 'string' ? value : JSON.stringify(value)).length / 3.5);

/** Runs every context hook on the transcript (read-only, uncopied); what comes out is what the model sees. */
async function contextView(agent: Agent, signal: AbortSignal): Promise<readonly Anthropic.MessageParam[]> {
  let view: readonly Anthropic.MessageParam[] = freezeNewMessages(agent.messages);
  for (const hook of agent.contextHooks) {
    view = await runReadOnly(view, (shown) => hook(shown, agent, signal)).catch((error: unknown) => {
      throw new ContextHookError(`the context hook ${hook.name || '(unnamed)'} failed: ${errorText(error)}`);
    });
  }
  return view;
}

/** The messages as the model sees them now: the summary, then the recent part verbatim, i.e.
 *  [summary, ...messages.slice(keptFrom)], kept from one request to the next and extended by what is new. */
function compactedView(agent: Agent, messages: readonly Anthropic.MessageParam[]): readonly Anthropic.MessageParam[] {
  return agent.compaction ? compactedCopy(agent.compaction, messages) : messages;
}

/** The size of the next request: the last request's real size plus an estimate of what came since (each message is
 *  measured once, by estimateMessages, so a long session or its first request after a resume is not re-measured). */
function estimateNextRequest(agent: Agent, view: readonly Anthropic.MessageParam[]): number {
  const last = agent.lastRequest;
  if (last && last.keptFrom === (agent.compaction?.keptFrom ?? 0)) {
    return last.tokens + estimateMessages(agent.messages.slice(last.messages));
  }
  return estimateTokens(agent.system) + estimateTokens(agent.toolDefinitions) + estimateMessages(view);
}

/** Prevents the session from dying when the window fills: before any request that would pass 75%
 *  of the window, the older part is summarised once, and only the summary plus the recent part is sent. */
export const compaction: ContextHook = async (messages, agent, signal) => {
  const threshold = (agent.config.compactAt ?? 0.75) * agent.contextWindow;
  const tooBig = estimateNextRequest(agent, compactedView(agent, messages)) > threshold;
  if (tooBig && !overBudget(agent)) await compact(agent, signal); // spent: the loop halts before its call anyway
  return compactedView(agent, messages);
};

/** Where the verbatim part starts: at an assistant message, so no tool_result is ever separated
 *  from its tool_use, and as early as the budget for the recent part allows. For example, with
 *  [task, assistant(call), user(result), assistant(call), user(result)] and room for the last two
 *  messages only, the cut is 3: the summary replaces 0–2, and 3–4 stay word for word. */
export function chooseCut(messages: Anthropic.MessageParam[], from: number, keepTokens: number): number | null {
  let cut: number | null = null;
  let suffix = 0;
  for (let i = messages.length - 1; i > from; i--) {
    suffix += estimateTokens(messages[i]);
    if (messages[i]!.role !== 'assistant') continue;
    if (cut !== null && suffix > keepTokens) break;
    cut = i;
  }
  return cut;
}

/** Results longer than this are shortened before summarising, so the summary request itself fits. */
const SUMMARY_RESULT_CHARS = 2_000;

/** Prevents the summary request itself from overflowing the window: long results keep only head and tail. */
function shortenResults(message: Anthropic.MessageParam): Anthropic.MessageParam {
  if (typeof message.content === 'string') return message;
  const content = message.content.map((block) => {
    if (block.type !== 'tool_result' || typeof block.content !== 'string') return block;
    const text = block.content;
    if (text.length <= SUMMARY_RESULT_CHARS) return block;
    const [head, tail] = [SUMMARY_RESULT_CHARS * 0.75, SUMMARY_RESULT_CHARS * 0.25];
    const left = `\n[... ${text.length - head - tail} characters left out ...]\n`;
    return { ...block, content: `${text.slice(0, head)}${left}${text.slice(-tail)}` };
  });
  return { ...message, content } as Anthropic.MessageParam;
}

/** Summarises everything before the cut point with one more model call. Nothing is deleted: the session file
 *  gets a compaction entry and keeps every message. Returns false if there is nothing to cut. */
export async function compact(agent: Agent, signal: AbortSignal): Promise<boolean> {
  const from = agent.compaction?.keptFrom ?? 0;
  const cut = chooseCut(agent.messages, from, Math.min(KEEP_VERBATIM_TOKENS, agent.contextWindow / 4));
  if (cut === null) return false;
  const previous = agent.compaction ? [summaryMessage(agent.compaction.summary)] : [];
  const older = [...previous, ...agent.messages.slice(from, cut)].map(shortenResults);
  const before = estimateTokens(compactedView(agent, agent.messages));
  const messages: Anthropic.MessageParam[] = [...older, { role: 'user', content: SUMMARY_INSTRUCTIONS }];
  const request = {
    system: agent.system,
    tools: agent.toolDefinitions,
    tool_choice: { type: 'none' as const },
    messages,
  };
  const onNotice = (text: string) => agent.config.onEvent({ type: 'notice', text });
  const reply = await agent.config.model.complete(request, { signal, onText: () => {}, onNotice });
  spend(agent, reply.usage); // an empty summary was paid for too
  const summary = finalText([reply]);
  if (summary === '') throw new Error('the summary came back empty');
  agent.compaction = { summary, keptFrom: cut };
  agent.lastRequest = null;
  const after = estimateTokens(compactedView(agent, agent.messages));
  const { usage } = reply;
  agent.config.onEvent({ type: 'compaction', summary, keptFrom: cut, tokensBefore: before, tokensAfter: after, usage });
  return true;
}

// --- AGENTS.md: project context for the model, never instructions for the harness.

function systemPrompt(settings: Settings, files: ContextFile[]): string {
  const base = settings.systemPrompt ?? SYSTEM_PROMPT;
  if (files.length === 0) return base;
  const sections = files.map((file) => `## ${file.path}\n\n${file.text}`);
  const heading = '# Project context (AGENTS.md files: guidance from the project, farthest first)';
  return `${base}\n\n${heading}\n\n${sections.join('\n\n')}`;
}

// --- The sub-agent: the same loop again, with its own transcript and only the read-only tools.

export const TASK_MAX_TURNS = 30;

/** Lets a search that reads forty files cost the parent one tool result. The child gets every read-only tool
 *  but `task` (a forker's read-only tool included). It spends from the parent's ledger, so it stops when the parent's
 *  tokens or dollars run out, and its events (and so its session file) stay visible. */
function taskTool(parent: Agent): Tool {
  return defineTool({
    name: 'task',
    description:
      'Hand a self-contained research question to a sub-agent that can list and read files (not edit them) and ' +
      'answers with a report. Use it for searches that would read many files; several tasks may run at once. ' +
      'Not for changing files, and not for one known file: use read_file.',
    input: z.strictObject({
      description: z.string().describe('A few words saying what the task is for, e.g. "find the config loader"'),
      prompt: z.string().describe('The full question; the sub-agent sees nothing else of this conversation'),
    }),
    readOnly: true,
    async run({ description, prompt }, ctx) {
      const id = `task-${++parent.subAgentsStarted}`;
      const model = parent.config.taskModel ?? parent.config.model;
      const child = await createAgent({
        ...parent.config,
        model,
        tools: parent.config.tools.filter((tool) => tool.readOnly && tool.name !== 'task'),
        verify: undefined,
        budgets: { maxTurns: TASK_MAX_TURNS },
        protect: [],
        subAgents: false,
        contextFiles: false,
        systemPrompt: SUBAGENT_PROMPT,
        onEvent: (event) => {
          if (event.type === 'reply' || event.type === 'compaction') addUsage(parent.usage, model, event.usage);
          parent.config.onEvent({ type: 'subagent', id, description, event });
        },
      });
      const ended = await runTask(child, prompt, ctx.signal, parent.ledger); // within what is left of the parent's
      const report = finalText(child.messages);
      if (ended.kind === 'accepted') return report || '(the sub-agent gave no answer)';
      return `[the sub-agent stopped: ${describeHalt(ended)}]\n${report}`;
    },
  });
}

// =====================================================================================================================
// Part II — the program around the agent: the real model, the command runner, prices, the session file, the options,
// the REPL and the printers. Everything above this line is the agent; below are the plumbing it calls and the
// program a person runs.
// =====================================================================================================================

// --- The real model: one streamed Messages API call per turn.

export const DEFAULT_MODEL = 'claude-sonnet-5-5';
const MAX_OUTPUT_TOKENS = 32_000;
/** The SDK's timeout covers only the wait for headers; a stream silent for this long is stalled. */
export const STREAM_IDLE_MS = 90_000;

/** The real model: one streamed Messages API call per turn, text shown as it arrives. */
export class AnthropicModel implements Model {
  constructor(
    readonly name: string,
    private readonly client: Anthropic,
    private readonly idleMs = STREAM_IDLE_MS,
  ) {}

  async complete(request: ModelRequest, { signal, onText, onNotice }: ModelCallOptions): Promise<Anthropic.Message> {
    // The SDK retries by itself; this only says, for each failed attempt, what the SDK will do next.
    const showRetries: Middleware = async (request, next, context) => {
      const retried = Number(request.headers.get('x-stainless-retry-count') ?? 0);
      const attempts = { left: (context.options?.maxRetries ?? this.client.maxRetries) - retried, retried };
      try {
        const response = await next(request);
        const notice = response.ok ? null : retryNotice(response.status, response.headers, attempts);
        if (notice) onNotice(notice);
        return response;
      } catch (error) {
        if (!signal.aborted) onNotice(retryNotice(null, new Headers(), attempts, errorText(error)) ?? errorText(error));
        throw error;
      }
    };
    const stream = this.client.messages.stream(
      { model: this.name, max_tokens: MAX_OUTPUT_TOKENS, ...request },
      { signal, middleware: [showRetries] },
    );
    stream.on('text', onText);
    let stalled = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        stalled = true;
        stream.abort();
      }, this.idleMs);
    };
    // Armed only once the answer has arrived: the SDK's waits between retries are not a stall.
    stream.on('connect', arm);
    stream.on('streamEvent', arm);
    try {
      return await stream.finalMessage();
    } catch (error) {
      if (stalled) throw new Error(`the response stream stalled: no data for ${this.idleMs / 1000} s`);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Asked of the API once per model: every sub-agent's createAgent wants it too, and it does not change. */
  private window: Promise<number | null> | undefined;
  contextWindow(): Promise<number | null> {
    return (this.window ??= this.client.models.retrieve(this.name).then(
      (info) => info.max_input_tokens,
      () => null,
    ));
  }
}

type Middleware = NonNullable<Anthropic.RequestOptions['middleware']>[number];

/** Mirrors the SDK's own rule (client.js, shouldRetry): the server's x-should-retry header decides if present, else
 *  408, 409, 429 and 5xx are retried, and a connection that failed (status null) is too; all while retries are left. */
export function retryNotice(
  status: number | null,
  headers: Headers,
  { left, retried }: { left: number; retried: number },
  failure?: string,
): string | null {
  const said = headers.get('x-should-retry');
  const retryable =
    said === null ? status === null || [408, 409, 429].includes(status) || status >= 500 : said === 'true';
  const what = status === null ? `the connection failed (${failure})` : `the API answered ${status}`;
  if (!retryable) return said === 'false' ? `${what}, and said not to retry (x-should-retry: false)` : null;
  if (left <= 0) return `${what}; no retries left (${retried} made), so the call fails`;
  const seconds = Number(headers.get('retry-after-ms') ?? NaN) / 1000 || Number(headers.get('retry-after') ?? NaN);
  const when = !(seconds > 0) ? 'shortly' : seconds < 1 ? 'in under a second' : `in ${Math.round(seconds)} s`;
  return `${what}; the SDK retries ${when} (retry ${retried + 1}, ${left - 1} more left)…`;
}

/** The SDK's API errors carry the HTTP status, the API's own message and the request id; they are
 *  recognised by that shape, so that an offline run never has to load the SDK. */
const isApiError = (error: unknown): error is APIError<number> =>
  error instanceof Error && 'status' in error && typeof error.status === 'number' && 'apiMessage' in error;

/** A context hook that failed: the run halts with an error that names the hook, not the model. */
class ContextHookError extends Error {}

function describeModelError(error: unknown): string {
  if (error instanceof ContextHookError) return error.message;
  if (isApiError(error)) {
    const id = error.requestID ? ` (request id ${error.requestID})` : '';
    return `model call failed: HTTP ${error.status} ${error.type ?? ''}: ${error.apiMessage ?? error.message}${id}`;
  }
  return `model call failed: ${error instanceof Error ? error.message : String(error)}`;
}

// --- The words the model reads. Prompts guide the model; no guarantee rests on them.

export const SYSTEM_PROMPT = [
  'You are a coding agent working inside one project folder. You act only through the tools you are given;',
  'all paths are relative to the project root. Read a file before you edit it, and make the smallest change',
  'that does the task. When the task is done, stop calling tools and say in one or two sentences what you',
  'changed. Your "done" is checked: if the project has a check command, it runs, and if it fails you are told.',
].join('\n');

const CUT_OFF_REPLY =
  'Your reply was cut off at the output limit (max_tokens) before you finished. ' +
  'Continue, more briefly: call a tool, or say that you are done.';

const SUMMARY_INSTRUCTIONS = [
  'The conversation above no longer fits the context window. Write a summary that will replace it, so that you',
  'can carry on from the summary alone. Use these headings: Goal; Constraints from the user; Done; In progress;',
  'Next steps; Exact details (file names, function names, error messages, commands and values needed to carry on,',
  'copied exactly). Do not call tools.',
].join('\n');

/** What stands in for the summarised part of the transcript, first in every request after a compaction. */
const summaryMessage = (summary: string): Anthropic.MessageParam => ({
  role: 'user',
  content: `[Summary of the earlier conversation, written when it no longer fitted the context window]\n\n${summary}`,
});

const SUBAGENT_PROMPT = [
  'You are a research sub-agent inside one project folder. Answer the prompt using the read-only tools you are',
  'given; all paths are relative to the project root. Your final reply is all that the agent who asked will see,',
  'so make it complete and self-contained: name the files and lines it rests on. Do not ask questions back.',
].join('\n');

// --- The agent's reads of the disk outside the tools: defaults, AGENTS.md files, fingerprints.

/** The options no caller gave take their defaults: no verify command, 25 turns, nothing protected, approve all. */
async function withDefaults(config: AgentConfig): Promise<Settings> {
  // Prevents a dollar budget that could never halt: an unpriced model's cost is unknown, so nothing would count.
  const unpriced = [config.model, config.taskModel ?? config.model].find((model) => !priceOf(model));
  if (config.budgets?.maxCostUsd !== undefined && unpriced) {
    throw new Error(`a dollar budget needs a price, and ${unpriced.name} has none (give the Model a price)`);
  }
  return {
    ...config,
    root: await realpath(config.root),
    verify: config.verify,
    verifyTimeoutMs: config.verifyTimeoutMs ?? 120_000,
    budgets: config.budgets ?? { maxTurns: 25 },
    protect: config.protect ?? [],
    approve: config.approve ?? approveAll,
    onEvent: config.onEvent ?? (() => {}),
  };
}

/** An AGENTS.md file as the system prompt quotes it. */
export interface ContextFile {
  path: string;
  text: string;
  tokens: number;
}

export const CONTEXT_FILES_MAX_BYTES = 32 * 1024;

/** AGENTS.md from the root up to the enclosing git repository's top, farthest first, so the
 *  nearest (most specific) file has the last word; capped, keeping the nearest. */
export async function loadContextFiles(root: string): Promise<ContextFile[]> {
  const folders = [root];
  for (let dir = root; !(await exists(path.join(dir, '.git')));) {
    const parent = path.dirname(dir);
    if (parent === dir) {
      folders.splice(1); // no git repository above: only the root's own file counts
      break;
    }
    folders.push((dir = parent));
  }
  const files: ContextFile[] = [];
  let room = CONTEXT_FILES_MAX_BYTES;
  for (const dir of folders) {
    const file = path.join(dir, 'AGENTS.md');
    const text = await readFile(file, 'utf8').catch(() => null);
    if (text === null || room <= 0) continue;
    const cutNote = `\n[cut: AGENTS.md files are capped at ${CONTEXT_FILES_MAX_BYTES / 1024} KiB in all]`;
    const kept =
      Buffer.byteLength(text) <= room ? text : `${Buffer.from(text).subarray(0, room).toString('utf8')}${cutNote}`;
    room -= Buffer.byteLength(text);
    files.unshift({ path: file, text: kept, tokens: estimateTokens(kept) });
  }
  return files;
}

/** Fingerprints every protected file, so the gate can tell whether one changed by any means. */
async function hashProtected(root: string, globs: readonly string[]): Promise<Map<string, string>> {
  const hashes = new Map<string, string>();
  if (globs.length === 0) return hashes;
  const protectedBy = globMatcher(globs);
  for (const file of await walk(root)) {
    if (!file.endsWith('/') && protectedBy(file) !== undefined)
      hashes.set(file, await fingerprint(path.join(root, file)));
  }
  return hashes;
}

const compiledGlobs = new WeakMap<readonly string[], (file: string) => string | undefined>();

/** The --protect globs, compiled once per list (so once per session) rather than once per file: the gate tests every
 *  file of the project. Returns the first glob a "/"-separated path matches; dotfiles match too (`.env`). A regular
 *  expression turns most paths away at once; minimatch's own match() confirms the few it lets through, so the answer
 *  is exactly minimatch's (the expression is looser: "test/**" also takes a file named "test"). */
function globMatcher(globs: readonly string[]): (file: string) => string | undefined {
  let matcher = compiledGlobs.get(globs);
  if (matcher === undefined) {
    const compiled = globs.map((glob) => {
      const pattern = new Minimatch(glob, { dot: true });
      const loose = pattern.negate || pattern.comment || pattern.empty ? false : pattern.makeRe();
      return { glob, matches: (file: string) => (loose === false || loose.test(file)) && pattern.match(file) };
    });
    matcher = (file) => compiled.find(({ matches }) => matches(file))?.glob;
    compiledGlobs.set(globs, matcher);
  }
  return matcher;
}

/** Prevents a hang at startup or at the gate: only a regular file (or a link to one) is opened and hashed; anything
 *  else is fingerprinted by its kind, so a named pipe, which blocks whoever opens it, is never opened. A link to a
 *  folder or an unreadable file still gets a fingerprint: the gate must not crash on it. */
async function fingerprint(file: string): Promise<string> {
  const unreadable = (error: NodeJS.ErrnoException) => `unreadable: ${error.code}`;
  const stats = await stat(file).catch(unreadable);
  if (typeof stats === 'string') return stats;
  if (!stats.isFile()) return `not a regular file: ${kindOf(stats)}`;
  const bytes = await readFile(file).catch(unreadable);
  return typeof bytes === 'string' ? bytes : createHash('sha256').update(bytes).digest('hex');
}

function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return 'folder';
  if (stats.isFIFO()) return 'named pipe';
  if (stats.isSocket()) return 'socket';
  return stats.isCharacterDevice() || stats.isBlockDevice() ? 'device' : 'other';
}

/** The text of the last assistant message that has any: a sub-agent's report (or its last words, if it was
 *  stopped while it was calling tools), or a summary. */
function finalText(messages: readonly (Anthropic.MessageParam | Anthropic.Message)[]): string {
  const said = messages.filter((message) => message.role === 'assistant').map((message) => textOfMessage(message));
  return said.findLast((text) => text.trim() !== '')?.trim() ?? '';
}

/** The text blocks of a message, joined; a message may hold a plain string instead. */
function textOfMessage(message: Anthropic.MessageParam | Anthropic.Message): string {
  if (typeof message.content === 'string') return message.content;
  const blocks: readonly (Anthropic.ContentBlockParam | Anthropic.ContentBlock)[] = message.content;
  return blocks.map((block) => (block.type === 'text' ? block.text : '')).join('');
}

// --- What keeps a trip's cost flat however long the session: nothing per request is proportional to the transcript.

/** An array that follows a source which only grows, copying only what was added since the last update: `head` comes
 *  first, then the source from `from` on. Its last item may be swapped for a stand-in (the request's marked copy)
 *  until the next update puts the original back. It starts over when the source no longer extends what was copied,
 *  as when a resume put another transcript in the same array. */
class GrowingCopy {
  readonly items: Anthropic.MessageParam[];
  /** The source's item that items.at(-1) copies. */
  private last: Anthropic.MessageParam | undefined;

  constructor(
    private readonly head: readonly Anthropic.MessageParam[] = [],
    private readonly from = 0,
  ) {
    this.items = [...head];
  }

  update(source: readonly Anthropic.MessageParam[]): Anthropic.MessageParam[] {
    let copied = this.items.length - this.head.length;
    if (copied > 0 && source[this.from + copied - 1] !== this.last) {
      this.items.length = this.head.length; // not the source copied so far: start over
      copied = 0;
    }
    if (copied > 0) this.items[this.items.length - 1] = this.last!; // the original again, in place of a stand-in
    for (let i = this.from + copied; i < source.length; i++) this.items.push(source[i]!);
    this.last = this.items.length > this.head.length ? this.items.at(-1) : undefined;
    return this.items;
  }
}

const requestCopies = new WeakMap<readonly Anthropic.MessageParam[], GrowingCopy>();

/** The array a request sends for `view`: one per view array (the transcript, or the compacted view), extended by
 *  what the view gained since the last request; markCacheBreakpoint swaps its last message for a marked copy. */
function requestCopy(view: readonly Anthropic.MessageParam[]): Anthropic.MessageParam[] {
  let copy = requestCopies.get(view);
  if (copy === undefined) requestCopies.set(view, (copy = new GrowingCopy()));
  return copy.update(view);
}

const compactedCopies = new WeakMap<Compaction, GrowingCopy>();

/** [summary, ...messages.slice(keptFrom)], built once per compaction and then only extended. */
function compactedCopy(compaction: Compaction, messages: readonly Anthropic.MessageParam[]) {
  let copy = compactedCopies.get(compaction);
  if (copy === undefined) {
    copy = new GrowingCopy([deepFreeze(summaryMessage(compaction.summary))], compaction.keptFrom);
    compactedCopies.set(compaction, copy);
  }
  return copy.update(messages);
}

const measuredChars = new WeakMap<Anthropic.MessageParam, number>();

/** estimateTokens(messages), with each message's JSON measured once and remembered: a message never changes once
 *  the model may have seen it (freezeNewMessages), so neither does its length. */
function estimateMessages(messages: readonly Anthropic.MessageParam[]): number {
  let chars = messages.length === 0 ? 2 : messages.length + 1; // "[", "]" and the commas between
  for (const message of messages) {
    let length = measuredChars.get(message);
    if (length === undefined) measuredChars.set(message, (length = JSON.stringify(message).length));
    chars += length;
  }
  return Math.ceil(chars / 3.5);
}

/** Prevents a context hook, or anything else, from changing a message the model may have seen: the prompt cache
 *  would miss, and the session file would no longer hold what was sent. New messages are frozen, deeply, before
 *  the hooks see them; the walk back stops at the first one already frozen, so it costs what was appended. */
function freezeNewMessages(messages: Anthropic.MessageParam[]): Anthropic.MessageParam[] {
  for (let i = messages.length - 1; i >= 0 && !Object.isFrozen(messages[i]); i--) deepFreeze(messages[i]);
  return messages;
}

function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const child of Object.values(value)) deepFreeze(child);
  return value;
}

/** Prevents a context hook from changing the array it was shown (the transcript itself, uncopied): it gets a view
 *  whose every write throws. If it returns that view unchanged, the array behind it goes on to the next hook. */
async function runReadOnly(
  messages: readonly Anthropic.MessageParam[],
  hook: (shown: readonly Anthropic.MessageParam[]) => Promise<readonly Anthropic.MessageParam[]>,
): Promise<readonly Anthropic.MessageParam[]> {
  const refuse = (): never => {
    throw new TypeError('a context hook may not change the messages it is shown: return a new array instead');
  };
  const shown = new Proxy(messages, { set: refuse, defineProperty: refuse, deleteProperty: refuse });
  const returned = await hook(shown);
  return returned === shown ? messages : returned;
}

// --- Small helpers the agent uses: tool schemas, timeouts, a bounded pool, token accounting, the /context numbers.

const TOOL_DEFINITIONS = new WeakMap<Tool, Anthropic.Tool>();

/** A tool as the model is shown it: name, description, and the JSON Schema of its input. Built once per tool and
 *  shared by every agent that has it: converting the schema was a fifth of `createAgent`'s time. */
export function toolDefinition(tool: Tool): Anthropic.Tool {
  let definition = TOOL_DEFINITIONS.get(tool);
  if (definition === undefined) {
    const { $schema: _ignored, ...schema } = z.toJSONSchema(tool.input, { io: 'input' });
    definition = { name: tool.name, description: tool.description, input_schema: { ...schema, type: 'object' } };
    TOOL_DEFINITIONS.set(tool, definition);
  }
  return definition;
}

/** What is wrong with a call's arguments, or null. The depth comes first: the echo below, the session file and the
 *  SDK all use JSON.stringify, which overflows the stack a few thousand levels down. */
function schemaProblem(tool: Tool, input: unknown): string | null {
  const refused = `invalid arguments for ${tool.name}`;
  if (nestedDeeperThan(input, MAX_INPUT_DEPTH)) return `${refused}: nested deeper than ${MAX_INPUT_DEPTH} levels`;
  const parsed = tool.input.safeParse(input);
  if (parsed.success) return null;
  return `${refused}: ${issuesText(parsed.error)}. You sent: ${JSON.stringify(input)}`;
}

const issuesText = (error: z.ZodError) =>
  error.issues.map((issue) => `${issue.path.join('.') || '(input)'}: ${issue.message}`).join('; ');

/** Tool arguments nest a few levels; past this many, a call is refused (see schemaProblem). */
export const MAX_INPUT_DEPTH = 64;

/** Whether objects and arrays in `value` nest more than `levels` deep; the walk stops there, so any depth is safe. */
function nestedDeeperThan(value: unknown, levels: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  return levels === 0 || Object.values(value).some((child) => nestedDeeperThan(child, levels - 1));
}

/** Prevents one absurd reply from ending the session: a tool input nested deeper than MAX_INPUT_DEPTH could never
 *  be sent back (JSON.stringify overflows), so it keeps its first levels only, still too deep for validation to let
 *  the call run, which tells the model why. */
function withShallowInputs(reply: Anthropic.Message): Anthropic.Message {
  const tooDeep = (block: Anthropic.ContentBlock) =>
    block.type === 'tool_use' && nestedDeeperThan(block.input, MAX_INPUT_DEPTH);
  if (!reply.content.some(tooDeep)) return reply;
  const content = reply.content.map((block) =>
    block.type === 'tool_use' && tooDeep(block)
      ? { ...block, input: cutBelow(block.input, MAX_INPUT_DEPTH + 1) }
      : block,
  );
  return { ...reply, content };
}

/** `value` with whatever nests deeper than `levels` replaced by a note. */
function cutBelow(value: unknown, levels: number): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (levels === 0) return '[cut: nested too deep]';
  if (Array.isArray(value)) return value.map((item) => cutBelow(item, levels - 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, cutBelow(item, levels - 1)]));
}

/** Waits for `work`; once `signal` aborts, waits at most `graceMs` more, then settles with `fallback`. */
async function settleOrAbandon<T>(work: Promise<T>, signal: AbortSignal, graceMs: number, fallback: T): Promise<T> {
  let giveUp = () => {};
  const abandoned = new Promise<T>((resolve) => {
    giveUp = () => void setTimeout(() => resolve(fallback), graceMs).unref();
  });
  if (signal.aborted) giveUp();
  else signal.addEventListener('abort', giveUp, { once: true });
  try {
    return await Promise.race([work, abandoned]);
  } finally {
    signal.removeEventListener('abort', giveUp);
  }
}

/** How many calls in a row, ending with `call`, had its name and arguments: read back through the transcript from
 *  `call` until a different call (only as far back as the row goes, so a long session costs no more). */
function timesInARow(messages: readonly Anthropic.MessageParam[], call: Anthropic.ToolUseBlock): number {
  const key = JSON.stringify([call.name, call.input]);
  let [repeats, reached] = [0, false];
  for (let m = messages.length - 1; m >= 0; m--) {
    const { role, content } = messages[m]!;
    if (role !== 'assistant' || typeof content === 'string') continue;
    for (let b = content.length - 1; b >= 0; b--) {
      const block = content[b]!;
      if (block.type !== 'tool_use' || !(reached ||= block.id === call.id)) continue;
      if (JSON.stringify([block.name, block.input]) !== key) return repeats;
      repeats++;
    }
  }
  return repeats;
}

/** Where the window goes now: the numbers behind /context. */
export function contextBreakdown(agent: Agent): ContextBreakdown {
  const projectFiles = agent.contextFiles.reduce((sum, file) => sum + file.tokens, 0);
  const systemPrompt = estimateTokens(agent.system[0]?.text ?? '') - projectFiles;
  const toolDefinitions = estimateTokens(agent.toolDefinitions);
  const messages = estimateMessages(compactedView(agent, agent.messages));
  const free = Math.max(agent.contextWindow - (systemPrompt + projectFiles + toolDefinitions + messages), 0);
  return { window: agent.contextWindow, systemPrompt, toolDefinitions, projectFiles, messages, free };
}

/** Where the window goes, in estimated tokens. */
export interface ContextBreakdown {
  window: number;
  systemPrompt: number;
  toolDefinitions: number;
  projectFiles: number;
  messages: number;
  free: number;
}

/** Runs a list of tasks, at most `limit` at a time; results come back in the list's order. */
async function runConcurrently<T>(tasks: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < tasks.length; i = next++) results[i] = await tasks[i]!();
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  if (!Number.isFinite(ms)) return promise;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** A request the API found too long gets one forced compaction and one retry (see callModel). */
const isPromptTooLong = (error: unknown) =>
  isApiError(error) && error.status === 400 && /prompt is too long/i.test(error.message);

export interface UsageTotals {
  input: number;
  cacheWrite: number;
  cacheRead: number;
  output: number;
  /** Dollars, or null when the model's price is unknown: never a made-up zero. */
  costUsd: number | null;
}

const totalTokens = (u: UsageTotals) => u.input + u.cacheWrite + u.cacheRead + u.output;

/** What a run spent, its sub-agents included, when it halted: dollars are null when a price is unknown. */
export type Spent = { tokens: number; costUsd: number | null };

/** A run's spending against its token and dollar limits, shared by every loop in the run (the parent's and its
 *  sub-agents'): each adds its usage as it comes in, and checks what is left before each model call. */
export interface Ledger {
  readonly maxTokens: number | undefined;
  readonly maxCostUsd: number | undefined;
  readonly spent: UsageTotals;
}

/** Nothing used yet: the cost starts at zero only if the model has a price. */
const noUsage = (model: Model): UsageTotals => ({
  input: 0,
  cacheWrite: 0,
  cacheRead: 0,
  output: 0,
  costUsd: priceOf(model) ? 0 : null,
});

/** A new run's ledger: nothing spent yet, against the budgets' token and dollar limits. */
function openLedger({ budgets, model }: Settings): Ledger {
  return { maxTokens: budgets.maxTokens, maxCostUsd: budgets.maxCostUsd, spent: noUsage(model) };
}

/** One model call's usage goes to the session's totals and to the ledger of the run in progress. */
function spend(agent: Agent, usage: Anthropic.Usage): void {
  addUsage(agent.usage, agent.config.model, usage);
  addUsage(agent.ledger.spent, agent.config.model, usage);
}

/** Adds a reply's usage to the session's totals and the run's ledger (budgets read it), and reports it. */
function countUsage(agent: Agent, reply: Anthropic.Message, turn: number): void {
  const { usage, content } = reply;
  spend(agent, usage);
  const cached = (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
  const tokens = usage.input_tokens + cached + usage.output_tokens;
  agent.lastRequest = { tokens, messages: agent.messages.length, keptFrom: agent.compaction?.keptFrom ?? 0 };
  const calls = content.filter((block) => block.type === 'tool_use').length;
  const totals = { ...agent.usage };
  agent.config.onEvent({ type: 'reply', turn, stopReason: reply.stop_reason, calls, content, usage, totals });
}

/** A budget halt says which limit ran out and what the run, sub-agents included, had spent by then. */
function budgetHalt(agent: Agent, budget: BudgetName, limit = 0): Halt {
  const spent = { tokens: totalTokens(agent.ledger.spent), costUsd: agent.ledger.spent.costUsd };
  return { kind: 'budget', budget, limit, spent };
}

/** Adds one response's usage to the totals; unknown prices keep the cost unknown. */
function addUsage(totals: UsageTotals, model: Model, usage: Anthropic.Usage): void {
  const cost = costOf(priceOf(model), usage);
  totals.input += usage.input_tokens;
  totals.cacheWrite += usage.cache_creation_input_tokens ?? 0;
  totals.cacheRead += usage.cache_read_input_tokens ?? 0;
  totals.output += usage.output_tokens;
  totals.costUsd = totals.costUsd === null || cost === null ? null : totals.costUsd + cost;
}

// --- The command runner: the verify gate's hands.

export interface CommandRun {
  exitCode: number | null;
  timedOut: boolean;
  /** stdout and stderr interleaved, capped: the head and the tail are kept. */
  output: string;
}

const OUTPUT_HEAD = 8 * 1024;
const OUTPUT_TAIL = 8 * 1024;

/** Runs a shell command in the project with a timeout; keeps the start and the end of its output. */
export function runCommand(command: string, cwd: string, timeoutMs: number, signal: AbortSignal): Promise<CommandRun> {
  return new Promise((resolve) => {
    const child = spawn(command, { cwd, shell: true, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let head = '';
    let tail = '';
    let dropped = 0;
    const collect = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      const room = Math.max(OUTPUT_HEAD - head.length, 0);
      head += text.slice(0, room);
      tail += text.slice(room);
      if (tail.length > OUTPUT_TAIL) {
        dropped += tail.length - OUTPUT_TAIL;
        tail = tail.slice(-OUTPUT_TAIL);
      }
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    // The whole process group goes, so a test runner's children cannot outlive the timeout.
    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, timeoutMs);
    if (signal.aborted) kill();
    else signal.addEventListener('abort', kill, { once: true });
    const done = (exitCode: number | null) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', kill);
      const cut = dropped > 0 ? `\n[... ${dropped} characters of output left out ...]\n` : '';
      resolve({ exitCode, timedOut, output: head + cut + tail || '(no output)' });
    };
    child.on('error', (error) => {
      collect(Buffer.from(error.message));
      done(null);
    });
    child.on('close', (code) => done(code));
  });
}

// --- Prices: what a token costs, so a budget in dollars can be kept.

/** Dollars per million tokens of input and of output. */
export interface Price {
  input: number;
  output: number;
}

/** A model missing here, and given no --price, has an unknown cost, shown as such. */
const PRICES: Record<string, Price> = {
  'claude-opus-4-5': { input: 5, output: 25 },
  'claude-opus-4-6': { input: 5, output: 25 },
  'claude-sonnet-4-5': { input: 3, output: 15 },
  'claude-sonnet-4-6': { input: 3, output: 15 },
  'claude-haiku-4-5': { input: 1, output: 5 },
};

/** The model's own price (--price), else the table's for its name (a dated name is priced as its family). */
export function priceOf(model: Pick<Model, 'name' | 'price'>): Price | undefined {
  return model.price ?? PRICES[model.name.replace(/-\d{8}$/, '')];
}

/** Cache writes cost 1.25× input, cache reads 0.1×: why byte-stable requests matter. */
export function costOf(price: Price | undefined, usage: Anthropic.Usage): number | null {
  if (!price) return null;
  const inputLike =
    usage.input_tokens + 1.25 * (usage.cache_creation_input_tokens ?? 0) + 0.1 * (usage.cache_read_input_tokens ?? 0);
  return (inputLike * price.input + usage.output_tokens * price.output) / 1_000_000;
}

/** The same model with the price --price gave it. */
export function withPrice(model: Model, price: Price): Model {
  return {
    name: model.name,
    price,
    complete: (request, options) => model.complete(request, options),
    ...(model.contextWindow && { contextWindow: model.contextWindow.bind(model) }),
  };
}

// --- The session file: the transcript on disk, one JSON line per entry, only ever appended.

/** Version 2 adds what a replay needs: the options, every reply as received, and what the person did. */
export const SESSION_VERSION = 2;
/** Version 1 files still resume; they cannot be replayed. */
const RESUMABLE_VERSIONS = [1, 2];

export type SessionEntry =
  | SessionHeader
  | { type: 'message'; message: Anthropic.MessageParam }
  | { type: 'usage'; turn: number; usage: Anthropic.Usage }
  | { type: 'reply'; turn: number; stopReason: StopReason; content: Anthropic.ContentBlock[]; usage: Anthropic.Usage }
  | CompactionEntry
  | { type: 'subagent'; id: string; description: string; file: string }
  | { type: 'halt'; halt: Halt }
  | { type: 'task'; text: string }
  | { type: 'approval'; tool: string; preview: string; answer: ApprovalAnswer }
  | { type: 'steer'; text: string; afterEvents: number }
  | { type: 'interrupt'; afterEvents: number };

type StopReason = Anthropic.StopReason | null;

interface CompactionEntry {
  type: 'compaction';
  summary: string;
  keptFrom: number;
  usage: Anthropic.Usage;
  /** The API had refused the request before it as too long (a replay refuses it too); missing: it had not. */
  promptTooLong?: true;
}

export interface SessionHeader {
  type: 'session';
  version: number;
  model: string;
  root: string;
  startedAt: string;
  /** Since version 2: the window the agent worked with, from the model's metadata or --context-window. */
  contextWindow?: number;
  /** Since version 2: the protected files' hashes when the session started, so a resume cannot launder a change. */
  protected?: Record<string, string>;
  /** Since version 2: the options that change what a run does, so a replay can use them again. */
  options?: RecordedOptions;
}

export interface RecordedOptions {
  verify: string | undefined;
  verifyTimeoutMs: number;
  protect: string[];
  budgets: Budgets;
  /** yes: --yes; ask: a person was asked (the answers are recorded); deny: nobody could be asked. */
  approval: 'yes' | 'ask' | 'deny';
  tools: string[];
  contextWindow: number | undefined;
  contextFiles: boolean;
  taskModel: string | undefined;
}

/** What the person did, told to the session file so a replay can do the same at the same point. */
export type ProgramEvent =
  | { type: 'task'; text: string }
  | { type: 'approval'; tool: string; preview: string; answer: ApprovalAnswer }
  | { type: 'steer'; text: string }
  | { type: 'interrupt' };

/** The events a replay sees again in the same order; a steer or an interrupt is placed after the Nth of them.
 *  Streamed text and notices are left out: their number depends on the network, not on the harness. */
const REPLAYED_EVENTS = new Set<AgentEvent['type']>([
  'request',
  'reply',
  'message',
  'call',
  'running',
  'result',
  'decision',
  'gate',
  'compaction',
  'halt',
]);

/** Writes each event worth keeping as it happens, synchronously, so a crash loses nothing appended.
 *  A sub-agent's events go to a file of their own, linked from this one. */
export function sessionRecorder(
  file: string,
  header: SessionHeader | null,
  secrets: string[],
): (event: AgentEvent) => void {
  mkdirSync(path.dirname(file), { recursive: true });
  // A line torn by a crash must stay its own line, or the next entry would be glued to it.
  if (!endsWithNewline(file)) appendFileSync(file, '\n');
  const write = (entry: SessionEntry) => {
    let line = JSON.stringify(entry);
    for (const secret of secrets) if (secret.length >= 8) line = line.split(secret).join('[redacted]');
    appendFileSync(file, `${line}\n`);
  };
  if (header) write(header);
  const children = new Map<string, (event: AgentEvent) => void>();
  let events = 0; // of the current task, counted as a replay counts them
  let unanswered = false; // a request went out and neither a reply nor a halt came back: the API refused it
  return (event) => {
    if (REPLAYED_EVENTS.has(event.type)) events++;
    if (event.type === 'task') events = 0;
    if (event.type === 'task' || event.type === 'approval') write(event);
    if (event.type === 'steer' || event.type === 'interrupt') write({ ...event, afterEvents: events });
    if (event.type === 'message') write({ type: 'message', message: event.message });
    if (event.type === 'reply') {
      const { turn, stopReason, content, usage } = event;
      write({ type: 'usage', turn, usage });
      write({ type: 'reply', turn, stopReason, content, usage });
    }
    if (event.type === 'compaction') {
      const { summary, keptFrom, usage } = event;
      write({ type: 'compaction', summary, keptFrom, usage, ...(unanswered && { promptTooLong: true as const }) });
      unanswered = false; // one refusal, one summary: a second compaction before the retry answered no refusal
    }
    if (event.type === 'request' || event.type === 'reply' || event.type === 'halt')
      unanswered = event.type === 'request';
    if (event.type === 'halt') write({ type: 'halt', halt: event.halt });
    if (event.type === 'subagent') {
      let child = children.get(event.id);
      if (child === undefined) {
        const childFile = file.replace(/(\.jsonl)?$/, `.${event.id}.jsonl`);
        write({ type: 'subagent', id: event.id, description: event.description, file: path.basename(childFile) });
        child = sessionRecorder(childFile, header && { ...header, startedAt: new Date().toISOString() }, secrets);
        children.set(event.id, child);
      }
      child(event.event);
    }
  };
}

/** Whether a file is missing, empty or ends with a newline, from its last byte alone: a session has no size limit. */
function endsWithNewline(file: string): boolean {
  const size = statSync(file, { throwIfNoEntry: false })?.size ?? 0;
  if (size === 0) return true;
  const fd = openSync(file, 'r');
  try {
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    return last[0] === 0x0a;
  } finally {
    closeSync(fd);
  }
}

export interface LoadedSession {
  messages: Anthropic.MessageParam[];
  compaction: Compaction | null;
  /** Sub-agents the session started, so a new one gets a file of its own. */
  subAgents: number;
  /** A user message answering calls that never finished, to append so the transcript is valid. */
  repair: Anthropic.MessageParam | null;
  /** The protected files' hashes when the session first started (version 2), or null. */
  protectedAtStart: Map<string, string> | null;
  warnings: string[];
}

/** Rebuilds a transcript from a session file of any size, streamed line by line. Each entry is checked against the
 *  schema of its type; a bad line is dropped with a warning naming it (a torn last line: the process died while
 *  writing it; any other: corrupted), and the messages are repaired into a transcript the API accepts. */
export async function loadSession(file: string): Promise<LoadedSession> {
  const warnings = warningList();
  const transcript = transcriptRepair(file, warnings.add);
  let compaction: Compaction | null = null;
  let subAgents = 0;
  let protectedAtStart: Map<string, string> | null = null;
  const unknownTypes = new Map<string, { first: number; count: number }>();
  for await (const { number, text, last } of sessionLines(file)) {
    const at = `${file}:${number}`;
    const read = readEntry(text);
    if ('version' in read) {
      const readable = RESUMABLE_VERSIONS.join(' and ');
      throw new Error(`${file}: session format ${read.version}, this harness reads ${readable}`);
    }
    if ('torn' in read) {
      // Only the last line can be one the process was writing when it died; any other was damaged since.
      const why = last ? 'was cut off (the process died while writing it)' : `is corrupted (${read.torn})`;
      warnings.add(`${at} ${why}; the line was dropped`);
    } else if ('problem' in read) {
      warnings.add(`${at} is not a valid entry (${read.problem}); the line was dropped`);
    } else if ('unknown' in read) {
      const seen = unknownTypes.get(read.unknown) ?? { first: number, count: 0 };
      unknownTypes.set(read.unknown, { ...seen, count: seen.count + 1 });
    } else if (read.entry.type === 'message') {
      transcript.add(read.entry.message, number);
    } else if (read.entry.type === 'compaction') {
      const { summary, keptFrom } = read.entry;
      if (transcript.startsReply(keptFrom)) compaction = { summary, keptFrom };
      else warnings.add(`${at}: the summary's cut (message ${keptFrom}) is not at a reply; the summary is not used`);
    } else if (read.entry.type === 'session' && read.entry.protected && protectedAtStart === null) {
      protectedAtStart = new Map(Object.entries(read.entry.protected));
    } else if (read.entry.type === 'subagent') {
      subAgents++;
    }
  }
  for (const [type, { first, count }] of unknownTypes)
    warnings.add(`${file}:${first}: ${count} entries of type "${type}", unknown to this version, were skipped`);
  const repair = transcript.finish();
  return { messages: transcript.messages, compaction, subAgents, repair, protectedAtStart, warnings: warnings.list() };
}

/** The non-empty lines of a file, numbered and streamed (a session may outgrow the longest string); one line is held
 *  back, so the last one is known to be the last. */
async function* sessionLines(file: string): AsyncGenerator<{ number: number; text: string; last: boolean }> {
  let held: { number: number; text: string } | null = null;
  let number = 0;
  for await (const text of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    number++;
    if (text.trim() === '') continue;
    if (held) yield { ...held, last: false };
    held = { number, text };
  }
  if (held) yield { ...held, last: true };
}

/** At most this many warnings are listed, then a count: a badly damaged file must not flood the screen. */
const MAX_WARNINGS = 20;

function warningList() {
  const warnings: string[] = [];
  let more = 0;
  return {
    add: (text: string) => void (warnings.length < MAX_WARNINGS ? warnings.push(text) : more++),
    list: () => (more > 0 ? [...warnings, `... and ${more} more warnings like these`] : warnings),
  };
}

/** One line of a session file, read: an entry checked against the schema of its type, or what is wrong with it. */
type ReadEntry =
  | { entry: SessionEntry }
  | { torn: string } // not JSON
  | { problem: string } // JSON, but not a valid entry
  | { unknown: string } // a type this version does not know: a later version's
  | { version: number }; // a header of another format version

function readEntry(text: string): ReadEntry {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { torn: errorText(error) };
  }
  // Before anything walks it: JSON.parse takes any depth, JSON.stringify (the SDK's, when it is sent) does not.
  if (nestedDeeperThan(value, MAX_ENTRY_DEPTH)) return { problem: `nested deeper than ${MAX_ENTRY_DEPTH} levels` };
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !('type' in value))
    return { problem: `not an object with a "type": ${shortJson(value)}` };
  const { type } = value;
  const version = type === 'session' && 'version' in value ? value.version : SESSION_VERSION;
  if (typeof version === 'number' && !RESUMABLE_VERSIONS.includes(version)) return { version };
  if (typeof type !== 'string') return { problem: `"type" is not a string: ${shortJson(type)}` };
  if (!Object.hasOwn(ENTRY_SCHEMAS, type)) return { unknown: type };
  const parsed = ENTRY_SCHEMAS[type as SessionEntry['type']].safeParse(value);
  if (!parsed.success) return { problem: `a ${type} entry with ${issuesText(parsed.error)}` };
  return { entry: value as SessionEntry }; // kept as written, not as parsed: the same bytes go back to the API
}

/** An entry wraps a tool's arguments in four levels (entry, message, content, block): room for those, and a margin. */
const MAX_ENTRY_DEPTH = MAX_INPUT_DEPTH + 8;

const shortJson = (value: unknown) => {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
};

const nonBlank = z.string().refine((text) => text.trim() !== '', 'must hold more than whitespace');
const usageSchema = z.object({ input_tokens: z.number(), output_tokens: z.number() });

/** What each kind of block must hold for the API to take it back. Other kinds (an image, a server tool's block)
 *  are left to the API. */
const BLOCK_SCHEMAS: Record<string, z.ZodType | undefined> = {
  text: z.object({ text: nonBlank }),
  tool_use: z.object({ id: z.string().min(1), name: z.string().min(1), input: z.record(z.string(), z.unknown()) }),
  tool_result: z.object({ tool_use_id: z.string().min(1), is_error: z.boolean().optional() }),
  thinking: z.object({ thinking: z.string(), signature: z.string() }),
  redacted_thinking: z.object({ data: z.string() }),
};
/** The blocks only one side of the conversation sends. */
const BLOCK_SIDE: Record<string, 'user' | 'assistant' | undefined> = {
  tool_use: 'assistant',
  thinking: 'assistant',
  redacted_thinking: 'assistant',
  tool_result: 'user',
};

const messageSchema = z
  .object({
    role: z.enum(['user', 'assistant']),
    content: z.union([nonBlank, z.array(z.looseObject({ type: z.string() })).min(1, 'must not be an empty list')], {
      error: 'must be text or a non-empty list of content blocks',
    }),
  })
  .superRefine(({ role, content }, context) => {
    if (typeof content === 'string') return;
    content.forEach((block, i) => {
      const side = BLOCK_SIDE[block.type];
      if (side !== undefined && side !== role)
        context.addIssue({
          code: 'custom',
          path: ['content', i],
          message: `a ${block.type} block from the ${role}`,
        });
      for (const issue of BLOCK_SCHEMAS[block.type]?.safeParse(block).error?.issues ?? [])
        context.addIssue({ code: 'custom', path: ['content', i, ...issue.path], message: issue.message });
    });
  });

/** One schema per entry type. A field they do not name is allowed (a later version may add one), and kept: what
 *  is used is the entry as written, not as parsed. */
const ENTRY_SCHEMAS = {
  session: z.object({ version: z.number(), model: z.string(), root: z.string(), startedAt: z.string() }),
  message: z.object({ message: messageSchema }),
  usage: z.object({ turn: z.number().int().min(1), usage: usageSchema }),
  compaction: z.object({
    summary: nonBlank,
    keptFrom: z.number().int().min(1),
    usage: usageSchema,
    promptTooLong: z.literal(true).optional(),
  }),
  subagent: z.object({ id: z.string().min(1), description: z.string(), file: z.string().min(1) }),
  halt: z.object({ halt: z.object({ kind: z.enum(['accepted', 'budget', 'interrupted', 'error']) }) }),
  reply: z.object({
    turn: z.number().int().min(1),
    stopReason: z.string().nullable(),
    content: z.array(z.looseObject({ type: z.string() })),
    usage: usageSchema,
  }),
  task: z.object({ text: z.string() }),
  approval: z.object({ tool: z.string(), preview: z.string(), answer: z.object({ approved: z.boolean() }) }),
  steer: z.object({ text: z.string(), afterEvents: z.number().int().min(0) }),
  interrupt: z.object({ afterEvents: z.number().int().min(0) }),
} satisfies Record<SessionEntry['type'], z.ZodType>;

const LOST_TASK = '[The first message of this session was lost from its file.]';
const LOST_RESULT =
  'result lost: the session file has no result for this call (a lost line); it may or may not have run';
const DIED_MID_CALL = 'not run: the session ended before this call finished';

const notRunResult = (id: string, content: string): Anthropic.ToolResultBlockParam => ({
  type: 'tool_result',
  tool_use_id: id,
  content,
  is_error: true,
});

/** Prevents a damaged session file from making a session that can never be resumed (every request a 400): the
 *  messages, taken in file order, become a transcript the API accepts, whatever lines were lost, repeated or
 *  damaged, each repair reported at its line. Both directions: a call whose result was lost is answered, a result
 *  whose call was lost is dropped, a repeated call id is dropped, and a reply cannot come first. Adjacent messages
 *  of one role stay: the API joins them, and this harness writes them (a task after a run that ended on results,
 *  or a paused turn and its continuation). A message is only ever added or changed at the end, so a compaction's
 *  cut, read after the messages it counts, means what it meant when written. */
function transcriptRepair(file: string, warn: (text: string) => void) {
  const messages: Anthropic.MessageParam[] = [];
  const callIds = new Set<string>();
  let awaiting: string[] = []; // the calls of the last message, if it is a reply: the next message answers them
  const answerLost = (line: number, ids: string[]) => {
    warn(
      `${file}:${line}: ${ids.length} call(s) before this line have no result (a lost line); answered "result lost"`,
    );
    return ids.map((id) => notRunResult(id, LOST_RESULT));
  };
  const addReply = (message: Anthropic.MessageParam, line: number) => {
    if (awaiting.length > 0) messages.push({ role: 'user', content: answerLost(line, awaiting) });
    if (messages.length === 0) {
      warn(
        `${file}:${line}: the first message is a reply (the task before it was lost); a placeholder task goes first`,
      );
      messages.push(userText(LOST_TASK));
    }
    const blocks = typeof message.content === 'string' ? [] : message.content;
    const repeated = blocks.filter((block) => block.type === 'tool_use' && callIds.has(block.id));
    const content = blocks.filter((block) => !repeated.includes(block));
    awaiting = content.flatMap((block) => (block.type === 'tool_use' ? [block.id] : []));
    for (const id of awaiting) callIds.add(id);
    if (repeated.length === 0) return void messages.push(message);
    warn(`${file}:${line}: ${repeated.length} call(s) repeat the id of an earlier call (a repeated line?); dropped`);
    if (content.length > 0) messages.push({ role: 'assistant', content });
  };
  const addUserMessage = (message: Anthropic.MessageParam, line: number) => {
    const blocks: Anthropic.ContentBlockParam[] =
      typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    const results = blocks.filter((block) => block.type === 'tool_result');
    const others = blocks.filter((block) => block.type !== 'tool_result');
    const kept = results.filter(
      (r, i) => awaiting.includes(r.tool_use_id) && results.findIndex((s) => s.tool_use_id === r.tool_use_id) === i,
    );
    const missing = awaiting.filter((id) => !kept.some((r) => r.tool_use_id === id));
    awaiting = [];
    const resultsFirst = blocks.every((block, i) => (block.type === 'tool_result') === i < results.length);
    if (kept.length === results.length && missing.length === 0 && resultsFirst) return void messages.push(message);
    if (kept.length < results.length)
      warn(`${file}:${line}: ${results.length - kept.length} result(s) answer no call just before them; dropped`);
    const answers = missing.length > 0 ? answerLost(line, missing) : [];
    if (kept.length === results.length && missing.length === 0) warn(`${file}:${line}: results moved before the text`);
    const content = [...kept, ...answers, ...others];
    if (content.length > 0) messages.push({ role: 'user', content });
  };
  return {
    messages,
    add: (message: Anthropic.MessageParam, line: number) =>
      message.role === 'assistant' ? addReply(message, line) : addUserMessage(message, line),
    /** Whether a compaction may cut at this message: the verbatim part must start with a reply (see chooseCut). */
    startsReply: (index: number) => messages[index]?.role === 'assistant',
    /** The answer to calls the session ended in the middle of: appended by resume, so it is written to the file. */
    finish: (): Anthropic.MessageParam | null => {
      if (awaiting.length === 0) return null;
      warn(
        `${file}: ${awaiting.length} call(s) had no result (the process died mid-call); they are answered "not run"`,
      );
      return { role: 'user', content: awaiting.map((id) => notRunResult(id, DIED_MID_CALL)) };
    },
  };
}

/** Continues a loaded session: its messages become the transcript, and unanswered calls get answered. */
export function resume(agent: Agent, loaded: LoadedSession): void {
  agent.messages.length = 0;
  for (const message of loaded.messages) agent.messages.push(message); // not push(...all): no argument limit
  agent.toolContext.seen.clear(); // what was read before must be read again before it is edited
  agent.compaction = loaded.compaction;
  agent.subAgentsStarted = loaded.subAgents;
  agent.lastRequest = null;
  // Prevents laundering a protected file between two runs: the gate compares with the session's first start.
  for (const [file, hash] of loaded.protectedAtStart ?? []) {
    if (agent.protectedAtStart.has(file)) agent.protectedAtStart.set(file, hash);
  }
  for (const warning of loaded.warnings) agent.config.onEvent({ type: 'notice', text: warning });
  if (loaded.repair) append(agent, loaded.repair);
}

// --- Replay: a recorded session run again through this harness, offline, and compared message by message.

/** Everything a replay plays back: the tasks, each model reply in call order, and what the person did. */
interface Recording {
  header: SessionHeader & { options: RecordedOptions };
  tasks: { text: string; actions: RecordedAction[] }[];
  /** The parent's model calls in order, compaction summaries and requests the API refused included. */
  replies: ScriptEntry[];
  /** Each sub-agent's calls. */
  children: RecordedChild[];
  approvals: Extract<SessionEntry, { type: 'approval' }>[];
  messages: Anthropic.MessageParam[];
  halts: Halt[];
}

type RecordedAction = Extract<SessionEntry, { type: 'steer' | 'interrupt' }>;

interface RecordedChild {
  /** task-1, task-2, …: the agent numbers them in the order it starts them, the same in a replay. */
  id: string;
  replies: ScriptEntry[];
}

/** Reads a session for replay. Anything that makes it unreplayable (a torn line, version 1, a missing linked file,
 *  a block type the scripted model cannot play) is an error that names the file and the line. */
async function readRecording(file: string): Promise<Recording> {
  const entries = await readEntries(file);
  const header = entries[0];
  if (header?.type !== 'session') throw new Error(`${file}: the first line is not a session header`);
  if (header.version !== SESSION_VERSION || header.options === undefined) {
    throw new Error(`${file}: session format ${header.version} records no replies; it can be resumed, not replayed`);
  }
  const recording: Recording = {
    header: { ...header, options: header.options },
    tasks: [],
    replies: [],
    children: [],
    approvals: [],
    messages: [],
    halts: [],
  };
  for (const entry of entries) {
    if (entry.type === 'message') recording.messages.push(entry.message);
    if (entry.type === 'reply' || entry.type === 'compaction') recording.replies.push(...scriptedCalls(entry));
    if (entry.type === 'task') recording.tasks.push({ text: entry.text, actions: [] });
    if (entry.type === 'steer' || entry.type === 'interrupt') recording.tasks.at(-1)?.actions.push(entry);
    if (entry.type === 'approval') recording.approvals.push(entry);
    if (entry.type === 'halt') recording.halts.push(entry.halt);
    if (entry.type === 'subagent') {
      const child = await readEntries(path.join(path.dirname(file), entry.file));
      const replies = child.flatMap((e) => (e.type === 'reply' || e.type === 'compaction' ? scriptedCalls(e) : []));
      recording.children.push({ id: entry.id, replies });
    }
  }
  if (recording.tasks.length === 0) throw new Error(`${file}: the session records no task`);
  return recording;
}

/** Every line of a session file as an entry, checked like a resume checks it; any bad line is an error naming it,
 *  since a replay of a damaged recording would compare against the wrong transcript. */
async function readEntries(file: string): Promise<SessionEntry[]> {
  const entries: SessionEntry[] = [];
  try {
    for await (const { number, text } of sessionLines(file)) {
      const read = readEntry(text);
      if ('entry' in read) entries.push(read.entry);
      else if ('torn' in read) throw new Error(`${file}:${number} is not a whole JSON line (torn or corrupted)`);
      else if ('problem' in read) throw new Error(`${file}:${number} is not a valid entry (${read.problem})`);
      else if ('unknown' in read) throw new Error(`${file}:${number} has an entry type this harness does not know`);
      else throw new Error(`${file}: session format ${read.version} cannot be replayed`);
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw code === undefined ? error : new Error(`${file}: cannot be read (${code})`);
  }
  return entries;
}

/** A recorded reply in the scripted model's terms: the same blocks, ids, stop reason and usage. A summary the API
 *  asked for by refusing a request as too long comes after that refusal, so the replay compacts and retries too. */
function scriptedCalls(entry: Extract<SessionEntry, { type: 'reply' | 'compaction' }>): ScriptEntry[] {
  const { input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens } = entry.usage;
  const usage = { input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens };
  if (entry.type === 'compaction') {
    const summary = { content: [{ type: 'text' as const, text: entry.summary }], usage };
    return entry.promptTooLong ? [refusedAsTooLong, summary] : [summary];
  }
  const content = entry.content.map((block): ScriptedBlock => {
    if (block.type === 'text') return { type: 'text', text: block.text };
    if (block.type === 'tool_use') return { type: 'tool_use', name: block.name, input: block.input, id: block.id };
    if (block.type === 'thinking') return { type: 'thinking', thinking: block.thinking, signature: block.signature };
    throw new Error(`a reply holds a ${block.type} block, which a replay cannot play back`);
  });
  return [{ content, stop_reason: entry.stopReason ?? 'end_turn', usage }];
}

/** The API's refusal of a request that is too long, shaped as the SDK reports it (isApiError), without loading it. */
function refusedAsTooLong(): never {
  const apiMessage = 'prompt is too long (the recorded request was refused)';
  throw Object.assign(new Error(`400 ${apiMessage}`), { status: 400, apiMessage });
}

/** The sub-agents' model, told by `calling` which child sends each request event. A child's first call is answered
 *  from the recorded child with its id: the request event comes just before the call, with nothing in between. A
 *  later call, a summary included (which sends no request event), carries the child's latest reply as its last
 *  assistant message, and goes to the child that was given that reply, with the child's next recorded reply. */
function childReplay(children: RecordedChild[], name: string) {
  let caller: string | undefined; // the child whose request event came last
  const given = new Map<RecordedChild, number>(); // replies given so far, by child
  // A reply as the transcript keeps it: its blocks without empty texts, each named by its text, call id or signature.
  const keyOf = (blocks: readonly (ScriptedBlock | Anthropic.ContentBlockParam)[]) =>
    JSON.stringify(
      blocks.flatMap((block) => {
        if (block.type === 'text') return block.text.trim() === '' ? [] : [block.text];
        if (block.type === 'tool_use') return [block.id];
        return [block.type === 'thinking' ? block.signature : block.type];
      }),
    );
  const childOf = (request: ModelRequest): RecordedChild | undefined => {
    const latest = request.messages.findLast((message) => message.role === 'assistant');
    if (latest === undefined) return children.find((c) => c.id === caller && !given.has(c));
    const key = keyOf(typeof latest.content === 'string' ? [{ type: 'text', text: latest.content }] : latest.content);
    const gave = (c: RecordedChild) => c.replies.slice(0, given.get(c) ?? 0);
    return children.find((c) => gave(c).some((entry) => typeof entry !== 'function' && keyOf(entry.content) === key));
  };
  const answer = (request: ModelRequest): ScriptedReply => {
    const child = childOf(request);
    const next = child === undefined ? 0 : (given.get(child) ?? 0);
    if (child !== undefined) given.set(child, next + 1);
    const entry = child?.replies[next] ?? say('(the recording has no reply for this sub-agent call)');
    return typeof entry === 'function' ? entry(request) : entry;
  };
  const calls = children.reduce((n, c) => n + c.replies.length + 1, 0);
  return {
    model: new ScriptedModel(
      Array.from({ length: calls }, () => answer),
      name,
    ),
    calling: (id: string) => (caller = id),
  };
}

/** Where a replayed message first differs from the recorded one, in a line; null when they are the same. */
export function firstDifference(
  index: number,
  expected: Anthropic.MessageParam | undefined,
  got: Anthropic.MessageParam,
): string | null {
  if (expected === undefined) return `message #${index} (${got.role}): the recording ends before it`;
  if (expected.role !== got.role)
    return `message #${index}: expected a ${expected.role} message, got a ${got.role} one`;
  const blocks = (m: Anthropic.MessageParam) => (typeof m.content === 'string' ? [m.content] : m.content);
  const [want, have] = [blocks(expected), blocks(got)];
  for (let i = 0; i < Math.max(want.length, have.length); i++) {
    const [a, b] = [canonical(want[i]), canonical(have[i])];
    if (a === b) continue;
    const kind = (block: unknown) =>
      typeof block === 'object' && block !== null && 'type' in block ? block.type : 'text';
    let at = 0;
    while (a[at] === b[at]) at++;
    const around = (text: string) => JSON.stringify(text.slice(Math.max(at - 20, 0), at + 40));
    const where = `message #${index} (${got.role}), block ${i} (${String(kind(want[i] ?? have[i]))})`;
    return `${where}: expected …${around(a)}…, got …${around(b)}…`;
  }
  return null;
}

/** JSON with every object's keys sorted: the same block, whichever order its fields arrived in. */
function canonical(value: unknown): string {
  if (value === undefined) return '(none)';
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => (x < y ? -1 : 1)))
      : v,
  );
}

/** --replay: runs the recorded tasks through this harness with the recorded replies and answers, and stops at the
 *  first message that differs from the recording. Exit 0: identical; 1: it differs; 2: it cannot be replayed. */
async function replaySession(file: string, options: CliOptions, out: Output): Promise<number> {
  const tell = (text: string) => out.write(`replay: ${text}\n`);
  let recording: Recording;
  try {
    recording = await readRecording(path.resolve(file));
  } catch (error) {
    tell(errorText(error));
    return EXIT.usage;
  }
  const recorded = recording.header.options;
  const overridden = REPLAY_OVERRIDES.filter((flag) => options.given.includes(flag));
  for (const flag of overridden) tell(`--${flag} from the command line replaces the recorded value`);
  const pick = <T>(flags: string[], mine: T, theirs: T) => (flags.some((f) => overridden.includes(f)) ? mine : theirs);
  const answers = [...recording.approvals];
  const root = await realpath(options.root);
  const replayedApprover: Approver = async ({ tool, preview }) => {
    const hash = previewHash(preview);
    const at = answers.findIndex((a) => a.tool === tool && a.preview === hash);
    return at < 0
      ? { approved: false, reason: 'the recording has no answer to this question' }
      : answers.splice(at, 1)[0]!.answer;
  };
  const approval = pick(['yes'], options.yes ? 'yes' : recorded.approval, recorded.approval);
  let expected = 0;
  let difference: string | null = null;
  let counted = 0;
  let run = new AbortController();
  let pending: RecordedAction[] = [];
  // The same configuration the command line builds (a forker's hooks included), with the recorded options.
  const replayed: CliOptions = {
    ...options,
    verify: pick(['verify'], options.verify, recorded.verify),
    verifyTimeoutMs: pick(['verify-timeout'], options.verifyTimeoutMs, recorded.verifyTimeoutMs),
    protect: pick(['protect'], options.protect, recorded.protect),
    budgets: pick(['max-turns', 'max-tokens', 'max-cost', 'timeout'], options.budgets, recorded.budgets),
    contextWindow: pick(['context-window'], options.contextWindow, recorded.contextWindow),
    contextFiles: pick(['no-context-files'], options.contextFiles, recorded.contextFiles),
  };
  const children = childReplay(recording.children, recorded.taskModel ?? recording.header.model);
  const made = {
    root,
    model: new ScriptedModel(recording.replies, recording.header.model),
    taskModel: children.model,
    approve: approval === 'yes' ? approveAll : approval === 'ask' ? replayedApprover : null,
  };
  const agent: Agent = await createAgent(
    configFromCli(replayed, made, (event) => {
      if (event.type === 'subagent' && event.event.type === 'request') children.calling(event.id);
      if (event.type === 'message' && difference === null) {
        const recorded = recording.messages[expected];
        difference = firstDifference(
          expected,
          recorded && rebased(recorded, recording.header.root, root),
          event.message,
        );
        expected++;
        if (difference !== null) run.abort();
      }
      if (!REPLAYED_EVENTS.has(event.type)) return;
      counted++;
      for (const action of pending.filter((a) => a.afterEvents === counted)) {
        if (action.type === 'steer') agent.steering.push(action.text);
        else run.abort();
      }
    }),
  );
  for (const [i, task] of recording.tasks.entries()) {
    [run, counted, pending] = [new AbortController(), 0, task.actions];
    const halt = await runTask(agent, task.text, run.signal);
    if (difference === null && canonical(halt) !== canonical(recording.halts[i])) {
      difference = `the halt of task ${i + 1}: expected ${canonical(recording.halts[i])}, got ${canonical(halt)}`;
    }
    if (difference !== null) break;
  }
  if (difference === null && expected < recording.messages.length) {
    difference = `the replay ended after ${expected} messages; the recording has ${recording.messages.length}`;
  }
  if (difference !== null) {
    tell(`differs at ${difference}`);
    return EXIT.notAccepted;
  }
  tell(`identical: ${expected} messages, ${recording.tasks.length} task(s), ${recording.replies.length} model replies`);
  return EXIT.accepted;
}

/** A recorded message as if the session had run in `to`: tools name the project root in some answers. */
function rebased(message: Anthropic.MessageParam, from: string, to: string): Anthropic.MessageParam {
  const json = JSON.stringify;
  return JSON.parse(json(message).split(json(from).slice(1, -1)).join(json(to).slice(1, -1))) as Anthropic.MessageParam;
}

/** The options a replay takes from the recording unless the command line gives them. */
const REPLAY_OVERRIDES = [
  'verify',
  'verify-timeout',
  'protect',
  'yes',
  'max-turns',
  'max-tokens',
  'max-cost',
  'timeout',
  'context-window',
  'no-context-files',
];

/** A short fingerprint of an approval's preview: a replay gives each recorded answer to the same question. */
const previewHash = (preview: string) => createHash('sha256').update(preview).digest('hex').slice(0, 16);

// --- The command line: exit codes, options, the REPL and the printers.

export const EXIT = { accepted: 0, notAccepted: 1, usage: 2, interrupted: 130 } as const;

export function exitCodeFor(h: Halt): number {
  if (h.kind === 'accepted') return EXIT.accepted;
  if (h.kind === 'interrupted') return EXIT.interrupted;
  return EXIT.notAccepted;
}

export function describeHalt(h: Halt): string {
  switch (h.kind) {
    case 'accepted':
      return h.verifiedBy === null
        ? 'accepted (unverified: no --verify command was given)'
        : `accepted (verified by \`${h.verifiedBy}\`)`;
    case 'budget': {
      const reached = `${h.budget}: the limit of ${describeLimit(h.budget, h.limit)} was reached`;
      if (h.spent === undefined) return `budget (${reached})`;
      const cost = h.spent.costUsd === null ? '' : `, $${h.spent.costUsd.toFixed(4)}`;
      return `budget (${reached}; spent ${h.spent.tokens} tokens${cost})`;
    }
    case 'interrupted':
      return 'interrupted';
    case 'error':
      return `error: ${h.message}`;
  }
}

const describeLimit = (budget: BudgetName, limit: number) =>
  ({ turns: `${limit} turns`, tokens: `${limit} tokens`, cost: `$${limit}`, time: `${limit / 1000} s` })[budget];

// --- The options: one table, from which both --help and the parser are built.

interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  /** The argument's name in --help, e.g. DIR; a switch has none. */
  arg?: string;
  help: string;
}

export const OPTIONS = {
  root: { type: 'string', arg: 'DIR', help: 'project folder the tools work in (default: the current folder)' },
  verify: { type: 'string', arg: 'CMD', help: 'shell command that must exit 0 before "done" is accepted' },
  'verify-timeout': { type: 'string', arg: 'S', help: 'seconds the verify command may run (default: 120)' },
  protect: { type: 'string', arg: 'GLOB', multiple: true, help: 'files the agent may not change, e.g. "test/**"' },
  yes: { type: 'boolean', help: 'approve every change without asking' },
  'max-turns': { type: 'string', arg: 'N', help: 'model calls per task (default: 25)' },
  'max-tokens': { type: 'string', arg: 'N', help: 'input + output tokens per task, sub-agents included' },
  'max-cost': { type: 'string', arg: 'USD', help: 'dollars per task, sub-agents included (needs a known price)' },
  price: { type: 'string', arg: 'IN,OUT', help: 'dollars per million input and output tokens of --model' },
  timeout: { type: 'string', arg: 'S', help: 'wall-clock seconds per task' },
  model: { type: 'string', arg: 'ID', help: `model to use (default: $ANTHROPIC_MODEL or ${DEFAULT_MODEL})` },
  'task-model': { type: 'string', arg: 'ID', help: 'model for sub-agents started by the task tool (default: --model)' },
  'context-window': { type: 'string', arg: 'N', help: `tokens, when the API does not say (default: 200000)` },
  'no-context-files': { type: 'boolean', help: 'do not read AGENTS.md files into the system prompt' },
  script: { type: 'string', arg: 'FILE', help: 'replay canned replies from a JSON file instead of calling an API' },
  session: { type: 'string', arg: 'FILE', help: 'where to append the session (default: .agent/sessions/<time>.jsonl)' },
  resume: { type: 'string', arg: 'FILE', help: 'continue a saved session (and keep appending to it)' },
  export: { type: 'string', arg: 'FILE', help: 'write a session file as one self-contained web page, then exit' },
  out: { type: 'string', arg: 'FILE', help: 'where --export writes the page (default: beside the session, .html)' },
  replay: { type: 'string', arg: 'FILE', help: 're-run a recorded session offline in --root and compare each message' },
  json: { type: 'boolean', help: 'print events as JSON lines instead of text' },
  trace: { type: 'boolean', help: 'print each step tagged with the part of the loop doing it' },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
} as const satisfies Record<string, OptionSpec>;

function helpText(): string {
  const rows = Object.entries(OPTIONS).map(([name, spec]: [string, OptionSpec]) => {
    const flag = `${spec.short ? `-${spec.short}, ` : ''}--${name}${spec.arg ? ` ${spec.arg}` : ''}`;
    return `  ${flag.padEnd(20)}${spec.help}${spec.multiple ? ' (repeatable)' : ''}`;
  });
  return [
    'Usage: npx tsx agent.ts [options] [task]',
    '',
    'With a task: one run, then exit. Without: a REPL (one task per line; /exit to leave).',
    'No API key? `npm start` plays the offline demo, and --script FILE runs on canned replies.',
    '',
    'Options:',
    ...rows,
    '',
    'In the REPL: type while the agent works to steer it; Ctrl-C stops the run, and at an empty prompt leaves;',
    "/context, /compact, /resume FILE, /exit. Leaving the REPL exits 0 (piped in: the last task's exit code).",
    'Environment: ANTHROPIC_API_KEY, ANTHROPIC_MODEL, ANTHROPIC_BASE_URL (any Anthropic-compatible endpoint).',
    'Halts: accepted (verified | unverified), budget (turns | tokens | cost | time), interrupted, error.',
    'Exit codes: 0 accepted, 1 not accepted (budget, error), 2 usage error, 130 interrupted.',
  ].join('\n');
}

/** A mistake on the command line: one line on stderr and exit code 2, never a stack trace. */
class UsageError extends Error {}

type ParsedValues = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

export interface CliOptions {
  root: string;
  verify: string | undefined;
  verifyTimeoutMs: number;
  protect: string[];
  yes: boolean;
  budgets: Budgets;
  /** --price: what --model costs, when the price table does not know it (or knows it wrong). */
  price: Price | undefined;
  /** Undefined: the default model, or "scripted" for --script. */
  model: string | undefined;
  taskModel: string | undefined;
  contextWindow: number | undefined;
  contextFiles: boolean;
  script: string | undefined;
  session: string | undefined;
  resume: string | undefined;
  replay: string | undefined;
  export: string | undefined;
  out: string | undefined;
  /** The options given on the command line, by name: a replay lets them replace the recorded ones. */
  given: string[];
  json: boolean;
  trace: boolean;
  task: string | undefined;
  help: boolean;
}

export function parseCli(argv: string[], env: NodeJS.ProcessEnv): CliOptions {
  let values: ParsedValues;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS }));
  } catch (error) {
    throw new UsageError(describeCliError(errorText(error)));
  }
  const model = values.model ?? env.ANTHROPIC_MODEL;
  const price = parsePrice(values.price);
  const maxCostUsd = positiveNumber('--max-cost', values['max-cost']);
  if (maxCostUsd !== undefined) {
    const main = { name: model ?? (values.script === undefined ? DEFAULT_MODEL : 'scripted'), price };
    const task =
      values['task-model'] === undefined || values.script !== undefined ? main : { name: values['task-model'] };
    for (const priced of [main, task]) {
      if (!priceOf(priced)) {
        const fix = priced === main ? 'give one with --price IN,OUT' : 'add it to the price table (PRICES)';
        throw new UsageError(`--max-cost needs a known price, and ${priced.name} has none: ${fix}`);
      }
    }
  }
  if (positionals.length > 0 && positionals.join(' ').trim() === '') throw new UsageError('the task is empty');
  const timeout = positiveNumber('--timeout', values.timeout);
  return {
    root: values.root ?? process.cwd(),
    verify: values.verify,
    verifyTimeoutMs: (positiveNumber('--verify-timeout', values['verify-timeout']) ?? 120) * 1000,
    protect: values.protect ?? [],
    yes: values.yes ?? false,
    budgets: {
      maxTurns: positiveNumber('--max-turns', values['max-turns'], true) ?? 25,
      maxTokens: positiveNumber('--max-tokens', values['max-tokens'], true),
      maxCostUsd,
      timeoutMs: timeout === undefined ? undefined : timeout * 1000,
    },
    price,
    model,
    taskModel: values['task-model'],
    contextWindow: positiveNumber('--context-window', values['context-window'], true),
    contextFiles: !(values['no-context-files'] ?? false),
    script: values.script,
    session: values.session,
    resume: values.resume,
    replay: values.replay,
    export: values.export,
    out: values.out,
    given: Object.keys(values),
    json: values.json ?? false,
    trace: values.trace ?? false,
    task: positionals.length > 0 ? positionals.join(' ') : undefined,
    help: values.help ?? false,
  };
}

/** parseArgs says each mistake in up to three lines of its own; this says it in one, in the terms of --help. */
function describeCliError(message: string): string {
  const flag = /'(-[^' ]+)/.exec(message)?.[1] ?? '';
  const arg = (OPTIONS as Record<string, OptionSpec>)[flag.replace(/^--/, '')]?.arg ?? 'VALUE';
  if (message.startsWith('Unknown option'))
    return `unknown option ${flag} (a task that starts with "-" goes after --, as in: -- "${flag}")`;
  if (message.includes('argument missing')) return `${flag} needs a value: ${flag} ${arg}`;
  if (message.includes('ambiguous')) return `${flag} needs a value; one that starts with "-" is written ${flag}=${arg}`;
  if (message.includes('does not take an argument')) return `${flag} takes no value`;
  return message.split('\n')[0]!;
}

/** "3,15": dollars per million input tokens, then output tokens (cache writes and reads are priced from input). */
function parsePrice(value: string | undefined): Price | undefined {
  if (value === undefined) return undefined;
  const parts = value.split(',').map((part) => (part.trim() === '' ? NaN : Number(part)));
  if (parts.length !== 2 || !parts.every((n) => n >= 0 && Number.isFinite(n)))
    throw new UsageError(
      `--price needs IN,OUT: dollars per million input and output tokens, e.g. 3,15; got "${value}"`,
    );
  return { input: parts[0]!, output: parts[1]! };
}

/** Prevents a budget of NaN or -1 from silently switching a limit off: a bad number is a usage error. */
function positiveNumber(flag: string, value: string | undefined, whole = false): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (value.trim() === '' || !(number > 0) || (whole && !Number.isInteger(number))) {
    throw new UsageError(`${flag} needs a positive ${whole ? 'whole ' : ''}number, got "${value}"`);
  }
  return number;
}

async function chooseModel(options: CliOptions, env: NodeJS.ProcessEnv, name: string | undefined): Promise<Model> {
  if (options.script !== undefined) {
    try {
      return new ScriptedModel(await loadScript(options.script), name ?? 'scripted');
    } catch (error) {
      throw new UsageError(`--script ${errorText(error)}`);
    }
  }
  if (!env.ANTHROPIC_API_KEY && !env.ANTHROPIC_BASE_URL) {
    const offline = 'use --script FILE to run offline, or `npm start` for the offline demo';
    throw new UsageError(`ANTHROPIC_API_KEY is not set: set it, ${offline}`);
  }
  // A local Anthropic-compatible server may need no key; the SDK still wants one to send.
  const { default: Anthropic } = await import('@anthropic-ai/sdk');
  const client = new Anthropic({
    apiKey: env.ANTHROPIC_API_KEY || 'no-key',
    baseURL: env.ANTHROPIC_BASE_URL || undefined,
  });
  return new AnthropicModel(name ?? DEFAULT_MODEL, client);
}

/** Where the printers write: stdout, or any stream (a test's). Colour only on a terminal. */
export type Output = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

const colour = (format: Parameters<typeof styleText>[0], text: string, out: Output) =>
  out.isTTY && !process.env.NO_COLOR ? styleText(format, text) : text;

/** Empties the line being typed, through readline (Ctrl-E, Ctrl-U), so it redraws what it knows it drew. */
function clearInput(rl: Interface): void {
  rl.write('', { ctrl: true, name: 'e' });
  rl.write('', { ctrl: true, name: 'u' });
}

const SPINNER = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';
const TICK_MS = 250;
/** Shorter waits show nothing, so a fast call does not flicker. */
const QUIET_MS = 400;

/** The bottom of a terminal while a run works: what the agent waits for and for how long, redrawn four times a
 *  second; and once the user types, their line below it. Everything printed goes above both. With the REPL's
 *  readline the two are readline's prompt, so readline, which echoes what is typed, always knows where they are.
 *  Nothing of it reaches piped output. */
export class StatusLine {
  /** A run is under way: what the user types steers it, on a line of its own. */
  private active = false;
  private waitingFor: string | null = null;
  private since = 0;
  private lastOutput = 0;
  private timer: NodeJS.Timeout | undefined;
  private shown = false;
  private typing = false;
  private held = false;
  private midLine = false;
  /** Model text held back while the user types, so the line being typed stays whole: printed line by line. */
  private heldText = '';
  /** Rows readline still thinks its prompt spans after hide(); written as blank lines before it draws again. */
  private pad = 0;

  private readonly rl: Interface | undefined;

  /** `terminal`: the REPL's readline and the keyboard it reads, when there is one. */
  constructor(
    private readonly out: Output,
    terminal?: { rl: Interface; input: NodeJS.ReadableStream },
  ) {
    this.rl = terminal?.rl;
    // Before readline sees the key: a first character opens the input line, Enter closes it into the scrollback.
    terminal?.input.prependListener('keypress', (typed: string | undefined, key: { name?: string; ctrl?: boolean }) => {
      if (!this.active || this.held) return;
      if (key.name === 'return' || key.name === 'enter') {
        if (this.typing || this.shown) this.redraw(terminal.rl.line === '' ? '' : '» ');
        [this.typing, this.shown, this.midLine] = [false, false, false]; // readline ends the line
      } else if (!this.typing && !key.ctrl && /^[^\x00-\x1f\x7f]+$/.test(typed ?? '')) {
        this.typing = true;
        this.show();
      }
    });
  }

  private get enabled(): boolean {
    return this.out.isTTY === true;
  }

  /** What the agent now waits for (null: nothing worth showing); the clock restarts with each new wait. */
  wait(what: string | null): void {
    if (what !== this.waitingFor) this.since = Date.now();
    this.waitingFor = what;
    this.active = true;
    if (what !== null && this.timer === undefined && this.enabled) {
      // unref: the status line must never be what keeps the process alive after a halt.
      this.timer = setInterval(() => this.tick(), TICK_MS).unref();
    }
    if (what === null && this.shown && this.typing) this.show();
    else if (what === null && this.shown) this.hide();
  }

  /** The run is over: the status line goes, and what the user was typing waits at the next prompt. */
  done(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.waitingFor = null;
    [this.active, this.typing] = [false, false];
    if (this.shown) this.hide();
    this.flushHeld();
  }

  /** Whole lines, above the status line. */
  line(text: string): void {
    if (this.shown) this.hide();
    this.flushHeld();
    if (this.midLine) this.out.write('\n');
    this.out.write(`${text}\n`);
    this.midLine = false;
    this.lastOutput = Date.now();
    if (this.typing) this.show();
  }

  /** Text as it streams; held back line by line while the user types. */
  text(delta: string): void {
    if (this.typing) {
      this.heldText += delta;
      const end = this.heldText.lastIndexOf('\n');
      if (end >= 0) {
        const whole = this.heldText.slice(0, end);
        this.heldText = this.heldText.slice(end + 1);
        this.line(whole);
      }
      return;
    }
    if (this.shown) this.hide();
    this.flushHeld();
    this.out.write(delta);
    this.midLine = !delta.endsWith('\n');
    this.lastOutput = Date.now();
  }

  /** What was held back while the user typed, once they no longer do. */
  private flushHeld(): void {
    if (this.typing || this.heldText === '') return;
    this.out.write(this.heldText);
    this.midLine = true;
    this.heldText = '';
  }

  /** A question at the terminal (an approval), with no status line in the way; readline's own if there is one. */
  async ask(query: string, signal: AbortSignal): Promise<string> {
    // A line half typed to steer is put aside, or it would become the start of the answer.
    const typed = this.rl && this.typing && this.shown ? this.rl.line : '';
    if (typed !== '' && this.rl) clearInput(this.rl);
    this.held = true;
    if (this.shown) this.hide();
    if (this.midLine) this.line('');
    const rl = this.rl ?? createInterface({ input: process.stdin, output: process.stdout, terminal: true });
    // A lone question's readline holds the terminal raw, where Ctrl-C is a key: pass it on as the signal it means.
    if (!this.rl) rl.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
    try {
      this.out.write('\n'.repeat(this.pad));
      this.pad = 0;
      return await rl.question(query, { signal });
    } catch (error) {
      this.out.write('\n'); // a question cut short by Ctrl-C leaves the cursor on its line
      throw error;
    } finally {
      if (!this.rl) rl.close();
      this.held = false;
      this.lastOutput = Date.now();
      if (typed !== '') {
        this.show();
        this.rl?.write(typed);
      }
    }
  }

  /** The REPL's prompt, drawn where readline expects it. */
  prompt(text: string): void {
    this.redraw(text);
  }

  private tick(): void {
    if (this.held || this.waitingFor === null || !this.active) return;
    if (this.shown || Date.now() - this.lastOutput >= QUIET_MS) this.show();
  }

  /** The status line, then (while the user types) their line. */
  private show(): void {
    if (!this.enabled) return;
    if (this.midLine) {
      this.out.write('\n');
      this.midLine = false;
    }
    const seconds = Math.floor((Date.now() - this.since) / 1000);
    const frame = SPINNER[Math.floor(Date.now() / TICK_MS) % SPINNER.length];
    const width = Math.max((this.out.columns ?? 80) - 1, 20);
    const status = this.waitingFor === null ? '' : `  ${frame} ${this.waitingFor} · ${seconds} s`.slice(0, width);
    const painted = colour('dim', status, this.out);
    if (!this.rl) {
      this.out.write(`\r\x1b[K${painted}`);
    } else {
      this.redraw(this.typing ? `${status === '' ? '' : `${painted}\n`}» ` : painted);
    }
    this.shown = true;
  }

  /** Draws `prompt` and the typed line through readline, first giving back the rows hide() took from under it. */
  private redraw(prompt: string): void {
    if (!this.rl) return;
    this.out.write('\n'.repeat(this.pad));
    this.pad = 0;
    this.rl.setPrompt(prompt);
    this.rl.prompt(true);
  }

  private hide(): void {
    if (this.rl) {
      const rows = this.rl.getCursorPos().rows;
      moveCursor(this.out, 0, -rows);
      cursorTo(this.out, 0);
      clearScreenDown(this.out);
      this.pad = rows;
    } else {
      this.out.write('\r\x1b[K');
    }
    this.shown = false;
  }
}

/** The terminal view of the event stream: streamed text, one line per call and what came of it, a status line
 *  while the agent waits (model, tools, the verify command), and a footer per turn with tokens and cost. */
export function terminalPrinter(
  out: Output = process.stdout,
  { screen = new StatusLine(out), verify }: { screen?: StatusLine; verify?: string } = {},
): (event: AgentEvent) => void {
  const line = (format: Parameters<typeof styleText>[0], text: string) => screen.line(colour(format, text, out));
  const running = new Map<string, string>();
  return (event) => {
    switch (event.type) {
      case 'request':
        screen.wait('waiting for the model');
        return;
      case 'text':
        return screen.text(event.delta);
      case 'reply': {
        const { input, cacheRead, cacheWrite, output, costUsd } = event.totals;
        const allInput = input + cacheRead + cacheWrite;
        const cached = allInput > 0 ? Math.round((100 * cacheRead) / allInput) : 0;
        const cost = costUsd === null ? 'cost unknown' : `$${costUsd.toFixed(4)}`;
        if (event.stopReason === 'max_tokens') {
          const calls = event.calls === 0 ? '' : `; its ${event.calls} call(s) will not run`;
          line('yellow', `  (the reply was cut off at the output limit${calls}: the model is asked to go on)`);
        }
        line('dim', `  [turn ${event.turn} · in ${allInput} (${cached}% cached) · out ${output} · ${cost} so far]`);
        const judged = event.calls === 0 && !['max_tokens', 'pause_turn'].includes(event.stopReason ?? '');
        return screen.wait(judged ? (verify === undefined ? 'checking "done"' : `checking "done": ${verify}`) : null);
      }
      case 'call':
        screen.wait(null); // the hooks decide, and approval may ask
        return line('cyan', `→ ${event.call.name} ${summarize(event.call.input)}`);
      case 'running': {
        running.set(event.call.id, event.call.name);
        const names = [...running.values()];
        return screen.wait(names.length === 1 ? `${names[0]} running` : `${names.length} calls running`);
      }
      case 'decision':
        if (event.decision.action === 'deny') return;
        return line('dim', `  ${event.hook}: ${event.decision.action}`);
      case 'result': {
        const content = typeof event.result.content === 'string' ? event.result.content : '';
        if (running.delete(event.call.id) && running.size === 0) screen.wait('preparing the next request');
        if (event.result.is_error) return line('red', `  ✗ ${content.split('\n')[0]}`);
        // A one-line result is a tool's own summary ("edited add.js: replaced 1 line(s) at line 2 …"); of a longer
        // one (what was read), its size and how it starts.
        const lines = content.split('\n').length;
        const first = summarizeText(content.split('\n')[0]!);
        return line('dim', `  ✓ ${lines === 1 ? first : `${lines} lines: ${first}`}`);
      }
      case 'gate':
        screen.wait(event.passed ? null : 'preparing the next request');
        return line(
          event.passed ? 'green' : 'yellow',
          `gate: \`${event.command}\` ${event.reason}: ${event.passed ? 'pass' : 'not done'}`,
        );
      case 'notice':
        return line('yellow', event.text);
      case 'compaction':
        return line(
          'yellow',
          `compacted: ~${event.tokensBefore} → ~${event.tokensAfter} tokens; messages before ` +
            `#${event.keptFrom} are now a summary (still in the session file)`,
        );
      case 'context': {
        const b = event.breakdown;
        const parts =
          `system ${b.systemPrompt} · tools ${b.toolDefinitions} · AGENTS.md ${b.projectFiles} · ` +
          `messages ${b.messages} · free ${b.free}`;
        return line('dim', `context window ${b.window} tokens: ${parts}`);
      }
      case 'subagent':
        if (event.event.type === 'call')
          line('dim', `  [${event.id}] → ${event.event.call.name} ${summarize(event.event.call.input)}`);
        return;
      case 'halt':
        running.clear();
        screen.done();
        return line(
          event.halt.kind === 'accepted' ? 'green' : 'red',
          `halt: ${describeHalt(event.halt)} after ${event.turns} turn(s)`,
        );
      default:
        return;
    }
  };
}

/** --trace: each step tagged with the part of the loop doing it (seed 002's table), one line a part. A turn opens
 *  with its prompt (or the compaction before it), after the previous turn's halt check; each task after the first
 *  gets a heading, since turns count from 1 again. */
export function tracePrinter(out: NodeJS.WritableStream = process.stdout, prefix = ''): (event: AgentEvent) => void {
  let [task, turn, running, replied] = [0, 0, false, false];
  let text = '';
  /** What the API counted for the last request and its reply: the exact part of the next estimate. */
  let counted: number | null = null;
  const ran = new Set<string>();
  const decided = new Set<string>();
  const children = new Map<string, (event: AgentEvent) => void>();
  const say = (part: string, what: string) => out.write(`${prefix}[${turn}] ${part.padEnd(14)} ${what}\n`);
  /** The previous turn passed its halt check, since the loop goes round again. */
  const nextTurn = () => {
    if (!replied) return;
    say('halt check', 'no halt: go round again');
    [turn, replied] = [turn + 1, false];
  };
  return (event) => {
    switch (event.type) {
      case 'request': {
        nextTurn();
        turn = event.turn;
        say('state', `the model will see ${event.messages} message(s) of the transcript`);
        const exact = counted !== null && event.estimatedTokens >= counted;
        const how = exact ? `${counted} counted last turn + ~${event.estimatedTokens - counted!} new` : 'by characters';
        const what = `system prompt + tools + ${event.messages} message(s)`;
        return say('prompt builder', `sends ${what}: ~${event.estimatedTokens} tokens (${how})`);
      }
      case 'text':
        text += event.delta;
        return;
      case 'reply': {
        const said = text.trim() === '' ? '' : ` "${summarizeText(text)}"`;
        const { usage } = event;
        text = '';
        replied = true;
        counted = usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
        counted += usage.output_tokens;
        say(
          'model',
          `replied${said} (stop: ${event.stopReason}, ${usage.input_tokens} in / ${usage.output_tokens} out)`,
        );
        if (event.stopReason === 'max_tokens')
          say(
            'readout',
            event.calls === 0
              ? 'cut off at max_tokens: not a claim of "done"'
              : `cut off at max_tokens: ${event.calls} call(s) will not run`,
          );
        else
          say('readout', event.calls === 0 ? 'no tool calls: a claim of "done"' : `${event.calls} tool call(s) parsed`);
        return say('fold back', "appended the model's reply, as received");
      }
      case 'decision': {
        const { decision } = event;
        decided.add(event.call.id);
        const why = decision.action === 'deny' ? `refused: ${firstLine(decision.reason)}` : decision.action;
        return say(event.hook === 'validate' ? 'readout' : 'gate', `${event.call.name}: ${event.hook} ${why}`);
      }
      case 'running':
        ran.add(event.call.id);
        return say('gate', `${event.call.name} ${summarize(event.call.input)}: allowed`);
      case 'result': {
        const content = typeof event.result.content === 'string' ? event.result.content : '';
        if (!ran.has(event.call.id)) {
          // Refusals by a hook were told already, and a cut-off reply's calls by the readout.
          if (!decided.has(event.call.id) && !content.startsWith('not executed'))
            say('gate', `${event.call.name}: ${firstLine(content)}`);
          return;
        }
        return say(
          'environment',
          `${event.call.name} ${event.result.is_error ? 'failed' : 'ran'}: ${firstLine(content)}`,
        );
      }
      case 'message': {
        if (event.message.role === 'assistant') return; // told with the reply, after what the model said
        const blocks = typeof event.message.content === 'string' ? [] : event.message.content;
        const results = blocks.filter((b) => b.type === 'tool_result').length;
        const said = summarizeText(textOfMessage(event.message));
        if (results > 0)
          return say('fold back', `appended ${results} tool result(s) in call order${said ? `, then "${said}"` : ''}`);
        if (running) return say('fold back', `appended a user message: "${said}"`);
        // A user message while no task runs is the next task.
        [task, turn, running, replied] = [task + 1, 0, true, false];
        if (task > 1)
          out.write(`${prefix}\n${prefix}--- task ${task}: the transcript carries on, and turns count from 1\n`);
        return say('state', `appended a user message: "${said}"`);
      }
      case 'gate':
        return say(
          'halt check',
          `verify \`${event.command}\` ${event.reason}: ${event.passed ? 'passed' : 'not done, go on'}`,
        );
      case 'compaction':
        nextTurn();
        counted = null;
        return say(
          'prompt builder',
          `${running ? '' : '/compact: '}compacted the messages, ~${event.tokensBefore} → ~${event.tokensAfter} ` +
            `tokens by characters: a summary, then messages from #${event.keptFrom}`,
        );
      case 'context': {
        const b = event.breakdown;
        const parts =
          `system ${b.systemPrompt} · tools ${b.toolDefinitions} · AGENTS.md ${b.projectFiles} · ` +
          `messages ${b.messages} · free ${b.free}`;
        return say('prompt builder', `context window ${b.window} tokens (estimated): ${parts}`);
      }
      case 'notice':
        return say('note', event.text);
      case 'subagent': {
        let child = children.get(event.id);
        if (child === undefined) children.set(event.id, (child = tracePrinter(out, `${prefix}    ${event.id} `)));
        return child(event.event);
      }
      case 'halt':
        [running, replied] = [false, false];
        return say('halt check', `HALT: ${describeHalt(event.halt)}`);
      default:
        return;
    }
  };
}

const firstLine = (text: string) => summarizeText(text.split('\n')[0] ?? '');
const summarizeText = (text: string) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 90 ? `${flat.slice(0, 87)}...` : flat;
};

/** The same events as JSON lines, for CI and other programs. */
export const jsonPrinter =
  (out: NodeJS.WritableStream = process.stdout) =>
  (event: AgentEvent) => {
    out.write(`${JSON.stringify(event)}\n`);
  };

function summarize(input: unknown): string {
  const json = JSON.stringify(input) ?? '';
  return json.length > 80 ? `${json.slice(0, 77)}...` : json;
}

/** Asks about one change at the terminal. Enter means no; y, yes, n, no, a, always are understood in any case, and
 *  anything else is asked again rather than taken for an answer. */
function terminalApprover(screen: StatusLine, out: Output): Approver {
  return async ({ tool, preview, signal }) => {
    const painted = preview
      .split('\n')
      .map((l) => (l.startsWith('+') ? colour('green', l, out) : l.startsWith('-') ? colour('red', l, out) : l));
    screen.line(painted.join('\n'));
    const question = `Allow this ${tool}? [y]es, [N]o, [a]lways this session (Enter: no) `;
    let answer = APPROVAL_ANSWERS[(await screen.ask(question, signal)).trim().toLowerCase()];
    while (answer === undefined)
      answer =
        APPROVAL_ANSWERS[(await screen.ask('Please answer y, n or a (Enter: no) ', signal)).trim().toLowerCase()];
    if (answer !== 'no') return { approved: true, always: answer === 'always' };
    const reason = (await screen.ask('Why not? (optional, Enter to skip) ', signal)).trim();
    return reason === '' ? { approved: false } : { approved: false, reason };
  };
}

const APPROVAL_ANSWERS: Record<string, 'yes' | 'no' | 'always'> = {
  ...{ '': 'no', n: 'no', no: 'no', nope: 'no' },
  ...{ y: 'yes', yes: 'yes', ok: 'yes', a: 'always', always: 'always' },
};

/** Prevents a headless run from hanging on a question nobody can answer, and says truthfully why: with no terminal
 *  and no --yes, a call that would change something is refused, and nobody is said to have declined it. */
const changesNeedATerminal: BeforeCallHook = {
  name: 'no terminal',
  check: ({ tool }) =>
    tool.readOnly
      ? { action: 'allow' }
      : {
          action: 'deny',
          reason: 'not run: changes need approval, and there is no terminal to ask (--yes allows them)',
        },
};

/** Prevents /compact from making the view bigger: the summary is made on a copy of the session, and kept only if
 *  it is smaller than what it replaces. Returns why nothing changed, or null. */
async function compactOnRequest(agent: Agent, signal: AbortSignal): Promise<string | null> {
  const events: AgentEvent[] = [];
  const trial: Agent = { ...agent, config: { ...agent.config, onEvent: (event) => events.push(event) } };
  const compacted = await compact(trial, signal).catch((error: unknown) => errorText(error));
  const made = events.find((event) => event.type === 'compaction');
  const smaller = made !== undefined && made.tokensAfter < made.tokensBefore;
  for (const event of events) if (event !== made || smaller) agent.config.onEvent(event);
  if (compacted !== true) return compacted === false ? 'nothing old enough to summarise yet' : compacted;
  if (!smaller) {
    const sizes = made ? ` (~${made.tokensAfter} tokens, against ~${made.tokensBefore} now)` : '';
    return `declined: the summary${sizes} would not make what the model sees smaller; nothing changed`;
  }
  [agent.compaction, agent.lastRequest] = [trial.compaction, null];
  return null;
}

/** The latest session file in the project, to suggest to /resume. */
async function latestSession(root: string): Promise<string | null> {
  const folder = path.join(root, '.agent', 'sessions');
  const files = await readdir(folder).catch(() => []);
  const latest = files
    .filter((file) => /^[^.]+\.jsonl$/.test(file))
    .sort()
    .at(-1);
  return latest === undefined ? null : path.relative(process.cwd(), path.join(folder, latest));
}

export interface ReplOptions {
  /** A person at a terminal: prompts, steering, Ctrl-C as a key. Otherwise lines are piped in, one task each. */
  interactive: boolean;
  switchSession: (file: string) => Promise<void>;
  /** The terminal printer's status line, which also draws the prompt; without it, readline's plain prompt. */
  screen?: StatusLine;
}

/** One task per line, handled one at a time and in order. Text typed while a run works steers it; Ctrl-C stops the
 *  run, not the program, and nothing starts by itself afterwards; lines that start with "/" are commands. Leaving a
 *  terminal's REPL (/exit, Ctrl-D, Ctrl-C at an empty prompt) exits 0; piped, the exit code is the last task's. */
export function repl(
  agent: Agent,
  rl: Interface,
  { interactive, switchSession, screen }: ReplOptions,
): Promise<number> {
  let last: Halt | undefined;
  let running: AbortController | null = null; // a task or a command, which Ctrl-C stops
  let steerable = false; // a task: what is typed meanwhile steers it
  let busy = false;
  let closed = false;
  const pending: string[] = [];
  const notice = (text: string) => agent.config.onEvent({ type: 'notice', text });
  // Piped input gets no prompt: it would land in the middle of the output (and break --json).
  const prompt = () => interactive && (screen ? screen.prompt(PROMPT) : rl.prompt(true));
  const command = async (input: string, signal: AbortSignal): Promise<void> => {
    const [name = '', ...rest] = input.split(/\s+/);
    const argument = rest.join(' ');
    if (name === '/context') return agent.config.onEvent({ type: 'context', breakdown: contextBreakdown(agent) });
    if (name === '/compact') {
      const declined = await compactOnRequest(agent, signal);
      if (declined !== null) notice(`/compact: ${declined}`);
      return;
    }
    if (name === '/resume' && argument === '') {
      const latest = await latestSession(agent.config.root);
      return notice(`/resume needs a session file: /resume FILE${latest ? `, e.g. /resume ${latest}` : ''}`);
    }
    if (name === '/resume')
      return await switchSession(argument).catch((error: unknown) => notice(`/resume: ${errorText(error)}`));
    notice(`unknown command "${input}"; the commands are /context, /compact, /resume FILE, /exit`);
  };
  /** Prevents text typed during a run from starting a run by itself: what the agent did not read is shown back,
   *  not sent; after Ctrl-C, lines queued behind the run are dropped too, and the REPL waits at its prompt. */
  const unsent = (stopped: boolean) => {
    const dropped = [...agent.steering.splice(0), ...(stopped ? pending.splice(0) : [])];
    if (dropped.length === 0) return;
    const why = stopped ? 'the run was stopped' : 'the run ended before the agent read it';
    notice(`not sent (${why}): ${dropped.map((text) => `"${text}"`).join(', ')}; type it again to send it`);
  };
  return new Promise((resolve) => {
    const finish = () => {
      process.off('SIGINT', interrupt);
      resolve(interactive || last === undefined ? EXIT.accepted : exitCodeFor(last));
    };
    const work = async () => {
      busy = true;
      for (let input = pending.shift(); input !== undefined; input = pending.shift()) {
        running = new AbortController();
        if (input === '/exit') {
          pending.length = 0;
          rl.close();
        } else if (input.startsWith('/')) {
          await command(input, running.signal);
        } else {
          steerable = true;
          last = await runGivenTask(agent, input, running.signal);
          steerable = false;
          unsent(running.signal.aborted);
        }
        running = null;
      }
      busy = false;
      if (closed) finish();
      else prompt();
    };
    rl.on('line', (line) => {
      const text = line.trim();
      if (steerable && interactive && text !== '' && !text.startsWith('/')) {
        agent.steering.push(text);
        agent.config.onEvent({ type: 'steer', text });
        return notice('queued: the agent reads this before its next tool call');
      }
      if (text !== '') pending.push(text);
      if (busy) return;
      if (pending.length > 0) void work();
      else prompt();
    });
    function interrupt() {
      if (running) {
        if (running.signal.aborted) process.exit(EXIT.interrupted);
        running.abort();
        return agent.config.onEvent({ type: 'interrupt' });
      }
      if (busy) return;
      if (interactive && rl.line !== '') return clearInput(rl);
      rl.close();
    }
    rl.on('SIGINT', interrupt); // a terminal: readline turns Ctrl-C into this event
    if (!interactive) process.on('SIGINT', interrupt);
    rl.on('close', () => {
      closed = true;
      if (!busy) finish();
    });
    rl.setPrompt(PROMPT);
    rl.resume();
    prompt();
  });
}

const PROMPT = '\nyou> ';

/** One run, then exit. Ctrl-C stops it like in the REPL; a second one exits at once. */
async function headless(agent: Agent, task: string): Promise<number> {
  const controller = new AbortController();
  const onSigint = () => {
    if (controller.signal.aborted) process.exit(EXIT.interrupted);
    controller.abort();
    agent.config.onEvent({ type: 'interrupt' });
  };
  process.on('SIGINT', onSigint);
  try {
    return exitCodeFor(await runGivenTask(agent, task, controller.signal));
  } finally {
    process.off('SIGINT', onSigint);
  }
}

export async function main(argv: string[], env: NodeJS.ProcessEnv, out: Output = process.stdout): Promise<number> {
  try {
    const options = parseCli(argv, env);
    if (options.help) {
      out.write(`${helpText()}\n`);
      return EXIT.accepted;
    }
    if (options.export !== undefined) {
      // The page lives apart from the agent (session-page/): the command line only hands the file over.
      const { cli } = await import('./session-page/export.ts');
      const window = options.contextWindow === undefined ? [] : ['--context-window', String(options.contextWindow)];
      return await cli([options.export, ...(options.out === undefined ? [] : ['--out', options.out]), ...window]);
    }
    const root = await realpath(options.root).catch(() => {
      throw new UsageError(`--root ${options.root}: no such folder`);
    });
    if (options.replay !== undefined) return await replaySession(options.replay, { ...options, root }, out);
    const chosen = await chooseModel(options, env, options.model);
    const model = options.price ? withPrice(chosen, options.price) : chosen;
    const taskModel =
      options.taskModel === undefined || options.script !== undefined
        ? undefined
        : await chooseModel(options, env, options.taskModel);
    const interactive = process.stdin.isTTY === true;
    // The REPL's; paused until it listens, so no piped line is read before it is ready for it. A headless run in a
    // terminal leaves the terminal as it is (Ctrl-C a signal) until an approval asks, with a readline of its own.
    const rl =
      options.task === undefined
        ? createInterface({
            input: process.stdin,
            terminal: interactive,
            ...(interactive && { output: process.stdout }),
          })
        : undefined;
    rl?.pause();
    const screen = new StatusLine(out, interactive && rl ? { rl, input: process.stdin } : undefined);
    const printer = options.json
      ? jsonPrinter(out)
      : options.trace
        ? tracePrinter(out)
        : terminalPrinter(out, { screen, verify: options.verify });
    const secrets = [env.ANTHROPIC_API_KEY ?? ''];
    const startSession = (file: string, fresh: boolean, agent: Agent) => {
      const startedAt = new Date().toISOString();
      const recorded = recordedOptions(options, interactive, taskModel);
      const header = { type: 'session' as const, version: SESSION_VERSION, model: model.name, root, startedAt };
      const { contextWindow, protectedAtStart } = agent;
      const full = { ...header, contextWindow, protected: Object.fromEntries(protectedAtStart), options: recorded };
      return sessionRecorder(file, fresh ? full : null, secrets);
    };
    const newSession = path.join(root, '.agent', 'sessions', `${new Date().toISOString().replace(/[:.]/g, '-')}.jsonl`);
    let sessionFile = path.resolve(options.resume ?? options.session ?? newSession);
    const loaded =
      options.resume === undefined
        ? undefined
        : await loadSession(sessionFile).catch((error: unknown) => {
            throw new UsageError(`--resume: ${errorText(error)}`);
          });
    const approve = options.yes
      ? approveAll
      : interactive
        ? recordAnswers(terminalApprover(screen, out), (event) => agent.config.onEvent(event))
        : null;
    const agent = await createAgent(
      configFromCli(options, { root, model, taskModel, approve }, (event) => {
        record(event);
        printer(event);
      }),
    );
    // Started once the agent knows its window (from the model's metadata), which the header records.
    let record = startSession(sessionFile, loaded === undefined, agent);
    if (loaded) resume(agent, loaded);
    const notice = (text: string) => agent.config.onEvent({ type: 'notice', text });
    const showSession = () =>
      notice(`session: ${path.relative(process.cwd(), sessionFile) || sessionFile} (continue it with --resume)`);
    showSession();
    for (const file of agent.contextFiles) {
      notice(`context: ${path.relative(process.cwd(), file.path) || file.path} (~${file.tokens} tokens)`);
    }
    agent.config.onEvent({ type: 'context', breakdown: contextBreakdown(agent) });
    if (options.verify === undefined) notice('no --verify command: "done" will be accepted unverified');
    if (!options.yes && !interactive) notice('no terminal and no --yes: every change (edit_file) will be denied');
    if (options.task !== undefined) return await headless(agent, options.task);
    const switchSession = async (file: string) => {
      const next = await loadSession(file);
      sessionFile = path.resolve(file);
      record = startSession(sessionFile, false, agent);
      resume(agent, next);
      notice(`resumed ${file}: ${next.messages.length} messages`);
      showSession();
    };
    return await repl(agent, rl!, { interactive, switchSession, screen });
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`agent: ${error.message} (see --help)`);
    return EXIT.usage;
  }
}

/** The options a replay needs to run the session the same way, for the session file's header. */
function recordedOptions(options: CliOptions, interactive: boolean, taskModel: Model | undefined): RecordedOptions {
  const { verify, verifyTimeoutMs, protect, budgets, contextWindow, contextFiles } = options;
  const approval = options.yes ? 'yes' : interactive ? 'ask' : 'deny';
  const tools = [...TOOLS.map((tool) => tool.name), 'task'];
  return {
    verify,
    verifyTimeoutMs,
    protect,
    budgets,
    approval,
    tools,
    contextWindow,
    contextFiles,
    taskModel: taskModel?.name,
  };
}

/** Tells the session file each answer the person gave, so a replay can give it again to the same question. */
export function recordAnswers(approver: Approver, tell: (event: ProgramEvent) => void): Approver {
  return async (request) => {
    const answer = await approver(request);
    tell({ type: 'approval', tool: request.tool, preview: previewHash(request.preview), answer });
    return answer;
  };
}

/** Runs a task typed or given on the command line, telling the session file first (a replay gives it again). */
function runGivenTask(agent: Agent, task: string, signal: AbortSignal): Promise<Halt> {
  agent.config.onEvent({ type: 'task', text: task });
  return runTask(agent, task, signal);
}

/** Where the command line builds the agent's configuration: a forker adds their own hooks or tools here. */
export function configFromCli(
  options: CliOptions,
  made: { root: string; model: Model; taskModel: Model | undefined; approve: Approver | null },
  onEvent: (event: AgentEvent) => void,
): AgentConfig {
  const nobodyToAsk = made.approve === null; // the hook refuses every change, so approval never sees one
  return {
    ...made,
    approve: made.approve ?? approveAll,
    beforeCall: nobodyToAsk ? [changesNeedATerminal] : [],
    tools: TOOLS,
    verify: options.verify,
    verifyTimeoutMs: options.verifyTimeoutMs,
    budgets: options.budgets,
    protect: options.protect,
    contextWindow: options.contextWindow,
    contextFiles: options.contextFiles,
    onEvent,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  let decided: number | undefined;
  // Prevents a Ctrl-C after the run's halt from turning its exit code into 130: once main has the code, Ctrl-C only
  // hurries the exit. Before that, the run's own handler has the Ctrl-C, or with none (starting up) it ends the
  // program as Ctrl-C always does.
  process.on('SIGINT', () => {
    if (decided !== undefined) process.exit(decided);
    if (process.listenerCount('SIGINT') === 1) process.exit(EXIT.interrupted);
  });
  void main(process.argv.slice(2), process.env).then((code) => {
    decided = code;
    // Out as soon as the output is: Node's own wind-down (sockets, the loader's thread) can take a few hundred ms,
    // during which it no longer listens for Ctrl-C, and one would kill the process with 130.
    process.stdout.write('', () => process.exit(code));
  });
}
