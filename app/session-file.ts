// The session file: the transcript on disk, one JSON line per entry, only ever appended; read back for --resume
// (checked line by line, then repaired by the harness's transcriptRepair) and for --replay.

import type Anthropic from '@anthropic-ai/sdk';
import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  createReadStream,
  fdatasyncSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  realpathSync,
  type Stats,
  statSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { errorText } from 'reference-harness';

import { type EditIntent, intentOutcomes } from './edit-intents.ts';
import type { ProgramEvent, SessionEvent } from './terminal.ts';
import { minimatch } from 'minimatch';
import { GUARDED, MAX_INPUT_DEPTH, nestedDeeperThan, transcriptRepair } from 'reference-harness/hardening';
import {
  type Agent,
  type ApprovalAnswer,
  type Approver,
  type Budgets,
  type Compaction,
  type Halt,
  issuesText,
  type KnownOutcome,
  type LoadedSession,
  type Price,
  type Task,
} from './harness.ts';

/** Version 2 adds what a replay needs: the options, every reply as received, and what the person did. */
export const SESSION_VERSION = 2;
/** Version 1 files still resume; they cannot be replayed. */
const RESUMABLE_VERSIONS = [1, 2];

export type SessionEntry =
  | SessionHeader
  | Timed<{ type: 'message'; message: Anthropic.MessageParam; callMs?: Record<string, number> }>
  | Timed<{ type: 'usage'; turn: number; usage: Anthropic.Usage; ms?: number }>
  | Timed<{
      type: 'reply';
      turn: number;
      stopReason: StopReason;
      content: Anthropic.ContentBlock[];
      usage: Anthropic.Usage;
      ms?: number;
    }>
  | Timed<CompactionEntry>
  | Timed<{ type: 'subagent'; id: string; description: string; file: string }>
  | Timed<{ type: 'halt'; halt: Halt }>
  | Timed<{ type: 'task'; text: string; content?: Exclude<Task, string> }>
  | Timed<{ type: 'approval'; tool: string; preview: string; answer: ApprovalAnswer; callId?: string }>
  | Timed<{ type: 'steer'; text: string; afterEvents: number }>
  | Timed<{ type: 'interrupt'; afterEvents: number }>
  | Timed<{ type: 'intent' } & EditIntent>;

/** Since the page shows durations, each entry after the header says when it was written (an ISO time). Optional, so
 *  older files still load; nothing but the page reads the timings:
 *  - `at` on every entry;
 *  - `ms` on a `usage`, `reply` or `compaction` entry: how long its model call took, from sending to the reply;
 *  - `callMs` on a message of tool results: how long each call ran, by call id (a refused call did not run);
 *  - `callId` on an `approval` entry: the call the person was asked about. */
type Timed<Entry> = Entry & { at?: string };

type StopReason = Anthropic.StopReason | null;

interface CompactionEntry {
  type: 'compaction';
  summary: string;
  keptFrom: number;
  usage: Anthropic.Usage;
  /** The API had refused the request before it as too long (a replay refuses it too); missing: it had not. */
  promptTooLong?: true;
  ms?: number;
}

export interface SessionHeader {
  type: 'session';
  version: number;
  model: string;
  root: string;
  startedAt: string;
  /** Since version 2: the window the agent worked with, from the model's metadata or --context-window. */
  contextWindow?: number;
  /** Since version 2: the protected files' hashes when the session started, so a resume cannot launder a change. */
  protected?: Record<string, string>;
  /** Since version 2: the options that change what a run does, so a replay can use them again. */
  options?: RecordedOptions;
  /** --price, when it was given: the page prices the session's calls with it, as the harness did. */
  price?: Price;
}

export interface RecordedOptions {
  verify: string | undefined;
  verifyTimeoutMs: number;
  protect: string[];
  budgets: Budgets;
  /** yes: --yes; ask: a person was asked (the answers are recorded); deny: nobody could be asked. */
  approval: 'yes' | 'ask' | 'deny';
  tools: string[];
  contextWindow: number | undefined;
  contextFiles: boolean;
  taskModel: string | undefined;
  /** --no-sandbox was given (missing in sessions recorded before it existed: it was not). */
  noSandbox?: boolean;
  /** --no-default-protection was given (missing: it was not, or the session predates it). */
  noDefaultProtection?: boolean;
  /** --pass-env's names (missing: none, or the session predates it). */
  passEnv?: string[];
  /** --sandbox-read's paths (missing: none, or the session predates it). */
  sandboxRead?: string[];
}

