// agent.ts, the harness: everything the loop runs, and nothing else. It never prints: the program
// (app/) calls its API and draws its events. Sections follow the lessons. With tools.ts it is the
// reading path; the production defences are in hardening/, plugged into the seams below.
//
// The loop, in pseudo-code (P1 the loop, P2 the gate, P3 the guards, P4 the window):
//
//   transcript = [task]
//   loop:
//     view = context hooks(transcript)          compacted near the window; all of it kept   P4
//     tokens or dollars spent: halt budget                                                  P3
//     reply = model(system prompt, tools, view)   it failed (once more if too long): halt error
//     append reply
//     if it asks for tools, for each call in order:
//       before-call hooks (validate, safe_path, protect, runaway, approval) allow or refuse  P3
//       it runs (reads side by side, anything else alone); after-call hooks (output cap)
//       append one result per call, then what the user typed meanwhile
//       (a cut-off reply's calls, and calls after Ctrl-C or a typed message: "not run")
//     else if it paused (pause_turn): go round again
//     else the gate:                                                                        P2
//       cut off (max_tokens): "continue, more briefly"; refused, window full: halt error
//       a protected file changed: "not done: restore it"
//       no verify command: halt accepted, unverified
//       the verify command passes (in a sandbox): halt accepted, verified
//       else: "not done yet" and its output, then what the user typed
//     Ctrl-C, or a budget ran out (turns, tokens, dollars, time): halt, saying which        P3
//     one call six times in a row, refused from the third: halt error (it is stuck)
//
// The model proposes, the harness disposes: every guarantee lives in plain code, never in a prompt.

// Types only: the SDK is slow to load; the program imports it for a real model.
import type Anthropic from '@anthropic-ai/sdk';
import { realpath } from 'node:fs/promises';
import { z } from 'zod';
import {
  capStrings,
  costOf,
  type Price,
  refuseUnpricedBudget,
  deepFreeze,
  describeModelError,
  estimateMessages,
  freezeNewMessages,
  GUARDED,
  isPromptTooLong,
  pieceEnd,
  retryNotices,
  runReadOnly,
  stallWatch,
  withinGrace,
  withinHookTime,
  withinShare,
  withResendableInputs,
} from './hardening/index.ts';
import {
  capOutput,
  changedFiles,
  COMMAND_TIMEOUT_MS,
  commandOptions,
  type ContextFile,
  defineTool,
  type Disk,
  loadContextFiles,
  pathOf,
  plainDisk,
  protectedBy,
  runCommand,
  type Runner,
  safe_path,
  schemaProblem,
  type Tool,
  type ToolContext,
  toolDefinition,
  ToolError,
  TOOLS,
} from './tools.ts';

export { costOf, type LoadedSession, type Price, resume } from './hardening/index.ts';

/** All the loop reports: printers, the session file and the page read this one stream. */
export type AgentEvent =
  // a message was appended to the transcript
  | { type: 'message'; message: Anthropic.MessageParam }
  // a request is about to go to the model
  | { type: 'request'; turn: number; messages: number; estimatedTokens: number }
  // a piece of the reply's text streamed in
  | { type: 'text'; delta: string }
  // a piece of the model's thinking streamed in (with a thinking budget)
  | { type: 'thinking'; delta: string }
  // something the user should know (a retry, a repair on resume)
  | { type: 'notice'; text: string }
  // the reply came in, content as received, with the session's totals
  | {
      type: 'reply';
      turn: number;
      stopReason: Anthropic.StopReason | null;
      calls: number;
      content: Anthropic.ContentBlock[];
      usage: Anthropic.Usage;
      totals: UsageTotals;
    }
  // the reply asked for this call
  | { type: 'call'; call: Anthropic.ToolUseBlock }
  // a before-call hook refused, rewrote or answered the call
  | { type: 'decision'; call: Anthropic.ToolUseBlock; hook: string; decision: Decision }
  // the call passed every hook and starts
  | { type: 'running'; call: Anthropic.ToolUseBlock }
  // the call's answer, as the model reads it
  | { type: 'result'; call: Anthropic.ToolUseBlock; result: Anthropic.ToolResultBlockParam }
  // the verify command starts
  | { type: 'gate-start'; command: string }
  // the verify command printed this, live
  | { type: 'gate-output'; text: string }
  // the gate decided; exitCode null: killed or not run; output: head and tail
  | {
      type: 'gate';
      command: string;
      passed: boolean;
      reason: string;
      exitCode: number | null;
      output: string;
      sandboxed: boolean;
    }
  // older messages were summarised: the model sees the summary, then keptFrom on
  | ({
      type: 'compaction';
      usage: Anthropic.Usage;
      tokensBefore: number;
      tokensAfter: number;
    } & Compaction)
  // a summary was paid for and not used
  | { type: 'compaction-failed'; usage: Anthropic.Usage; reason: string }
  // a sub-agent's event, as it happens
  | { type: 'subagent'; id: string; description: string; event: AgentEvent }
  // the run ended; turns: the model's replies in this run
  | { type: 'halt'; halt: Halt; turns: number };

// P0 — the model and the transcript. The API is stateless: the transcript is all the model knows.

/** What one model call is given, in full, every turn. */
export type ModelRequest = Pick<Anthropic.MessageCreateParamsNonStreaming, RequestPart>;
type RequestPart = 'system' | 'tools' | 'messages' | 'tool_choice' | 'cache_control';

/** Returns the reply as the API sent it, or throws. The request is lent: copy what you keep. */
export interface Model {
  readonly name: string;
  readonly price?: Price; // without it the cost is unknown, and a dollar budget refused
  complete(request: ModelRequest, options: ModelCallOptions): Promise<Anthropic.Message>;
  contextWindow?(): Promise<number | null>; // in tokens, if the provider says
}

/** onText hears the reply's text as it streams, onThinking its thinking; onNotice the rest. */
export type ModelCallOptions = {
  signal: AbortSignal;
  onText: Listener;
  onThinking?: Listener;
  onNotice: Listener;
};
type Listener = (text: string) => void;

/** `{ root, model }` is enough: the other options have defaults. */
export interface AgentConfig extends Partial<GateOptions>, Partial<GuardOptions>, EnduranceOptions {
  root: string; // the tools cannot reach outside it
  model: Model;
  tools?: readonly Tool[]; // default TOOLS
  onEvent?: (event: AgentEvent) => void; // the loop never prints; it reports here
  systemPrompt?: string; // default SYSTEM_PROMPT
  hardening?: Hardening; // default GUARDED (hardening/); PLAIN is the reading path alone
}

