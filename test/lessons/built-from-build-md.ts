// A harness written from lessons/build.md alone, the way a learner would, step by step up to P4: the proof that the
// page is enough. test/lessons/learner-harnesses.check.ts runs `npm run lesson -- p4 --check` on it. It is not the harness
// to copy (agent.ts is); it is what following the page gives, and it must keep passing when the page changes.

import type Anthropic from '@anthropic-ai/sdk';
import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { minimatch } from 'minimatch';
import { z } from 'zod';
import type { Model } from '../../agent.ts';
import { describeArguments, runCommand, safe_path, type Tool, type ToolContext } from '../../tools.ts';
import { plainDisk, runCommand as plainRunner } from '../../tools.ts';

type Halt =
  | { kind: 'accepted'; verifiedBy: string | null }
  | { kind: 'budget'; budget: 'turns'; limit: number }
  | { kind: 'error'; message: string };

type Approve = (request: {
  tool: string;
  preview: string;
  signal: AbortSignal;
}) => Promise<{ approved: true } | { approved: false; reason?: string }>;

interface Config {
  root: string;
  model: Model;
  tools: readonly Tool[];
  verify?: string;
  verifyTimeoutMs?: number;
  protect?: readonly string[];
  approve?: Approve;
  contextWindow?: number;
  taskModel?: Model;
}

interface Agent {
  config: Config;
  messages: Anthropic.MessageParam[];
  system: string;
  tools: readonly Tool[];
  definitions: Anthropic.Tool[];
  context: ToolContext;
  maxTurns: number;
  /** The latest summary, standing in for every message before `from`. */
  summary: { text: string; from: number } | null;
}

const SYSTEM = [
  'You are a coding agent in one project folder; use the tools, with paths relative to the project.',
  'Read a file before you edit it. When the task is done, stop calling tools and say what you changed.',
].join('\n');
const SUB_AGENT_SYSTEM = 'You answer one research question about the project with read-only tools. Answer in full.';
const MAX_TURNS = 25;
const SUB_AGENT_TURNS = 30;

export async function createAgent(config: Config): Promise<Agent> {
  return await newAgent(config, SYSTEM, config.tools, true);
}

async function newAgent(config: Config, system: string, given: readonly Tool[], canDelegate: boolean) {
  const root = await realpath(config.root);
  const rules = canDelegate ? await projectRules(root) : '';
  const agent: Agent = {
    config: { ...config, root },
    messages: [],
    system: rules === '' ? system : `${system}\n\n# AGENTS.md\n\n${rules}`,
    tools: given,
    definitions: [],
    context: { root, seen: new Map(), disk: plainDisk, runner: plainRunner },
    maxTurns: canDelegate ? MAX_TURNS : SUB_AGENT_TURNS,
    summary: null,
  };
  if (canDelegate) agent.tools = [...given, taskTool(agent)];
  agent.definitions = agent.tools.map(definitionOf);
  return agent;
}

/** The project's AGENTS.md, through the same path check as the tools: a link out of the project is skipped. */
async function projectRules(root: string): Promise<string> {
  try {
    return (await readFile(await safe_path(root, 'AGENTS.md'), 'utf8')).slice(0, 32 * 1024);
  } catch {
    return '';
  }
}

function definitionOf(tool: Tool): Anthropic.Tool {
  const { $schema: _notNeeded, ...schema } = z.toJSONSchema(tool.input, { io: 'input' });
  return { name: tool.name, description: tool.description, input_schema: { ...schema, type: 'object' } };
}

export async function runTask(agent: Agent, task: string, signal = new AbortController().signal): Promise<Halt> {
  agent.messages.push({ role: 'user', content: task });
  for (let turn = 1; turn <= agent.maxTurns; turn++) {
    let reply: Anthropic.Message;
    try {
      reply = await ask(agent, signal);
    } catch (error) {
      return { kind: 'error', message: `the model call failed: ${textOfError(error)}` };
    }
    const content = reply.content.filter((block) => block.type !== 'text' || block.text.trim() !== '');
    if (content.length > 0) agent.messages.push({ role: 'assistant', content });
    const calls = content.filter((block) => block.type === 'tool_use');
    const cutOff = reply.stop_reason === 'max_tokens';
    if (calls.length > 0) {
      const results: Anthropic.ToolResultBlockParam[] = [];
      for (const call of calls) results.push(await answer(agent, call, cutOff, signal));
      agent.messages.push({ role: 'user', content: results });
    } else if (cutOff) {
      agent.messages.push({ role: 'user', content: 'Your reply was cut off. Go on where you stopped.' });
    } else {
      const { verify } = agent.config;
      if (verify === undefined) return { kind: 'accepted', verifiedBy: null };
      const timeoutMs = agent.config.verifyTimeoutMs ?? 120_000;
      const { exitCode, output } = await runCommand(verify, { cwd: agent.context.root, timeoutMs, signal });
      if (exitCode === 0) return { kind: 'accepted', verifiedBy: verify };
      const how = exitCode === null ? 'did not finish' : `exited with code ${exitCode}`;
      agent.messages.push({ role: 'user', content: `Not done yet: \`${verify}\` ${how}. It printed:\n${output}` });
    }
  }
  return { kind: 'budget', budget: 'turns', limit: agent.maxTurns };
}

