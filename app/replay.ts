// --replay: a recorded session run again through this harness, offline, and compared message by message.

import type Anthropic from '@anthropic-ai/sdk';
import { diffLines } from 'diff';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { approveAll, createAgent, errorText, runTask, steer } from 'reference-harness';
import { type CliOptions, configFromCli, UsageError } from './options.ts';
import { priced } from './prices.ts';
import { PROGRAM_TOOLS } from './program-tools.ts';
import {
  previewHash,
  readEntry,
  type RecordedOptions,
  REPLAYED_EVENTS,
  SESSION_VERSION,
  type SessionEntry,
  type SessionHeader,
  sessionLines,
} from './session-file.ts';
import { EXIT, MAX_COLUMNS, type Output, visible, wrap } from './terminal.ts';
import { sandboxProblem } from 'reference-harness/hardening';
import {
  type Agent,
  type Approver,
  type Halt,
  type Model,
  type ModelCallOptions,
  type ModelRequest,
  type Tool,
  type Task,
} from './harness.ts';

/** Everything a replay plays back: the tasks, each model reply in call order, and what the person did. */
interface Recording {
  header: SessionHeader & { options: RecordedOptions };
  tasks: { task: Task; actions: RecordedAction[] }[];
  /** The parent's model calls in order, compaction summaries and requests the API refused included. */
  replies: RecordedCall[];
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
  replies: RecordedCall[];
}

/** One model call as the session file holds it: the reply exactly as received, or the API's refusal of a request
 *  that was too long. */
type RecordedCall =
  | { content: Anthropic.ContentBlock[]; stopReason: Anthropic.StopReason | null; usage: Anthropic.Usage }
  | 'refused as too long';

/** Reads a session for replay. Anything that makes it unreplayable (a torn line, version 1, a missing linked file) is
 *  an error that names the file and the line. */
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
    if (entry.type === 'reply' || entry.type === 'compaction') recording.replies.push(...recordedCalls(entry));
    if (entry.type === 'task') recording.tasks.push({ task: entry.content ?? entry.text, actions: [] });
    if (entry.type === 'steer' || entry.type === 'interrupt') recording.tasks.at(-1)?.actions.push(entry);
    if (entry.type === 'approval') recording.approvals.push(entry);
    if (entry.type === 'halt') recording.halts.push(entry.halt);
    if (entry.type === 'subagent') {
      const child = await readEntries(path.join(path.dirname(file), entry.file));
      const replies = child.flatMap((e) => (e.type === 'reply' || e.type === 'compaction' ? recordedCalls(e) : []));
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
    if (code === undefined) throw error;
    throw new Error(`${file}: ${code === 'ENOENT' ? 'no such file' : `cannot be read (${code})`}`);
  }
  return entries;
}

/** The model calls an entry records. A summary the API asked for by refusing a request as too long comes after that
 *  refusal, so the replay compacts and retries too. */
function recordedCalls(entry: Extract<SessionEntry, { type: 'reply' | 'compaction' }>): RecordedCall[] {
  if (entry.type === 'reply') return [{ content: entry.content, stopReason: entry.stopReason, usage: entry.usage }];
  const summary = { content: [{ type: 'text', text: entry.summary }] as Anthropic.ContentBlock[], usage: entry.usage };
  const answered = { ...summary, stopReason: 'end_turn' as const };
  return entry.promptTooLong ? ['refused as too long', answered] : [answered];
}

/** Prevents a replay from answering with blocks the API never sent: each call gets the recorded reply's blocks as
 *  they were received, byte for byte (a server tool's blocks, or a kind this version does not know, included),
 *  where the scripted model would rebuild them and add fields the API leaves out. */
class RecordedModel implements Model {
  private calls = 0;

  constructor(
    readonly name: string,
    private readonly next: (request: ModelRequest) => RecordedCall | undefined,
  ) {}