/** What the reading path leaves to its seams: how the tools touch the disk, how a command runs,
 *  how the root is vetted, and the production hooks around calls. */
export interface Hardening {
  readonly disk: Disk;
  readonly runner: Runner;
  readonly root: (given: string) => Promise<string>; // resolved through links, or refused
  readonly beforeCall: readonly BeforeCallHook[]; // after the lessons' guards, before approval
  readonly afterCall: readonly AfterCallHook[]; // before the output cap
}

/** The reading path alone: the disk as it is, a plain shell, no production hooks. */
export const PLAIN: Hardening = {
  disk: plainDisk,
  runner: runCommand,
  root: (given) => realpath(given),
  beforeCall: [],
  afterCall: [],
};

/** The configuration, its root resolved and its defaults filled in. */
export type Settings = AgentConfig &
  GateOptions &
  GuardOptions & { tools: readonly Tool[]; hardening: Hardening; onEvent: Listen };
type Listen = (event: AgentEvent) => void;

/** A session. A program never writes it: runTask, steer, compact and resume are its ways in. */
export interface Agent {
  readonly config: Settings;
  readonly messages: Anthropic.MessageParam[]; // all the model knows, resent every turn
  readonly toolContext: ToolContext;
  readonly system: Anthropic.TextBlockParam[]; // built once: the same bytes every request
  readonly toolDefinitions: Anthropic.Tool[];
  // P3 — the guards
  readonly beforeCall: readonly BeforeCallHook[];
  readonly afterCall: readonly AfterCallHook[];
  readonly steering: string[]; // what the user typed meanwhile
  repeats: { key: string; times: number }; // the model's last call, and how often in a row
  readonly usage: UsageTotals;
  ledger: UsageTotals; // what the run in progress and its sub-agents spent
  readonly protectedAtStart: Map<string, string>; // hashes at the session's first start
  // P4 — endurance
  readonly contextWindow: number;
  readonly contextFiles: ContextFile[];
  readonly contextHooks: readonly ContextHook[];
  compaction: Compaction | null; // the latest summary; the transcript itself is never cut
  lastRequest: { tokens: number; messages: number } | null; // its real size; a summary resets it
  subAgentsStarted: number;
}

/** Builds a session, a step per lesson. Only a broken configuration throws. */
export async function createAgent(config: AgentConfig): Promise<Agent> {
  const settings = await withDefaults(config);
  const { root, hardening, protect, model } = settings;
  const contextFiles = settings.contextFiles === false ? [] : await loadContextFiles(root);
  const { defaultProtection, sandbox, verifyTimeoutMs, passEnv, sandboxRead } = settings;
  const toolContext: ToolContext = {
    root,
    seen: new Map(),
    disk: hardening.disk,
    runner: hardening.runner,
    protect,
    defaultProtection,
    sandbox,
    verifyTimeoutMs,
    passEnv,
    sandboxRead,
  };
  const agent: Agent = {
    config: settings,
    messages: [],
    toolContext,
    // A cache mark here caches the fixed prefix: tools, then system.
    system: [{ type: 'text', text: systemPrompt(settings, contextFiles), cache_control: CACHE }],
    toolDefinitions: [],
    // P3: a forker's hooks go before the safety checks and approval, which then see their rewrite.
    beforeCall: [
      validateInput,
      ...(settings.beforeCall ?? []),
      safePathCheck,
      protectedFiles(protect),
      runawayGuard,
      ...hardening.beforeCall,
      approval(settings.approve),
    ],
    afterCall: [...hardening.afterCall, capToolOutput, ...(settings.afterCall ?? [])],
    steering: [],
    repeats: NO_REPEATS,
    usage: noUsage(model),
    ledger: noUsage(model),
    protectedAtStart: protect.length
      ? await hardening.disk.fingerprints(protect, toolContext)
      : new Map(),
    // P4
    contextWindow:
      (await model.contextWindow?.()) ?? settings.contextWindow ?? DEFAULT_CONTEXT_WINDOW,
    contextFiles,
    contextHooks: [compaction, ...(settings.contextHooks ?? [])],
    compaction: null,
    lastRequest: null,
    subAgentsStarted: 0,
  };
  if (settings.subAgents !== false) settings.tools = [...settings.tools, taskTool(agent)]; // P4
  agent.toolDefinitions.push(...settings.tools.map(toolDefinition));
  return agent;
}

/** The defaults; refuses a dollar budget an unpriced model could never halt (hardening/). */
async function withDefaults(config: AgentConfig): Promise<Settings> {
  refuseUnpricedBudget(config.budgets, [config.model, config.taskModel ?? config.model]);
  const hardening = config.hardening ?? GUARDED;
  return {
    ...config,
    tools: config.tools ?? TOOLS,
    hardening,
    root: await hardening.root(config.root),
    verifyTimeoutMs: config.verifyTimeoutMs ?? COMMAND_TIMEOUT_MS,
    budgets: config.budgets ?? DEFAULT_BUDGETS,
    protect: config.protect ?? [],
    approve: config.approve ?? approveAll,
    onEvent: config.onEvent ?? (() => {}),
  };
}

/** What the person asks: text, or text and images (an editor's pasted screenshot). */
export type Task = string | (Anthropic.TextBlockParam | Anthropic.ImageBlockParam)[];

/** The task as the first user message: text as a block, as sessions record it. */
const userMessage = (task: Task): Anthropic.MessageParam => ({
  role: 'user',
  content: typeof task === 'string' ? [{ type: 'text', text: task }] : task,
});

/** Appends to the transcript, and tells the session file. */
function append(agent: Agent, given: Anthropic.MessageParam): void {
  const message = withinShare(agent.contextWindow, given);
  agent.messages.push(message);
  agent.config.onEvent({ type: 'message', message });
}

// P1 — the loop: call the model, append its reply, answer every call, and go round until a halt.