/** The events a replay sees again in the same order; a steer or an interrupt is placed after the Nth of them.
 *  Streamed text and notices are left out: their number depends on the network, not on the harness. */
export const REPLAYED_EVENTS = new Set<SessionEvent['type']>([
  'request',
  'reply',
  'message',
  'call',
  'running',
  'result',
  'decision',
  'gate',
  'compaction',
  'halt',
]);

/** A new session file's first line: how the session started, which a resume and a replay read back. */
export function sessionHeader(agent: Agent, options: RecordedOptions): SessionHeader {
  const { model, root } = agent.config;
  const startedAt = new Date().toISOString();
  const header = { type: 'session' as const, version: SESSION_VERSION, model: model.name, root, startedAt };
  return {
    ...header,
    ...(model.price && { price: model.price }), // what the page prices the calls with, as the harness did
    contextWindow: agent.contextWindow,
    protected: Object.fromEntries(agent.protectedAtStart),
    options,
  };
}

/** A session file opened for appending, once: the handle every entry is written through, and what it is on disk. */
export interface SessionFile {
  readonly path: string;
  readonly fd: number;
  /** The folder under which every folder on the way to the file must be a real folder (the project root). */
  readonly within: string | undefined;
}

/** How a session file is opened: `new`, created, and refused if anything is there already; `append`, created if
 *  missing (--session FILE); `resume`, it must exist. */
export type SessionUse = 'new' | 'append' | 'resume';

/** Prevents a session path that cannot hold a session from failing with a stack trace mid-run, or from hanging the
 *  program (opening a named pipe waits for its other end), and prevents the file from being anything but itself: what
 *  is there is looked at before it is opened (a link is refused, never followed), opened without waiting and without
 *  following a link, and looked at again. Folders below `within` (the project root, which the check may write) must
 *  be real folders, not links; missing ones are made one at a time. Throws one line naming the file and what is
 *  wrong. The handle is the only way the harness writes the file from then on. */
