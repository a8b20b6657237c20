// The editor as the interface (--acp): the Agent Client Protocol on stdin and stdout, spoken with the protocol's own
// library. An editor (Zed, a JetBrains IDE, Neovim) starts this program, opens sessions in its folders and sends
// prompts; each session is one harness agent. Like the terminal beside it, this file only subscribes to the harness's
// events, drawn as the editor's session updates, and calls its API: runTask with an abort signal for session/cancel,
// and an approver that asks the editor. agent.ts knows nothing of it.

import * as acp from '@agentclientprotocol/sdk';
import type Anthropic from '@anthropic-ai/sdk';
import { structuredPatch } from 'diff';
import { Console } from 'node:console';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { createAgent, errorText, resume } from 'reference-harness';
import { describeCall, safe_path } from 'reference-harness/tools';
import { type CliOptions, configFromCli, recordedOptions } from './options.ts';
import { type McpServers, type McpServerSpec, startMcpServers } from './mcp.ts';
import { PRICED_MODELS } from './prices.ts';
import { intentRecorded } from './edit-intents.ts';
import {
  loadSession,
  openSessionFile,
  protectedChangedSince,
  readEntry,
  recordAnswers,
  sessionHeader,
  sessionLines,
  sessionRecorder,
} from './session-file.ts';
import { type Ending, type EndingSignal, EXIT, outsideSandbox, runGivenTask, type SessionEvent } from './terminal.ts';
import { changedOnDisk, fileLines } from 'reference-harness/tools';
import { GUARDED } from 'reference-harness/hardening';
import {
  type Agent,
  type AgentEvent,
  type ApprovalAnswer,
  type Approver,
  type Disk,
  type Halt,
  type LoadedSession,
  type Model,
  type ModelCallOptions,
  type ModelRequest,
  type Price,
  type Tool,
  type Task,
} from './harness.ts';
import { describeHalt } from './describe-halt.ts';
import { contextBreakdown } from './context-breakdown.ts';
import { compactNow } from './compact-now.ts';

/** What every session of the connection shares: the command line's options and the model(s) they chose. */
export interface AcpSetup {
  options: CliOptions;
  model: Model;
  taskModel: Model | undefined;
  /** Redacted from the session files. */
  secrets: string[];
  /** Where what is not the protocol goes: stderr. */
  log: (text: string) => void;
  /** No API key (nor a local API, nor a script): every prompt is answered auth_required. */
  keyMissing: boolean;
  /** The model of that name with that thinking budget, as the command line would make it: what picking it in the
   *  editor runs on. */
  modelNamed: (name: string, thinking: number | undefined) => Promise<Model>;
  /** The MCP servers --mcp lists: each session starts them, beside those the editor gives. */
  mcpServers: McpServerSpec[];
}

/** Serves one editor on stdin and stdout until it closes the connection, or the program must end (`ending`: a
 *  signal); returns the exit code. Either way each run is stopped and its halt written first, and the check's
 *  processes and temporary folder go with it. */
export async function serveAcp(setup: AcpSetup, ending: AbortSignal): Promise<number> {
  consoleToStderr();
  setup.log('speaking the Agent Client Protocol on stdin and stdout: an editor starts this program (see README)');
  let tooLong = false;
  const input = lineLimited(Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>, () => (tooLong = true));
  const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), input);
  const { connection, stopAll } = connectAcp(setup, stream);
  const ended = new Promise((resolve) => ending.addEventListener('abort', resolve, { once: true }));
  await Promise.race([connection.closed, ended]);
  const reason = ending.aborted ? (ending.reason as Ending) : undefined;
  await stopAll(reason?.signal);
  if (tooLong)
    setup.log(`a line over ${MAX_LINE_BYTES} bytes (the protocol library's limit): the connection is closed`);
  return reason?.code ?? (tooLong ? EXIT.notAccepted : EXIT.accepted);
}

/** The longest line the protocol library reads. */
const MAX_LINE_BYTES = acp.DEFAULT_MAX_MESSAGE_BYTES;

/** Prevents a line over the library's limit from ending the program with 0 and nothing said (the library only closes
 *  the connection): such a line is noted, and the input ends in an error there. */
function lineLimited(input: ReadableStream<Uint8Array>, over: () => void): ReadableStream<Uint8Array> {
  let length = 0; // of the line so far
  const counting = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      for (let start = 0; start <= chunk.length;) {
        const newline = chunk.indexOf(10, start);
        const end = newline < 0 ? chunk.length : newline;
        length += end - start;
        if (length > MAX_LINE_BYTES) {
          over();
          return controller.error(new Error('line too long'));
        }
        if (newline < 0) break;
        length = 0;
        start = newline + 1;
      }
      controller.enqueue(chunk);
    },
  });
  return input.pipeThrough(counting);
}

/** Prevents a stray console.log (a library's, or a forker's while debugging a hook) from corrupting the protocol: on
 *  stdout every line must be a JSON-RPC message, so the console writes to stderr. */
export function consoleToStderr(): void {
  globalThis.console = new Console({ stdout: process.stderr, stderr: process.stderr });
}

/** The agent side of the protocol on any stream: stdio, or a test's. `stopAll` stops every session's run, and
 *  settles once each has halted. */