/** Runs one task to a halt; a sub-agent's run spends from its parent's ledger. */
export async function runTask(
  agent: Agent,
  task: Task,
  userSignal?: AbortSignal,
  ledger?: UsageTotals,
): Promise<Halt> {
  const run = startRun(agent, userSignal, ledger);
  append(agent, userMessage(task));
  for (let turn = 1; ; turn++) {
    const called = await callModel(agent, run, turn);
    if ('halt' in called) return halt(agent, called.halt, turn - 1); // no reply this turn
    const { reply } = called;
    appendReply(agent, reply);
    countUsage(agent, reply, turn); // after the append: the next estimate starts here
    if (reply.content.some((block) => block.type === 'tool_use')) {
      append(agent, { role: 'user', content: await answerCalls(agent, run, reply) });
    } else if (reply.stop_reason !== 'pause_turn') {
      // a paused turn just goes round again
      agent.repeats = NO_REPEATS; // a reply without calls ends a row of repeated calls
      const judged = await judgeFinalReply(agent, run, reply);
      if ('halt' in judged) return halt(agent, judged.halt, turn);
      const goOn: Anthropic.TextBlockParam = { type: 'text', text: judged.goOn };
      append(agent, { role: 'user', content: [goOn, ...takeSteering(agent)] });
    }
    const stop = stopCheck(agent, run, turn);
    if (stop) return halt(agent, stop, turn);
  }
}

/** How a run ended: a value, never an exception. */
export type Halt =
  | { kind: 'accepted'; verifiedBy: string | null }
  | {
      kind: 'budget';
      budget: BudgetName;
      limit: number;
      spent?: { tokens: number; costUsd: number | null }; // with sub-agents; not in old files
    }
  | { kind: 'interrupted' }
  | { kind: 'error'; message: string };

/** Every halt goes through here, so every run reports its halt. */
function halt(agent: Agent, reached: Halt, turns: number): Halt {
  agent.config.onEvent({ type: 'halt', halt: reached, turns });
  return reached;
}

const errorHalt = (message: string): Halt => ({ kind: 'error', message });

/** Prevents a failed API call from killing the program; "prompt is too long" compacts, retries. */
async function callModel(agent: Agent, run: Run, turn: number): Promise<Called> {
  const { config } = agent;
  const options = {
    signal: run.signal,
    onText: (delta: string) => config.onEvent({ type: 'text', delta }),
    onThinking: (delta: string) => config.onEvent({ type: 'thinking', delta }),
    onNotice: (text: string) => config.onEvent({ type: 'notice', text }),
  };
  for (let attempt = 1; ; attempt++) {
    try {
      const view = await contextView(agent, run.signal);
      // After compaction, just before the call: a stop beats a budget or a failed hook.
      if (run.signal.aborted) return { halt: stoppedHalt(agent, run) };
      if ('halt' in view) return { halt: view.halt };
      const overspent = spendingHalt(agent);
      if (overspent) return { halt: overspent };
      const estimatedTokens = estimateNextRequest(agent, view.messages);
      config.onEvent({ type: 'request', turn, messages: view.messages.length, estimatedTokens });
      // The mark goes on the last block: each request reads the one before from the cache.
      const request = { system: agent.system, tools: agent.toolDefinitions, cache_control: CACHE };
      const reply = await config.model.complete({ ...request, messages: view.messages }, options);
      return { reply: withResendableInputs(reply) };
    } catch (error) {
      if (run.signal.aborted) return { halt: stoppedHalt(agent, run) };
      // A summary is a model call too: none once the budget is spent.
      const retry = attempt === 1 && isPromptTooLong(error) && !spendingHalt(agent);
      if (
        retry &&
        (await compact(agent, run.signal).catch(() => 'nothing to cut')) !== 'nothing to cut'
      )
        continue;
      return { halt: errorHalt(describeModelError(error)) };
    }
  }
}

/** A reply, or why none came back. */
type Called = { halt: Halt } | { reply: Anthropic.Message };

const CACHE: Anthropic.CacheControlEphemeral = { type: 'ephemeral' };

/** Prevents a transcript the API rejects: empty text dropped, the rest as sent (thinking too). */
function appendReply(agent: Agent, reply: Anthropic.Message): void {
  const content = reply.content.filter(
    (block) => block.type !== 'text' || block.text.trim() !== '',
  );
  if (content.length > 0) append(agent, { role: 'assistant', content });
}

/** Answers each call, in order, with one tool_result. Consecutive reads run side by side; any
 *  other call runs alone, decided only once the calls before it have run. */
async function answerCalls(agent: Agent, run: Run, reply: Anthropic.Message) {
  const results: Anthropic.ToolResultBlockParam[] = [];
  for (const group of callGroups(agent, reply)) {
    const decided: Decided[] = [];
    for (const call of group) {
      agent.config.onEvent({ type: 'call', call });
      countRepeats(agent, call);
      const notRun = notRunReason(agent, run, reply);
      decided.push(notRun ? { outcome: failed(notRun) } : await decide(agent, run, call));
    }
    const outcomes = await Promise.all(
      decided.map((d) => ('outcome' in d ? d.outcome : runUnlessStopped(agent, run, d.planned))),
    );
    results.push(...group.map((call, i) => answer(agent, call, outcomes[i]!)));
  }
  return [...results, ...takeSteering(agent)];
}

export const MAX_PARALLEL_READS = 8;

/** The reply's calls in order: runs of read-only calls (up to MAX_PARALLEL_READS), others alone. */
function callGroups(agent: Agent, reply: Anthropic.Message): Anthropic.ToolUseBlock[][] {
  const groups: Anthropic.ToolUseBlock[][] = [];
  let reads: Anthropic.ToolUseBlock[] = [];
  for (const call of reply.content.filter((block) => block.type === 'tool_use')) {
    const readOnly = agent.config.tools.find((tool) => tool.name === call.name)?.readOnly;
    if (!readOnly || reads.length === MAX_PARALLEL_READS) reads = [];
    if (reads.length === 0) groups.push(reads);
    reads.push(call);
    if (!readOnly) reads = [];
  }
  return groups;
}

/** What became of one call, as the model reads it. */
export type ToolOutcome = { content: string; isError: boolean };
const failed = (content: string): ToolOutcome => ({ content, isError: true });

/** A call the hooks let through, or the answer they gave instead. */
type Decided = { planned: PlannedCall } | { outcome: ToolOutcome };

/** Prevents an unanswered call: every outcome, refusals too, becomes its result. */
function answer(agent: Agent, call: Anthropic.ToolUseBlock, outcome: ToolOutcome) {
  const result: Anthropic.ToolResultBlockParam = {
    type: 'tool_result',
    tool_use_id: call.id,
    content: outcome.content,
  };
  if (outcome.isError) result.is_error = true;
  agent.config.onEvent({ type: 'result', call, result });
  return result;
}

