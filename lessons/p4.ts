// lessons/p4.ts — the harness after lesson P4: compaction, AGENTS.md and the sub-agent.
// Summarise the past for the model; never delete it.
//
//   runTask(agent, task):
//     append the task
//     for each turn up to MAX_TURNS (summary requests are not turns):
//       view = the messages, or the latest summary and the messages from its cut on
//       the request would pass 75% of the window? summarise the older part first (a request on the side)
//       reply = model.complete(system prompt (+ AGENTS.md) + tools + view); append it as received
//       then as in P3: answer every call (task runs a sub-agent), go on after a cut-off reply, or the gate
//     halt: budget (turns)
//
// What changed since P3: ask (the view and compaction), projectRules (AGENTS.md) and taskTool (the sub-agent).
// Its acceptance: npm run lesson -- p4 --check lessons/p4.ts. agent.ts is the same harness grown with hooks,
// budgets, Ctrl-C, steering and the session file.

import type Anthropic from '@anthropic-ai/sdk';
import { open, realpath } from 'node:fs/promises';
import path from 'node:path';
import { minimatch } from 'minimatch';
import { z } from 'zod';
import type { Model, ModelRequest } from '../agent.ts';
import { defineTool, plainDisk, runCommand, safe_path, type Tool, type ToolContext } from '../tools.ts';

export interface Config {
  /** The project folder the tools work in, and where the verify command runs. */
  root: string;
  model: Model;
  /** list_files, read_file and edit_file: TOOLS in tools.ts. */
  tools: readonly Tool[];
  /** The command whose exit code 0 is the only acceptable "done"; without one, "done" is unverified. */
  verify?: string;
  /** How long the verify command may run; default VERIFY_TIMEOUT_MS. */
  verifyTimeoutMs?: number;
  /** Files (names or globs, relative to the root) no call of a tool that changes files may touch: the checks. */
  protect?: readonly string[];
  /** Asked before every call of a tool that changes files, once it passed every other check; without it, yes. */
  approve?: Approver;
  /** The model's window in tokens: past 75% of it, the older part of the messages is summarised. */
  contextWindow?: number;
  /** The model the sub-agents run on; default config.model. */
  taskModel?: Model;
  onEvent?: (event: Event) => void;
}

/** A person (or a policy) answering "may this call run?"; what it throws or rejects with is a no. */
export type Approver = (request: {
  tool: string;
  preview: string;
  signal: AbortSignal;
}) => Promise<{ approved: true } | { approved: false; reason?: string }>;

/** Every run ends in one of these, as a value: a failed model call is a halt, never an exception. */
export type Halt =
  | { kind: 'accepted'; verifiedBy: string | null }
  | { kind: 'budget'; budget: 'turns'; limit: number }
  | { kind: 'error'; message: string };

/** The loop never prints; it tells whoever listens (a printer, a log) what happened. */
export type Event =
  | { type: 'result'; call: Anthropic.ToolUseBlock; result: Anthropic.ToolResultBlockParam }
  | { type: 'gate'; command: string; exitCode: number | null; passed: boolean }
  | { type: 'halt'; halt: Halt; turns: number };

export interface Agent {
  readonly config: Config;
  /** The only state the model ever sees, resent whole on every request. */
  readonly messages: Anthropic.MessageParam[];
  /** Built once: the same bytes on every request, so the prompt cache can serve them. */
  readonly toolDefinitions: Anthropic.Tool[];
  /** What the tools remember between calls (which files were read): it lives as long as the agent. */
  readonly toolContext: ToolContext;
  /** The system prompt, with the project's AGENTS.md; built once. */
  readonly system: string;
  /** config.tools, and task for a parent agent. */
  readonly tools: readonly Tool[];
  /** MAX_TURNS, or TASK_MAX_TURNS for a sub-agent. */
  readonly maxTurns: number;
  /** The latest summary: it stands in for every message before `from`; agent.messages keeps them all. */
  summary: { text: string; from: number } | null;
}

/** A model that never stops calling tools would otherwise run (and bill) forever. */
export const MAX_TURNS = 25;
/** A sub-agent answers one question; one that never does must stop too. */
export const TASK_MAX_TURNS = 30;
/** The part of the window a request may fill before the older messages are summarised. */
const COMPACT_AT = 0.75;
/** AGENTS.md is read up to this many bytes: a huge one must not fill the window. */
const AGENTS_MD_MAX_BYTES = 32 * 1024;
/** A verify command that hangs must not hang the run: one that outlasts this (or config.verifyTimeoutMs) fails. */
export const VERIFY_TIMEOUT_MS = 120_000;

