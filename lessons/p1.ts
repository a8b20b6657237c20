// lessons/p1.ts — the harness after lesson P1: the loop. Call, append, answer every call, call again.
//
//   runTask(agent, task):
//     append the task
//     for each turn up to MAX_TURNS:
//       reply = model.complete(system prompt + tools + agent.messages); append it as received
//       no tool calls in it? halt: accepted (nothing checks it yet; that is P2)
//       run every call; append all the results, in call order, as the next user message
//     halt: budget (turns)
//
// What changed since P0: tools, the loop around the one request, the turn limit, a result per call.
// What did not: the transcript is still the only memory, resent whole on every request.
// Its acceptance: npm run lesson -- p1 --check lessons/p1.ts. Next: lessons/p2.ts adds the gate.

import type Anthropic from '@anthropic-ai/sdk';
import { realpath } from 'node:fs/promises';
import { z } from 'zod';
import type { Model } from '../agent.ts';
import type { Tool, ToolContext } from '../tools.ts';
import { plainDisk, runCommand as plainRunner } from '../tools.ts';

export interface Config {
  /** The project folder the tools work in. */
  root: string;
  model: Model;
  tools: readonly Tool[];
  onEvent?: (event: Event) => void;
}

/** Every run ends in one of these, as a value: a failed model call is a halt, never an exception. */
export type Halt =
  | { kind: 'accepted'; verifiedBy: null }
  | { kind: 'budget'; budget: 'turns'; limit: number }
  | { kind: 'error'; message: string };

/** The loop never prints; it tells whoever listens (a printer, a log) what happened. */
export type Event =
  | { type: 'result'; call: Anthropic.ToolUseBlock; result: Anthropic.ToolResultBlockParam }
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

export const SYSTEM_PROMPT = [
  'You are a coding agent working inside one project folder, through the tools you are given.',
  'When the task is done, stop calling tools and say in one or two sentences what you did.',
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
    if (calls.length === 0) return halt(agent, { kind: 'accepted', verifiedBy: null }, turn);
    agent.messages.push({ role: 'user', content: await answerCalls(agent, calls, signal) });
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
    const { content, isError } = await execute(agent, call, signal);
    const result: Anthropic.ToolResultBlockParam = { type: 'tool_result', tool_use_id: call.id, content };
    if (isError) result.is_error = true;
    agent.config.onEvent?.({ type: 'result', call, result });
    results.push(result);
  }
  return results;
}

/** Prevents a wrong call from ending the run: an unknown tool, bad arguments or a tool that throws
 *  becomes an error result, which the model reads next turn and can correct. */
async function execute(
  agent: Agent,
  call: Anthropic.ToolUseBlock,
  signal: AbortSignal,
): Promise<{ content: string; isError: boolean }> {
  const tool = agent.config.tools.find((t) => t.name === call.name);
  if (!tool) {
    const names = agent.config.tools.map((t) => t.name).join(', ');
    return { content: `unknown tool "${call.name}"; the tools are: ${names}`, isError: true };
  }
  try {
    return { content: await tool.run(call.input, { ...agent.toolContext, signal }), isError: false };
  } catch (error) {
    return { content: errorText(error), isError: true };
  }
}

function halt(agent: Agent, reached: Halt, turns: number): Halt {
  agent.config.onEvent?.({ type: 'halt', halt: reached, turns });
  return reached;
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));