/** Prevents an unchecked call from running: the before-call hooks (P3) decide in turn. */
async function decide(agent: Agent, run: Run, call: Anthropic.ToolUseBlock): Promise<Decided> {
  const { tools, onEvent } = agent.config;
  const tool = tools.find((t) => t.name === call.name);
  if (!tool) {
    const names = tools.map((t) => t.name).join(', ');
    return { outcome: failed(`unknown tool "${call.name}"; the tools are: ${names}`) };
  }
  let planned: PlannedCall = { call, tool, input: call.input };
  for (const hook of agent.beforeCall) {
    const decision = await askHook(hook, run.signal, () => hook.check(planned, agent, run.signal));
    if (decision.action !== 'allow') onEvent({ type: 'decision', call, hook: hook.name, decision });
    if (decision.action === 'deny') return { outcome: failed(decision.reason) };
    if (decision.action === 'answer')
      return { outcome: { content: decision.content, isError: false } };
    if (decision.action === 'ask') planned = { ...planned, askEveryTime: decision.reason };
    if (decision.action === 'rewrite') {
      const problem = schemaProblem(tool, decision.input); // as the model's own were
      if (problem)
        return { outcome: failed(`the ${hook.name} hook rewrote the call into ${problem}`) };
      planned = { ...planned, input: decision.input };
    }
  }
  return { planned };
}

/** Prevents a tool failure from crashing the loop, and Ctrl-C from waiting on a tool over 5 s. */
async function execute(agent: Agent, run: Run, planned: PlannedCall): Promise<ToolOutcome> {
  agent.config.onEvent({ type: 'running', call: planned.call });
  const context = { ...agent.toolContext, signal: run.signal, callId: planned.call.id };
  // A tool that throws before it returns a promise fails like any other; it starts at once.
  const running = new Promise<string>((resolve) =>
    resolve(planned.tool.run(planned.input, context)),
  );
  const ran = running.then(
    (content): ToolOutcome => ({ content, isError: false }),
    (error: unknown) => failed(errorText(error)),
  );
  let outcome = await withinGrace(ran, run.signal, ABANDONED);
  for (const hook of agent.afterCall) outcome = await checkResult(agent, hook, planned, outcome);
  return outcome;
}

const ABANDONED = failed(
  'interrupted: the call was still running 5 s after the stop; its effects are unknown',
);

// P2 — the gate: a reply without tool calls claims "done", and plain code checks the claim.

export interface GateOptions {
  verify?: string; // exit code 0 is the only "done"; none: trust the model
  verifyTimeoutMs: number;
  sandbox?: boolean; // true: fail closed without a sandbox; false: never; undefined: if one exists
  passEnv?: readonly string[]; // variables the check gets beside the allowlist, by name
  sandboxRead?: readonly string[]; // paths the contained check may read beside the system's
}

/** The run halts, or the loop goes on with this message. */
type Verdict = { halt: Halt } | { goOn: string };

/** Prevents a cut-off or refused reply from passing as "done". */
async function judgeFinalReply(agent: Agent, run: Run, reply: Anthropic.Message): Promise<Verdict> {
  if (run.signal.aborted) return { halt: stoppedHalt(agent, run) }; // too late to decide
  const stop = reply.stop_reason;
  if (stop === 'max_tokens') return { goOn: CUT_OFF_REPLY };
  if (stop === 'refusal') return { halt: errorHalt('the model refused to continue (refusal)') };
  if (stop === 'model_context_window_exceeded')
    return { halt: errorHalt('the context window is full') };
  return await verifyGate(agent, run);
}

/** Prevents a false "done": it takes exit code 0 and the protected files unchanged. */
async function verifyGate(agent: Agent, run: Run): Promise<Verdict> {
  const { verify, verifyTimeoutMs, onEvent } = agent.config;
  const ctx = { ...agent.toolContext, signal: run.signal };
  const tampered = await protectedChanges(agent, ctx);
  if (tampered) {
    const reason = 'protected files changed';
    const gate = { passed: false, exitCode: null, output: tampered, sandboxed: false };
    onEvent({ type: 'gate', command: verify ?? '(none)', reason, ...gate });
    const restore = 'Restore them; the task must be done without changing them.';
    return {
      goOn: `The task is not done: ${reason} since the session started: ${tampered}. ${restore}`,
    };
  }
  if (verify === undefined) return { halt: { kind: 'accepted', verifiedBy: null } };
  const onOutput = (text: string) => onEvent({ type: 'gate-output', text });
  onEvent({ type: 'gate-start', command: verify });
  // Sandboxed where it must or can be (the default runner), as a fork's command tool is.
  const ran = await ctx.runner(verify, { ...commandOptions(ctx), onOutput }).catch(errorText);
  if (typeof ran === 'string') return { halt: errorHalt(`the check was not run: ${ran}`) };
  if (run.signal.aborted) return { halt: stoppedHalt(agent, run) };
  // A check that changed what judges it fails (uncontained, its writes are real).
  const touched = await protectedChanges(agent, ctx);
  const { exitCode, output, timedOut, contained: sandboxed } = ran;
  let reason = `exited with code ${exitCode}`;
  if (timedOut) reason = `did not finish within ${verifyTimeoutMs / 1000} s`;
  if (touched) reason = `changed protected files: ${touched}`;
  const passed = exitCode === 0 && !touched;
  onEvent({ type: 'gate', command: verify, exitCode, passed, reason, output, sandboxed });
  if (passed) return { halt: { kind: 'accepted', verifiedBy: verify } };
  const told = `Its output:\n\n${output}\n\nFix the cause, then say you are done.`;
  return { goOn: `The task is not done yet: the check \`${verify}\` ${reason}. ${told}` };
}

/** The protected files changed since the session started, in a line; null if none (or no
 *  --protect). */
async function protectedChanges(agent: Agent, ctx: ToolContext): Promise<string | null> {
  if (!ctx.protect?.length) return null;
  const now = await ctx.disk.fingerprints(ctx.protect, ctx);
  return changedFiles(agent.protectedAtStart, now).join(', ') || null;
}

// P3 — guards: hooks around every call (failing closed), budgets, Ctrl-C and steering.

export interface GuardOptions {
  budgets: Budgets;
  protect: readonly string[]; // globs of files the model may not change, e.g. "test/**"
  defaultProtection?: boolean; // false: writes that could run later pass a blanket yes; .git read
  approve: Approver; // asked before a call that changes something; default: approve all
  beforeCall?: readonly BeforeCallHook[]; // a forker's own, run after validation
  afterCall?: readonly AfterCallHook[];
}

/** A run's limits. Tokens and dollars count sub-agents' and summaries' calls too. */
export interface Budgets {
  maxTurns: number; // a turn is one model call
  maxTokens?: number; // input (cache reads and writes included) plus output
  maxCostUsd?: number;
  timeoutMs?: number;
}