export function openSessionFile(file: string, use: SessionUse, within?: string): SessionFile {
  const cannot = use === 'resume' ? 'cannot be resumed' : 'cannot hold a session';
  try {
    refuseIrregular(file, lstatSync(file, { throwIfNoEntry: use === 'resume' }));
    realFolders(path.dirname(file), within, use !== 'resume');
    const create = use === 'new' ? constants.O_CREAT | constants.O_EXCL : use === 'append' ? constants.O_CREAT : 0;
    const how = constants.O_RDWR | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK | create;
    const fd = openSync(file, how);
    try {
      refuseIrregular(file, fstatSync(fd));
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    return { path: file, fd, within };
  } catch (error) {
    if (error instanceof IrregularFile) throw new Error(error.message);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new Error(`${file} is a link, not a session file: refused, never followed`);
    throw new Error(`${file} ${cannot}: ${fileProblem(error)}`);
  }
}

/** Prevents a folder swapped for a link (`.agent/sessions` → `~`) from taking the session file outside the project:
 *  each folder from `within` down to `folder` is looked at without following links, and one that is a link is refused;
 *  a missing one is made (mkdir never follows a link it would create). Outside `within`, missing folders are made as
 *  the person named them. */
function realFolders(folder: string, within: string | undefined, make: boolean): void {
  const below = within === undefined ? '..' : path.relative(within, folder);
  if (below === '' || below.startsWith('..') || path.isAbsolute(below)) {
    if (make) mkdirSync(folder, { recursive: true });
    return;
  }
  let at = within!;
  for (const part of below.split(path.sep)) {
    at = path.join(at, part);
    let stats = lstatSync(at, { throwIfNoEntry: false });
    if (stats === undefined && make) {
      mkdirSync(at);
      stats = lstatSync(at);
    }
    if (stats?.isSymbolicLink()) throw new IrregularFile(`${at} is a link, not a folder: refused, never followed`);
  }
}

/** What a session file was after the harness's last write: another writer changes its size or its ctime, which no
 *  one can set back. */
type Written = { dev: bigint; ino: bigint; size: bigint; ctime: bigint };

const written = (fd: number): Written => {
  const { dev, ino, size, ctimeNs } = fstatSync(fd, { bigint: true });
  return { dev, ino, size, ctime: ctimeNs };
};

/** Prevents the harness from writing a session file that is no longer the one it opened, or that something else wrote
 *  to: before each write, the path must still name the open file (a file put in its place, a link to `~/.bashrc`, is
 *  another file), and the file must be as the harness left it (a header rewritten in place changes it). Returns what
 *  is wrong, or null. */
function changedUnder(file: SessionFile, last: Written): string | null {
  const now = lstatSync(file.path, { bigint: true, throwIfNoEntry: false });
  const { size, ctime } = written(file.fd);
  const what =
    now === undefined
      ? 'was removed'
      : now.dev !== last.dev || now.ino !== last.ino
        ? 'was replaced'
        : size !== last.size || ctime !== last.ctime
          ? 'was changed by something else'
          : null;
  return what === null ? null : `the session file ${file.path} ${what}; no longer writing to it`;
}

/** The function that records a session's events, and closes its file (and its sub-agents') when it is done with. */
export type SessionRecorder = SubAgentRecorder & {
  /** Records an edit's intent and flushes it to the disk (fdatasync) before the edit is made; throws if it cannot,
   *  so no edit is made that the session does not say. */
  intend: (intent: EditIntent) => void;
};

/** A sub-agent's recorder: sub-agents do not edit. */
type SubAgentRecorder = ((event: SessionEvent) => void) & { close: () => void };

/** Writes each event worth keeping as it happens, synchronously, through the one handle opened at the start (a
 *  path is opened as `append`), so a crash loses nothing appended.
 *  A sub-agent's events go to a file of their own, linked from this one. Starting throws if the file cannot be
 *  written; a write that fails later (the disk is full), or a file replaced or changed under it, is told to `failed`,
 *  once, and nothing more is written, anywhere, so the file never has a gap in the middle (without `failed`, it
 *  throws). */
export function sessionRecorder(
  target: string | SessionFile,
  header: SessionHeader | null,
  secrets: string[],
  failed?: (problem: string) => void,
): SessionRecorder {
  const file = typeof target === 'string' ? openSessionFile(target, 'append') : target;
  // A line torn by a crash must stay its own line, or the next entry would be glued to it.
  if (!endsWithNewline(file.fd)) writeAll(file.fd, '\n');
  let last = written(file.fd);
  const append = (entry: SessionEntry) => {
    let line = JSON.stringify(entry.type === 'session' ? entry : { ...entry, at: new Date().toISOString() });
    for (const secret of secrets) if (secret.length >= 8) line = line.split(secret).join('[redacted]');
    const changed = changedUnder(file, last);
    if (changed !== null) throw new ChangedUnder(changed);
    writeAll(file.fd, `${line}\n`);
    last = written(file.fd);
  };
  if (header) append(header);
  let broken = false;
  const write = (entry: SessionEntry) => {
    if (broken) return;
    try {
      append(entry);
    } catch (error) {
      if (failed === undefined) throw error;
      broken = true;
      failed(
        error instanceof ChangedUnder
          ? error.message
          : `the session file ${file.path} can no longer be written: ${fileProblem(error)}`,
      );
    }
  };
  const children = new Map<string, SubAgentRecorder>();
  const clock = stopwatch();
  let events = 0; // of the current task, counted as a replay counts them
  let unanswered = false; // a request went out and neither a reply nor a halt came back: the API refused it
  const record = (event: SessionEvent) => {
    clock.see(event);
    if (REPLAYED_EVENTS.has(event.type)) events++;
    if (event.type === 'task') events = 0;
    if (event.type === 'task') write(event);
    if (event.type === 'approval') write(event);
    if (event.type === 'steer' || event.type === 'interrupt') write({ ...event, afterEvents: events });
    if (event.type === 'message') write({ type: 'message', message: event.message, ...clock.callTimes(event.message) });
    if (event.type === 'reply') {
      const { turn, stopReason, content, usage } = event;
      const ms = clock.modelCallMs();
      write({ type: 'usage', turn, usage, ...ms });
      write({ type: 'reply', turn, stopReason, content, usage, ...ms });
    }
    if (event.type === 'compaction') {
      const { summary, keptFrom, usage } = event;
      const refused = unanswered && { promptTooLong: true as const };
      write({ type: 'compaction', summary, keptFrom, usage, ...refused, ...clock.summaryMs() });
      unanswered = false; // one refusal, one summary: a second compaction before the retry answered no refusal
    }
    if (event.type === 'request' || event.type === 'reply' || event.type === 'halt')
      unanswered = event.type === 'request';
    if (event.type === 'halt') write({ type: 'halt', halt: event.halt });
    if (event.type === 'subagent') {
      let child = children.get(event.id);
      if (child === undefined) {
        const childFile = file.path.replace(/(\.jsonl)?$/, `.${event.id}.jsonl`);
        write({ type: 'subagent', id: event.id, description: event.description, file: path.basename(childFile) });
        const childHeader = header && subAgentHeader(header);
        try {
          child = sessionRecorder(openSessionFile(childFile, 'append', file.within), childHeader, secrets, failed);
        } catch (error) {
          if (failed === undefined) throw error;
          failed(`the sub-agent's session file ${childFile} cannot be written: ${errorText(error)}`);
          child = Object.assign(() => {}, { close: () => {} });
        }
        children.set(event.id, child);
      }
      child(event.event);
    }
  };
  const close = () => {
    for (const child of children.values()) child.close();
    closeSync(file.fd);
  };
  const intend = (intent: EditIntent) => {
    write({ type: 'intent', ...intent });
    if (broken) throw new Error(`the session file ${file.path} can no longer be written; nothing was edited`);
    fdatasyncSync(file.fd);
  };
  return Object.assign(record, { close, intend });
}

/** Writes all of `text` through the handle: one write may take only part of it. */
function writeAll(fd: number, text: string): void {
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at);
}

