// agent.ts — a coding agent in one file. Read it top to bottom:
//   1. Types       what goes in and out of the loop
//   2. P0          the transcript and the model
//   3. P1          the loop, on one screen
//   4. P2          answering tool calls, and the verify-before-done gate
//   5. CLI         argument parsing, the REPL, the printer
// The model only ever writes text. Every guarantee lives in plain code below, never in the prompt.

import Anthropic from '@anthropic-ai/sdk';
import { spawn } from 'node:child_process';
import { realpath } from 'node:fs/promises';
import { createInterface } from 'node:readline/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs, styleText } from 'node:util';
import { z } from 'zod';
import { loadScript, ScriptedModel } from './scripted-model.ts';
import { TOOLS, type Tool, type ToolContext } from './tools.ts';

// =============================================================================================
// 1. Types

/** What one model call is given: the same three things, in full, on every turn. */
export type ModelRequest = Pick<Anthropic.MessageCreateParamsNonStreaming, 'system' | 'tools' | 'messages'>;

export interface ModelCallOptions {
  signal: AbortSignal;
  /** Called with each piece of text as it streams in. */
  onText: (delta: string) => void;
}

/** A model takes the whole transcript and returns one assistant message. It remembers nothing. */
export interface Model {
  readonly name: string;
  complete(request: ModelRequest, options: ModelCallOptions): Promise<Anthropic.Message>;
}

/** Every run ends in exactly one of these, and says which. Halts are values, never exceptions. */
export type Halt =
  | { kind: 'accepted'; verifiedBy: string | null }
  | { kind: 'budget'; budget: 'turns'; limit: number }
  | { kind: 'interrupted' }
  | { kind: 'error'; message: string };

/** The loop never prints: it emits these, and printers subscribe. */
export type AgentEvent =
  | { type: 'request'; turn: number; messages: number }
  | { type: 'text'; delta: string }
  | { type: 'reply'; turn: number; stopReason: Anthropic.StopReason | null; calls: number; usage: Anthropic.Usage }
  | { type: 'call'; call: Anthropic.ToolUseBlock }
  | { type: 'result'; call: Anthropic.ToolUseBlock; result: Anthropic.ToolResultBlockParam }
  | { type: 'gate'; command: string; exitCode: number | null; passed: boolean }
  | { type: 'notice'; text: string }
  | { type: 'halt'; halt: Halt; turns: number };

export interface AgentConfig {
  /** The project root, resolved through symlinks. */
  root: string;
  model: Model;
  tools: readonly Tool[];
  /** The command whose exit code 0 is the only acceptable "done"; undefined: trust the model. */
  verify: string | undefined;
  verifyTimeoutMs: number;
  /** A turn is one model call. */
  maxTurns: number;
  onEvent: (event: AgentEvent) => void;
}

/** A session: the configuration, the transcript, and what the tools remember between calls. */
export interface Agent {
  readonly config: AgentConfig;
  /** The only state the model ever sees, resent whole on every turn. */
  readonly messages: Anthropic.MessageParam[];
  readonly toolContext: ToolContext;
  /** Built once: the same bytes on every request, so the prompt cache keeps working. */
  readonly toolDefinitions: Anthropic.Tool[];
}

// =============================================================================================
// 2. P0 — the transcript and the model

export const SYSTEM_PROMPT = [
  'You are a coding agent working inside one project folder. You act only through the tools you are given;',
  'all paths are relative to the project root. Read a file before you edit it, and make the smallest change',
  'that does the task. When the task is done, stop calling tools and say in one or two sentences what you',
  'changed. Your "done" is checked: if the project has a check command, it runs, and if it fails you are told.',
].join('\n');

export const DEFAULT_MODEL = 'claude-sonnet-5-5';
const MAX_OUTPUT_TOKENS = 32_000;

/** The real model: one streamed Messages API call per turn, text shown as it arrives. */
export class AnthropicModel implements Model {
  constructor(
    readonly name: string,
    private readonly client: Anthropic,
  ) {}