function connectAcp(setup: AcpSetup, stream: acp.Stream) {
  const sessions = new Map<string, AcpSession>();
  let notices = false; // the editor shows `notice` updates; without them, notices go to stderr
  let files: EditorFiles = { read: false, write: false }; // the editor's buffers, if it offers them
  const sessionOf = (sessionId: string) => {
    const session = sessions.get(sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(sessionId);
    return session;
  };
  const app = acp
    .agent({ name: 'reference-harness' })
    .onRequest(acp.methods.agent.initialize, ({ params }) => {
      notices = params.clientCapabilities?.session?.notices != null;
      const fs = params.clientCapabilities?.fs;
      files = { read: fs?.readTextFile === true, write: fs?.writeTextFile === true };
      return {
        protocolVersion: acp.PROTOCOL_VERSION,
        agentCapabilities: {
          loadSession: true,
          promptCapabilities: { embeddedContext: true, image: true },
          mcpCapabilities: { http: true },
          sessionCapabilities: { list: {} },
        },
        agentInfo: { name: 'reference-harness', title: 'Reference harness', version: VERSION },
        authMethods: [API_KEY],
      };
    })
    .onRequest(acp.methods.agent.authenticate, ({ params }) => {
      if (params.methodId !== API_KEY.id)
        throw acp.RequestError.invalidParams(undefined, `no sign-in "${params.methodId}": ${API_KEY.id}`);
      if (setup.keyMissing) throw acp.RequestError.authRequired(undefined, SIGN_IN);
      return {};
    })
    .onRequest(acp.methods.agent.session.new, async ({ params, client }) => {
      const root = await projectRoot(params.cwd);
      const servers = serversGiven(setup, params.mcpServers);
      const session = await openSession(setup, { client, root, sessionId: newSessionId(), notices, servers, files });
      sessions.set(session.id, session);
      offerCommands(session);
      return { sessionId: session.id, modes: modesOf(session), configOptions: configOptionsOf(session) };
    })
    .onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
      const { sessionId } = params;
      if (sessions.get(sessionId)?.running) throw acp.RequestError.invalidRequest(undefined, RUNNING);
      const root = await projectRoot(params.cwd);
      const file = sessionFile(root, sessionId);
      const loaded = await loadSession(file, root).catch((error: unknown) => {
        setup.log(`session/load ${sessionId}: ${errorText(error)}`);
        throw acp.RequestError.sessionNotFound(sessionId);
      });
      const changed = await protectedChangedSince(loaded, root, setup.options.protect);
      if (changed !== null) {
        setup.log(`session/load ${sessionId}: ${changed}`);
        throw acp.RequestError.invalidRequest(undefined, changed);
      }
      const servers = serversGiven(setup, params.mcpServers);
      const session = await openSession(setup, { client, root, sessionId, notices, servers, files }, loaded);
      const where = { root, tools: session.agent.config.tools };
      for (const update of replayUpdates(loaded.messages, await personsWords(file), where)) session.send(update);
      resume(session.agent, loaded);
      await sessions.get(sessionId)?.mcp?.close(); // the same session opened again: its servers start again
      sessions.set(sessionId, session);
      await session.sent; // the whole conversation, then the answer
      offerCommands(session);
      return { modes: modesOf(session), configOptions: configOptionsOf(session) };
    })
    .onRequest(acp.methods.agent.session.list, async ({ params }) => {
      const roots = params.cwd ? [await projectRoot(params.cwd)] : [...new Set([...sessions.values()].map(rootOf))];
      return await listSessions(roots, params.cursor ?? null);
    })
    .onRequest(acp.methods.agent.session.setMode, ({ params }) => {
      const session = sessionOf(params.sessionId);
      if (!MODES.some((mode) => mode.id === params.modeId))
        throw acp.RequestError.invalidParams(undefined, `no mode "${params.modeId}": ${MODE_IDS}`);
      session.mode = params.modeId as ModeId;
      return {};
    })
    .onRequest(acp.methods.agent.session.setConfigOption, async ({ params }) => {
      const session = sessionOf(params.sessionId);
      const option = configOptionsOf(session).find((offered) => offered.id === params.configId);
      if (option === undefined) {
        const ids = configOptionsOf(session).map((offered) => offered.id);
        throw acp.RequestError.invalidParams(undefined, `no option "${params.configId}": ${ids.join(', ')}`);
      }
      const offered = option.type === 'select' && option.options.some((o) => 'value' in o && o.value === params.value);
      if (!offered)
        throw acp.RequestError.invalidParams(undefined, `no ${option.id} "${String(params.value)}" is offered`);
      let name = session.model.name;
      if (option.id === MODEL_OPTION) name = String(params.value);
      else session.thinking = params.value === NO_THINKING ? undefined : Number(params.value);
      session.model.pick(await setup.modelNamed(name, session.thinking));
      return { configOptions: configOptionsOf(session) };
    })
    .onRequest(acp.methods.agent.session.prompt, async ({ params }) => {
      const session = sessionOf(params.sessionId);
      if (session.running) throw acp.RequestError.invalidRequest(undefined, RUNNING);
      if (setup.keyMissing) throw acp.RequestError.authRequired(undefined, SIGN_IN);
      const task = promptTask(params.prompt, session.agent.config.root);
      const stop = new AbortController();
      session.lastStop = null;
      session.refusedKey = null;
      const command = COMMANDS.find((offered) => typeof task === 'string' && task.trim() === `/${offered.name}`);
      const ended = command
        ? runCommandOf(session, command.name, stop.signal)
        : runGivenTask(session.agent, task, stop.signal, session.tell).then((halt) => {
            if (halt.kind === 'error' && session.refusedKey !== null)
              throw acp.RequestError.authRequired(undefined, `${session.refusedKey}; ${SIGN_IN}`);
            return stopReasonFor(halt, session.lastStop);
          });
      session.running = { stop, ended };
      try {
        // Every update of the turn goes before its answer, a refused key's included.
        return { stopReason: await ended.finally(() => session.sent) };
      } finally {
        session.running = null;
      }
    })
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
      const session = sessions.get(params.sessionId);
      if (session?.running) interrupt(session, session.running.stop);
    });
  const stopAll = async (signal?: EndingSignal) => {
    await stopRuns([...sessions.values()], signal);
    await Promise.allSettled([...sessions.values()].map((session) => session.mcp?.close()));
  };
  return { connection: app.connect(stream), stopAll };
}

/** The commands the editor offers as `/name`: the terminal's, through compactNow and contextBreakdown
 *  (compact-now.ts, context-breakdown.ts). */
const COMMANDS: acp.AvailableCommand[] = [
  { name: 'compact', description: 'summarise older messages now, if that makes what the model sees smaller' },
  { name: 'context', description: 'where the context window goes: system prompt, tools, AGENTS.md, messages, free' },
];

/** Tells the editor the commands, and how its MCP servers started, once the session is its (after the answer that
 *  opened it). */
function offerCommands(session: AcpSession): void {
  setImmediate(() => {
    session.send({ sessionUpdate: 'available_commands_update', availableCommands: COMMANDS });
    for (const { text, failed } of session.mcp?.said ?? []) session.notice(text, failed ? 'warning' : 'info');
  });
}

/** A command typed as the prompt: its answer is a message, and the turn ends `end_turn`, or `cancelled` when
 *  stopped. No task ran, so there is no halt to record. */
async function runCommandOf(session: AcpSession, name: string, signal: AbortSignal): Promise<acp.StopReason> {
  const say = (text: string) => session.send(agentText(text, `${name}-${randomBytes(3).toString('hex')}`));
  if (name === 'context') {
    const breakdown = contextBreakdown(session.agent);
    session.tell({ type: 'context', breakdown });
    const b = breakdown;
    const parts = `system ${b.systemPrompt} · tools ${b.toolDefinitions} · AGENTS.md ${b.projectFiles}`;
    say(`context window ${b.window} tokens (estimated): ${parts} · messages ${b.messages} · free ${b.free}`);
  } else {
    const declined = await compactNow(session.agent, signal);
    if (signal.aborted) return 'cancelled';
    say(declined === null ? '/compact: compacted' : `/compact: ${declined}`);
  }
  return 'end_turn';
}