export const SYSTEM_PROMPT = [
  'You are a coding agent working inside one project folder, through the tools you are given;',
  'all paths are relative to the project root. Read a file before you edit it, and make the smallest change',
  'that does the task. When the task is done, stop calling tools and say in one or two sentences what you',
  'changed. Your "done" is checked: if the project has a check command, it runs, and if it fails you are told.',
].join('\n');

/** A reply cut off at max_tokens is no claim of "done": the model is asked to go on. */
const CONTINUE = 'Your reply was cut off. Continue where you stopped, more briefly.';

const SUB_AGENT_PROMPT = [
  'You answer one question about a project folder, with read-only tools; paths are relative to its root.',
  'You cannot edit files. When you know the answer, stop calling tools and give it in full.',
].join('\n');

export async function createAgent(config: Config): Promise<Agent> {
  const root = await realpath(config.root);
  const rules = await projectRules(root);
  const system = rules === '' ? SYSTEM_PROMPT : `${SYSTEM_PROMPT}\n\n# The project's AGENTS.md\n\n${rules}`;
  const settings = { ...config, root };
  return newAgent(settings, system, [...config.tools, taskTool(settings)], MAX_TURNS);
}

function newAgent(config: Config, system: string, tools: readonly Tool[], maxTurns: number): Agent {
  return {
    config: { ...config, tools },
    messages: [],
    toolDefinitions: tools.map(toolDefinition),
    toolContext: { root: config.root, seen: new Map(), disk: plainDisk, runner: runCommand },
    system,
    tools,
    maxTurns,
    summary: null,
  };
}

/** The project's AGENTS.md, through safe_path like any tool's path: one that links out of the project is skipped. */
async function projectRules(root: string): Promise<string> {
  try {
    const file = await open(await safe_path(root, 'AGENTS.md'));
    try {
      const bytes = Buffer.alloc(AGENTS_MD_MAX_BYTES);
      const { bytesRead } = await file.read(bytes, 0, AGENTS_MD_MAX_BYTES, 0);
      return bytes.subarray(0, bytesRead).toString('utf8');
    } finally {
      await file.close();
    }
  } catch {
    return '';
  }
}

/** What the model is shown of a tool: its name, when to use it, and the JSON Schema of its input. */
function toolDefinition(tool: Tool): Anthropic.Tool {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(tool.input, { io: 'input' });
  return { name: tool.name, description: tool.description, input_schema: { ...schema, type: 'object' } };
}

export async function runTask(agent: Agent, task: string, signal = new AbortController().signal): Promise<Halt> {
  agent.messages.push({ role: 'user', content: task });
  const limit = agent.maxTurns;
  for (let turn = 1; turn <= limit; turn++) {
    const reply = await callModel(agent, signal);
    if ('kind' in reply) return halt(agent, reply, turn);
    appendReply(agent, reply);
    const calls = reply.content.filter((block) => block.type === 'tool_use');
    const cutOff = reply.stop_reason === 'max_tokens';
    if (calls.length > 0) {
      agent.messages.push({ role: 'user', content: await answerCalls(agent, calls, cutOff, signal) });
      continue;
    }
    if (cutOff) {
      agent.messages.push({ role: 'user', content: CONTINUE });
      continue;
    }
    const verdict = await verifyGate(agent, signal);
    if ('kind' in verdict) return halt(agent, verdict, turn);
    agent.messages.push({ role: 'user', content: verdict.notDone });
  }
  return halt(agent, { kind: 'budget', budget: 'turns', limit }, limit);
}

/** A failed model call becomes a halt of kind error instead of an exception out of runTask. */
async function callModel(agent: Agent, signal: AbortSignal): Promise<Anthropic.Message | Halt> {
  try {
    await compactIfNeeded(agent, signal);
    return await complete(agent, { system: agent.system, tools: agent.toolDefinitions, messages: view(agent) }, signal);
  } catch (error) {
    return { kind: 'error', message: `model call failed: ${errorText(error)}` };
  }
}

const complete = (agent: Agent, request: ModelRequest, signal: AbortSignal) =>
  agent.config.model.complete(request, { signal, onText: () => {}, onNotice: () => {} });

/** What the model is sent: the messages, or after a compaction the summary and the messages from its cut on. */
function view(agent: Agent): Anthropic.MessageParam[] {
  if (agent.summary === null) return agent.messages;
  return [summaryMessage(agent.summary.text), ...agent.messages.slice(agent.summary.from)];
}