  async complete(request: ModelRequest, { signal, onText }: ModelCallOptions): Promise<Anthropic.Message> {
    const stream = this.client.messages.stream({ model: this.name, max_tokens: MAX_OUTPUT_TOKENS, ...request }, { signal });
    stream.on('text', onText);
    return await stream.finalMessage();
  }
}

export function toolDefinition(tool: Tool): Anthropic.Tool {
  const { $schema: _ignored, ...schema } = z.toJSONSchema(tool.input, { io: 'input' });
  return { name: tool.name, description: tool.description, input_schema: { ...schema, type: 'object' } };
}

export async function createAgent(config: AgentConfig): Promise<Agent> {
  const root = await realpath(config.root);
  return {
    config: { ...config, root },
    messages: [],
    toolContext: { root, seen: new Map() },
    toolDefinitions: config.tools.map(toolDefinition),
  };
}

// =============================================================================================
// 3. P1 — the loop. Everything it calls is a named guard below it.

/** Runs one task to a halt: call the model, append its reply, answer its calls, until a halt. */
export async function runTask(agent: Agent, task: string, signal = new AbortController().signal): Promise<Halt> {
  const { config, messages } = agent;
  messages.push({ role: 'user', content: task });
  for (let turn = 1; ; turn++) {
    config.onEvent({ type: 'request', turn, messages: messages.length });
    const reply = await callModel(agent, signal);
    if ('kind' in reply) return halt(agent, reply, turn);
    appendReply(messages, reply);
    const calls = reply.content.filter((block) => block.type === 'tool_use');
    config.onEvent({ type: 'reply', turn, stopReason: reply.stop_reason, calls: calls.length, usage: reply.usage });
    if (calls.length > 0) {
      messages.push({ role: 'user', content: await answerCalls(agent, reply, calls) });
    } else {
      const verdict = reply.stop_reason === 'max_tokens' ? { goOn: CUT_OFF_TEXT } : await verifyGate(agent, signal);
      if ('halt' in verdict) return halt(agent, verdict.halt, turn);
      messages.push({ role: 'user', content: verdict.goOn });
    }
    if (turn >= config.maxTurns) return halt(agent, { kind: 'budget', budget: 'turns', limit: config.maxTurns }, turn);
  }
}

function halt(agent: Agent, reached: Halt, turns: number): Halt {
  agent.config.onEvent({ type: 'halt', halt: reached, turns });
  return reached;
}

/** Prevents a failed API call from killing the program: it becomes a halt of kind error. */
async function callModel(agent: Agent, signal: AbortSignal): Promise<Anthropic.Message | Halt> {
  const { config, messages, toolDefinitions } = agent;
  try {
    const request = { system: SYSTEM_PROMPT, tools: toolDefinitions, messages };
    return await config.model.complete(request, { signal, onText: (delta) => config.onEvent({ type: 'text', delta }) });
  } catch (error) {
    if (signal.aborted || error instanceof Anthropic.APIUserAbortError) return { kind: 'interrupted' };
    return { kind: 'error', message: describeModelError(error) };
  }
}

function describeModelError(error: unknown): string {
  if (error instanceof Anthropic.APIError && error.status !== undefined) {
    const id = error.requestID ? ` (request id ${error.requestID})` : '';
    return `model call failed: HTTP ${error.status} ${error.type ?? ''}: ${error.apiMessage ?? error.message}${id}`;
  }
  return `model call failed: ${error instanceof Error ? error.message : String(error)}`;
}

/** Prevents a transcript the API rejects: empty text blocks are dropped; everything else is kept
 *  exactly as received, thinking blocks included, because the API refuses altered ones. */
function appendReply(messages: Anthropic.MessageParam[], reply: Anthropic.Message): void {
  const content = reply.content.filter((block) => block.type !== 'text' || block.text.trim() !== '');
  if (content.length > 0) messages.push({ role: 'assistant', content });
}