  async complete(request: ModelRequest, { signal, onText, onThinking }: ModelCallOptions): Promise<Anthropic.Message> {
    signal.throwIfAborted(); // an aborted call takes no reply: the next call gets it, as in the recorded run
    const recorded = this.next(request);
    if (recorded === undefined) throw new Error(`the recording has no reply for this model call (${this.name})`);
    if (recorded === 'refused as too long') refusedAsTooLong();
    const content = structuredClone(recorded.content);
    for (const block of content) {
      if (block.type === 'text') onText(block.text);
      if (block.type === 'thinking') onThinking?.(block.thinking);
    }
    return {
      id: `msg_replay_${++this.calls}`,
      type: 'message',
      role: 'assistant',
      model: this.name,
      content,
      stop_reason: recorded.stopReason,
      stop_sequence: null,
      stop_details: null,
      container: null,
      diagnostics: null,
      usage: structuredClone(recorded.usage),
    };
  }
}

/** The parent's calls, answered in the order they were recorded. */
function inOrder(replies: RecordedCall[]): () => RecordedCall | undefined {
  let given = 0;
  return () => replies[given++];
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
  const keyOf = (blocks: readonly (Anthropic.ContentBlock | Anthropic.ContentBlockParam)[]) =>
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
    return children.find((c) => gave(c).some((entry) => typeof entry !== 'string' && keyOf(entry.content) === key));
  };
  const answer = (request: ModelRequest): RecordedCall | undefined => {
    const child = childOf(request);
    if (child === undefined) return undefined;
    const next = given.get(child) ?? 0;
    given.set(child, next + 1);
    return child.replies[next];
  };
  return { model: priced(new RecordedModel(name, answer)), calling: (id: string) => (caller = id) };
}

/** Where a replayed message first differs from the recorded one: a line naming the message and each differing block,
 *  then a diff of that block; null when they are the same. */
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
  const differing: string[] = [];
  for (let i = 0; i < Math.max(want.length, have.length); i++) {
    const [a, b] = [readable(asCompared(want[i])), readable(asCompared(have[i]))];
    if (a === b) continue;
    const kind = (block: unknown) =>
      typeof block === 'object' && block !== null && 'type' in block ? block.type : 'text';
    differing.push(`block ${i} (${String(kind(want[i] ?? have[i]))}):\n${lineDiff(a, b)}`);
  }
  if (differing.length === 0) return null;
  const more = differing.length - DIFF_BLOCKS;
  const rest = more > 0 ? [`and ${more} more block${more === 1 ? '' : 's'} of this message differ`] : [];
  return `message #${index} (${got.role}), ${[...differing.slice(0, DIFF_BLOCKS), ...rest].join('\n')}`;
}

/** A block's fields the API leaves out when they hold their default, which equals leaving them out. */
const BLOCK_DEFAULTS: Record<string, Record<string, unknown> | undefined> = {
  tool_use: { caller: { type: 'direct' } },
  server_tool_use: { caller: { type: 'direct' } },
};

/** Prevents a replay from failing on how a field was spelled rather than what it says: a block's field that is null
 *  or at its default is the same as a missing one (the API sends `{"type":"text","text":…}`, the SDK's types and the
 *  scripted model write `citations: null`). Only a block's own fields: inside a tool's input, null is a value. */
function asCompared(block: unknown): unknown {
  if (typeof block !== 'object' || block === null || Array.isArray(block)) return block;
  const defaults = BLOCK_DEFAULTS[(block as { type?: string }).type ?? ''] ?? {};
  const isDefault = (key: string, value: unknown) =>
    value === null || (Object.hasOwn(defaults, key) && readable(defaults[key]) === readable(value));
  return Object.fromEntries(Object.entries(block).filter(([key, value]) => !isDefault(key, value)));
}

/** A value as a person reads it: JSON with every object's keys sorted (the same block, whichever order its fields
 *  came in), two spaces an indent, and a text of several lines shown as those lines after a `|` (as YAML writes it),
 *  so that a diff points at the line of a file that changed rather than at one long escaped string. */