/** A run's limits unless given: turns only. */
export const DEFAULT_BUDGETS: Budgets = { maxTurns: 25 };

export type BudgetName = 'turns' | 'tokens' | 'cost' | 'time';

/** A call as it will run: the model's arguments, or a hook's rewrite. */
export type PlannedCall = {
  readonly call: Anthropic.ToolUseBlock;
  readonly tool: Tool;
  readonly input: unknown;
  readonly askEveryTime?: string; // why a person must be asked, whatever they said before
};

/** What a before-call hook decides. */
export type Decision =
  | { action: 'allow' }
  | { action: 'deny'; reason: string }
  | { action: 'rewrite'; input: unknown }
  | { action: 'answer'; content: string }
  | { action: 'ask'; reason: string }; // only with a person's yes, every time, saying why

/** Runs before a call, and fails closed (see askHook). `signal` aborts when the run stops. */
export interface BeforeCallHook {
  readonly name: string;
  readonly timeoutMs?: number; // default 10 s; Infinity for hooks that wait for a person
  check(planned: PlannedCall, agent: Agent, signal: AbortSignal): Decision | Promise<Decision>;
}

/** Sees a result before the model does, and fails closed (see checkResult). */
export interface AfterCallHook {
  readonly name: string;
  readonly timeoutMs?: number;
  check(
    planned: PlannedCall,
    outcome: ToolOutcome,
    agent: Agent,
  ): ToolOutcome | Promise<ToolOutcome>;
}

export type ApprovalAnswer =
  { approved: true; always?: boolean } | { approved: false; reason?: string };
/** Asks the person about a call that changes something, showing its preview. */
export type Approver = (request: ApprovalRequest) => Promise<ApprovalAnswer>;
export type ApprovalRequest = {
  tool: string;
  preview: string;
  signal: AbortSignal;
  call: Anthropic.ToolUseBlock;
  runsLater: string | null; // why this write could run later: asked every time, never "always"
};

export const approveAll: Approver = async () => ({ approved: true });

// --- The hooks in front of every call, and after every result.

/** Prevents a broken guard from waving a call through: a throw or a timeout denies it. */
async function askHook(
  hook: BeforeCallHook,
  signal: AbortSignal,
  check: () => Decision | Promise<Decision>,
): Promise<Decision> {
  try {
    return await withinHookTime(hook, check);
  } catch (error) {
    if (error instanceof ToolError) return { action: 'deny', reason: error.message }; // on purpose
    if (signal.aborted) return deny('the run was stopped while this call was being checked');
    return deny(`the ${hook.name} check failed (${errorText(error)}), so the call was refused`);
  }
}

/** Prevents a broken after-call hook from leaking what it should have checked. */
async function checkResult(
  agent: Agent,
  hook: AfterCallHook,
  planned: PlannedCall,
  outcome: ToolOutcome,
): Promise<ToolOutcome> {
  try {
    return await withinHookTime(hook, () => hook.check(planned, outcome, agent));
  } catch (error) {
    // Told the user only: the error may quote the result it was meant to hide.
    const text = `after-call hook ${hook.name} failed: ${errorText(error)}`;
    agent.config.onEvent({ type: 'notice', text });
    return failed(`result withheld: the ${hook.name} check failed`);
  }
}

const ALLOW: Decision = { action: 'allow' };
const deny = (why: string): Decision => ({ action: 'deny', reason: `not run: ${why}` });

/** Prevents a tool from seeing input off the schema the model was shown; "5" is not 5. */
export const validateInput: BeforeCallHook = {
  name: 'validate',
  check: ({ tool, input }) => {
    const problem = schemaProblem(tool, input);
    return problem ? { action: 'deny', reason: problem } : ALLOW;
  },
};

/** Prevents any tool's `path` from reaching outside the project. */
export const safePathCheck: BeforeCallHook = {
  name: 'safe_path',
  async check({ input }, { toolContext: ctx }) {
    const requested = pathOf(input);
    if (requested !== undefined) await safe_path(ctx.root, requested);
    return ALLOW;
  },
};

/** Prevents "silent green": the model changing the files that judge its work. */
export function protectedFiles(globs: readonly string[]): BeforeCallHook {
  return {
    name: 'protect',
    async check({ tool, input }, { toolContext: { root } }) {
      const requested = pathOf(input);
      if (tool.readOnly || requested === undefined) return ALLOW;
      const real = await safe_path(root, requested);
      const glob = protectedBy(globs, real.slice(root.length + 1).replaceAll('\\', '/'));
      if (!glob) return ALLOW;
      const reason = `${requested} is protected ("${glob}"): change the code, not what checks it`;
      return { action: 'deny', reason };
    },
  };
}

/** Prevents a model from repeating one call forever: the third in a row is refused. */
export const runawayGuard: BeforeCallHook = {
  name: 'runaway',
  check(_planned, agent) {
    const { times } = agent.repeats;
    if (times < 3) return ALLOW;
    const reason = `you made this exact call ${times} times in a row and its answer will not`;
    return deny(`${reason} change; try something different`);
  },
};

/** Prevents unreviewed changes: a call that changes something waits for approval. A call a hook
 *  said to ask about every time (a write that could run later) is never covered by "always". */
export function approval(approve: Approver): BeforeCallHook {
  let always = approve === approveAll; // approving everything, nobody would read a preview
  return {
    name: 'approval',
    timeoutMs: Infinity,
    async check({ call, tool, input, askEveryTime }, agent, signal) {
      const runsLater = askEveryTime ?? null;
      if (tool.readOnly || (always && runsLater === null)) return ALLOW;
      // Prevents a blanket yes from covering a write that runs later: with nobody to ask, refused.
      if (runsLater !== null && approve === approveAll) {
        const allow = 'defaultProtection: false (--no-default-protection) allows it';
        const why = `nobody was asked, and no blanket yes covers it (${allow})`;
        return deny(`${pathOf(input)} is ${runsLater}; ${why}`);
      }
      const preview = tool.preview
        ? await tool.preview(input, agent.toolContext)
        : JSON.stringify(input, null, 2);
      const answer = await approve({ tool: tool.name, preview, signal, call, runsLater });
      if (!answer.approved) {
        const why = answer.reason ? `: ${answer.reason}` : '';
        return { action: 'deny', reason: `the user declined this ${tool.name} call${why}` };
      }
      if (runsLater === null) always ||= answer.always === true; // asked each time, never "always"
      return ALLOW;
    },
  };
}