async function answer(
  agent: Agent,
  call: Anthropic.ToolUseBlock,
  cutOff: boolean,
  signal: AbortSignal,
): Promise<Anthropic.ToolResultBlockParam> {
  const refuse = (why: string): Anthropic.ToolResultBlockParam => ({
    type: 'tool_result',
    tool_use_id: call.id,
    content: why,
    is_error: true,
  });
  if (cutOff) return refuse('Not run: your reply was cut off, so its arguments may be incomplete. Send it again.');
  const tool = agent.tools.find((t) => t.name === call.name);
  if (tool === undefined) return refuse(`There is no tool named ${call.name}.`);
  const parsed = tool.input.strict().safeParse(call.input);
  if (!parsed.success) return refuse(`Invalid arguments: ${z.prettifyError(parsed.error)}`);
  const requested = parsed.data.path;
  try {
    if (typeof requested === 'string') {
      const file = await safe_path(agent.context.root, requested);
      const relative = path.relative(agent.context.root, file);
      const guarded = (agent.config.protect ?? []).some((glob) => minimatch(relative, glob));
      if (guarded && !tool.readOnly) return refuse(`${requested} is protected: change the code, not the checks.`);
    }
    const { approve } = agent.config;
    if (!tool.readOnly && approve !== undefined) {
      const preview = tool.preview ? await tool.preview(call.input, agent.context) : JSON.stringify(call.input);
      const answered = await approve({ tool: tool.name, preview, signal });
      if (!answered.approved) return refuse(`The user said no${answered.reason ? `: ${answered.reason}` : '.'}`);
    }
    const content = await tool.run(call.input, { ...agent.context, signal });
    return { type: 'tool_result', tool_use_id: call.id, content };
  } catch (error) {
    return refuse(textOfError(error));
  }
}

// Step 5: what the model is sent, and the summary that stands in for what no longer fits.

async function ask(agent: Agent, signal: AbortSignal): Promise<Anthropic.Message> {
  const window = agent.config.contextWindow;
  if (window !== undefined && sizeOf(agent, view(agent)) > 0.75 * window) await compact(agent, window, signal);
  const request = { system: agent.system, tools: agent.definitions, messages: view(agent) };
  return await agent.config.model.complete(request, { signal, onText: () => {}, onNotice: () => {} });
}

const summaryMessage = (text: string): Anthropic.MessageParam => ({
  role: 'user',
  content: `Summary of the conversation so far:\n${text}`,
});

function view(agent: Agent): Anthropic.MessageParam[] {
  if (agent.summary === null) return agent.messages;
  return [summaryMessage(agent.summary.text), ...agent.messages.slice(agent.summary.from)];
}

/** Tokens, erring high: 3.5 characters a token. */
const tokens = (value: unknown) => Math.ceil(JSON.stringify(value).length / 3.5);
const sizeOf = (agent: Agent, messages: Anthropic.MessageParam[]) =>
  tokens({ system: agent.system, tools: agent.definitions, messages });

async function compact(agent: Agent, window: number, signal: AbortSignal): Promise<void> {
  const from = agent.summary?.from ?? 0;
  let cut: number | null = null;
  for (let i = agent.messages.length - 1; i > from; i--) {
    if (agent.messages[i]?.role !== 'assistant') continue;
    if (cut !== null && tokens(agent.messages.slice(i)) > window / 4) break;
    cut = i;
  }
  if (cut === null) return;
  const before = agent.summary === null ? [] : [summaryMessage(agent.summary.text)];
  const ask: Anthropic.MessageParam = {
    role: 'user',
    content: 'Summarise the conversation above: the goal, what is done, what is next, and the exact names needed.',
  };
  const request = {
    system: agent.system,
    tools: agent.definitions,
    tool_choice: { type: 'none' as const },
    messages: [...before, ...agent.messages.slice(from, cut), ask],
  };
  const reply = await agent.config.model.complete(request, { signal, onText: () => {}, onNotice: () => {} });
  agent.summary = { text: textOf(reply.content), from: cut };
}

const textOf = (content: readonly Anthropic.ContentBlock[]) =>
  content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n');

function taskTool(parent: Agent): Tool {
  const input = z.strictObject({ description: z.string(), prompt: z.string() });
  return {
    name: 'task',
    description: 'Hands a research question to a sub-agent that can list and read files, and returns its answer.',
    input,
    readOnly: true,
    kind: 'search',
    describe: (given) => describeArguments('task', given),
    async run(given, context) {
      const { prompt } = input.parse(given);
      const { config } = parent;
      const model = config.taskModel ?? config.model;
      const readOnly = config.tools.filter((tool) => tool.readOnly);
      const child = await newAgent({ ...config, model, verify: undefined }, SUB_AGENT_SYSTEM, readOnly, false);
      const halt = await runTask(child, prompt, context.signal);
      const texts = child.messages.map((message) =>
        message.role === 'assistant' && Array.isArray(message.content) ? textOfParams(message.content).trim() : '',
      );
      const said = texts.findLast((text) => text !== '') ?? '';
      return halt.kind === 'accepted' ? said : `The sub-agent stopped (${halt.kind}). ${said}`;
    },
  };
}

const textOfParams = (content: readonly Anthropic.ContentBlockParam[]) =>
  content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n');

const textOfError = (error: unknown) => (error instanceof Error ? error.message : String(error));
