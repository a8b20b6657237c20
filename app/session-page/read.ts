// session-page/read.ts — reads a session file (see `SessionEntry` and `sessionRecorder` in app/session-file.ts) into
// what the page shows, line by line: a session of any size is read in bounded memory. Tolerant on purpose, unlike
// `loadSession`: the page is for looking at a session that went wrong, so a torn line, a malformed entry, an unknown
// entry type or a newer format version is skipped and reported as a warning, and everything else is still shown.
//
// A page reads its session twice. `outlineSession` goes through it once for what the top of the page needs (the
// tasks and how each ended, every request's tokens for the chart, the compactions, the sub-agents and the totals);
// then `sessionEntries` streams the entries again, and the page writes the transcript part by part as they come.

import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { type ApprovalAnswer, type BudgetName, type Halt, type Price } from '../harness.ts';

/** Format 1, and format 2, which adds entry types (reply, task, options, approval, steer) and timings. */
export const READABLE_VERSIONS: readonly number[] = [1, 2];

/** Sub-agents of sub-agents are not made today; the limit only stops a file that links to itself. */
const MAX_NESTING = 3;
/** A task's text as the list at the top of the page shows it; the transcript has it whole. */
const HEADLINE_CHARS = 300;
/** A sub-agent's report as its fold's summary line quotes it. */
const REPORT_CHARS = 2_000;

export interface Header {
  version: number | null;
  model: string;
  root: string;
  startedAt: string;
  /** The window the session ran with, when the session says (format 1 does not). */
  contextWindow: number | null;
  /** --price, when the session recorded it; else the price table's, by the model's name. */
  price: Price | null;
  /** How calls that change something were approved: --yes, asking the person, or nobody to ask. */
  approval: 'yes' | 'ask' | 'deny' | null;
  /** --no-sandbox: the verify command ran outside the OS sandbox (false also for sessions that do not say). */
  noSandbox: boolean;
}

export type Block =
  | { kind: 'text'; text: string }
  | { kind: 'call'; id: string; name: string; input: unknown }
  | { kind: 'result'; callId: string; text: string; isError: boolean }
  | { kind: 'thinking'; text: string }
  | { kind: 'other'; type: string };

export interface Message {
  /** Its place among the session's messages: what a compaction's `keptFrom` counts. */
  index: number;
  role: 'user' | 'assistant';
  blocks: Block[];
  /** When it was written (ms since 1970), if the session says. */
  at: number | null;
  /** How long each of its results' calls ran, by call id, if the session says. */
  callMs: Map<string, number>;
}

/** What one model call consumed: the API's usage, named for the chart. */
export interface Tokens {
  uncached: number;
  cacheWrite: number;
  cacheRead: number;
  output: number;
}

export interface Request {
  /** 1, 2, 3, … in file order, compaction requests included. */
  number: number;
  turn: number | null;
  tokens: Tokens;
  /** The compaction this request wrote the summary for, if it did. */
  compaction: number | null;
  /** How long the call took, from sending to the reply, if the session says. */
  ms: number | null;
}

export interface CompactionInfo {
  number: number;
  summary: string;
  /** The first message the model still sees verbatim. */
  keptFrom: number;
  /** The first message this summary replaced: the previous compaction's keptFrom, or 0. */
  replacedFrom: number;
  request: Request;
}

export interface SubAgentLink {
  id: string;
  description: string;
  file: string;
  /** Why its session cannot be shown, or null. */
  problem: string | null;
}

export interface Approval {
  tool: string;
  answer: ApprovalAnswer;
  /** The call it was about; older sessions do not say. */
  callId: string | null;
}

export type Entry =
  | { type: 'session'; header: Header }
  | { type: 'message'; message: Message }
  | { type: 'usage'; request: Request }
  | { type: 'compaction'; compaction: CompactionInfo }
  | { type: 'subagent'; link: SubAgentLink }
  | { type: 'halt'; halt: Halt; at: number | null }
  | { type: 'task'; text: string; at: number | null }
  | { type: 'approval'; approval: Approval; at: number | null }
  | { type: 'steer'; text: string; at: number | null }
  | { type: 'interrupt'; at: number | null };

/** A problem with one line, for the warnings: what the page could not show, and where. */
export type Warn = (text: string) => void;

type Json = Record<string, unknown>;
const isRecord = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;
const stringOr = (value: unknown, fallback: string) => (typeof value === 'string' ? value : fallback);
const timeOf = (value: unknown) => (typeof value === 'string' && Date.parse(value) > 0 ? Date.parse(value) : null);