/** Prevents one huge result, from any tool, from flooding the context. */
export const capToolOutput: AfterCallHook = {
  name: 'output cap',
  check: (_planned, outcome) => ({ ...outcome, content: capOutput(outcome.content) }),
};

// --- What stops a call or a run: a cut-off reply, Ctrl-C, a typed message, a budget.

/** Prevents calls with cut-off arguments, after a stop, or before the user is heard. */
function notRunReason(agent: Agent, run: Run, reply?: Anthropic.Message): string | null {
  if (reply?.stop_reason === 'max_tokens') return CUT_OFF_CALL;
  if (run.userSignal.aborted) return 'not run: the user interrupted';
  if (run.signal.aborted) return 'not run: the time budget of this run ran out';
  if (agent.steering.length > 0) return 'skipped: the user sent a message; read it before going on';
  return null;
}

/** Prevents a call from starting after a stop that came while the hooks were deciding. */
async function runUnlessStopped(agent: Agent, run: Run, planned: PlannedCall) {
  const notRun = notRunReason(agent, run); // the reply was judged before the hooks
  return notRun ? failed(notRun) : await execute(agent, run, planned);
}

/** Speaks to a run in progress: calls not yet started are skipped; the text follows results. */
export const steer = (agent: Agent, text: string): void => void agent.steering.push(text);

/** What the user typed meanwhile, as blocks after the results. */
function takeSteering(agent: Agent): Anthropic.TextBlockParam[] {
  return agent.steering.splice(0).map((text) => ({ type: 'text', text }));
}

/** Takes back what the user typed and the model never read. */
export const withdrawSteering = (agent: Agent): string[] => agent.steering.splice(0);

/** What stops one run: Ctrl-C (`userSignal`), or that or its time running out (`signal`). */
type Run = { signal: AbortSignal; userSignal: AbortSignal };

/** A run opens a new ledger, unless it is a sub-agent's, and a new row of repeated calls. */
function startRun(
  agent: Agent,
  userSignal = new AbortController().signal,
  ledger = noUsage(agent.config.model),
): Run {
  const { timeoutMs } = agent.config.budgets;
  const timeUp = timeoutMs === undefined ? [] : [AbortSignal.timeout(timeoutMs)];
  agent.ledger = ledger;
  agent.repeats = NO_REPEATS; // a new task starts a new row
  return { signal: AbortSignal.any([userSignal, ...timeUp]), userSignal };
}

/** Why a stopped run stopped: the user (who wins a tie), or its time budget. */
function stoppedHalt(agent: Agent, run: Run): Halt {
  if (run.userSignal.aborted) return { kind: 'interrupted' };
  return budgetHalt(agent, 'time', agent.config.budgets.timeoutMs);
}

/** Prevents a run going on past Ctrl-C, a budget, or when stuck; checked each turn. */
function stopCheck(agent: Agent, run: Run, turn: number): Halt | null {
  const { maxTurns } = agent.config.budgets;
  if (run.signal.aborted) return stoppedHalt(agent, run);
  if (agent.repeats.times >= STUCK_AFTER) return errorHalt(STUCK);
  return spendingHalt(agent) ?? (turn >= maxTurns ? budgetHalt(agent, 'turns', maxTurns) : null);
}

/** A model that makes one call this often in a row ignored three refusals. */
const STUCK_AFTER = 6;
const STUCK =
  `the model made the same call ${STUCK_AFTER} times in a row, ` +
  'refused from the third on: it is stuck';

/** Prevents runaway spending; checked before every model call, summaries' included. */
function spendingHalt(agent: Agent): Halt | null {
  const { maxTokens, maxCostUsd } = agent.config.budgets;
  if (maxTokens !== undefined && totalTokens(agent.ledger) >= maxTokens)
    return budgetHalt(agent, 'tokens', maxTokens);
  // unpriced: withDefaults refuses a dollar budget
  if (maxCostUsd !== undefined && (agent.ledger.costUsd ?? 0) >= maxCostUsd)
    return budgetHalt(agent, 'cost', maxCostUsd);
  return null;
}

function budgetHalt(agent: Agent, budget: BudgetName, limit = 0): Halt {
  const spent = { tokens: totalTokens(agent.ledger), costUsd: agent.ledger.costUsd };
  return { kind: 'budget', budget, limit, spent };
}

const NO_REPEATS = { key: '', times: 0 };

/** A call like the one before (name and arguments) extends the row; any other starts one. */
function countRepeats(agent: Agent, call: Anthropic.ToolUseBlock): void {
  const key = JSON.stringify([call.name, call.input]);
  agent.repeats = { key, times: agent.repeats.key === key ? agent.repeats.times + 1 : 1 };
}

// P4 — endurance: what the model is shown (context hooks), compaction, AGENTS.md, the sub-agent.

export interface EnduranceOptions {
  contextWindow?: number; // when the model does not say; default 200,000
  compactAt?: number; // compact when a request would pass this share of the window; default 0.75
  contextFiles?: boolean; // read AGENTS.md files into the system prompt; default true
  subAgents?: boolean; // offer the `task` tool; default true (a sub-agent gets false)
  taskModel?: Model; // the model sub-agents run on; default: the same
  contextHooks?: readonly ContextHook[]; // a forker's own, run after compaction
}

/** Messages as the model is shown them: the transcript, or what hooks made of it. */
export type View = readonly Anthropic.MessageParam[];

/** Returns what the model sees: the messages shown (read-only), or a new array. */
export type ContextHook = (messages: View, agent: Agent, signal: AbortSignal) => Promise<View>;

/** The model sees the summary, then the transcript from `keptFrom` on. */
export type Compaction = { summary: string; keptFrom: number };

export const DEFAULT_CONTEXT_WINDOW = 200_000;
const KEEP_VERBATIM_TOKENS = 20_000;

/** Estimated tokens: 3.5 characters a token, rounded up: the estimate errs high. */
export const estimateTokens = (value: unknown) =>
  Math.ceil((typeof value === 'string' ? value : JSON.stringify(value)).length / 3.5);

/** Runs the context hooks on the transcript: the model sees what comes out, or the failure. */
async function contextView(
  agent: Agent,
  signal: AbortSignal,
): Promise<{ halt: Halt } | { messages: Anthropic.MessageParam[] }> {
  let view: View = freezeNewMessages(agent.messages);
  for (const hook of agent.contextHooks) {
    try {
      view = await runReadOnly(view, (shown) => hook(shown, agent, signal));
    } catch (error) {
      const failure = `the context hook ${hook.name || '(unnamed)'} failed: ${errorText(error)}`;
      return { halt: errorHalt(failure) };
    }
  }
  return { messages: view as Anthropic.MessageParam[] }; // lent (see Model)
}