const summaryMessage = (summary: string): Anthropic.MessageParam => ({
  role: 'user',
  content: `A summary of the conversation so far:\n\n${summary}`,
});

/** A request's size in tokens, erring high (3.5 characters a token): system prompt and tools included. */
const tokensOf = (value: unknown) => Math.ceil(JSON.stringify(value).length / 3.5);

/** Prevents a request larger than the window: past 75% of it, the older messages are summarised by the model, in a
 *  request on the side (no turn), and the summary stands in for them. The cut is in front of an assistant message,
 *  so no result loses its call, and keeps about a quarter of the window verbatim. No cut possible: nothing changes. */
async function compactIfNeeded(agent: Agent, signal: AbortSignal): Promise<void> {
  const window = agent.config.contextWindow;
  const fixed = { system: agent.system, tools: agent.toolDefinitions };
  if (window === undefined || tokensOf({ ...fixed, messages: view(agent) }) <= COMPACT_AT * window) return;
  const from = agent.summary?.from ?? 0;
  let cut: number | null = null;
  for (let i = agent.messages.length - 1; i > from; i--) {
    if (agent.messages[i]?.role !== 'assistant') continue;
    if (cut !== null && tokensOf(agent.messages.slice(i)) > window / 4) break;
    cut = i;
  }
  if (cut === null) return;
  const earlier = agent.summary === null ? [] : [summaryMessage(agent.summary.text)];
  const question: Anthropic.MessageParam = { role: 'user', content: SUMMARY_QUESTION };
  const messages = [...earlier, ...agent.messages.slice(from, cut), question];
  const reply = await complete(agent, { ...fixed, tool_choice: { type: 'none' }, messages }, signal);
  const summary = reply.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n');
  agent.summary = { text: summary, from: cut };
}

const SUMMARY_QUESTION =
  'Summarise the conversation above for yourself: the goal, what is done, what is next, and the exact names ' +
  '(files, functions, commands) you will need. Answer in text only.';

/** Keeps the reply exactly as received, dropping only empty text blocks, which the API refuses. */
function appendReply(agent: Agent, reply: Anthropic.Message): void {
  const content = reply.content.filter((block) => block.type !== 'text' || block.text.trim() !== '');
  if (content.length > 0) agent.messages.push({ role: 'assistant', content });
}

/** Prevents a request the API rejects: every tool_use gets exactly one tool_result, with its id,
 *  in call order, all in the one user message that comes next. */
async function answerCalls(
  agent: Agent,
  calls: Anthropic.ToolUseBlock[],
  cutOff: boolean,
  signal: AbortSignal,
): Promise<Anthropic.ToolResultBlockParam[]> {
  const results: Anthropic.ToolResultBlockParam[] = [];
  for (const call of calls) {
    const decided = cutOff ? NOT_RUN : await decide(agent, call, signal);
    const { content, isError } = 'tool' in decided ? await execute(agent, decided.tool, call, signal) : decided;
    const result: Anthropic.ToolResultBlockParam = { type: 'tool_result', tool_use_id: call.id, content };
    if (isError) result.is_error = true;
    agent.config.onEvent?.({ type: 'result', call, result });
    results.push(result);
  }
  return results;
}

type Outcome = { content: string; isError: boolean };

/** The arguments of a cut-off reply's calls may be cut short too: none of them runs. */
const NOT_RUN: Outcome = {
  content: 'Not run: your reply was cut off, so its arguments may be incomplete.',
  isError: true,
};

/** Plain code decides what runs: a call to an unknown tool, with arguments that do not fit the schema
 *  the model was shown (nothing is coerced), with a path outside the project, changing a protected file,
 *  or declined by the person is refused, with why. Every guard fails closed: what throws refuses. */
async function decide(
  agent: Agent,
  call: Anthropic.ToolUseBlock,
  signal: AbortSignal,
): Promise<{ tool: Tool } | Outcome> {
  const tool = agent.tools.find((t) => t.name === call.name);
  if (!tool) {
    const names = agent.tools.map((t) => t.name).join(', ');
    return { content: `unknown tool "${call.name}"; the tools are: ${names}`, isError: true };
  }
  const input = tool.input.strict().safeParse(call.input);
  if (!input.success) return { content: `invalid arguments: ${z.prettifyError(input.error)}`, isError: true };
  try {
    // Any tool's path, not only the three here: a tool added later cannot forget the check.
    const requested = input.data.path;
    if (typeof requested === 'string') {
      const file = await safe_path(agent.toolContext.root, requested);
      if (!tool.readOnly && isProtected(agent, file))
        return { content: `${requested} is protected: change the code, not the checks`, isError: true };
    }
    const approved = await approval(agent, tool, call, signal);
    if (approved !== null) return { content: approved, isError: true };
  } catch (error) {
    return { content: errorText(error), isError: true };
  }
  return { tool };
}