/** How changes are approved in a session, as the editor's mode selector shows it. */
const MODES = [
  { id: 'ask', name: 'Ask', description: 'ask before each change' },
  { id: 'accept-edits', name: 'Accept edits', description: 'allow every change in this session' },
  { id: 'read-only', name: 'Read only', description: 'refuse every change; reading goes on' },
] as const satisfies acp.SessionMode[];
type ModeId = (typeof MODES)[number]['id'];
const MODE_IDS = MODES.map((mode) => mode.id).join(', ');
const modesOf = (session: AcpSession): acp.SessionModeState => ({
  currentModeId: session.mode,
  availableModes: [...MODES],
});

const rootOf = (session: AcpSession) => session.agent.config.root;

/** Sessions shown per page of session/list. */
const LISTED_PER_PAGE = 50;

/** The session files in the roots' session folders, newest first, each titled by its first task; the cursor is where
 *  the page starts. */
async function listSessions(roots: string[], cursor: string | null): Promise<acp.ListSessionsResponse> {
  const found: { sessionId: string; cwd: string; file: string; updated: number }[] = [];
  for (const root of roots) {
    const folder = path.join(root, '.agent', 'sessions');
    const names = await readdir(folder).catch(() => []);
    for (const name of names.filter((file) => file.endsWith('.jsonl'))) {
      const file = path.join(folder, name);
      const updated = await stat(file).then(
        (about) => about.mtimeMs,
        () => null,
      );
      if (updated !== null) found.push({ sessionId: name.slice(0, -'.jsonl'.length), cwd: root, file, updated });
    }
  }
  found.sort((a, b) => b.updated - a.updated);
  const start = cursor === null ? 0 : Number(cursor);
  if (!Number.isSafeInteger(start) || start < 0) throw acp.RequestError.invalidParams(undefined, 'not a cursor');
  const page = found.slice(start, start + LISTED_PER_PAGE);
  const sessions = await Promise.all(
    page.map(async ({ sessionId, cwd, file, updated }) => ({
      sessionId,
      cwd,
      updatedAt: new Date(updated).toISOString(),
      ...(await firstTask(file).then((title) => (title === null ? {} : { title }))),
    })),
  );
  const more = start + LISTED_PER_PAGE < found.length;
  return { sessions, ...(more && { nextCursor: String(start + LISTED_PER_PAGE) }) };
}

/** A session's first task, on one line and cut short, as its title; null if it has none, or cannot be read. */
async function firstTask(file: string): Promise<string | null> {
  try {
    for await (const { text } of sessionLines(file)) {
      const read = readEntry(text);
      if ('entry' in read && read.entry.type === 'task') return cut(read.entry.text.replace(/\s+/g, ' ').trim(), 80);
    }
  } catch {
    return null;
  }
  return null;
}

/** Stops a run as Ctrl-C does, and tells the session file so (and which signal, if one), once. */
function interrupt(session: AcpSession, stop: AbortController, signal?: EndingSignal): void {
  if (stop.signal.aborted) return;
  stop.abort();
  session.tell({ type: 'interrupt', ...(signal && { signal }) });
}

/** Prevents an editor that closes the connection mid-run, or a signal, from leaving a session file cut off in the
 *  middle of a call and the check running: each run is stopped as by session/cancel, and the program waits for its
 *  halt to be recorded. */
async function stopRuns(sessions: AcpSession[], signal?: EndingSignal): Promise<void> {
  const halts = sessions.flatMap((session) => {
    if (!session.running) return [];
    interrupt(session, session.running.stop, signal);
    return [session.running.ended];
  });
  await Promise.allSettled(halts);
}

const RUNNING = 'a prompt is already running in this session: wait for it, or cancel it';

/** The one way to sign in: the API key in the environment the editor starts the agent with. */
const API_KEY: acp.AuthMethod = {
  id: 'anthropic-api-key',
  name: 'Anthropic API key',
  description: 'ANTHROPIC_API_KEY in the environment the editor starts this agent with (its "env" setting)',
};
const SIGN_IN =
  'sign in by setting ANTHROPIC_API_KEY in the environment the editor starts this agent with (in Zed, the agent ' +
  'server\'s "env"), then restart the agent';

/** Whether a model call failed because the API refused the key: 401 (not signed in) or 403 (not allowed). */
const refusedKey = (error: unknown): boolean =>
  error instanceof Error && 'status' in error && (error.status === 401 || error.status === 403);

/** A session's model: the one the editor picked last (the `model` config option), its name and price read at each
 *  use, so the next request and its cost follow a pick. It prevents a refused key from ending the turn as a chat line
 *  nobody can act on: it tells the session when the API refuses the key, and the prompt is answered auth_required so
 *  the editor can ask for a sign-in. A sub-agent's model is watched the same way. */
class PickedModel implements Model {
  constructor(
    private current: Model,
    private readonly refused: (why: string) => void,
    /** False with no key: nothing is asked of the API until there is one. */
    private readonly askWindow: boolean,
  ) {}
  get name(): string {
    return this.current.name;
  }
  get price(): Price | undefined {
    return this.current.price;
  }
  pick(model: Model): void {
    this.current = model;
  }
  async complete(request: ModelRequest, options: ModelCallOptions): Promise<Anthropic.Message> {
    try {
      return await this.current.complete(request, options);
    } catch (error) {
      if (refusedKey(error)) this.refused(errorText(error));
      throw error;
    }
  }
  async contextWindow(): Promise<number | null> {
    return this.askWindow ? ((await this.current.contextWindow?.()) ?? null) : null;
  }
}

/** The config option that picks the model. */
const MODEL_OPTION = 'model';

/** The config option that sets the thinking budget, its value for none, and the budgets it offers (in tokens). */
const THINKING_OPTION = 'thinking';
const NO_THINKING = 'off';
const THINKING_BUDGETS = [4_096, 16_384, 32_000];

/** The session's config options: the model, among the current one and those the price table knows; its thinking
 *  budget, none or one of a few (and --thinking's). A scripted model does not think: it has no thinking option. */
function configOptionsOf(session: AcpSession): acp.SessionConfigOption[] {
  const current = session.model.name;
  const choices = [...new Set([current, ...PRICED_MODELS])];
  const budgets = [...new Set([...(session.thinking ? [session.thinking] : []), ...THINKING_BUDGETS])];
  const thinking: acp.SessionConfigOption = {
    id: THINKING_OPTION,
    name: 'Thinking',
    category: 'thought_level',
    type: 'select',
    currentValue: session.thinking === undefined ? NO_THINKING : String(session.thinking),
    options: [
      { value: NO_THINKING, name: 'Off' },
      ...budgets.sort((a, b) => a - b).map((budget) => ({ value: String(budget), name: `${budget} tokens` })),
    ],
  };
  return [
    {
      id: MODEL_OPTION,
      name: 'Model',
      category: 'model',
      type: 'select',
      currentValue: current,
      options: choices.map((value) => ({ value, name: value })),
    },
    ...(session.canThink ? [thinking] : []),
  ];
}

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;

