// The command line: one table of options, from which both --help and the parser are built, and the agent's
// configuration made from them.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { AnthropicModel, approveAll, DEFAULT_MODEL, errorText } from 'reference-harness';
import { loadScript, ScriptedModel } from 'reference-harness/scripted-model';
import { type McpServers, readsUnasked } from './mcp.ts';
import { priceOf } from './prices.ts';
import { PROGRAM_TOOLS } from './program-tools.ts';
import type { RecordedOptions } from './session-file.ts';
import { MAX_COLUMNS, wrap } from './terminal.ts';
import {
  type Agent,
  type AgentConfig,
  type AgentEvent,
  type Approver,
  type BeforeCallHook,
  type Budgets,
  type Model,
  type Price,
} from './harness.ts';

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
  'no-sandbox': { type: 'boolean', help: 'run the verify command outside the OS sandbox, with your full rights' },
  'no-default-protection': {
    type: 'boolean',
    help: 'let --yes cover writes that could run later (dot names, hooks, executables), and the tools read .git',
  },
  'pass-env': { type: 'string', arg: 'NAME', multiple: true, help: 'pass this environment variable to the check' },
  'sandbox-read': {
    type: 'string',
    arg: 'PATH',
    multiple: true,
    help: "let the sandboxed check read this path too (read-only), the project's .git included",
  },
  'max-turns': { type: 'string', arg: 'N', help: 'model calls per task (default: 25)' },
  'max-tokens': { type: 'string', arg: 'N', help: 'input + output tokens per task, sub-agents included' },
  'max-cost': { type: 'string', arg: 'USD', help: 'dollars per task, sub-agents included (needs a known price)' },
  price: { type: 'string', arg: 'IN,OUT', help: 'dollars per million input and output tokens of --model' },
  timeout: { type: 'string', arg: 'S', help: 'wall-clock seconds per task' },
  model: { type: 'string', arg: 'ID', help: `model to use (default: $ANTHROPIC_MODEL or ${DEFAULT_MODEL})` },
  'task-model': { type: 'string', arg: 'ID', help: 'model for sub-agents started by the task tool (default: --model)' },
  thinking: { type: 'string', arg: 'N', help: 'let the model think for up to N tokens before each reply (N >= 1024)' },
  'context-window': { type: 'string', arg: 'N', help: `tokens, when the API does not say (default: 200,000)` },
  'no-context-files': { type: 'boolean', help: 'do not read AGENTS.md files into the system prompt' },
  'system-prompt': { type: 'string', arg: 'FILE', help: "the system prompt, read from FILE (default: the harness's)" },
  mcp: {
    type: 'string',
    arg: 'FILE',
    help: 'start the MCP servers this file lists ({"mcpServers": ...}) and give the model one mcp tool for them',
  },
  script: { type: 'string', arg: 'FILE', help: 'replay canned replies from a JSON file instead of calling an API' },
  session: { type: 'string', arg: 'FILE', help: 'where to append the session (default: .agent/sessions/<time>.jsonl)' },
  resume: { type: 'string', arg: 'FILE', help: 'continue a saved session (and keep appending to it)' },
  export: { type: 'string', arg: 'FILE', help: 'write a session file as one self-contained web page, then exit' },
  out: { type: 'string', arg: 'FILE', help: 'where --export writes the page (default: beside the session, .html)' },
  replay: { type: 'string', arg: 'FILE', help: 're-run a recorded session offline in --root and compare each message' },
  json: { type: 'boolean', help: 'print events as JSON lines instead of text' },
  trace: { type: 'boolean', help: 'print each step tagged with the part of the loop doing it' },
  acp: { type: 'boolean', help: 'serve an editor over stdio (Agent Client Protocol): it gives the folders and tasks' },
  version: { type: 'boolean', help: "print the program's version, then exit" },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
} as const satisfies Record<string, OptionSpec>;
/** Where each option's help starts in --help, and so where its wrapped lines continue. */
const HELP_COLUMN = 28;