/** The session file is no longer the one the harness opened, or something else wrote to it. */
class ChangedUnder extends Error {}

class IrregularFile extends Error {}

/** Prevents reading or writing a session through a link, a directory, a device, a named pipe or a socket. */
function refuseIrregular(file: string, stats: Stats | undefined): void {
  if (stats === undefined || stats.isFile()) return;
  const kind = stats.isSymbolicLink()
    ? 'a link'
    : stats.isDirectory()
      ? 'a directory'
      : stats.isFIFO()
        ? 'a named pipe'
        : stats.isSocket()
          ? 'a socket'
          : stats.isCharacterDevice() || stats.isBlockDevice()
            ? 'a device'
            : 'not a regular file';
  throw new IrregularFile(`${file} is ${kind}, not a session file`);
}

/** A file system error in a few words, with its code: "no space left on device (ENOSPC)". */
function fileProblem(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  if (code === undefined) return errorText(error);
  const words = message.replace(/^\w+: /, '').replace(/, \w+( '.*)?$/s, ''); // "ENOSPC: …, write", "…, open '…'"
  return `${words} (${code})`;
}

/** A sub-agent's header: the parent's, with the model sub-agents run on (--task-model's, if given), and --price only
 *  when that is the parent's model, so the page prices each call as the harness did. */
function subAgentHeader(header: SessionHeader): SessionHeader {
  const { price, ...rest } = header;
  const taskModel = header.options?.taskModel;
  const model = taskModel ?? header.model;
  return { ...rest, model, ...(model === header.model && price && { price }), startedAt: new Date().toISOString() };
}

/** The timings the session page shows, taken from the events as they come: how long each model call and each tool
 *  call took. */
function stopwatch() {
  let sentAt: number | null = null; // when the model call under way was sent
  let lastAt = Date.now(); // when anything last happened: a summary call starts right after
  const running = new Map<string, number>(); // call id → when it started running
  const ran = new Map<string, number>(); // call id → how long it ran, until its result goes into a message
  return {
    see(event: SessionEvent) {
      const now = Date.now();
      if (event.type === 'request') sentAt = now;
      if (event.type === 'running') running.set(event.call.id, now);
      if (event.type === 'result') {
        const started = running.get(event.call.id);
        running.delete(event.call.id);
        if (started !== undefined) ran.set(event.call.id, now - started);
      }
      if (event.type !== 'compaction') lastAt = now;
    },
    modelCallMs(): { ms?: number } {
      const ms = sentAt === null ? undefined : Date.now() - sentAt;
      sentAt = null;
      return ms === undefined ? {} : { ms };
    },
    summaryMs: (): { ms: number } => ({ ms: Date.now() - lastAt }),
    callTimes(message: Anthropic.MessageParam): { callMs?: Record<string, number> } {
      if (typeof message.content === 'string') return {};
      const times: Record<string, number> = {};
      for (const block of message.content)
        if (block.type === 'tool_result' && ran.has(block.tool_use_id)) {
          times[block.tool_use_id] = ran.get(block.tool_use_id)!;
          ran.delete(block.tool_use_id);
        }
      return Object.keys(times).length === 0 ? {} : { callMs: times };
    },
  };
}

/** Whether an open file is empty or ends with a newline, from its last byte alone: a session has no size limit. */
function endsWithNewline(fd: number): boolean {
  const { size } = fstatSync(fd);
  if (size === 0) return true;
  const last = Buffer.alloc(1);
  readSync(fd, last, 0, 1, size - 1);
  return last[0] === 0x0a;
}

/** A task with no halt after it: its program was killed (SIGKILL, a crash, power) before it could write one. */
export const RUN_WITHOUT_HALT =
  'the last run ended without a halt (its program was stopped before it could write one); its messages are kept';

/** Rebuilds a transcript from a session file of any size, streamed line by line. Each entry is checked against the
 *  schema of its type; a bad line is dropped with a warning naming it (a torn last line: the process died while
 *  writing it; any other: corrupted), and the messages are repaired into a transcript the API accepts. An edit the
 *  session ended in the middle of is answered with what the disk under `root` (default: the header's) shows of it. */
export async function loadSession(
  file: string,
  root?: string,
): Promise<LoadedSession & { header: SessionHeader | null }> {
  const warnings = warningList();
  let header: SessionHeader | null = null; // the first: what the session was started with
  const transcript = transcriptRepair(warnings.add);
  let compaction: Compaction | null = null;
  let subAgents = 0;
  let protectedAtStart: Map<string, string> | null = null;
  const unknownTypes = new Map<string, { first: number; count: number }>();
  let taskWithoutHalt: number | null = null; // the line of the last task, until its halt is read
  const intents = new Map<string, EditIntent>(); // since the last message: the edits its calls were making
  for await (const { number, text, last } of sessionLines(file)) {
    const at = `${file}:${number}`;
    const read = readEntry(text);
    if ('version' in read) {
      const readable = RESUMABLE_VERSIONS.join(' and ');
      throw new Error(`${file}: session format ${read.version}, this harness reads ${readable}`);
    }
    if ('torn' in read) {
      // Only the last line can be one the process was writing when it died; any other was damaged since.
      const why = last ? 'was cut off (the process died while writing it)' : `is corrupted (${read.torn})`;
      warnings.add(`${at} ${why}; the line was dropped`);
    } else if ('problem' in read) {
      warnings.add(`${at} is not a valid entry (${read.problem}); the line was dropped`);
    } else if ('unknown' in read) {
      const seen = unknownTypes.get(read.unknown) ?? { first: number, count: 0 };
      unknownTypes.set(read.unknown, { ...seen, count: seen.count + 1 });
    } else if (read.entry.type === 'message') {
      transcript.add(read.entry.message, at);
      intents.clear();
    } else if (read.entry.type === 'intent') {
      const { callId, path: edited, before, after } = read.entry;
      intents.set(callId, { callId, path: edited, before, after });
    } else if (read.entry.type === 'compaction') {
      const { summary, keptFrom } = read.entry;
      if (transcript.startsReply(keptFrom)) compaction = { summary, keptFrom };
      else warnings.add(`${at}: the summary's cut (message ${keptFrom}) is not at a reply; the summary is not used`);
    } else if (read.entry.type === 'session') {
      header ??= withValidOptions(read.entry, (problem) => warnings.add(`${at}: ${problem}`));
      if (read.entry.protected && protectedAtStart === null)
        protectedAtStart = new Map(Object.entries(read.entry.protected));
    } else if (read.entry.type === 'subagent') {
      subAgents++;
    } else if (read.entry.type === 'task') {
      taskWithoutHalt = number;
    } else if (read.entry.type === 'halt') {
      taskWithoutHalt = null;
    }
  }
  if (taskWithoutHalt !== null) warnings.add(`${file}:${taskWithoutHalt}: ${RUN_WITHOUT_HALT}`);
  for (const [type, { first, count }] of unknownTypes)
    warnings.add(`${file}:${first}: ${count} entries of type "${type}", unknown to this version, were skipped`);
  const on = root ?? header?.root;
  const known = on === undefined ? new Map<string, KnownOutcome>() : await intentOutcomes([...intents.values()], on);
  const repair = transcript.finish(known);
  const { messages } = transcript;
  return { messages, compaction, subAgents, repair, protectedAtStart, warnings: warnings.list(), header };
}

/** Prevents a session file from vouching for a changed protected file at --resume: the protected files are
 *  fingerprinted again as the resume starts, and a resume goes on only if they still hash as the header recorded (none
 *  changed, deleted, or added under the recorded globs). So the header can refuse a resume, never accept a change
 *  the disk shows: rewritten hashes that disagree with the disk are refused like a changed file. Returns one line
 *  naming the changes, or null. */
export async function protectedChangedSince(
  loaded: { header: SessionHeader | null; protectedAtStart: Map<string, string> | null },
  root: string,
  globs: readonly string[],
): Promise<string | null> {
  if (loaded.protectedAtStart === null || globs.length === 0) return null;
  const matcher = (list: readonly string[]) => (file: string) =>
    list.find((glob) => minimatch(file, glob, { dot: true }));
  const protectedNow = matcher(globs);
  const recorded = matcher(loaded.header?.options?.protect ?? globs);
  // As the agent fingerprints them: the guarded disk's fingerprints, on the disk as it is now.
  const { disk, runner } = GUARDED;
  const now = await disk.fingerprints(globs, { root, seen: new Map(), disk, runner });
  const changes: string[] = [];
  for (const [file, hash] of loaded.protectedAtStart) {
    if (protectedNow(file) === undefined || now.get(file) === hash) continue;
    changes.push(`${file} (${now.has(file) ? 'changed' : 'deleted'})`);
  }
  for (const file of now.keys())
    if (recorded(file) !== undefined && !loaded.protectedAtStart.has(file)) changes.push(`${file} (added)`);
  if (changes.length === 0) return null;
  const restore = 'restore them, or start a new session';
  return `protected files changed since the session started: ${changes.join(', ')}; ${restore}`;
}

/** Prevents a session file the model could have edited from setting the gate at --resume. Inside the project and
 *  outside its .agent/ folder (which the tools never read, and write only with a person's yes each time), edit_file
 *  under a blanket yes can rewrite the header's --verify and --protect; so `gate`, the flags the resume would take from
 *  it, is taken only if a person says yes (`ask`, in a terminal). With nobody to ask, throws one line naming them. */
export async function confirmRecordedGate(
  file: string,
  root: string,
  gate: readonly string[],
  ask: ((question: string) => Promise<string>) | null,
): Promise<void> {
  const below = path.relative(root, realpathSync(file)).split(path.sep);
  const outOfReach = below[0] === '..' || path.isAbsolute(below.join(path.sep)) || below[0]?.toLowerCase() === '.agent';
  if (gate.length === 0 || outOfReach) return;
  const said = `${file} is inside the project, where the model can edit it, and sets ${gate.join(' ')}`;
  if (ask !== null && /^y(es)?$/i.test((await ask(`${said}. Take them? [y/N] `)).trim())) return;
  throw new Error(`${said}: give them on the command line (or keep session files in .agent/ or outside the project)`);
}

/** What a resume may run with: the options a session header recorded, checked; any that are not valid are left out,
 *  with a warning, and the command line gives them. */
function withValidOptions(header: SessionHeader, warn: (problem: string) => void): SessionHeader {
  if (header.options === undefined) return header;
  const checked = recordedOptionsSchema.safeParse(header.options);
  if (checked.success) return header;
  warn(`the recorded options are not valid (${issuesText(checked.error)}); the command line gives them`);
  const { options: _invalid, ...rest } = header;
  return rest;
}

/** The non-empty lines of a file, numbered and streamed (a session may outgrow the longest string); one line is held
 *  back, so the last one is known to be the last. */
export async function* sessionLines(file: string): AsyncGenerator<{ number: number; text: string; last: boolean }> {
  let held: { number: number; text: string } | null = null;
  let number = 0;
  refuseIrregular(file, statSync(file));
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK); // a pipe put there since: no wait, refused
  try {
    refuseIrregular(file, fstatSync(fd));
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  for await (const text of createInterface({ input: createReadStream('', { fd }), crlfDelay: Infinity })) {
    number++;
    if (text.trim() === '') continue;
    if (held) yield { ...held, last: false };
    held = { number, text };
  }
  if (held) yield { ...held, last: true };
}

/** At most this many warnings are listed, then a count: a badly damaged file must not flood the screen. */
const MAX_WARNINGS = 20;

function warningList() {
  const warnings: string[] = [];
  let more = 0;
  return {
    add: (text: string) => void (warnings.length < MAX_WARNINGS ? warnings.push(text) : more++),
    list: () => (more > 0 ? [...warnings, `... and ${more} more warnings like these`] : warnings),
  };
}

/** One line of a session file, read: an entry checked against the schema of its type, or what is wrong with it. */
type ReadEntry =
  | { entry: SessionEntry }
  | { torn: string } // not JSON
  | { problem: string } // JSON, but not a valid entry
  | { unknown: string } // a type this version does not know: a later version's
  | { version: number }; // a header of another format version

export function readEntry(text: string): ReadEntry {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { torn: errorText(error) };
  }
  // Before anything walks it: JSON.parse takes any depth, JSON.stringify (the SDK's, when it is sent) does not.
  if (nestedDeeperThan(value, MAX_ENTRY_DEPTH)) return { problem: `nested deeper than ${MAX_ENTRY_DEPTH} levels` };
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !('type' in value))
    return { problem: `not an object with a "type": ${shortJson(value)}` };
  const { type } = value;
  const version = type === 'session' && 'version' in value ? value.version : SESSION_VERSION;
  if (typeof version === 'number' && !RESUMABLE_VERSIONS.includes(version)) return { version };
  if (typeof type !== 'string') return { problem: `"type" is not a string: ${shortJson(type)}` };
  if (!Object.hasOwn(ENTRY_SCHEMAS, type)) return { unknown: type };
  const parsed = ENTRY_SCHEMAS[type as SessionEntry['type']].safeParse(value);
  if (!parsed.success) return { problem: `a ${type} entry with ${issuesText(parsed.error)}` };
  return { entry: value as SessionEntry }; // kept as written, not as parsed: the same bytes go back to the API
}