const compactedViews = new WeakMap<Compaction, Anthropic.MessageParam[]>();

/** [summary, ...messages.slice(keptFrom)]: built once per compaction, then only extended, so no
 *  request copies the transcript. */
function compactedView({ compaction }: Agent, messages: View): View {
  if (!compaction) return messages;
  let view = compactedViews.get(compaction);
  if (view === undefined) {
    view = [deepFreeze(summaryMessage(compaction.summary))];
    compactedViews.set(compaction, view);
  }
  for (let i = compaction.keptFrom + view.length - 1; i < messages.length; i++)
    view.push(messages[i]!);
  return view;
}

/** The next request's size: the last one's real size plus an estimate of what came since. */
function estimateNextRequest(agent: Agent, view: View): number {
  const last = agent.lastRequest;
  if (last) return last.tokens + estimateMessages(agent.messages.slice(last.messages));
  const fixed = estimateTokens(agent.system) + estimateTokens(agent.toolDefinitions);
  return fixed + estimateMessages(view);
}

/** Prevents a full window from ending the session: past 75% the older part is summarised. */
export const compaction: ContextHook = async (messages, agent, signal) => {
  const threshold = (agent.config.compactAt ?? 0.75) * agent.contextWindow;
  while (estimateNextRequest(agent, compactedView(agent, messages)) > threshold) {
    if (spendingHalt(agent)) break;
    if ((await compact(agent, signal)) !== 'more left') break; // done, or nothing old enough
  }
  return compactedView(agent, messages);
};