export function helpText(): string {
  const rows = Object.entries(OPTIONS).flatMap(([name, spec]: [string, OptionSpec]) => {
    const flag = `  ${spec.short ? `-${spec.short}, ` : ''}--${name}${spec.arg ? ` ${spec.arg}` : ''}`;
    const [first = '', ...rest] = wrap(
      `${spec.help}${spec.multiple ? ' (repeatable)' : ''}`,
      MAX_COLUMNS - HELP_COLUMN,
    );
    return [`${flag.padEnd(HELP_COLUMN)}${first}`, ...rest.map((line) => `${' '.repeat(HELP_COLUMN)}${line}`)];
  });
  return [
    'Usage: npx harness [options] [task]',
    '',
    'With a task: one run, then exit. Without: a REPL (one task per line; /help lists its commands).',
    'No API key? `npm start` plays the offline demo, and --script FILE runs on canned replies.',
    '',
    'Options:',
    ...rows,
    '',
    ...wrap(
      'In the REPL: type while the agent works to steer it; Ctrl-C stops the run, and twice at an empty prompt ' +
        'leaves; a pasted block is one message. /help, /context, /compact, /resume FILE, /exit. Leaving the REPL ' +
        "exits 0 (piped in: the last task's exit code).",
      MAX_COLUMNS,
    ),
    'Environment: ANTHROPIC_API_KEY, ANTHROPIC_MODEL, ANTHROPIC_BASE_URL (any Anthropic-compatible API).',
    'Halts: accepted (verified | unverified), budget (turns | tokens | cost | time), interrupted, error.',
    'Exit codes: 0 accepted, 1 not accepted (budget, error), 2 usage error, 130 interrupted (Ctrl-C),',
    '143, 129: stopped by SIGTERM, SIGHUP (the run stops as with Ctrl-C; its halt is written first).',
  ].join('\n');
}

/** A mistake on the command line: one line on stderr and exit code 2, never a stack trace. */
export class UsageError extends Error {}

type ParsedValues = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

export interface CliOptions {
  root: string;
  verify: string | undefined;
  verifyTimeoutMs: number;
  protect: string[];
  yes: boolean;
  /** --no-sandbox: the verify command runs uncontained, said at start and in every gate line. */
  noSandbox: boolean;
  /** --no-default-protection: the built-in protected paths (.git, .agent, .vscode, …) are not kept; said at start. */
  noDefaultProtection: boolean;
  /** --pass-env: environment variables the check gets beside the allowlist. */
  passEnv: string[];
  /** --sandbox-read: absolute paths the contained check may read beside the system's folders; said at start. */
  sandboxRead: string[];
  budgets: Budgets;
  /** --price: what --model costs, when the price table does not know it (or knows it wrong). */
  price: Price | undefined;
  /** Undefined: the default model, or "scripted" for --script. */
  model: string | undefined;
  taskModel: string | undefined;
  /** --thinking N: the real model's thinking budget, in tokens; undefined: no thinking. */
  thinking: number | undefined;
  contextWindow: number | undefined;
  contextFiles: boolean;
  /** --system-prompt FILE: its text, in place of the harness's SYSTEM_PROMPT. */
  systemPrompt: string | undefined;
  /** --mcp: an `mcpServers` file whose servers start with each session. */
  mcp: string | undefined;
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
  /** Speak the Agent Client Protocol on stdin and stdout (app/acp.ts): an editor is the interface. */
  acp: boolean;
  task: string | undefined;
  help: boolean;
  version: boolean;
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
  if (positionals.length > 0 && positionals.join(' ').trim() === '') throw new UsageError('the task is empty');
  if (values.acp) refuseBesideAcp(Object.keys(values), positionals);
  const timeout = positiveNumber('--timeout', values.timeout);
  return pricedForBudget({
    root: values.root ?? process.cwd(),
    verify: values.verify,
    verifyTimeoutMs: (positiveNumber('--verify-timeout', values['verify-timeout']) ?? 120) * 1000,
    protect: values.protect ?? [],
    yes: values.yes ?? false,
    noSandbox: values['no-sandbox'] ?? false,
    noDefaultProtection: values['no-default-protection'] ?? false,
    passEnv: values['pass-env'] ?? [],
    sandboxRead: (values['sandbox-read'] ?? []).map((given) => path.resolve(given)),
    budgets: {
      maxTurns: positiveNumber('--max-turns', values['max-turns'], true) ?? 25,
      maxTokens: positiveNumber('--max-tokens', values['max-tokens'], true),
      maxCostUsd,
      timeoutMs: timeout === undefined ? undefined : timeout * 1000,
    },
    price,
    model,
    taskModel: values['task-model'],
    thinking: thinkingBudget(values.thinking),
    contextWindow: positiveNumber('--context-window', values['context-window'], true),
    contextFiles: !(values['no-context-files'] ?? false),
    systemPrompt: textOfFile('--system-prompt', values['system-prompt']),
    mcp: values.mcp,
    script: values.script,
    session: values.session,
    resume: values.resume,
    replay: values.replay,
    export: values.export,
    out: values.out,
    given: Object.keys(values),
    json: values.json ?? false,
    trace: values.trace ?? false,
    acp: values.acp ?? false,
    task: positionals.length > 0 ? positionals.join(' ') : undefined,
    help: values.help ?? false,
    version: values.version ?? false,
  });
}