/** The MCP servers a session starts: those --mcp lists, then the stdio and HTTP servers the editor gives (an SSE one,
 *  which initialize did not offer, is named on stderr and not used). Nothing a project's own files list starts. */
function serversGiven(setup: AcpSetup, given: acp.McpServer[]): McpServerSpec[] {
  const pairs = (list: { name: string; value: string }[]) => Object.fromEntries(list.map((p) => [p.name, p.value]));
  const used = given.flatMap((server): McpServerSpec[] => {
    if (!('type' in server) || server.type === undefined)
      return [{ name: server.name, command: server.command, args: server.args, env: pairs(server.env) }];
    if (server.type === 'http') return [{ name: server.name, url: server.url, headers: pairs(server.headers) }];
    setup.log(`MCP ${server.name}: an ${server.type} server, and this agent takes stdio and HTTP ones: not used`);
    return [];
  });
  return [...setup.mcpServers, ...used];
}

/** One editor session: a harness agent, its session file, and the updates sent to the editor. */
interface AcpSession {
  readonly id: string;
  readonly agent: Agent;
  /** Its model, as the editor picked it. */
  readonly model: PickedModel;
  /** The model's thinking budget in tokens, as --thinking or the editor set it; undefined: no thinking. */
  thinking: number | undefined;
  /** False for a scripted model, which has no budget to set. */
  readonly canThink: boolean;
  /** Its MCP servers, if it has any. */
  readonly mcp: McpServers | undefined;
  /** Tells the editor something it should know: a notice, or a line on stderr where it takes none. */
  readonly notice: (text: string, severity?: acp.NoticeSeverity) => void;
  /** The harness's events and the person's actions, told to the session file and the editor alike. */
  readonly tell: (event: SessionEvent) => void;
  /** Queues an update after those before it. */
  readonly send: (update: acp.SessionUpdate) => void;
  /** Every update queued so far, sent: a prompt is answered once they are out. */
  readonly sent: Promise<void>;
  /** The prompt turn in progress: what stops it (session/cancel), and how it will end. */
  running: { stop: AbortController; ended: Promise<acp.StopReason> } | null;
  /** How the model ended its last reply in this prompt turn. */
  lastStop: Anthropic.StopReason | null;
  /** How its changes are approved: asked, all allowed, or all refused. */
  mode: ModeId;
  /** What the API said when it refused the key in this prompt turn, if it did. */
  refusedKey: string | null;
}

/** What the editor is shown of one call in flight: the file it changes, and that file's text before (null: new). */
interface CallView {
  call: Anthropic.ToolUseBlock;
  file?: string;
  before?: string | null;
}

/** A harness agent for one editor session, recording to .agent/sessions/<id>.jsonl like the terminal's sessions
 *  (appending, for a loaded one), its events drawn as session updates and its approvals asked of the editor. */
async function openSession(
  setup: AcpSetup,
  given: {
    client: acp.AgentContext;
    root: string;
    sessionId: string;
    notices: boolean;
    servers: McpServerSpec[];
    files: EditorFiles;
  },
  loaded?: LoadedSession,
): Promise<AcpSession> {
  const { client, root, sessionId, notices, servers, files } = given;
  const calls = new Map<string, CallView>();
  let requests = 0; // model calls so far: each reply is a message of its own
  let sent = Promise.resolve();
  // An update, or what makes it once those before it are out (the latest of the check's output).
  const send = (update: acp.SessionUpdate | (() => acp.SessionUpdate)) => {
    sent = sent
      .then(() => {
        const made = typeof update === 'function' ? update() : update;
        return client.notify(acp.methods.client.session.update, { sessionId, update: made });
      })
      .catch((error: unknown) => setup.log(`${sessionId}: an update was not sent: ${errorText(error)}`));
  };
  const notice = (text: string, severity = 'warning') =>
    notices ? send({ sessionUpdate: 'notice', severity, title: text }) : setup.log(`${sessionId}: ${text}`);
  const view = (event: SessionEvent) => {
    if (event.type === 'request') requests++;
    if (event.type === 'reply') session.lastStop = event.stopReason;
    if (event.type === 'notice') notice(event.text);
    if (event.type === 'compaction')
      notice(`compacted: ~${event.tokensBefore} → ~${event.tokensAfter} tokens; the session file keeps it all`, 'info');
    const where = { root, tools: agent.config.tools, calls, window: agent.contextWindow, requests };
    for (const update of updatesFor(event, where)) send(update);
    showCheck(event);
    if (event.type === 'halt') endOfTurn(event);
  };
  // The halt as an update; in words only where the prompt's answer cannot say it (a dollar or time budget, an error),
  // as a notice, or a last message for an editor without notices. A refused key is said by auth_required.
  const endOfTurn = ({ halt, turns }: Extract<AgentEvent, { type: 'halt' }>) => {
    const said = `halt: ${describeHalt(halt)} after ${turns} turn(s)`;
    const _meta = { [HALT_META]: { ...halt, turns, said } };
    send({ sessionUpdate: 'session_info_update', updatedAt: new Date().toISOString(), _meta });
    if (session.refusedKey !== null || halt.kind === 'accepted' || stopReasonFor(halt, session.lastStop) !== 'end_turn')
      return;
    if (notices) send({ sessionUpdate: 'notice', severity: halt.kind === 'error' ? 'error' : 'warning', title: said });
    else send(agentText(`\n\n${said}\n\n`, `halt-${requests}`));
  };
  const showCheck = checkView(send);
  // The editor's answer about one call, recorded as the terminal records the person's, so a --replay gives it again.
  // A change too large to show is offered no "allow": nobody approves lines they were not shown.
  const askEditor = (seen: CallView): Approver =>
    recordAnswers(async ({ preview, signal }) => {
      const { toolCall, whole } = permissionCall(seen, { root, tools: agent.config.tools }, preview);
      const options = whole ? PERMISSION_OPTIONS : REJECTING;
      const { outcome } = await client.request(
        acp.methods.client.session.requestPermission,
        { sessionId, toolCall, options },
        { cancellationSignal: signal, stopWaitingOnCancel: true },
      );
      if (outcome.outcome === 'cancelled') return { approved: false, reason: 'the editor withdrew the question' };
      const offered = options.some((option) => option.optionId === outcome.optionId);
      const answer = offered ? ANSWERS[outcome.optionId] : undefined;
      const mode = offered ? MODE_AFTER[outcome.optionId] : undefined;
      if (mode !== undefined) {
        session.mode = mode;
        send({ sessionUpdate: 'current_mode_update', currentModeId: mode });
      }
      return answer ?? { approved: false, reason: `the editor answered "${outcome.optionId}"` };
    }, record);
  // The harness names the call each approval is about. Every change comes here, "always" and --yes included, so
  // that its file is read before it changes, for the diff the editor is shown after.
  const approve: Approver = async (request) => {
    const seen = { call: request.call, ...(await fileBefore(root, request.call)) };
    calls.set(request.call.id, seen);
    if (session.mode === 'read-only') return await recordAnswers(async () => READ_ONLY, record)(request);
    if (session.mode === 'accept-edits' && request.runsLater === null) return { approved: true };
    const answer = await askEditor(seen)(request);
    return answer.approved ? { approved: true } : answer;
  };
  const refused = (why: string) => (session.refusedKey = why);
  const askWindow = !setup.keyMissing;
  const model = new PickedModel(setup.model, refused, askWindow);
  const taskModel = setup.taskModel && new PickedModel(setup.taskModel, refused, askWindow);
  const mcp = servers.length === 0 ? undefined : await startMcpServers(servers, root);
  const made = { root, model, taskModel, approve, mcp };
  const tell = (event: SessionEvent) => {
    record(event);
    view(event);
  };
  const config = configFromCli(setup.options, made, tell);
  // An edit written to the disk is said in the session file first (one the editor writes is the editor's to keep).
  const disk = editorDisk(
    client,
    sessionId,
    files,
    intentRecorded(GUARDED.disk, (intent) => record.intend(intent)),
  );
  const agent = await createAgent({ ...config, hardening: { ...GUARDED, disk } }).catch(async (error: unknown) => {
    await mcp?.close();
    throw error;
  });
  const approval = setup.options.yes ? 'yes' : 'ask';
  const header = sessionHeader(agent, recordedOptions(setup.options, approval, agent));
  // Opened once, never through a link; a file replaced or changed under it is told, and no longer written.
  const file = openSessionFile(sessionFile(root, sessionId), loaded ? 'resume' : 'new', root);
  const record = sessionRecorder(file, loaded ? null : header, setup.secrets, (problem) => notice(problem));
  const session: AcpSession = {
    id: sessionId,
    agent,
    model,
    thinking: setup.options.thinking,
    canThink: setup.options.script === undefined,
    mcp,
    notice,
    tell,
    send,
    get sent() {
      return sent;
    },
    running: null,
    lastStop: null,
    mode: setup.options.yes ? 'accept-edits' : 'ask',
    refusedKey: null,
  };
  return session;
}

