// --replay: a recorded session run again through this harness, offline, and compared message by message.

import type Anthropic from '@anthropic-ai/sdk';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import {
  type Agent,
  approveAll,
  type Approver,
  createAgent,
  errorText,
  type Halt,
  type ModelRequest,
  runTask,
} from '../agent.ts';
import { say, type ScriptEntry, type ScriptedBlock, ScriptedModel, type ScriptedReply } from '../scripted-model.ts';
import { type CliOptions, configFromCli, UsageError } from './options.ts';
import { priced } from './prices.ts';
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
import { EXIT, MAX_COLUMNS, type Output, wrap } from './terminal.ts';

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
    if (code === undefined) throw error;
    throw new Error(`${file}: ${code === 'ENOENT' ? 'no such file' : `cannot be read (${code})`}`);
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
    model: priced(
      new ScriptedModel(
        Array.from({ length: calls }, () => answer),
        name,
      ),
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
export async function replaySession(file: string, options: CliOptions, out: Output): Promise<number> {
  const tell = (text: string) => out.write(`${wrap(`replay: ${text}`, MAX_COLUMNS, '  ').join('\n')}\n`);
  const recording = await readRecording(path.resolve(file)).catch((error: unknown) => {
    throw new UsageError(`--replay: ${errorText(error)}`);
  });
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
    noSandbox: pick(['no-sandbox'], options.noSandbox, recorded.noSandbox ?? false),
  };
  const children = childReplay(recording.children, recorded.taskModel ?? recording.header.model);
  const made = {
    root,
    model: priced(new ScriptedModel(recording.replies, recording.header.model)),
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
  'no-sandbox',
];