/** Prevents a named pipe given as a session from hanging the export (reading one waits for a writer), and a folder
 *  or a device from being read as one: only a regular file is opened. */
async function refuseIrregular(file: string): Promise<void> {
  if (!(await stat(file)).isFile()) throw new Error('not a regular file, so not a session file');
}

/** The entries of a session file, in file order, streamed. Each entry comes with the length of its line, so a reader
 *  can bound what it holds. Problems go to `warn`; a missing file throws. */
export async function* sessionEntries(
  file: string,
  warn: Warn = () => {},
): AsyncGenerator<{ entry: Entry; size: number }> {
  const state: ReadState = { messages: 0, requests: 0, compaction: null, header: false };
  const skippedTypes = new Map<string, number>();
  await refuseIrregular(file);
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  let number = 0;
  for await (const line of lines) {
    number++;
    if (line.trim() === '') continue;
    const where = `${path.basename(file)} line ${number}`;
    const value = parseJson(line);
    if (!isRecord(value) || typeof value.type !== 'string') {
      warn(`${where} is not a complete entry (cut off when the process died?); skipped`);
      continue;
    }
    const read = toEntry(value, state);
    if (read === 'unknown type') skippedTypes.set(value.type, (skippedTypes.get(value.type) ?? 0) + 1);
    else if (typeof read === 'string') warn(`${where}: ${read}; skipped`);
    else if (read !== null) {
      const cut = read.type === 'compaction' ? read.compaction : null;
      if (cut && (cut.keptFrom < cut.replacedFrom || cut.keptFrom > state.messages))
        warn(misplaced(cut, state.messages));
      yield { entry: read, size: line.length };
    }
  }
  for (const [type, times] of skippedTypes)
    warn(`${path.basename(file)}: ${times} "${type}" entr${times === 1 ? 'y' : 'ies'} not shown`);
}

const misplaced = (compaction: CompactionInfo, messages: number) =>
  `compaction ${compaction.number} keeps messages from #${compaction.keptFrom}, ` +
  `outside #${compaction.replacedFrom}–#${messages}: its fold and cut may be misplaced`;

/** What numbering needs to remember from one entry to the next. */
interface ReadState {
  messages: number;
  requests: number;
  compaction: { number: number; keptFrom: number } | null;
  /** A second header (a resumed session appends none; a file glued from two would) is not a new session. */
  header: boolean;
}

function parseJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

/** One entry as the page shows it; or why it cannot be shown; or null for an entry the page has no use for. */
function toEntry(value: Json, state: ReadState): Entry | string | null {
  const at = timeOf(value.at);
  switch (value.type) {
    case 'session':
      if (state.header) return null;
      state.header = true;
      return { type: 'session', header: toHeader(value) };
    case 'message': {
      const message = toMessage(value.message, state.messages, at, value.callMs);
      if (message === null) return 'a message without a role or content';
      state.messages++;
      return { type: 'message', message };
    }
    case 'usage': {
      const tokens = toTokens(value.usage);
      if (tokens === null) return 'a usage entry without token counts';
      const turn = isCount(value.turn) ? value.turn : null;
      return { type: 'usage', request: toRequest(state, turn, tokens, null, value.ms) };
    }
    case 'compaction': {
      const tokens = toTokens(value.usage);
      if (typeof value.summary !== 'string' || !isCount(value.keptFrom) || tokens === null)
        return 'a compaction without a summary, a cut or token counts';
      const number = (state.compaction?.number ?? 0) + 1;
      const replacedFrom = state.compaction?.keptFrom ?? 0;
      state.compaction = { number, keptFrom: value.keptFrom };
      const request = toRequest(state, null, tokens, number, value.ms);
      return {
        type: 'compaction',
        compaction: { number, summary: value.summary, keptFrom: value.keptFrom, replacedFrom, request },
      };
    }
    case 'subagent':
      if (typeof value.id !== 'string' || typeof value.file !== 'string') return 'a sub-agent without an id or a file';
      return {
        type: 'subagent',
        link: { id: value.id, description: stringOr(value.description, ''), file: value.file, problem: null },
      };
    case 'halt': {
      const halt = toHalt(value.halt);
      return halt === null ? 'a halt of an unknown kind' : { type: 'halt', halt, at };
    }
    case 'task':
      return typeof value.text === 'string' ? { type: 'task', text: value.text, at } : 'a task without its text';
    case 'approval': {
      const answer = isRecord(value.answer) && typeof value.answer.approved === 'boolean' ? value.answer : null;
      if (answer === null) return 'an approval without an answer';
      const callId = typeof value.callId === 'string' ? value.callId : null;
      const approval = { tool: stringOr(value.tool, '(unknown tool)'), answer: answer as ApprovalAnswer, callId };
      return { type: 'approval', approval, at };
    }
    case 'steer':
      return typeof value.text === 'string' ? { type: 'steer', text: value.text, at } : 'a typed message without text';
    case 'interrupt':
      return { type: 'interrupt', at };
    case 'reply': // the same usage again, with the reply's blocks (the message entries show them)
    case 'intent': // an edit about to be made: its call's result shows what came of it
      return null;
    default:
      return 'unknown type';
  }
}