/** Where a session_info_update carries the halt that ended the turn: the halt, its turns, and it in words. */
export const HALT_META = 'reference-harness/halt';

const ALLOW = 'allow';
const ALLOW_ALWAYS = 'allow-always';
const REJECT = 'reject';
const REJECT_ALWAYS = 'reject-always';
const REJECTING: acp.PermissionOption[] = [
  { optionId: REJECT, name: 'Reject', kind: 'reject_once' },
  { optionId: REJECT_ALWAYS, name: 'Reject every change in this session', kind: 'reject_always' },
];
const PERMISSION_OPTIONS: acp.PermissionOption[] = [
  { optionId: ALLOW, name: 'Allow', kind: 'allow_once' },
  { optionId: ALLOW_ALWAYS, name: 'Allow every change in this session', kind: 'allow_always' },
  ...REJECTING,
];
/** The answer in read-only mode, recorded like the person's so a replay refuses the same call. */
const READ_ONLY: ApprovalAnswer = { approved: false, reason: 'the session is read-only: no change is allowed' };
const ANSWERS: Record<string, ApprovalAnswer> = {
  [ALLOW]: { approved: true },
  [ALLOW_ALWAYS]: { approved: true, always: true },
  [REJECT]: { approved: false },
  [REJECT_ALWAYS]: { approved: false, reason: 'the user refuses every change in this session' },
};
/** The mode an answer "for the rest of the session" switches to. */
const MODE_AFTER: Record<string, ModeId> = { [ALLOW_ALWAYS]: 'accept-edits', [REJECT_ALWAYS]: 'read-only' };

/** A session's id is its file's name: `session/load` of the same id continues the same file. */
const newSessionId = () => `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomBytes(3).toString('hex')}`;

/** Prevents a session id from naming a file outside the project's session folder: it is a file name, no more. */
export function sessionFile(root: string, sessionId: string): string {
  if (!/^[\w-][\w.-]*$/.test(sessionId))
    throw acp.RequestError.invalidParams(undefined, `"${sessionId}" is not a session id (a session file's name)`);
  return path.join(root, '.agent', 'sessions', `${sessionId}.jsonl`);
}

/** Prevents a session in a relative or missing folder: the protocol's cwd is an absolute path to the project. */
async function projectRoot(cwd: string): Promise<string> {
  const problem = (why: string) => acp.RequestError.invalidParams(undefined, `cwd ${cwd}: ${why}`);
  if (!path.isAbsolute(cwd)) throw problem('not an absolute path');
  const root = await realpath(cwd).catch(() => {
    throw problem('no such folder');
  });
  if (!(await stat(root)).isDirectory()) throw problem('not a folder');
  return root;
}

/** The person's prompt as the harness's task: text as written, a linked file as @ and its path in the project, an
 *  embedded one (an @-mention the editor sends with its text) as @ and its path, then its text in a fence marked as
 *  the editor's copy; an image as an image block, between the text before and after it. Audio was not offered at
 *  initialize, so a client sending it is told so. */
export function promptTask(blocks: acp.ContentBlock[], root: string): Task {
  const content: Exclude<Task, string> = [];
  let task = '';
  let linked = false; // the part before was a link
  const endText = () => {
    if (task.trim() !== '') content.push({ type: 'text', text: task });
    [task, linked] = ['', false];
  };
  for (const block of blocks) {
    if (block.type === 'audio')
      throw acp.RequestError.invalidParams(undefined, 'an audio block: this agent takes text, files and images');
    if (block.type === 'image') {
      endText();
      content.push(imageOf(block));
      continue;
    }
    const part =
      block.type === 'text'
        ? block.text
        : block.type === 'resource_link'
          ? `@${linkedPath(block.uri, root)}`
          : embedded(block.resource, root);
    // A file is a word of its own: spaced from a word it touches, not from punctuation.
    const touching = (linked || block.type !== 'text') && /\S$/.test(task) && /^[\w@]/.test(part);
    task += touching ? ` ${part}` : part;
    linked = block.type !== 'text';
  }
  if (content.length === 0 && task.trim() === '')
    throw acp.RequestError.invalidParams(undefined, 'the prompt has no text');
  if (content.length === 0) return task;
  endText();
  return content;
}

/** The types of image the model reads (the Messages API's list). */
const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;

/** Prevents a prompt the API refuses: an image of a type the model cannot read is refused here, by name. */
function imageOf(block: acp.ImageContent): Anthropic.ImageBlockParam {
  const type = IMAGE_TYPES.find((known) => known === block.mimeType);
  if (type === undefined) {
    const known = IMAGE_TYPES.join(', ');
    throw acp.RequestError.invalidParams(undefined, `an image of type ${block.mimeType}: the model reads ${known}`);
  }
  return { type: 'image', source: { type: 'base64', media_type: type, data: block.data } };
}