/** Prevents a dollar budget that can never halt: with --max-cost, the model and the task model need a known price. */
function pricedForBudget(options: CliOptions): CliOptions {
  if (options.budgets.maxCostUsd === undefined) return options;
  const scripted = options.script !== undefined;
  const main = { name: options.model ?? (scripted ? 'scripted' : DEFAULT_MODEL), price: options.price };
  const task = options.taskModel === undefined || scripted ? main : { name: options.taskModel };
  for (const priced of [main, task]) {
    if (!priceOf(priced)) {
      const fix = priced === main ? 'give one with --price IN,OUT' : 'add it to the price table (PRICES)';
      throw new UsageError(`--max-cost needs a known price, and ${priced.name} has none: ${fix}`);
    }
  }
  return options;
}

/** What a --resume runs with: each option the session recorded, unless the command line gives it, and one line
 *  saying which came from where; `gate`, the gate's flags (--verify, --protect) taken from the session. A version 1
 *  session recorded none. */
export function resumedOptions(
  options: CliOptions,
  recorded: { model: string; options?: RecordedOptions } | null,
): { options: CliOptions; said: string; gate: string[] } {
  if (recorded?.options === undefined) {
    const said = 'options: the session recorded none (format 1), so the command line gives them all';
    return { options, said, gate: [] };
  }
  const saved = recorded.options;
  const fromSession: string[] = [];
  const fromCommandLine: string[] = [];
  /** The command line's value if it gives `flag`, else the session's, shown as `shown` when it has one. */
  const take = <T>(flag: string, given: T, inSession: T, shown?: string): T => {
    if (options.given.includes(flag)) {
      fromCommandLine.push(`--${flag}`);
      return given;
    }
    if (shown !== undefined) fromSession.push(`--${flag}${shown === '' ? '' : ` ${shown}`}`);
    return inSession;
  };
  const show = (value: number | string | undefined, as = (v: number | string) => String(v)) =>
    value === undefined ? undefined : as(value);
  const { budgets } = saved;
  const resumed: CliOptions = {
    ...options,
    verify: take(
      'verify',
      options.verify,
      saved.verify,
      show(saved.verify, (v) => JSON.stringify(v)),
    ),
    verifyTimeoutMs: take(
      'verify-timeout',
      options.verifyTimeoutMs,
      saved.verifyTimeoutMs,
      `${saved.verifyTimeoutMs / 1000}`,
    ),
    protect: take(
      'protect',
      options.protect,
      saved.protect,
      show(saved.protect.map((g) => JSON.stringify(g)).join(' ') || undefined),
    ),
    budgets: {
      maxTurns: take('max-turns', options.budgets.maxTurns, budgets.maxTurns, show(budgets.maxTurns)),
      maxTokens: take('max-tokens', options.budgets.maxTokens, budgets.maxTokens, show(budgets.maxTokens)),
      maxCostUsd: take('max-cost', options.budgets.maxCostUsd, budgets.maxCostUsd, show(budgets.maxCostUsd)),
      timeoutMs: take(
        'timeout',
        options.budgets.timeoutMs,
        budgets.timeoutMs,
        show(budgets.timeoutMs, (v) => `${Number(v) / 1000}`),
      ),
    },
    model: take('model', options.model, recorded.model, recorded.model),
    taskModel: take('task-model', options.taskModel, saved.taskModel, show(saved.taskModel)),
    contextWindow: take('context-window', options.contextWindow, saved.contextWindow, show(saved.contextWindow)),
    contextFiles: take(
      'no-context-files',
      options.contextFiles,
      saved.contextFiles,
      saved.contextFiles ? undefined : '',
    ),
  };
  const parts = [
    fromSession.length > 0 && `from the session ${fromSession.join(' ')}`,
    fromCommandLine.length > 0 && `from the command line ${fromCommandLine.join(' ')}`,
  ].filter((part) => part !== false);
  const said = `options: ${parts.join('; ') || 'the defaults, as recorded'}`;
  const gate = fromSession.filter((flag) => /^--(verify|protect)( |$)/.test(flag));
  return { options: pricedForBudget(resumed), said, gate };
}

