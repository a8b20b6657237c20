// session-page/read.ts — reads a session file (see `SessionEntry` and `sessionRecorder` in agent.ts) into
// what the page shows. Tolerant on purpose, unlike `loadSession`: the page is for looking at a session that
// went wrong, so a torn line, a malformed entry, an unknown entry type or a newer format version is skipped
// and reported as a warning, and everything else is still shown.

import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { BudgetName, Halt } from '../../agent.ts';

/** Format 1, and format 2, which adds entry types (reply, task, options, approval, steer) this page skips. */
export const READABLE_VERSIONS: readonly number[] = [1, 2];

/** Sub-agents of sub-agents are not made today; the limit only stops a file that links to itself. */
const MAX_NESTING = 3;

export interface Header {
  version: number | null;
  model: string;
  root: string;
  startedAt: string;
  /** The window the session ran with, when the session says (format 1 does not). */
  contextWindow: number | null;
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
  /** The linked session, or null with the reason it could not be read. */
  session: SessionRecord | null;
  problem: string | null;
}

export type Entry =
  | { type: 'message'; message: Message }
  | { type: 'usage'; request: Request }
  | { type: 'compaction'; compaction: CompactionInfo }
  | { type: 'subagent'; subagent: SubAgentLink }
  | { type: 'halt'; halt: Halt };

export interface SessionRecord {
  file: string;
  header: Header | null;
  /** In file order: the page shows them in this order. */
  entries: Entry[];
  messages: Message[];
  requests: Request[];
  /** What could not be shown, and why; a linked sub-agent's warnings are in its own record. */
  warnings: string[];
}

type Json = Record<string, unknown>;
const isRecord = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;
const stringOr = (value: unknown, fallback: string) => (typeof value === 'string' ? value : fallback);

/** Reads a session and, beside it, the sessions of the sub-agents it started. A missing session file throws
 *  (there is nothing to show); anything wrong inside one becomes a warning. */
export async function readSession(file: string, nesting = 0): Promise<SessionRecord> {
  const record: SessionRecord = { file, header: null, entries: [], messages: [], requests: [], warnings: [] };
  const skippedTypes = new Map<string, number>();
  await refuseIrregular(file);
  for (const [i, line] of (await readFile(file, 'utf8')).split('\n').entries()) {
    if (line.trim() === '') continue;
    const where = `${path.basename(file)} line ${i + 1}`;
    const value = parseJson(line);
    if (!isRecord(value) || typeof value.type !== 'string') {
      record.warnings.push(`${where} is not a complete entry (cut off when the process died?); skipped`);
      continue;
    }
    const problem = await addEntry(record, value, nesting);
    if (problem === 'unknown type') skippedTypes.set(value.type, (skippedTypes.get(value.type) ?? 0) + 1);
    else if (problem !== null) record.warnings.push(`${where}: ${problem}; skipped`);
  }
  for (const [type, times] of skippedTypes)
    record.warnings.push(`${path.basename(file)}: ${times} "${type}" entr${times === 1 ? 'y' : 'ies'} not shown`);
  checkHeader(record);
  return record;
}

function parseJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

/** Prevents a page that silently misreads a session of another format: the mismatch is written on the page. */
function checkHeader(record: SessionRecord): void {
  const name = path.basename(record.file);
  if (record.header === null) record.warnings.push(`${name} has no session header (model, root, start time)`);
  else if (record.header.version === null || !READABLE_VERSIONS.includes(record.header.version))
    record.warnings.push(
      `${name} is session format ${record.header.version ?? '(none given)'}; this page reads ` +
        `${READABLE_VERSIONS.join(' and ')}, so what it shows may be incomplete`,
    );
}

/** Adds one entry; returns why it cannot be shown, or null. */
async function addEntry(record: SessionRecord, value: Json, nesting: number): Promise<string | null> {
  switch (value.type) {
    case 'session':
      if (record.header === null) record.header = toHeader(value);
      return null;
    case 'message': {
      const message = toMessage(value.message, record.messages.length);
      if (message === null) return 'a message without a role or content';
      record.messages.push(message);
      record.entries.push({ type: 'message', message });
      return null;
    }
    case 'usage': {
      const tokens = toTokens(value.usage);
      if (tokens === null) return 'a usage entry without token counts';
      const turn = isCount(value.turn) ? value.turn : null;
      record.entries.push({ type: 'usage', request: addRequest(record, turn, tokens, null) });
      return null;
    }
    case 'compaction':
      return addCompaction(record, value);
    case 'subagent':
      return addSubAgent(record, value, nesting);
    case 'halt': {
      const halt = toHalt(value.halt);
      if (halt === null) return 'a halt of an unknown kind';
      record.entries.push({ type: 'halt', halt });
      return null;
    }
    case 'reply': // the same usage again, with the reply's blocks (the message entries show them)
    case 'task': // the first user message of each task shows it
    case 'approval':
    case 'steer': // steering shows as text after the results it followed
    case 'interrupt':
      return null;
    default:
      return 'unknown type';
  }
}