const CUT_OFF_TEXT =
  'Your reply was cut off at the output limit (max_tokens) before you finished. ' +
  'Continue, more briefly: call a tool, or say that you are done.';

// =============================================================================================
// 4. P2 — answering the calls, and the gate

/** Answers every call, in call order, in one list: each tool_use gets exactly one tool_result. */
async function answerCalls(agent: Agent, reply: Anthropic.Message, calls: Anthropic.ToolUseBlock[]) {
  const results: Anthropic.ToolResultBlockParam[] = [];
  for (const call of calls) {
    agent.config.onEvent({ type: 'call', call });
    const result =
      reply.stop_reason === 'max_tokens' ? errorResult(call, NOT_RUN_CUT_OFF) : await runCall(agent, call);
    agent.config.onEvent({ type: 'result', call, result });
    results.push(result);
  }
  return results;
}

/** Prevents running a call whose arguments the SDK may have silently truncated at max_tokens. */
const NOT_RUN_CUT_OFF =
  'not executed: your reply was cut off at max_tokens, the arguments may be incomplete; issue the call again';

/** Prevents any bad call from crashing the loop: unknown tool, bad input and a throwing tool
 *  each become an is_error result the model reads on its next turn. */
async function runCall(agent: Agent, call: Anthropic.ToolUseBlock): Promise<Anthropic.ToolResultBlockParam> {
  const tool = agent.config.tools.find((t) => t.name === call.name);
  if (!tool) {
    const names = agent.config.tools.map((t) => t.name).join(', ');
    return errorResult(call, `unknown tool "${call.name}"; the tools are: ${names}`);
  }
  const invalid = invalidInput(tool, call.input);
  if (invalid) return errorResult(call, invalid);
  try {
    return { type: 'tool_result', tool_use_id: call.id, content: await tool.run(call.input, agent.toolContext) };
  } catch (error) {
    return errorResult(call, error instanceof Error ? error.message : String(error));
  }
}

/** Prevents a tool from ever seeing input that breaks the schema the model was shown.
 *  Nothing is coerced: "5" is not 5, and an unknown key is an error, so the transcript never lies. */
function invalidInput(tool: Tool, input: unknown): string | null {
  const parsed = tool.input.safeParse(input);
  if (parsed.success) return null;
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(input)'}: ${issue.message}`);
  return `invalid arguments for ${tool.name}: ${problems.join('; ')}. You sent: ${JSON.stringify(input)}`;
}

function errorResult(call: Anthropic.ToolUseBlock, message: string): Anthropic.ToolResultBlockParam {
  return { type: 'tool_result', tool_use_id: call.id, content: message, is_error: true };
}

type Verdict = { halt: Halt } | { goOn: string };

/** Prevents a false "done": plain code runs the verify command, and only exit code 0 ends the run. */
async function verifyGate(agent: Agent, signal: AbortSignal): Promise<Verdict> {
  const { verify, root, verifyTimeoutMs } = agent.config;
  if (verify === undefined) return { halt: { kind: 'accepted', verifiedBy: null } };
  const run = await runCommand(verify, root, verifyTimeoutMs, signal);
  agent.config.onEvent({ type: 'gate', command: verify, exitCode: run.exitCode, passed: run.exitCode === 0 });
  if (signal.aborted) return { halt: { kind: 'interrupted' } };
  if (run.exitCode === 0) return { halt: { kind: 'accepted', verifiedBy: verify } };
  const how = run.timedOut ? `did not finish within ${verifyTimeoutMs / 1000} s` : `exited with code ${run.exitCode}`;
  return {
    goOn: `The task is not done yet: the check \`${verify}\` ${how}. Its output:\n\n${run.output}\n\nFix the cause, then say you are done.`,
  };
}

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
      const room = OUTPUT_HEAD - head.length;
      head += text.slice(0, Math.max(room, 0));
      tail += text.slice(Math.max(room, 0));
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
    signal.addEventListener('abort', kill, { once: true });
    const done = (exitCode: number | null) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', kill);
      const cut = dropped > 0 ? `\n[... ${dropped} characters of output left out ...]\n` : '';
      resolve({ exitCode, timedOut, output: head + cut + tail || '(no output)' });
    };
    child.on('error', (error) => {
      collect(Buffer.from(String(error.message)));
      done(null);
    });
    child.on('close', (code) => done(code));
  });
}