function toHeader(value: Json): Header {
  const options = isRecord(value.options) ? value.options : {};
  const approval = options.approval;
  return {
    version: typeof value.version === 'number' ? value.version : null,
    model: stringOr(value.model, '(unknown model)'),
    root: stringOr(value.root, '(unknown root)'),
    startedAt: stringOr(value.startedAt, '(unknown start time)'),
    contextWindow: isCount(value.contextWindow) && value.contextWindow > 0 ? value.contextWindow : null,
    price: toPrice(value.price),
    approval: approval === 'yes' || approval === 'ask' || approval === 'deny' ? approval : null,
    noSandbox: options.noSandbox === true,
  };
}

/** The price the session recorded: dollars per million tokens, and the cache multipliers when the model has its own. */
function toPrice(value: unknown): Price | null {
  if (!isRecord(value) || !isCount(value.input) || !isCount(value.output)) return null;
  const { input, output, cacheWrite, cacheRead } = value;
  return { input, output, ...(isCount(cacheWrite) && { cacheWrite }), ...(isCount(cacheRead) && { cacheRead }) };
}

function toRequest(
  state: ReadState,
  turn: number | null,
  tokens: Tokens,
  compaction: number | null,
  ms: unknown,
): Request {
  return { number: ++state.requests, turn, tokens, compaction, ms: isCount(ms) ? ms : null };
}

function toTokens(usage: unknown): Tokens | null {
  if (!isRecord(usage) || !isCount(usage.input_tokens) || !isCount(usage.output_tokens)) return null;
  return {
    uncached: usage.input_tokens,
    cacheWrite: isCount(usage.cache_creation_input_tokens) ? usage.cache_creation_input_tokens : 0,
    cacheRead: isCount(usage.cache_read_input_tokens) ? usage.cache_read_input_tokens : 0,
    output: usage.output_tokens,
  };
}

function toMessage(value: unknown, index: number, at: number | null, callMs: unknown): Message | null {
  if (!isRecord(value) || (value.role !== 'user' && value.role !== 'assistant')) return null;
  const times = new Map(
    Object.entries(isRecord(callMs) ? callMs : {}).filter((pair): pair is [string, number] => isCount(pair[1])),
  );
  const role: Message['role'] = value.role;
  const message = { index, role, at, callMs: times };
  if (typeof value.content === 'string') return { ...message, blocks: [textBlock(value.content)] };
  if (!Array.isArray(value.content)) return null;
  return { ...message, blocks: value.content.map(toBlock) };
}

const textBlock = (text: string): Block => ({ kind: 'text', text });

/** One content block, as far as the page shows it; a block it does not know keeps its type name. */
function toBlock(value: unknown): Block {
  if (!isRecord(value)) return { kind: 'other', type: typeof value };
  if (value.type === 'text' && typeof value.text === 'string') return textBlock(value.text);
  if (value.type === 'thinking' && typeof value.thinking === 'string')
    return { kind: 'thinking', text: value.thinking };
  if (value.type === 'tool_use' && typeof value.id === 'string' && typeof value.name === 'string')
    return { kind: 'call', id: value.id, name: value.name, input: value.input };
  if (value.type === 'tool_result' && typeof value.tool_use_id === 'string')
    return {
      kind: 'result',
      callId: value.tool_use_id,
      text: resultText(value.content),
      isError: value.is_error === true,
    };
  return { kind: 'other', type: stringOr(value.type, 'unknown') };
}

/** A tool result's content is a string or a list of blocks; images and the like are named, not shown. */
function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) =>
      isRecord(part) && part.type === 'text' && typeof part.text === 'string'
        ? part.text
        : `[${isRecord(part) ? stringOr(part.type, 'unknown') : 'unknown'} block]`,
    )
    .join('\n');
}

const BUDGETS: readonly BudgetName[] = ['turns', 'tokens', 'cost', 'time'];
const isBudget = (value: unknown): value is BudgetName => BUDGETS.some((budget) => budget === value);

