// lessons/p2.ts — the harness after lesson P2: three tools, and a gate in front of "done".
// The model proposes, the harness disposes: plain code decides what runs and when a task is done.
//
//   runTask(agent, task):
//     append the task
//     for each turn up to MAX_TURNS:
//       reply = model.complete(system prompt + tools + agent.messages); append it as received
//       tool calls? answer every one (decide: known tool, valid arguments, a path inside the project;
//                   then run it), all the results in call order, as the next user message
//       no tool calls? that is a claim of "done": run the verify command;
//                   exit 0: halt accepted; anything else: tell the model why, and go round again
//     halt: budget (turns)
//
// What changed since P1: the gate (verifyGate, runCommand), and decide, which checks a call before it runs.
// The three tools (list_files, read_file, edit_file) and safe_path live in tools.ts; read-before-edit
// works because the agent keeps one ToolContext (the hashes of what was read) for its whole life.
// Its acceptance: npm run lesson -- p2 --check lessons/p2.ts. The full harness: agent.ts.

import type Anthropic from '@anthropic-ai/sdk';
import { exec } from 'node:child_process';
import { realpath } from 'node:fs/promises';
import { z } from 'zod';
import type { Model } from '../agent.ts';
import { safe_path, type Tool, type ToolContext } from '../tools.ts';
import { plainDisk, runCommand as plainRunner } from '../tools.ts';

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
  onEvent?: (event: Event) => void;
}

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
}

/** A model that never stops calling tools would otherwise run (and bill) forever. */
export const MAX_TURNS = 25;
/** A verify command that hangs must not hang the run: one that outlasts this (or config.verifyTimeoutMs) fails. */
export const VERIFY_TIMEOUT_MS = 120_000;
/** The model sees the start and the end of the verify output, where the errors usually are. */
const OUTPUT_KEPT_CHARS = 4_000;

export const SYSTEM_PROMPT = [
  'You are a coding agent working inside one project folder, through the tools you are given;',
  'all paths are relative to the project root. Read a file before you edit it, and make the smallest change',
  'that does the task. When the task is done, stop calling tools and say in one or two sentences what you',
  'changed. Your "done" is checked: if the project has a check command, it runs, and if it fails you are told.',
].join('\n');

export async function createAgent(config: Config): Promise<Agent> {
  const root = await realpath(config.root);
  return {
    config: { ...config, root },
    messages: [],
    toolDefinitions: config.tools.map(toolDefinition),
    toolContext: { root, seen: new Map(), disk: plainDisk, runner: plainRunner },
  };
}

/** What the model is shown of a tool: its name, when to use it, and the JSON Schema of its input. */
function toolDefinition(tool: Tool): Anthropic.Tool {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(tool.input, { io: 'input' });
  return { name: tool.name, description: tool.description, input_schema: { ...schema, type: 'object' } };
}

export async function runTask(agent: Agent, task: string, signal = new AbortController().signal): Promise<Halt> {
  agent.messages.push({ role: 'user', content: task });
  for (let turn = 1; turn <= MAX_TURNS; turn++) {
    const reply = await callModel(agent, signal);
    if ('kind' in reply) return halt(agent, reply, turn);
    appendReply(agent, reply);
    const calls = reply.content.filter((block) => block.type === 'tool_use');
    if (calls.length > 0) {
      agent.messages.push({ role: 'user', content: await answerCalls(agent, calls, signal) });
      continue;
    }
    const verdict = await verifyGate(agent, signal);
    if ('kind' in verdict) return halt(agent, verdict, turn);
    agent.messages.push({ role: 'user', content: verdict.notDone });
  }
  return halt(agent, { kind: 'budget', budget: 'turns', limit: MAX_TURNS }, MAX_TURNS);
}

/** A failed model call becomes a halt of kind error instead of an exception out of runTask. */
async function callModel(agent: Agent, signal: AbortSignal): Promise<Anthropic.Message | Halt> {
  try {
    return await agent.config.model.complete(
      { system: SYSTEM_PROMPT, tools: agent.toolDefinitions, messages: agent.messages },
      { signal, onText: () => {}, onNotice: () => {} },
    );
  } catch (error) {
    return { kind: 'error', message: `model call failed: ${errorText(error)}` };
  }
}

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
  signal: AbortSignal,
): Promise<Anthropic.ToolResultBlockParam[]> {
  const results: Anthropic.ToolResultBlockParam[] = [];
  for (const call of calls) {
    const decided = await decide(agent, call);
    const { content, isError } = 'tool' in decided ? await execute(agent, decided.tool, call, signal) : decided;
    const result: Anthropic.ToolResultBlockParam = { type: 'tool_result', tool_use_id: call.id, content };
    if (isError) result.is_error = true;
    agent.config.onEvent?.({ type: 'result', call, result });
    results.push(result);
  }
  return results;
}

type Outcome = { content: string; isError: boolean };

/** Plain code decides what runs: a call to an unknown tool, with arguments that do not fit the schema
 *  the model was shown (nothing is coerced), or with a path outside the project is refused, with why. */
async function decide(agent: Agent, call: Anthropic.ToolUseBlock): Promise<{ tool: Tool } | Outcome> {
  const tool = agent.config.tools.find((t) => t.name === call.name);
  if (!tool) {
    const names = agent.config.tools.map((t) => t.name).join(', ');
    return { content: `unknown tool "${call.name}"; the tools are: ${names}`, isError: true };
  }
  const input = tool.input.strict().safeParse(call.input);
  if (!input.success) return { content: `invalid arguments: ${z.prettifyError(input.error)}`, isError: true };
  // Any tool's path, not only the three here: a tool added later cannot forget the check.
  const requested = input.data.path;
  if (typeof requested === 'string') {
    const outside = await safe_path(agent.toolContext.root, requested).then(
      () => null,
      (error: unknown) => errorText(error),
    );
    if (outside !== null) return { content: outside, isError: true };
  }
  return { tool };
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
  const { exitCode, output } = await runCommand(verify, root, verifyTimeoutMs, signal);
  agent.config.onEvent?.({ type: 'gate', command: verify, exitCode, passed: exitCode === 0 });
  if (exitCode === 0) return { kind: 'accepted', verifiedBy: verify };
  const how = exitCode === null ? 'did not finish' : `exited with code ${exitCode}`;
  return { notDone: `The task is not done yet: \`${verify}\` ${how}. Its output:\n\n${output}\n\nFix the cause.` };
}

/** Runs a shell command with a time limit; exitCode is null when it was killed or could not start. */
function runCommand(
  command: string,
  cwd: string,
  timeout: number,
  signal: AbortSignal,
): Promise<{ exitCode: number | null; output: string }> {
  return new Promise((resolve) => {
    exec(command, { cwd, signal, timeout, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const exitCode = error === null ? 0 : typeof error.code === 'number' && !error.killed ? error.code : null;
      const output = stdout + stderr;
      const kept =
        output.length <= 2 * OUTPUT_KEPT_CHARS
          ? output
          : `${output.slice(0, OUTPUT_KEPT_CHARS)}\n[…]\n${output.slice(-OUTPUT_KEPT_CHARS)}`;
      resolve({ exitCode, output: kept });
    });
  });
}

function halt(agent: Agent, reached: Halt, turns: number): Halt {
  agent.config.onEvent?.({ type: 'halt', halt: reached, turns });
  return reached;
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));