/** A file the editor sent with the prompt, as the model reads it: its path (and the part of it, as `#L10:20`, when the
 *  editor sent a selection), marked as the editor's copy (which may be unsaved, so the file on disk can differ), and
 *  its text fenced; a binary one only named. */
function embedded(resource: acp.EmbeddedResource['resource'], root: string): string {
  const part = URL.canParse(resource.uri) ? new URL(resource.uri).hash : '';
  const named = `@${linkedPath(resource.uri, root)}${resource.uri.startsWith('file:') ? part : ''}`;
  if (!('text' in resource)) return `${named} (a binary file the editor attached; its bytes are not shown)`;
  const copy = fenced(resource.text.replace(/\n$/, ''));
  return `${named} (the editor's copy, perhaps unsaved: the file on disk may differ):\n${copy}\n`;
}

/** A file link's path from the project root; a link elsewhere stays as it came. */
function linkedPath(uri: string, root: string): string {
  if (!uri.startsWith('file:')) return uri;
  const file = fileURLToPath(uri);
  const relative = path.relative(root, file);
  return relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
}

/** How the harness's halt ends the prompt turn. The protocol's reasons are fewer than the halts: a dollar or time
 *  budget has none (end_turn), and neither has an error, which is a halt like the others here (the transcript is
 *  whole and the session takes the next prompt), not a failed request; the halt's own words say which. An error
 *  halt after a reply the model ended as a refusal (`lastStop`, from the reply event) is `refusal`. */
export function stopReasonFor(halt: Halt, lastStop: Anthropic.StopReason | null = null): acp.StopReason {
  if (halt.kind === 'interrupted') return 'cancelled';
  if (halt.kind === 'error' && lastStop === 'refusal') return 'refusal';
  if (halt.kind === 'budget' && halt.budget === 'turns') return 'max_turn_requests';
  if (halt.kind === 'budget' && halt.budget === 'tokens') return 'max_tokens';
  return 'end_turn';
}

/** An argument of a call, by name, if it has one. */
const field = (input: unknown, name: string): unknown =>
  typeof input === 'object' && input !== null && name in input ? (input as Record<string, unknown>)[name] : undefined;

/** How the editor lists a call, as its tool says: a title (the call in words, as the terminal prints it), the tool's
 *  kind for its icon (other for a tool the session does not have), and the file the call names, to follow the agent
 *  there. */
function callView(
  call: Pick<Anthropic.ToolUseBlock, 'name' | 'input'>,
  where: { root: string; tools: Tools },
  by = '',
) {
  const requested = pathOf(call.input);
  const line = field(call.input, 'offset');
  const file = requested === undefined ? undefined : path.resolve(where.root, requested);
  return {
    title: `${by === '' ? '' : `[${by}] `}${describeCall(call.name, call.input, where.tools)}`,
    kind: where.tools.find((tool) => tool.name === call.name)?.kind ?? 'other',
    locations: file === undefined ? [] : [{ path: file, ...(typeof line === 'number' && { line }) }],
  };
}

/** The session's tools (its agent's, `task` included): what the editor's view of a call reads. */
type Tools = readonly Tool[];