// =============================================================================================
// 5. The command line: options, the REPL, and the printer

export const EXIT = { accepted: 0, notAccepted: 1, usage: 2, interrupted: 130 } as const;

export function exitCodeFor(h: Halt): number {
  if (h.kind === 'accepted') return EXIT.accepted;
  if (h.kind === 'interrupted') return EXIT.interrupted;
  return EXIT.notAccepted;
}

export function describeHalt(h: Halt): string {
  switch (h.kind) {
    case 'accepted':
      return h.verifiedBy === null ? 'accepted (unverified: no --verify command was given)' : `accepted (verified by \`${h.verifiedBy}\`)`;
    case 'budget':
      return `budget (${h.budget}: the limit of ${h.limit} was reached)`;
    case 'interrupted':
      return 'interrupted';
    case 'error':
      return `error: ${h.message}`;
  }
}

const HELP = `Usage: npx tsx agent.ts [options] [task]

With a task: one run, then exit. Without: a REPL (one task per line; /exit to leave).
With no API key and no options: an offline demo of the verify-before-done gate.

Options:
  --root DIR          project folder the tools work in (default: the current folder)
  --verify CMD        shell command that must exit 0 before "done" is accepted
  --verify-timeout S  seconds the verify command may run (default: 120)
  --max-turns N       model calls per task (default: 25)
  --model ID          model to use (default: $ANTHROPIC_MODEL or ${DEFAULT_MODEL})
  --script FILE       replay canned replies from a JSON file instead of calling an API
  -h, --help          show this help

Environment: ANTHROPIC_API_KEY, ANTHROPIC_MODEL, ANTHROPIC_BASE_URL (any Anthropic-compatible endpoint).
Exit codes: 0 accepted, 1 not accepted (budget, error), 2 usage error, 130 interrupted.`;

/** A mistake on the command line: one line on stderr and exit code 2, never a stack trace. */
class UsageError extends Error {}

export interface CliOptions {
  root: string;
  verify: string | undefined;
  verifyTimeoutMs: number;
  maxTurns: number;
  model: string;
  script: string | undefined;
  task: string | undefined;
  help: boolean;
}

export function parseCli(argv: string[], env: NodeJS.ProcessEnv): CliOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        root: { type: 'string' },
        verify: { type: 'string' },
        'verify-timeout': { type: 'string' },
        'max-turns': { type: 'string' },
        model: { type: 'string' },
        script: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  return {
    root: values.root ?? process.cwd(),
    verify: values.verify,
    verifyTimeoutMs: positiveInteger('--verify-timeout', values['verify-timeout'], 120) * 1000,
    maxTurns: positiveInteger('--max-turns', values['max-turns'], 25),
    model: values.model ?? env.ANTHROPIC_MODEL ?? DEFAULT_MODEL,
    script: values.script,
    task: positionals.length > 0 ? positionals.join(' ') : undefined,
    help: values.help ?? false,
  };
}

function positiveInteger(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^[1-9][0-9]*$/.test(value)) throw new UsageError(`${flag} needs a positive whole number, got "${value}"`);
  return Number(value);
}