function toHalt(value: unknown): Halt | null {
  if (!isRecord(value)) return null;
  switch (value.kind) {
    case 'accepted':
      return { kind: 'accepted', verifiedBy: typeof value.verifiedBy === 'string' ? value.verifiedBy : null };
    case 'budget': {
      if (!isBudget(value.budget) || !isCount(value.limit)) return null;
      const spent = isRecord(value.spent) && isCount(value.spent.tokens) ? value.spent : null;
      const cost = spent && isCount(spent.costUsd) ? spent.costUsd : null;
      const base = { kind: 'budget' as const, budget: value.budget, limit: value.limit };
      return spent ? { ...base, spent: { tokens: spent.tokens as number, costUsd: cost } } : base;
    }
    case 'interrupted':
      return { kind: 'interrupted' };
    case 'error':
      return { kind: 'error', message: stringOr(value.message, '(no message)') };
    default:
      return null;
  }
}

// =============================================================================================
// The outline: one pass over the whole session, keeping only what is small

/** The user's plain-text message that starts a task, and how the task ended (null: the process ended first). */
export interface TaskOutline {
  /** The message's index. */
  index: number;
  /** Its text, cut to a headline. */
  headline: string;
  at: number | null;
  halt: Halt | null;
  haltAt: number | null;
}

export interface SubAgentOutline {
  link: SubAgentLink;
  /** Its own session's outline; null when it cannot be read (`link.problem` says why). */
  session: SessionOutline | null;
  /** The `task` call that started it, when the transcript has it. */
  callId: string | null;
  /** How many of the parent's requests came before it: its spending follows them on the chart. */
  afterRequest: number;
}

export interface SessionOutline {
  file: string;
  header: Header | null;
  messages: number;
  requests: Request[];
  compactions: Omit<CompactionInfo, 'summary'>[];
  tasks: TaskOutline[];
  subAgents: SubAgentOutline[];
  /** Approvals by the call they were about. */
  approvals: Map<string, Approval>;
  /** The line an edit started at, by call id, from its result ("edited f: replaced 2 line(s) at line 14 ..."). */
  editLines: Map<string, number>;
  /** The last reply's text: a sub-agent's report. */
  lastReply: string;
  /** The last halt, and when the session's first and last entries were written. */
  lastHalt: Halt | null;
  firstAt: number | null;
  lastAt: number | null;
  /** What could not be shown, and why; a sub-agent's warnings are in its own outline. */
  warnings: string[];
}

const GATE_VERDICT = /^The task is not done/;
const EDIT_LINE = /^edited .*: replaced \d+ line\(s\) at line (\d+) /;

/** Whether a message is the gate's "not done" answer to a claim of done. */
export const isGateVerdict = (message: Pick<Message, 'role' | 'blocks'>) => {
  const first = message.blocks[0];
  return message.role === 'user' && first?.kind === 'text' && GATE_VERDICT.test(first.text);
};

/** Whether a message starts a task: the user's plain text that is not the gate's answer. */
export const isTaskStart = (message: Pick<Message, 'role' | 'blocks'>) =>
  message.role === 'user' && message.blocks.every((block) => block.kind === 'text') && !isGateVerdict(message);

/** The plain text of a message's text blocks. */
export const textOf = (message: Pick<Message, 'blocks'>) =>
  message.blocks.map((block) => (block.kind === 'text' ? block.text : '')).join('\n');

/** Reads a whole session once, and the sessions of the sub-agents it started, keeping what the top of the page needs.
 *  A missing session file throws (there is nothing to show); anything wrong inside one becomes a warning. */
export async function outlineSession(file: string, nesting = 0): Promise<SessionOutline> {
  const outline: SessionOutline = {
    file,
    header: null,
    messages: 0,
    requests: [],
    compactions: [],
    tasks: [],
    subAgents: [],
    approvals: new Map(),
    editLines: new Map(),
    lastReply: '',
    lastHalt: null,
    firstAt: null,
    lastAt: null,
    warnings: [],
  };
  const openTaskCalls: { id: string; description: unknown }[] = [];
  for await (const { entry } of sessionEntries(file, (text) => outline.warnings.push(text))) {
    const at = 'at' in entry ? entry.at : entry.type === 'message' ? entry.message.at : null;
    if (at !== null) [outline.firstAt, outline.lastAt] = [outline.firstAt ?? at, at];
    switch (entry.type) {
      case 'session':
        outline.header = entry.header;
        break;
      case 'message':
        outline.messages++;
        noteMessage(outline, entry.message, openTaskCalls);
        break;
      case 'usage':
        outline.requests.push(entry.request);
        break;
      case 'compaction': {
        const { summary: _, ...compaction } = entry.compaction;
        outline.compactions.push(compaction);
        outline.requests.push(compaction.request);
        break;
      }
      case 'subagent':
        outline.subAgents.push(await outlineSubAgent(outline, entry.link, openTaskCalls, nesting));
        break;
      case 'halt': {
        outline.lastHalt = entry.halt;
        const task = outline.tasks.at(-1);
        if (task && task.halt === null) [task.halt, task.haltAt] = [entry.halt, entry.at];
        break;
      }
      case 'approval':
        if (entry.approval.callId !== null) outline.approvals.set(entry.approval.callId, entry.approval);
        break;
    }
  }
  checkHeader(outline);
  return outline;
}