/** What --acp leaves to the editor: the folder (each session's), the tasks, the session files, and stdout. */
const EDITOR_GIVES = ['root', 'session', 'resume', 'replay', 'export', 'out', 'json', 'trace'];

/** Prevents an option that --acp cannot honour from being silently ignored: the editor gives each session its folder
 *  and its tasks, session files are the editor's to load, and stdout carries only the protocol. */
function refuseBesideAcp(given: string[], positionals: string[]): void {
  const clashing = given.filter((name) => EDITOR_GIVES.includes(name)).map((name) => `--${name}`);
  if (positionals.length > 0) clashing.push('a task');
  if (clashing.length === 0) return;
  throw new UsageError(
    `--acp takes no ${clashing.join(', ')}: the editor gives each session its folder and tasks, and stdout is the ` +
      "protocol's",
  );
}

/** parseArgs says each mistake in up to three lines of its own; this says it in one, in the terms of --help. */
function describeCliError(message: string): string {
  const flag = /'(-[^' ]+)/.exec(message)?.[1] ?? '';
  const arg = (OPTIONS as Record<string, OptionSpec>)[flag.replace(/^--/, '')]?.arg ?? 'VALUE';
  if (message.startsWith('Unknown option')) {
    const meant = nearestOption(flag);
    const hint = meant ? `; did you mean --${meant}?` : ' (a task starting with "-" goes after --)';
    return `unknown option ${flag}${hint}`;
  }
  if (message.includes('argument missing')) return `${flag} needs a value: ${flag} ${arg}`;
  if (message.includes('ambiguous')) return `${flag} needs a value; one that starts with "-" is written ${flag}=${arg}`;
  if (message.includes('does not take an argument')) return `${flag} takes no value`;
  return message.split('\n')[0]!;
}

/** The option a mistyped flag most likely meant: the nearest name, if it is within two edits and the typing was
 *  not mostly wrong (so `--x` suggests nothing). */
export function nearestOption(flag: string): string | undefined {
  const typed = flag.replace(/^-+/, '');
  const [nearest] = Object.keys(OPTIONS)
    .map((name) => ({ name, edits: editDistance(typed, name) }))
    .sort((a, b) => a.edits - b.edits);
  return nearest && nearest.edits <= Math.min(2, typed.length / 2) ? nearest.name : undefined;
}