/** An entry wraps a tool's arguments in four levels (entry, message, content, block): room for those, and a margin. */
const MAX_ENTRY_DEPTH = MAX_INPUT_DEPTH + 8;

const shortJson = (value: unknown) => {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
};

const nonBlank = z.string().refine((text) => text.trim() !== '', 'must hold more than whitespace');
const usageSchema = z.object({ input_tokens: z.number(), output_tokens: z.number() });

/** What each kind of block must hold for the API to take it back. Other kinds (an image, a server tool's block)
 *  are left to the API. */
const BLOCK_SCHEMAS: Record<string, z.ZodType | undefined> = {
  text: z.object({ text: nonBlank }),
  tool_use: z.object({ id: z.string().min(1), name: z.string().min(1), input: z.record(z.string(), z.unknown()) }),
  tool_result: z.object({ tool_use_id: z.string().min(1), is_error: z.boolean().optional() }),
  thinking: z.object({ thinking: z.string(), signature: z.string() }),
  redacted_thinking: z.object({ data: z.string() }),
};
/** The blocks only one side of the conversation sends. */
const BLOCK_SIDE: Record<string, 'user' | 'assistant' | undefined> = {
  tool_use: 'assistant',
  thinking: 'assistant',
  redacted_thinking: 'assistant',
  tool_result: 'user',
};