/** Where the verbatim part starts: at a reply (keeping calls with results), within `keepTokens`. */
export function chooseCut(messages: View, from: number, keepTokens: number): number | null {
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

/** A summary is text only: the request keeps the tools (the cached prefix) but no calls. */
const NO_TOOLS: Anthropic.ToolChoice = { type: 'none' };

/** Longer strings are cut (head and tail kept) before summarising. */
const SUMMARY_STRING_CHARS = 2_000;

/** What one summary did: older messages are left to summarise, or not; or none could be cut. */
export type Compacted = 'more left' | 'done' | 'nothing to cut';

/** Why a summary goes unused, or null to use it: /compact declines one that is not smaller. */
export type SummaryCheck = (tokensBefore: number, tokensAfter: number) => string | null;

/** Summarises the older messages with a model call; a summary that comes back empty, or that
 *  `declines` turns down, throws, unused. */
export async function compact(
  agent: Agent,
  signal: AbortSignal,
  declines?: SummaryCheck,
): Promise<Compacted> {
  const { messages, contextWindow, config } = agent;
  const from = agent.compaction?.keptFrom ?? 0;
  const verbatim = chooseCut(messages, from, Math.min(KEEP_VERBATIM_TOKENS, contextWindow / 4));
  if (verbatim === null) return 'nothing to cut';
  const keptFrom = pieceEnd(messages, from, verbatim, contextWindow / 2);
  const previous = agent.compaction ? [summaryMessage(agent.compaction.summary)] : [];
  const older = [...previous, ...messages.slice(from, keptFrom)];
  const asked: Anthropic.MessageParam = { role: 'user', content: SUMMARY_INSTRUCTIONS };
  const shown = [...older.map((message) => capStrings(message, SUMMARY_STRING_CHARS)), asked];
  const request = { system: agent.system, tools: agent.toolDefinitions, tool_choice: NO_TOOLS };
  const onNotice = (text: string) => config.onEvent({ type: 'notice', text });
  const options = { signal, onText: () => {}, onNotice };
  const reply = await config.model.complete({ ...request, messages: shown }, options);
  const { usage } = reply;
  spend(agent, usage); // paid for, used or not
  const summary = textOfMessage(reply).trim();
  const tokensBefore = estimateMessages(older);
  const tokensAfter = estimateMessages([summaryMessage(summary)]);
  let unused = declines?.(tokensBefore, tokensAfter) ?? null;
  if (summary === '') unused = 'the summary came back empty';
  if (unused) {
    config.onEvent({ type: 'compaction-failed', usage, reason: unused });
    throw new Error(unused);
  }
  agent.compaction = { summary, keptFrom };
  agent.lastRequest = null;
  config.onEvent({ type: 'compaction', summary, keptFrom, tokensBefore, tokensAfter, usage });
  return keptFrom < verbatim ? 'more left' : 'done';
}

// --- AGENTS.md: context for the model, never instructions for the harness.

function systemPrompt(settings: Settings, files: ContextFile[]): string {
  const base = settings.systemPrompt ?? SYSTEM_PROMPT;
  const sections = files.filter((file) => !file.skipped).map((f) => `## ${f.path}\n\n${f.text}`);
  if (sections.length === 0) return base;
  const heading = '# Project context (AGENTS.md files: guidance from the project, farthest first)';
  return `${base}\n\n${heading}\n\n${sections.join('\n\n')}`;
}

// --- The sub-agent: the same loop again, with its own transcript and read-only tools.

const TASK_MAX_TURNS = 30;

/** Lets a search that reads forty files cost the parent one tool result, on its budget. */
function taskTool(parent: Agent): Tool {
  return defineTool({
    name: 'task',
    description:
      'Ask a sub-agent, which can list and read files but not edit them, a self-contained ' +
      'question; it answers with a report. For searches that would read many files (several ' +
      'tasks may run at once); for one known file, use read_file.',
    input: z.strictObject({
      description: z.string().describe('Its aim in a few words, e.g. "find the config loader"'),
      prompt: z.string().describe('The question in full: the sub-agent sees nothing else'),
    }),
    readOnly: true,
    kind: 'search',
    describe: ({ description }) => `task ${JSON.stringify(description)}`,
    async run({ description, prompt }, ctx) {
      const id = `task-${++parent.subAgentsStarted}`;
      const { config } = parent;
      const model = config.taskModel ?? config.model;
      const { maxTokens, maxCostUsd } = config.budgets; // kept on the parent's ledger
      const child = await createAgent({
        ...config,
        model,
        tools: config.tools.filter((tool) => tool.readOnly && tool.name !== 'task'),
        verify: undefined,
        budgets: { maxTurns: TASK_MAX_TURNS, maxTokens, maxCostUsd },
        protect: [],
        subAgents: false,
        contextFiles: false,
        systemPrompt: SUBAGENT_PROMPT,
        onEvent: (event) => {
          if ('usage' in event) addUsage(parent.usage, model, event.usage);
          config.onEvent({ type: 'subagent', id, description, event });
        },
      });
      const ended = await runTask(child, prompt, ctx.signal, parent.ledger);
      const said = child.messages.filter((message) => message.role === 'assistant');
      const report =
        said
          .map(textOfMessage)
          .findLast((text) => text.trim() !== '')
          ?.trim() ?? '';
      if (ended.kind === 'accepted') return report || '(the sub-agent gave no answer)';
      return `[the sub-agent stopped: ${JSON.stringify(ended)}]\n${report}`;
    },
  });
}

// --- The real model: one streamed Messages API call per turn. The SDK retries 408, 409, 429 and
// 5xx itself, with backoff and retry-after; the two hardening helpers say so, and end a stall.

export const DEFAULT_MODEL = 'claude-sonnet-5-5';
const MAX_OUTPUT_TOKENS = 32_000; // the reply's own, above any thinking budget
/** The SDK's timeout covers only the headers; a stream silent this long is stalled. */
const STREAM_IDLE_MS = 90_000;

/** thinkingBudget: the tokens the model may think for before each reply (at least 1,024). */
export type AnthropicOptions = { idleMs?: number; thinkingBudget?: number };

/** The real model, its text (and thinking) shown as it arrives. */
export class AnthropicModel implements Model {
  constructor(
    readonly name: string,
    private readonly client: Anthropic,
    private readonly options: AnthropicOptions = {},
  ) {}

  async complete(
    request: ModelRequest,
    { signal, onText, onThinking, onNotice }: ModelCallOptions,
  ) {
    const stall = stallWatch(this.options.idleMs ?? STREAM_IDLE_MS);
    const budget = this.options.thinkingBudget ?? 0;
    const thinking =
      budget > 0 ? { thinking: { type: 'enabled' as const, budget_tokens: budget } } : {};
    const stream = this.client.messages.stream(
      { model: this.name, max_tokens: MAX_OUTPUT_TOKENS + budget, ...thinking, ...request },
      {
        signal: AbortSignal.any([signal, stall.signal]),
        middleware: [retryNotices(this.client.maxRetries, signal, onNotice)],
      },
    );
    stream.on('text', onText);
    if (onThinking) stream.on('thinking', onThinking);
    return await stall.watch(stream);
  }

  /** Asked of the API once per model: sub-agents want it too. */
  private window: Promise<number | null> | undefined;
  contextWindow(): Promise<number | null> {
    this.window ??= this.client.models.retrieve(this.name).then(
      (info) => info.max_input_tokens,
      () => null,
    );
    return this.window;
  }
}

export const errorText = (error: unknown) =>
  error instanceof Error ? error.message : String(error);

export function textOfMessage(message: Anthropic.MessageParam | Anthropic.Message): string {
  if (typeof message.content === 'string') return message.content;
  const blocks: readonly (Anthropic.ContentBlockParam | Anthropic.ContentBlock)[] = message.content;
  return blocks.map((block) => (block.type === 'text' ? block.text : '')).join('');
}

// --- The words the model reads. They guide the model; no guarantee rests on them.

export const SYSTEM_PROMPT = `You are a coding agent in one project folder. You act only through the
tools you are given; paths are relative to the project root. Read a file before you edit it, and
make the smallest change that does the task. When it is done, stop calling tools and say in one or
two sentences what you changed. Your "done" is checked: if the project has a check command, it
runs, and if it fails you are told.`;

const CUT_OFF_CALL =
  'not executed: your reply was cut off at max_tokens, the arguments may be incomplete; ' +
  'issue the call again';

const CUT_OFF_REPLY =
  'Your reply was cut off at the output limit (max_tokens) before you finished. ' +
  'Continue, more briefly: call a tool, or say that you are done.';

const SUMMARY_INSTRUCTIONS = `The conversation above no longer fits the context window.
Write a summary to replace it, from which you can carry on alone. Use these headings: Goal;
Constraints from the user; Done; In progress; Next steps; Exact details (file names, function
names, error messages, commands and values needed to carry on, copied exactly). Do not call tools.`;

const SUMMARY_HEADING =
  '[Summary of the earlier conversation, written when it no longer fitted the context window]';

/** Stands in for the summarised part, first in every later request. */
const summaryMessage = (summary: string): Anthropic.MessageParam => ({
  role: 'user',
  content: `${SUMMARY_HEADING}\n\n${summary}`,
});

const SUBAGENT_PROMPT = `You are a research sub-agent in one project folder. Answer the prompt with
the read-only tools you are given; paths are relative to the project root. Your final reply is all
the asking agent will see: make it complete, and name the files and lines it rests on. Ask nothing
back.`;

// --- Tokens and dollars: what a run spends, so its budgets can be kept.

/** Tokens by kind, and dollars: null when the price is unknown, not a made-up zero. */
export type UsageTotals = ReturnType<typeof noUsage>;

const totalTokens = (u: UsageTotals) => u.input + u.cacheWrite + u.cacheRead + u.output;

const noUsage = ({ price }: Model) => ({
  input: 0,
  cacheWrite: 0,
  cacheRead: 0,
  output: 0,
  costUsd: price ? 0 : null,
});

function spend(agent: Agent, usage: Anthropic.Usage): void {
  addUsage(agent.usage, agent.config.model, usage);
  addUsage(agent.ledger, agent.config.model, usage);
}

/** Spends a reply's usage, keeps its size for the next estimate, and reports it. */
function countUsage(agent: Agent, reply: Anthropic.Message, turn: number): void {
  const { usage, content, stop_reason: stopReason } = reply;
  spend(agent, usage);
  const cached = (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
  const tokens = usage.input_tokens + cached + usage.output_tokens;
  agent.lastRequest = { tokens, messages: agent.messages.length };
  const calls = content.filter((block) => block.type === 'tool_use').length;
  const totals = { ...agent.usage };
  agent.config.onEvent({ type: 'reply', turn, stopReason, calls, content, usage, totals });
}

function addUsage(totals: UsageTotals, model: Model, usage: Anthropic.Usage): void {
  const cost = costOf(model.price, usage);
  totals.input += usage.input_tokens;
  totals.cacheWrite += usage.cache_creation_input_tokens ?? 0;
  totals.cacheRead += usage.cache_read_input_tokens ?? 0;
  totals.output += usage.output_tokens;
  totals.costUsd = totals.costUsd === null || cost === null ? null : totals.costUsd + cost;
}