function noteMessage(outline: SessionOutline, message: Message, openTaskCalls: { id: string; description: unknown }[]) {
  if (isTaskStart(message))
    outline.tasks.push({
      index: message.index,
      headline: headline(textOf(message)),
      at: message.at,
      halt: null,
      haltAt: null,
    });
  if (message.role === 'assistant') {
    const text = textOf(message).trim();
    if (text !== '') outline.lastReply = text.slice(0, REPORT_CHARS);
  }
  for (const block of message.blocks) {
    if (block.kind === 'call' && block.name === 'task')
      openTaskCalls.push({ id: block.id, description: isRecord(block.input) ? block.input.description : undefined });
    const line = block.kind === 'result' ? EDIT_LINE.exec(block.text) : null;
    if (line && block.kind === 'result') outline.editLines.set(block.callId, Number(line[1]));
  }
}

const headline = (text: string) => (text.length > HEADLINE_CHARS ? `${text.slice(0, HEADLINE_CHARS)}…` : text);

/** Reads a sub-agent's own session beside this one, and matches it to the `task` call that started it. Sub-agents are
 *  numbered in start order, and a refused call starts none, so it is the earliest unmatched `task` call before it with
 *  the same description (or, failing that, the earliest unmatched one). */
async function outlineSubAgent(
  outline: SessionOutline,
  link: SubAgentLink,
  openTaskCalls: { id: string; description: unknown }[],
  nesting: number,
): Promise<SubAgentOutline> {
  const at = openTaskCalls.findIndex((call) => call.description === link.description);
  const [call] = openTaskCalls.splice(at === -1 ? 0 : at, 1);
  let session: SessionOutline | null = null;
  link.problem = linkProblem(link.file, nesting);
  if (link.problem === null) {
    try {
      session = await outlineSession(path.join(path.dirname(outline.file), link.file), nesting + 1);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const why = code ?? (error instanceof Error ? error.message : String(error));
      link.problem = code === 'ENOENT' ? 'its session file is missing' : `its session file cannot be read (${why})`;
    }
  }
  if (link.problem !== null) outline.warnings.push(`sub-agent ${link.id} (${link.file}): ${link.problem}`);
  return { link, session, callId: call?.id ?? null, afterRequest: outline.requests.length };
}

/** Prevents a session file from pulling any other file on disk into the page: a linked file is a bare name,
 *  beside the session, as `sessionRecorder` writes it; and a file that links to itself stops here. */
export function linkProblem(file: string, nesting: number): string | null {
  if (file === '' || file !== path.basename(file) || file === '.' || file === '..' || file.includes('\\'))
    return 'its file name is not a plain name beside this session, so it was not opened';
  if (nesting + 1 >= MAX_NESTING) return `sub-agents nest more than ${MAX_NESTING} deep here, so it was not opened`;
  return null;
}

/** Prevents a page that silently misreads a session of another format: the mismatch is written on the page. */
function checkHeader(outline: SessionOutline): void {
  const name = path.basename(outline.file);
  if (outline.header === null) outline.warnings.push(`${name} has no session header (model, root, start time)`);
  else if (outline.header.version === null || !READABLE_VERSIONS.includes(outline.header.version))
    outline.warnings.push(
      `${name} is session format ${outline.header.version ?? '(none given)'}; this page reads ` +
        `${READABLE_VERSIONS.join(' and ')}, so what it shows may be incomplete`,
    );
}

/** Every warning of a session and of the sub-agents in it. */
export function allWarnings(outline: SessionOutline): string[] {
  return [...outline.warnings, ...outline.subAgents.flatMap((sub) => (sub.session ? allWarnings(sub.session) : []))];
}