const messageSchema = z
  .object({
    role: z.enum(['user', 'assistant']),
    content: z.union([nonBlank, z.array(z.looseObject({ type: z.string() })).min(1, 'must not be an empty list')], {
      error: 'must be text or a non-empty list of content blocks',
    }),
  })
  .superRefine(({ role, content }, context) => {
    if (typeof content === 'string') return;
    content.forEach((block, i) => {
      const side = BLOCK_SIDE[block.type];
      if (side !== undefined && side !== role)
        context.addIssue({
          code: 'custom',
          path: ['content', i],
          message: `a ${block.type} block from the ${role}`,
        });
      for (const issue of BLOCK_SCHEMAS[block.type]?.safeParse(block).error?.issues ?? [])
        context.addIssue({ code: 'custom', path: ['content', i, ...issue.path], message: issue.message });
    });
  });

const positive = z.number().positive();
/** A header's options as the program writes them (RecordedOptions; JSON leaves out what is undefined). */
const recordedOptionsSchema = z.object({
  verify: z.string().optional(),
  verifyTimeoutMs: positive,
  protect: z.array(z.string()),
  budgets: z.object({
    maxTurns: positive.int(),
    maxTokens: positive.int().optional(),
    maxCostUsd: positive.optional(),
    timeoutMs: positive.optional(),
  }),
  approval: z.enum(['yes', 'ask', 'deny']),
  tools: z.array(z.string()),
  contextWindow: positive.int().optional(),
  contextFiles: z.boolean(),
  taskModel: z.string().optional(),
  noSandbox: z.boolean().optional(),
  noDefaultProtection: z.boolean().optional(),
  passEnv: z.array(z.string()).optional(),
  sandboxRead: z.array(z.string()).optional(),
});