/** The session updates one event becomes. A sub-agent's calls are shown too, under ids and titles of their own. */
function updatesFor(
  event: SessionEvent,
  where: { root: string; tools: Tools; calls: Map<string, CallView>; window: number; requests: number; by?: string },
): acp.SessionUpdate[] {
  const { calls, requests, by = '' } = where;
  const id = (call: Anthropic.ToolUseBlock) => `${by === '' ? '' : `${by}/`}${call.id}`;
  const shown = (call: Anthropic.ToolUseBlock) => ({ rawInput: call.input, ...callView(call, where, by) });
  switch (event.type) {
    case 'call':
      return [{ sessionUpdate: 'tool_call', toolCallId: id(event.call), status: 'pending', ...shown(event.call) }];
    case 'running':
      return [{ sessionUpdate: 'tool_call_update', toolCallId: id(event.call), status: 'in_progress' }];
    case 'result': {
      const seen = by === '' ? calls.get(event.call.id) : undefined;
      if (seen) calls.delete(event.call.id);
      const failed = event.result.is_error === true;
      const text = typeof event.result.content === 'string' ? cut(event.result.content, SHOWN_RESULT_CHARS) : '';
      const diff = failed || seen === undefined ? null : diffAfter(seen);
      const content = [...(diff ? diff.content : []), ...textContent(text)];
      const status = failed ? 'failed' : 'completed';
      const locations = diff ? { locations: atLine(callView(event.call, where).locations, diff.line) } : {};
      return [{ sessionUpdate: 'tool_call_update', toolCallId: id(event.call), status, content, ...locations }];
    }
    case 'subagent':
      return ['call', 'running', 'result'].includes(event.event.type)
        ? updatesFor(event.event, { ...where, by: event.id })
        : [];
    case 'text':
      return [agentText(event.delta, `reply-${requests}`)];
    case 'thinking':
      return [
        {
          sessionUpdate: 'agent_thought_chunk',
          messageId: `thought-${requests}`,
          content: { type: 'text', text: event.delta },
        },
      ];
    case 'gate':
      return [agentText(gateText(event), `gate-${requests}`)];
    case 'reply': {
      const { usage, totals } = event;
      const cached = (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
      const used = usage.input_tokens + cached + usage.output_tokens;
      const cost = totals.costUsd === null ? {} : { cost: { amount: totals.costUsd, currency: 'USD' } };
      return [{ sessionUpdate: 'usage_update', used, size: where.window, ...cost }];
    }
    default:
      return [];
  }
}

/** Characters of a result the editor is shown (the model reads all of it): a read of a large file stays a small
 *  message. */
const SHOWN_RESULT_CHARS = 8_000;

/** Chunks of one message share its id: each model reply, gate verdict and halt is a message of its own. */
const agentText = (text: string, messageId: string): acp.SessionUpdate => ({
  sessionUpdate: 'agent_message_chunk',
  messageId,
  content: { type: 'text', text },
});
const textContent = (text: string): acp.ToolCallContent[] =>
  text === '' ? [] : [{ type: 'content', content: { type: 'text', text } }];

/** Lines of a failing check's output the editor is shown: its end, where test runners say what failed. */
const GATE_TAIL_LINES = 20;

/** The gate's verdict as the editor shows it, as the terminal's line says it (a check run outside the sandbox marked
 *  so), and the end of the check's output when not done. */
function gateText(event: Extract<AgentEvent, { type: 'gate' }>): string {
  const said = `\`${event.command}\` ${event.reason}: ${event.passed ? 'pass' : 'not done'}${outsideSandbox(event)}`;
  const verdict = `\n\ngate: ${said}\n\n`;
  if (event.passed) return verdict;
  const tail = event.output.trimEnd().split('\n').slice(-GATE_TAIL_LINES).join('\n');
  return `${verdict}${fenced(tail === '' ? '(no output)' : tail)}\n\n`;
}

/** Prevents a long check from leaving the editor with nothing to show: the verify command is a tool call of kind
 *  execute with the command as its title, opened when the harness starts the check (gate-start), its output streamed as
 *  content while it runs (the latest 8,000 characters, coalesced while the editor catches up), and completed or failed
 *  with the gate's verdict, or failed by a halt that came first (a cancel, which kills the check). */
function checkView(send: (update: () => acp.SessionUpdate) => void) {
  let open: { id: string; output: string; queued: boolean } | null = null;
  let checks = 0;
  return (event: SessionEvent) => {
    if (event.type === 'gate-start') {
      const toolCallId = `check-${++checks}`;
      open = { id: toolCallId, output: '', queued: false };
      const rawInput = { command: event.command };
      send(() => ({
        sessionUpdate: 'tool_call',
        toolCallId,
        title: event.command,
        kind: 'execute',
        status: 'in_progress',
        rawInput,
      }));
    } else if (event.type === 'gate-output' && open !== null) {
      const shown = open;
      shown.output = (shown.output + event.text).slice(-SHOWN_RESULT_CHARS);
      if (shown.queued) return;
      shown.queued = true;
      send(() => {
        shown.queued = false;
        return { sessionUpdate: 'tool_call_update', toolCallId: shown.id, content: textContent(shown.output) };
      });
    } else if ((event.type === 'gate' || event.type === 'halt') && open !== null) {
      const { id: toolCallId, output } = open;
      open = null;
      const passed = event.type === 'gate' && event.passed;
      const said = event.type === 'gate' ? event.output.slice(-SHOWN_RESULT_CHARS) : output;
      const verdict =
        event.type === 'gate'
          ? `${event.reason}: ${passed ? 'pass' : 'not done'}${outsideSandbox(event)}`
          : `stopped: ${describeHalt(event.halt)}`;
      const content = textContent(`${said.trimEnd()}${said.trim() === '' ? '' : '\n\n'}${verdict}`);
      const status = passed ? 'completed' : 'failed';
      send(() => ({ sessionUpdate: 'tool_call_update', toolCallId, status, content }));
    }
  };
}

/** Text as a Markdown code block whose fence no run of backticks inside it can close. */
function fenced(text: string): string {
  const fence = '`'.repeat(Math.max(2, ...[...text.matchAll(/`+/g)].map((run) => run[0].length)) + 1);
  return `${fence}\n${text}\n${fence}`;
}

/** A call's `path` argument, if it has one. */
const pathOf = (input: unknown) => {
  const given = field(input, 'path');
  return typeof given === 'string' ? given : undefined;
};

/** The file a call that changes something names, and its text now (null: it does not exist yet); nothing for a call
 *  without a path, or one whose file cannot be read as text. */
async function fileBefore(root: string, call: Anthropic.ToolUseBlock): Promise<Pick<CallView, 'file' | 'before'>> {
  const requested = pathOf(call.input);
  if (requested === undefined) return {};
  const file = await safe_path(root, requested).catch(() => undefined);
  if (file === undefined) return {};
  const before = await readFile(file, 'utf8').then(
    (text): string | null | undefined => text,
    (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? null : undefined),
  );
  return before === undefined ? {} : { file, before };
}

/** What a call changed, as hunks: the file before it ran and now (read at once, as the result comes). */
function diffAfter(seen: CallView): Hunks | null {
  if (seen.file === undefined || seen.before === undefined) return null;
  try {
    return hunks(seen.file, seen.before, readFileSync(seen.file, 'utf8'));
  } catch {
    return null;
  }
}

/** A change as the editor is shown it, and the line of the file it starts at; `whole` false when it was too large to
 *  show, and only said so. */
interface Hunks {
  content: acp.ToolCallContent[];
  line: number;
  whole: boolean;
}

/** Lines of context around each change, as in a unified diff. */
const DIFF_CONTEXT_LINES = 3;
/** Characters of one change the editor is shown at most, its hunks' texts before and after together: a message stays
 *  under a client's 64 KiB line limit once escaped as JSON (a 107 KB file once made larger ones). */
const SHOWN_CHANGE_CHARS = 20_000;

/** Prevents a one-line edit to a large file from sending the whole file twice, and a long change from being shown in
 *  part: the change goes as all of its hunks with a few lines of context, each a diff of its own, or, past
 *  SHOWN_CHANGE_CHARS, as a note that it is too large to show. */
export function hunks(file: string, before: string | null, after: string): Hunks {
  const found =
    before === null ? [] : structuredPatch(file, file, before, after, '', '', { context: DIFF_CONTEXT_LINES }).hunks;
  const side = (lines: string[], drop: string) =>
    lines
      .filter((l) => l[0] !== drop && l[0] !== '\\')
      .map((l) => `${l.slice(1)}\n`)
      .join('');
  const diffs: acp.Diff[] =
    before === null
      ? [{ path: file, oldText: null, newText: after }]
      : found.map(({ lines }) => ({ path: file, oldText: side(lines, '+'), newText: side(lines, '-') }));
  const first = found[0];
  const changedAt = first ? first.lines.findIndex((l) => l[0] === '-' || l[0] === '+') : 0;
  const line = first ? first.newStart + first.lines.slice(0, changedAt).filter((l) => l[0] === ' ').length : 1;
  return shownWhole(diffs, line);
}

/** Diffs as the editor's content, or, past SHOWN_CHANGE_CHARS, a note saying how large the change is instead. */
function shownWhole(diffs: acp.Diff[], line: number): Hunks {
  const chars = diffs.reduce((sum, diff) => sum + (diff.oldText?.length ?? 0) + diff.newText.length, 0);
  if (chars <= SHOWN_CHANGE_CHARS)
    return { content: diffs.map((diff) => ({ type: 'diff', ...diff })), line, whole: true };
  return { content: textContent(tooLargeToShow(chars, diffs.length)), line, whole: false };
}

const tooLargeToShow = (chars: number, parts?: number) =>
  `this change is too large to show here (${chars} characters${parts === undefined ? '' : ` in ${parts} hunk(s)`})`;
/** Said of a change too large to show, where "allow" would be asked for. */
const UNSEEN =
  'so it cannot be allowed unseen: reject it and ask for smaller edits, or choose the "Accept edits" mode to ' +
  'allow changes without seeing them';

/** A text cut to `chars`, saying how much was left out. */
const cut = (text: string, chars: number) =>
  text.length <= chars ? text : `${text.slice(0, chars)}\n… (${text.length - chars} more characters)\n`;

/** The call an approval is about, with what it would change: for a call that replaces a snippet (an `old_str` and a
 *  `new_str`, as edit_file's) the hunks worked out from its arguments and the file, with the line they start at;
 *  otherwise (or if the snippet is not found once, as written) the tool's own preview. `whole` is false when the
 *  change was too large to show. */
function permissionCall(
  seen: CallView,
  where: { root: string; tools: Tools },
  preview: string,
): { toolCall: acp.ToolCallUpdate; whole: boolean } {
  const { call } = seen;
  const planned = plannedDiff(seen);
  const shown = callView(call, where);
  const previewed =
    preview.length <= SHOWN_CHANGE_CHARS
      ? { content: textContent(preview), whole: true }
      : { content: textContent(tooLargeToShow(preview.length)), whole: false };
  const { whole, ...change } = planned ?? previewed;
  const content = whole ? change.content : [...change.content, ...textContent(UNSEEN)];
  const locations = planned ? atLine(shown.locations, planned.line) : shown.locations;
  return {
    toolCall: { toolCallId: call.id, status: 'pending', rawInput: call.input, ...shown, locations, content },
    whole,
  };
}

/** A call's locations, its file's at `line`. */
const atLine = (locations: acp.ToolCallLocation[], line: number) => locations.map((at) => ({ ...at, line }));

/** The hunks a call that replaces a snippet would make, worked out as edit_file would (its snippet found once), or
 *  null where it cannot be: then the tool's preview is shown instead. */
function plannedDiff({ call, file, before }: CallView): Hunks | null {
  const [oldStr, newStr] = [field(call.input, 'old_str'), field(call.input, 'new_str')];
  if (file === undefined || before === undefined || typeof oldStr !== 'string' || typeof newStr !== 'string')
    return null;
  if (oldStr === '') return before === null ? hunks(file, null, newStr) : null;
  if (before === null) return null;
  const at = before.indexOf(oldStr);
  if (at < 0 || before.indexOf(oldStr, at + 1) >= 0) return null;
  return hunks(file, before, before.slice(0, at) + newStr + before.slice(at + oldStr.length));
}

/** What a recorded call that replaced a snippet (an `old_str` and a `new_str`, as edit_file's) changed, as the
 *  snippet before and after: the file as it was then is not kept, so no lines around it. Null for any other call. */
function snippetDiff(call: Pick<Anthropic.ToolUseBlock, 'input'>, root: string): Hunks | null {
  const [requested, oldStr, newStr] = ['path', 'old_str', 'new_str'].map((name) => field(call.input, name));
  if (typeof requested !== 'string' || typeof oldStr !== 'string' || typeof newStr !== 'string') return null;
  const file = path.resolve(root, requested);
  return shownWhole([{ path: file, oldText: oldStr === '' ? null : oldStr, newText: newStr }], 1);
}

/** The texts the person typed (tasks, and what steered a run), from a session file: in a replay they are the user's
 *  messages, and the other user-role texts (the gate's "not done yet", say) are the harness's. */
async function personsWords(file: string): Promise<Set<string>> {
  const words = new Set<string>();
  for await (const { text } of sessionLines(file)) {
    const read = readEntry(text);
    if (!('entry' in read) || (read.entry.type !== 'task' && read.entry.type !== 'steer')) continue;
    words.add(read.entry.text);
    // A task with images is its blocks: each text between them is the person's too.
    for (const block of read.entry.type === 'task' ? (read.entry.content ?? []) : [])
      if (block.type === 'text') words.add(block.text);
  }
  return words;
}

/** A loaded session's transcript as the updates that would have shown it: what the person said, the agent's text
 *  and thinking, each call and its result, a change that was made with its diff. */
export function replayUpdates(
  messages: readonly Anthropic.MessageParam[],
  persons: Set<string>,
  where: { root: string; tools: Tools },
): acp.SessionUpdate[] {
  const updates: acp.SessionUpdate[] = [];
  const calls = new Map<string, Anthropic.ToolUseBlockParam>();
  for (const [index, { role, content }] of messages.entries()) {
    const messageId = `replay-${index}`;
    for (const block of typeof content === 'string' ? [{ type: 'text' as const, text: content }] : content) {
      if (block.type === 'text') {
        const said = role === 'user' && persons.has(block.text);
        const chunk = { messageId, content: { type: 'text' as const, text: block.text } };
        updates.push(said ? { sessionUpdate: 'user_message_chunk', ...chunk } : agentText(block.text, messageId));
      } else if (block.type === 'image' && role === 'user' && block.source.type === 'base64') {
        const image = { type: 'image' as const, data: block.source.data, mimeType: block.source.media_type };
        updates.push({ sessionUpdate: 'user_message_chunk', messageId, content: image }); // only a person sends one
      } else if (block.type === 'thinking') {
        const thought = { type: 'text' as const, text: block.thinking };
        updates.push({ sessionUpdate: 'agent_thought_chunk', messageId, content: thought });
      } else if (block.type === 'tool_use') {
        calls.set(block.id, block);
        updates.push({
          sessionUpdate: 'tool_call',
          toolCallId: block.id,
          status: 'pending',
          ...callView(block, where),
        });
      } else if (block.type === 'tool_result') {
        const text = typeof block.content === 'string' ? block.content : '';
        const status = block.is_error ? 'failed' : 'completed';
        const call = calls.get(block.tool_use_id);
        const made = block.is_error || call === undefined ? null : snippetDiff(call, where.root);
        updates.push({
          sessionUpdate: 'tool_call_update',
          toolCallId: block.tool_use_id,
          status,
          content: [...(made ? made.content : []), ...textContent(text)],
        });
      }
    }
  }
  return updates;
}

/** Which of the editor's file methods (fs/read_text_file, fs/write_text_file) it offered at initialize. */
interface EditorFiles {
  read: boolean;
  write: boolean;
}

/** The tools' disk seen through the editor: a file is read from its buffer (unsaved changes too), and
 *  an edit written through it, so the editor tracks the change; listing and fingerprints stay on the
 *  disk. safe_path, protected names, read-before-edit and approval apply as they do on disk: the tools
 *  call them before the disk. An edit is a compare-and-swap against the buffer as it is now. */
function editorDisk(client: acp.AgentContext, sessionId: string, files: EditorFiles, disk: Disk): Disk {
  const buffer = async (file: string) => {
    const { content } = await client.request(acp.methods.client.fs.readTextFile, { sessionId, path: file });
    return Buffer.from(content);
  };
  return {
    ...disk,
    read: files.read ? async (file, offset) => fileLines(await buffer(file), offset) : disk.read,
    write: !files.write
      ? disk.write
      : async (file, content, before, ctx) => {
          const current = files.read ? await buffer(file).catch(() => null) : await readFile(file).catch(() => null);
          if (current?.toString('utf8') !== (before ?? undefined)) throw changedOnDisk(file, current, ctx);
          await client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: file, content });
        },
  };
}