/** Protection matches the path as safe_path resolved it, never its text: ./test.js and sub/../test.js are test.js. */
function isProtected(agent: Agent, file: string): boolean {
  const relative = path.relative(agent.toolContext.root, file);
  return (agent.config.protect ?? []).some((glob) => minimatch(relative, glob));
}

/** Asks the person about a change, last, once every other check passed; null when it may run, else why not.
 *  A preview that throws, or an approver that throws, refuses the call (decide catches it). */
async function approval(agent: Agent, tool: Tool, call: Anthropic.ToolUseBlock, signal: AbortSignal) {
  const { approve } = agent.config;
  if (tool.readOnly || approve === undefined) return null;
  const preview = tool.preview ? await tool.preview(call.input, agent.toolContext) : JSON.stringify(call.input);
  const answer = await approve({ tool: tool.name, preview, signal });
  return answer.approved ? null : `declined by the user${answer.reason ? `: ${answer.reason}` : ''}`;
}

/** Prevents a failing tool from ending the run: whatever it throws becomes an error result. */
async function execute(agent: Agent, tool: Tool, call: Anthropic.ToolUseBlock, signal: AbortSignal): Promise<Outcome> {
  try {
    return { content: await tool.run(call.input, { ...agent.toolContext, signal }), isError: false };
  } catch (error) {
    return { content: errorText(error), isError: true };
  }
}

/** Prevents a false "done": the verify command runs in the project, and only exit code 0 ends the run.
 *  Anything else goes back to the model as a user message: the command, its exit code, its output. */
async function verifyGate(agent: Agent, signal: AbortSignal): Promise<Halt | { notDone: string }> {
  const { verify, root, verifyTimeoutMs = VERIFY_TIMEOUT_MS } = agent.config;
  if (verify === undefined) return { kind: 'accepted', verifiedBy: null };
  const { exitCode, output } = await runCommand(verify, { cwd: root, timeoutMs: verifyTimeoutMs, signal });
  agent.config.onEvent?.({ type: 'gate', command: verify, exitCode, passed: exitCode === 0 });
  if (exitCode === 0) return { kind: 'accepted', verifiedBy: verify };
  const how = exitCode === null ? 'did not finish' : `exited with code ${exitCode}`;
  return { notDone: `The task is not done yet: \`${verify}\` ${how}. Its output:\n\n${output}\n\nFix the cause.` };
}

/** The task tool: a sub-agent, the same loop with a transcript of its own, a system prompt of its own, the read-only
 *  tools, TASK_MAX_TURNS and config.taskModel. Only its final text comes back; a budget or error halt says so. */
function taskTool(config: Config): Tool {
  return defineTool({
    name: 'task',
    description:
      'Ask a sub-agent, which can list and read files but not edit them, a self-contained question; ' +
      'it answers with a report. For searches that would read many files.',
    input: z.strictObject({
      description: z.string().describe('Its aim in a few words'),
      prompt: z.string().describe('The question in full: the sub-agent sees nothing else'),
    }),
    readOnly: true,
    async run({ prompt }, context) {
      const readOnly = config.tools.filter((tool) => tool.readOnly);
      const model = config.taskModel ?? config.model;
      const child = newAgent({ ...config, model, verify: undefined }, SUB_AGENT_PROMPT, readOnly, TASK_MAX_TURNS);
      const ended = await runTask(child, prompt, context.signal);
      // What it said last: its final reply's text, or, if that had none (a halt after a call), the text before.
      const texts = child.messages.map((message) =>
        message.role === 'assistant' && Array.isArray(message.content) ? textOf(message.content).trim() : '',
      );
      const said = texts.findLast((text) => text !== '') ?? '';
      if (ended.kind === 'accepted') return said || '(the sub-agent gave no answer)';
      const why = ended.kind === 'error' ? ended.message : `its limit of ${ended.limit} turns`;
      return `[the sub-agent stopped: ${why}]\n${said}`;
    },
  });
}

const textOf = (content: readonly Anthropic.ContentBlockParam[]) =>
  content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n');

function halt(agent: Agent, reached: Halt, turns: number): Halt {
  agent.config.onEvent?.({ type: 'halt', halt: reached, turns });
  return reached;
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));