/** One schema per entry type. A field they do not name is allowed (a later version may add one), and kept: what
 *  is used is the entry as written, not as parsed. */
const ENTRY_SCHEMAS = {
  session: z.object({ version: z.number(), model: z.string(), root: z.string(), startedAt: z.string() }),
  message: z.object({ message: messageSchema }),
  usage: z.object({ turn: z.number().int().min(1), usage: usageSchema }),
  compaction: z.object({
    summary: nonBlank,
    keptFrom: z.number().int().min(1),
    usage: usageSchema,
    promptTooLong: z.literal(true).optional(),
  }),
  subagent: z.object({ id: z.string().min(1), description: z.string(), file: z.string().min(1) }),
  halt: z.object({ halt: z.object({ kind: z.enum(['accepted', 'budget', 'interrupted', 'error']) }) }),
  reply: z.object({
    turn: z.number().int().min(1),
    stopReason: z.string().nullable(),
    content: z.array(z.looseObject({ type: z.string() })),
    usage: usageSchema,
  }),
  task: z.object({ text: z.string(), content: z.array(z.looseObject({ type: z.enum(['text', 'image']) })).optional() }),
  approval: z.object({ tool: z.string(), preview: z.string(), answer: z.object({ approved: z.boolean() }) }),
  steer: z.object({ text: z.string(), afterEvents: z.number().int().min(0) }),
  interrupt: z.object({ afterEvents: z.number().int().min(0) }),
  intent: z.object({
    callId: z.string().min(1),
    path: z.string().min(1),
    before: z.string().nullable(),
    after: z.string(),
  }),
} satisfies Record<SessionEntry['type'], z.ZodType>;

/** A short fingerprint of an approval's preview: a replay gives each recorded answer to the same question. */
export const previewHash = (preview: string) => createHash('sha256').update(preview).digest('hex').slice(0, 16);

/** Tells the session file each answer the person gave, so a replay can give it again to the same question. */
export function recordAnswers(approver: Approver, tell: (event: ProgramEvent) => void): Approver {
  return async (request) => {
    const answer = await approver(request);
    tell({
      type: 'approval',
      tool: request.tool,
      preview: previewHash(request.preview),
      answer,
      callId: request.call.id,
    });
    return answer;
  };
}