async function chooseModel(options: CliOptions, env: NodeJS.ProcessEnv): Promise<Model> {
  if (options.script !== undefined) {
    try {
      return new ScriptedModel(await loadScript(options.script));
    } catch (error) {
      throw new UsageError(`--script: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  if (!env.ANTHROPIC_API_KEY && !env.ANTHROPIC_BASE_URL) {
    throw new UsageError('ANTHROPIC_API_KEY is not set: set it, or use --script FILE to run offline');
  }
  // A local Anthropic-compatible server may need no key; the SDK still wants one to send.
  return new AnthropicModel(options.model, new Anthropic({ apiKey: env.ANTHROPIC_API_KEY || 'no-key' }));
}

const paint = (format: Parameters<typeof styleText>[0], text: string, stream: NodeJS.WriteStream) =>
  stream.isTTY && !process.env.NO_COLOR ? styleText(format, text) : text;

/** The terminal view of the event stream: streamed text, one line per call and its outcome. */
export function terminalPrinter(out: NodeJS.WriteStream = process.stdout): (event: AgentEvent) => void {
  let midLine = false;
  const line = (text: string) => {
    out.write(`${midLine ? '\n' : ''}${text}\n`);
    midLine = false;
  };
  return (event) => {
    switch (event.type) {
      case 'text':
        out.write(event.delta);
        midLine = !event.delta.endsWith('\n');
        return;
      case 'call':
        return line(paint('cyan', `→ ${event.call.name} ${summarize(event.call.input)}`, out));
      case 'result': {
        const content = typeof event.result.content === 'string' ? event.result.content : '';
        const firstLine = content.split('\n')[0] ?? '';
        return line(event.result.is_error ? paint('red', `  ✗ ${firstLine}`, out) : paint('dim', `  ✓ ${content.length} chars`, out));
      }
      case 'gate':
        return line(paint(event.passed ? 'green' : 'yellow', `gate: \`${event.command}\` exited ${event.exitCode}`, out));
      case 'notice':
        return line(paint('yellow', event.text, out));
      case 'halt':
        return line(paint(event.halt.kind === 'accepted' ? 'green' : 'red', `halt: ${describeHalt(event.halt)} after ${event.turns} turn(s)`, out));
      default:
        return;
    }
  };
}

function summarize(input: unknown): string {
  const json = JSON.stringify(input) ?? '';
  return json.length > 80 ? `${json.slice(0, 77)}...` : json;
}

async function repl(agent: Agent): Promise<number> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  let last: Halt | undefined;
  try {
    for (;;) {
      const input = (await rl.question('\nyou> ').catch(() => '/exit')).trim();
      if (input === '/exit') break;
      if (input !== '') last = await runTask(agent, input);
    }
  } finally {
    rl.close();
  }
  return last === undefined ? EXIT.accepted : exitCodeFor(last);
}

export async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  try {
    const options = parseCli(argv, env);
    if (options.help) {
      console.log(HELP);
      return EXIT.accepted;
    }
    if (argv.length === 0 && !env.ANTHROPIC_API_KEY && !env.ANTHROPIC_BASE_URL) {
      const { runDemo } = await import('./lessons/demo.ts');
      return await runDemo();
    }
    const agent = await createAgent({
      root: options.root,
      model: await chooseModel(options, env),
      tools: TOOLS,
      verify: options.verify,
      verifyTimeoutMs: options.verifyTimeoutMs,
      maxTurns: options.maxTurns,
      onEvent: terminalPrinter(),
    }).catch((error: unknown) => {
      throw new UsageError(`--root ${options.root}: ${error instanceof Error ? error.message : String(error)}`);
    });
    if (options.verify === undefined) agent.config.onEvent({ type: 'notice', text: 'no --verify command: "done" will be accepted unverified' });
    if (options.task === undefined) return await repl(agent);
    return exitCodeFor(await runTask(agent, options.task));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`agent: ${error.message} (see --help)`);
    return EXIT.usage;
  }
}

// Not a top-level await: lessons/demo.ts imports this module, which must finish loading first.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  void main(process.argv.slice(2), process.env).then((code) => {
    process.exitCode = code;
  });
}