function toHeader(value: Json): Header {
  return {
    version: typeof value.version === 'number' ? value.version : null,
    model: stringOr(value.model, '(unknown model)'),
    root: stringOr(value.root, '(unknown root)'),
    startedAt: stringOr(value.startedAt, '(unknown start time)'),
    contextWindow: isCount(value.contextWindow) && value.contextWindow > 0 ? value.contextWindow : null,
  };
}

function addRequest(record: SessionRecord, turn: number | null, tokens: Tokens, compaction: number | null): Request {
  const request = { number: record.requests.length + 1, turn, tokens, compaction };
  record.requests.push(request);
  return request;
}

function addCompaction(record: SessionRecord, value: Json): string | null {
  const tokens = toTokens(value.usage);
  if (typeof value.summary !== 'string' || !isCount(value.keptFrom) || tokens === null)
    return 'a compaction without a summary, a cut or token counts';
  const previous = record.entries.findLast((entry) => entry.type === 'compaction');
  const replacedFrom = previous ? previous.compaction.keptFrom : 0;
  const number = (previous ? previous.compaction.number : 0) + 1;
  if (value.keptFrom < replacedFrom || value.keptFrom > record.messages.length)
    record.warnings.push(
      `compaction ${number} keeps messages from #${value.keptFrom}, ` +
        `outside #${replacedFrom}–#${record.messages.length}: its fold and cut may be misplaced`,
    );
  const request = addRequest(record, null, tokens, number);
  record.entries.push({
    type: 'compaction',
    compaction: { number, summary: value.summary, keptFrom: value.keptFrom, replacedFrom, request },
  });
  return null;
}

/** Prevents a named pipe given as a session from hanging the export (reading one waits for a writer), and a folder
 *  or a device from being read as one: only a regular file is opened. */
async function refuseIrregular(file: string): Promise<void> {
  if (!(await stat(file)).isFile()) throw new Error('not a regular file, so not a session file');
}

async function addSubAgent(record: SessionRecord, value: Json, nesting: number): Promise<string | null> {
  if (typeof value.id !== 'string' || typeof value.file !== 'string') return 'a sub-agent without an id or a file';
  const link: SubAgentLink = {
    id: value.id,
    description: stringOr(value.description, ''),
    file: value.file,
    session: null,
    problem: null,
  };
  record.entries.push({ type: 'subagent', subagent: link });
  link.problem = linkProblem(value.file, nesting);
  if (link.problem === null) {
    try {
      link.session = await readSession(path.join(path.dirname(record.file), value.file), nesting + 1);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const why = code ?? (error instanceof Error ? error.message : String(error));
      link.problem = code === 'ENOENT' ? 'its session file is missing' : `its session file cannot be read (${why})`;
    }
  }
  if (link.problem !== null) record.warnings.push(`sub-agent ${value.id} (${value.file}): ${link.problem}`);
  return null;
}

/** Prevents a session file from pulling any other file on disk into the page: a linked file is a bare name,
 *  beside the session, as `sessionRecorder` writes it; and a file that links to itself stops here. */
export function linkProblem(file: string, nesting: number): string | null {
  if (file === '' || file !== path.basename(file) || file === '.' || file === '..' || file.includes('\\'))
    return 'its file name is not a plain name beside this session, so it was not opened';
  if (nesting + 1 >= MAX_NESTING) return `sub-agents nest more than ${MAX_NESTING} deep here, so it was not opened`;
  return null;
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

function toMessage(value: unknown, index: number): Message | null {
  if (!isRecord(value) || (value.role !== 'user' && value.role !== 'assistant')) return null;
  if (typeof value.content === 'string') return { index, role: value.role, blocks: [textBlock(value.content)] };
  if (!Array.isArray(value.content)) return null;
  return { index, role: value.role, blocks: value.content.map(toBlock) };
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
    case 'budget':
      return isBudget(value.budget) && isCount(value.limit)
        ? { kind: 'budget', budget: value.budget, limit: value.limit }
        : null;
    case 'interrupted':
      return { kind: 'interrupted' };
    case 'error':
      return { kind: 'error', message: stringOr(value.message, '(no message)') };
    default:
      return null;
  }
}