/** How many one-character insertions, deletions or substitutions turn `a` into `b` (Levenshtein). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length]!;
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

/** Prevents a request the API refuses on every turn: a thinking budget under its minimum of 1,024 tokens. */
function thinkingBudget(value: string | undefined): number | undefined {
  const budget = positiveNumber('--thinking', value, true);
  if (budget !== undefined && budget < 1024)
    throw new UsageError(`--thinking needs at least 1024 tokens (the API's minimum), got ${budget}`);
  return budget;
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

export async function chooseModel(
  options: CliOptions,
  env: NodeJS.ProcessEnv,
  name: string | undefined,
): Promise<Model> {
  if (options.script !== undefined) {
    try {
      return new ScriptedModel(await loadScript(options.script), name ?? 'scripted');
    } catch (error) {
      throw new UsageError(`--script ${errorText(error)}`);
    }
  }
  // An editor is told to sign in instead (app/acp.ts): it starts the agent before anyone can give a key.
  if (!options.acp && !env.ANTHROPIC_API_KEY && !env.ANTHROPIC_BASE_URL) {
    throw new UsageError('ANTHROPIC_API_KEY is not set; to run offline: --script FILE, or `npm start`');
  }
  // A local Anthropic-compatible server may need no key; the SDK still wants one to send.
  const { default: Anthropic } = await import('@anthropic-ai/sdk');
  const client = new Anthropic({
    apiKey: env.ANTHROPIC_API_KEY || 'no-key',
    baseURL: env.ANTHROPIC_BASE_URL || undefined,
  });
  return new AnthropicModel(name ?? DEFAULT_MODEL, client, { thinkingBudget: options.thinking });
}

/** Prevents a headless run from hanging on a question nobody can answer, and says truthfully why: with no terminal
 *  and no --yes, a call that would change something is refused, and nobody is said to have declined it. A call of the
 *  MCP tool that changes nothing (`mcp.readOnly`) goes on. */
function changesNeedATerminal(mcp: McpServers | undefined): BeforeCallHook {
  return {
    name: 'no terminal',
    check: ({ tool, input }) =>
      tool.readOnly || (tool === mcp?.tool && mcp.readOnly(input))
        ? { action: 'allow' }
        : {
            action: 'deny',
            reason: 'not run: changes need approval, and there is no terminal to ask (--yes allows them)',
          },
  };
}

/** A file's text for an option, or a one-line usage error. */
function textOfFile(flag: string, file: string | undefined): string | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`${flag} ${file}: ${errorText(error)}`);
  }
}

/** Where the command line builds the agent's configuration: a forker adds their own hooks here (their tools go in
 *  PROGRAM_TOOLS, app/program-tools.ts). The MCP servers, if any, are one more tool, whose calls that change nothing
 *  are approved unasked. */
export function configFromCli(
  options: CliOptions,
  made: { root: string; model: Model; taskModel: Model | undefined; approve: Approver | null; mcp?: McpServers },
  onEvent: (event: AgentEvent) => void,
): AgentConfig {
  const { mcp, ...given } = made;
  const nobodyToAsk = made.approve === null; // the hook refuses every change, so approval never sees one
  const approve = made.approve ?? approveAll; // approving all, approval lets every call through: nothing to wrap
  return {
    ...given,
    approve: mcp && approve !== approveAll ? readsUnasked(mcp, approve) : approve,
    beforeCall: nobodyToAsk ? [changesNeedATerminal(mcp)] : [],
    tools: mcp ? [...PROGRAM_TOOLS, mcp.tool] : PROGRAM_TOOLS,
    verify: options.verify,
    verifyTimeoutMs: options.verifyTimeoutMs,
    budgets: options.budgets,
    protect: options.protect,
    contextWindow: options.contextWindow,
    contextFiles: options.contextFiles,
    systemPrompt: options.systemPrompt,
    sandbox: sandboxPolicy(options),
    passEnv: options.passEnv,
    sandboxRead: options.sandboxRead,
    defaultProtection: !options.noDefaultProtection,
    onEvent,
  };
}

/** The options a replay needs to run the session the same way, for the session file's header. `approval`: yes for
 *  --yes, ask when a person answers (at a terminal or in an editor), deny when nobody can be asked. The tools are the
 *  agent's own, `task` included. */
export function recordedOptions(
  options: CliOptions,
  approval: RecordedOptions['approval'],
  agent: Agent,
): RecordedOptions {
  const { verify, verifyTimeoutMs, protect, budgets, contextWindow, contextFiles } = options;
  const tools = agent.config.tools.map((tool) => tool.name);
  const { taskModel } = agent.config;
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
    noSandbox: options.noSandbox,
    noDefaultProtection: options.noDefaultProtection,
    passEnv: options.passEnv,
    sandboxRead: options.sandboxRead,
  };
}

/** Prevents code a real model wrote from running with the user's rights when nobody reviews the edits (--yes): then
 *  the check runs in the OS sandbox or not at all, unless --no-sandbox says so. Scripted runs, and a person approving
 *  each edit, use the sandbox wherever this machine has one (undefined: the harness's default). */
export function sandboxPolicy(options: Pick<CliOptions, 'noSandbox' | 'yes' | 'script'>): boolean | undefined {
  if (options.noSandbox) return false;
  return options.yes && options.script === undefined ? true : undefined;
}