function readable(value: unknown, indent = ''): string {
  if (value === undefined) return '(none)';
  const inner = `${indent}  `;
  if (typeof value === 'string' && value.includes('\n'))
    return ['|', ...value.split('\n').map((line) => `${inner}${line}`)].join('\n');
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[\n${listed(value.map((item) => [`${inner}${readable(item, inner)}`, item]))}\n${indent}]`;
  }
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([x], [y]) => (x < y ? -1 : 1));
    if (entries.length === 0) return '{}';
    const fields = entries.map(([k, v]): [string, unknown] => [
      `${inner}${JSON.stringify(k)}: ${readable(v, inner)}`,
      v,
    ]);
    return `{\n${listed(fields)}\n${indent}}`;
  }
  return JSON.stringify(value);
}

/** Items one a line, a comma after each but the last and after none that ends a text of several lines (it would read
 *  as the text's). */
const listed = (items: [shown: string, value: unknown][]) =>
  items
    .map(([shown, value], i) =>
      i === items.length - 1 || (typeof value === 'string' && value.includes('\n')) ? shown : `${shown},`,
    )
    .join('\n');

/** At most this many differing blocks of a message are shown. */
const DIFF_BLOCKS = 3;
/** At most this many lines of a block's diff are shown; the first change is always among them. */
const DIFF_LINES = 16;
/** Unchanged lines shown around a change, so it can be found. */
const DIFF_CONTEXT = 2;

/** The lines that differ, `- expected` and `+ got`, with a little unchanged context around them. */
function lineDiff(expected: string, got: string): string {
  const lines = diffLines(expected, got).flatMap((change) =>
    change.value
      .replace(/\n$/, '')
      .split('\n')
      .map((line) => ({ mark: change.removed ? '-' : change.added ? '+' : ' ', line })),
  );
  const near = (i: number) =>
    lines.slice(Math.max(i - DIFF_CONTEXT, 0), i + DIFF_CONTEXT + 1).some(({ mark }) => mark !== ' ');
  const shown: string[] = [];
  let skipped = false;
  for (const [i, { mark, line }] of lines.entries()) {
    if (!near(i)) {
      skipped = true;
      continue;
    }
    if (skipped && shown.length > 0) shown.push('    …');
    skipped = false;
    shown.push(`  ${mark} ${line}`);
  }
  const left = shown.length - DIFF_LINES;
  return [...shown.slice(0, DIFF_LINES), ...(left > 0 ? [`    … and ${left} more lines`] : [])].join('\n');
}

/** JSON with every object's keys sorted: the same value, whichever order its fields arrived in. */
function canonical(value: unknown): string {
  if (value === undefined) return '(none)';
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => (x < y ? -1 : 1)))
      : v,
  );
}

/** --replay: runs the recorded tasks through this harness with the recorded replies and answers, and stops at the
 *  first message that differs from the recording. Exit 0: identical; 1: it differs; 2: it cannot be replayed. The
 *  replay offers those of `tools` (the program's) that the recording names. */
export async function replaySession(
  file: string,
  options: CliOptions,
  out: Output,
  tools: readonly Tool[] = PROGRAM_TOOLS,
): Promise<number> {
  const tell = (text: string) => out.write(`${wrap(`replay: ${visible(text)}`, MAX_COLUMNS, '  ').join('\n')}\n`);
  const recording = await readRecording(path.resolve(file)).catch((error: unknown) => {
    throw new UsageError(`--replay: ${errorText(error)}`);
  });
  const recorded = recording.header.options;
  const overridden = REPLAY_OVERRIDES.filter((flag) => options.given.includes(flag));
  for (const flag of overridden) tell(`--${flag} from the command line replaces the recorded value`);
  const pick = <T>(flags: string[], mine: T, theirs: T) => (flags.some((f) => overridden.includes(f)) ? mine : theirs);
  const answers = [...recording.approvals];
  const root = await realpath(options.root);
  // Prevents a recording (which the model may have written) from standing in for the person: a recorded "yes"
  // never approves a write that could run later, which is asked of a person every time.
  const replayedApprover: Approver = async ({ tool, preview, runsLater }) => {
    if (runsLater !== null)
      return {
        approved: false,
        reason: `a recorded answer never approves a write that could run later (${runsLater})`,
      };
    const hash = previewHash(preview);
    const at = answers.findIndex((a) => a.tool === tool && a.preview === hash);
    return at < 0
      ? { approved: false, reason: 'the recording has no answer to this question' }
      : answers.splice(at, 1)[0]!.answer;
  };
  const approval = replayApproval(options, recorded);
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
  await sayWhatRuns(replayed, approval, tell);
  const children = childReplay(recording.children, recorded.taskModel ?? recording.header.model);
  const made = {
    root,
    model: priced(new RecordedModel(recording.header.model, inOrder(recording.replies))),
    taskModel: children.model,
    approve: approval === 'yes' ? approveAll : approval === 'ask' ? replayedApprover : null,
  };
  const agent: Agent = await createAgent({
    ...configFromCli(replayed, made, (event) => {
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
        if (action.type === 'steer') steer(agent, action.text);
        else run.abort();
      }
    }),
    sandbox: replaySandbox(replayed),
    tools: recordedTools(recorded, tools),
  });
  for (const [i, task] of recording.tasks.entries()) {
    [run, counted, pending] = [new AbortController(), 0, task.actions];
    const halt = await runTask(agent, task.task, run.signal);
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

/** Prevents a recording from loosening what a replay may do unasked: changes are applied only with --yes on this
 *  command line (then the recorded answers are given again, a recorded refusal included), and without it every change
 *  is refused; the header's approval mode is never taken. */
function replayApproval(options: CliOptions, recorded: RecordedOptions): RecordedOptions['approval'] {
  if (!options.yes) return 'deny';
  return recorded.approval === 'ask' ? 'ask' : 'yes';
}

/** The tools the recorded session had, of the program's `tools`: the header names them, so a tool added since is not
 *  offered to a model whose replies were recorded without it. (The agent adds its sub-agent tool itself.) */
export const recordedTools = (recorded: Pick<RecordedOptions, 'tools'>, tools: readonly Tool[]) =>
  tools.filter((tool) => recorded.tools.includes(tool.name));

/** Prevents a recording from running its check outside the sandbox: the replay's verify command runs in the OS
 *  sandbox or not at all, unless this command line says --no-sandbox; the header's `noSandbox` is never taken. */
const replaySandbox = (options: Pick<CliOptions, 'noSandbox'>): boolean => !options.noSandbox;

/** Says, before anything runs, what the replay will run and whether it may change files: the recorded verify command
 *  and where, and what happens to the recorded changes. */
async function sayWhatRuns(
  options: CliOptions,
  approval: RecordedOptions['approval'],
  tell: (text: string) => void,
): Promise<void> {
  const problem = await sandboxProblem();
  const check = `the verify command \`${options.verify}\``;
  if (options.verify === undefined) tell('no verify command: "done" is accepted unverified');
  else if (options.noSandbox) tell(`${check} runs outside the OS sandbox (--no-sandbox), with your full rights`);
  else if (problem !== null) tell(`${check} will not run: ${problem}, and a replay runs it only sandboxed`);
  else tell(`${check} runs in the OS sandbox`);
  const answers = approval === 'ask' ? ', the recorded answers given again' : '';
  if (approval === 'deny') tell('changes are refused: only --yes on this command line applies them');
  else tell(`changes are applied in ${options.root} (--yes)${answers}`);
}

/** The options a replay takes from the recording unless the command line gives them. --yes and --no-sandbox are not
 *  among them: they come from this command line only. */
const REPLAY_OVERRIDES = [
  'verify',
  'verify-timeout',
  'protect',
  'max-turns',
  'max-tokens',
  'max-cost',
  'timeout',
  'context-window',
  'no-context-files',
];
