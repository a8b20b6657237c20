// The terminal: the status line, the printers (plain, --trace, --json), the approval prompt and the REPL. They draw
// the harness's events and pass the person's actions in through its API: steer, the abort signal, the approver.

import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { clearScreenDown, cursorTo, moveCursor } from 'node:readline';
import { createInterface, type Interface } from 'node:readline/promises';
import { styleText } from 'node:util';
import {
  type Agent,
  type AgentEvent,
  type ApprovalAnswer,
  type Approver,
  compact,
  compactedView,
  describeHalt,
  errorText,
  estimateMessages,
  estimateTokens,
  type Halt,
  runTask,
  steer,
  textOfMessage,
} from '../agent.ts';

/** What the person did, which the harness never sees as an event: the program tells the session file, so a replay can
 *  do the same at the same point. */
export type ProgramEvent =
  | { type: 'task'; text: string }
  | { type: 'approval'; tool: string; preview: string; answer: ApprovalAnswer }
  | { type: 'steer'; text: string }
  | { type: 'interrupt' }
  /** The program's own report of where the window goes (/context, and at start); never recorded. */
  | { type: 'context'; breakdown: ContextBreakdown };

/** What the session file and the printers are told: the harness's events and the person's. */
export type SessionEvent = AgentEvent | ProgramEvent;

/** Exit codes: what a shell or CI reads of a run's halt. */
export const EXIT = { accepted: 0, notAccepted: 1, usage: 2, interrupted: 130 } as const;

export function exitCodeFor(h: Halt): number {
  if (h.kind === 'accepted') return EXIT.accepted;
  if (h.kind === 'interrupted') return EXIT.interrupted;
  return EXIT.notAccepted;
}

/** Where the printers write: stdout, or any stream (a test's). Colour only on a terminal. */
export type Output = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

const colour = (format: Parameters<typeof styleText>[0], text: string, out: Output) =>
  out.isTTY && !process.env.NO_COLOR ? styleText(format, text) : text;

/** Empties the line being typed, through readline (Ctrl-E, Ctrl-U), so it redraws what it knows it drew. */
function clearInput(rl: Interface): void {
  rl.write('', { ctrl: true, name: 'e' });
  rl.write('', { ctrl: true, name: 'u' });
}

const SPINNER = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';
const TICK_MS = 250;
/** Shorter waits show nothing, so a fast call does not flicker. */
const QUIET_MS = 400;

/** The bottom of a terminal while a run works: what the agent waits for and for how long, redrawn four times a
 *  second; and once the user types, their line below it. Everything printed goes above both. With the REPL's
 *  readline the two are readline's prompt, so readline, which echoes what is typed, always knows where they are.
 *  Nothing of it reaches piped output. */
export class StatusLine {
  /** A run is under way: what the user types steers it, on a line of its own. */
  private active = false;
  private waitingFor: string | null = null;
  private since = 0;
  private lastOutput = 0;
  private timer: NodeJS.Timeout | undefined;
  private shown = false;
  private typing = false;
  private held = false;
  private midLine = false;
  /** Model text held back while the user types, so the line being typed stays whole: printed line by line. */
  private heldText = '';
  /** Rows readline still thinks its prompt spans after hide(); written as blank lines before it draws again. */
  private pad = 0;

  private readonly rl: Interface | undefined;

  /** `terminal`: the REPL's readline and the keyboard it reads, when there is one. */
  constructor(
    private readonly out: Output,
    terminal?: { rl: Interface; input: NodeJS.ReadableStream },
  ) {
    this.rl = terminal?.rl;
    // Before readline sees the key: a first character opens the input line, Enter closes it into the scrollback.
    terminal?.input.prependListener('keypress', (typed: string | undefined, key: { name?: string; ctrl?: boolean }) => {
      if (!this.active || this.held) return;
      if (key.name === 'return' || key.name === 'enter') {
        if (this.typing || this.shown) this.redraw(terminal.rl.line === '' ? '' : '» ');
        [this.typing, this.shown, this.midLine] = [false, false, false]; // readline ends the line
      } else if (!this.typing && !key.ctrl && /^[^\x00-\x1f\x7f]+$/.test(typed ?? '')) {
        this.typing = true;
        this.show();
      }
    });
  }

  private get enabled(): boolean {
    return this.out.isTTY === true;
  }

  /** What the agent now waits for (null: nothing worth showing); the clock restarts with each new wait. */
  wait(what: string | null): void {
    if (what !== this.waitingFor) this.since = Date.now();
    this.waitingFor = what;
    this.active = true;
    if (what !== null && this.timer === undefined && this.enabled) {
      // unref: the status line must never be what keeps the process alive after a halt.
      this.timer = setInterval(() => this.tick(), TICK_MS).unref();
    }
    if (what === null && this.shown && this.typing) this.show();
    else if (what === null && this.shown) this.hide();
  }

  /** The run is over: the status line goes, and what the user was typing waits at the next prompt. */
  done(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.waitingFor = null;
    [this.active, this.typing] = [false, false];
    if (this.shown) this.hide();
    this.flushHeld();
  }

  /** Whole lines, above the status line. */
  line(text: string): void {
    if (this.shown) this.hide();
    this.flushHeld();
    if (this.midLine) this.out.write('\n');
    this.out.write(`${text}\n`);
    this.midLine = false;
    this.lastOutput = Date.now();
    if (this.typing) this.show();
  }

  /** Text as it streams; held back line by line while the user types. */
  text(delta: string): void {
    if (this.typing) {
      this.heldText += delta;
      const end = this.heldText.lastIndexOf('\n');
      if (end >= 0) {
        const whole = this.heldText.slice(0, end);
        this.heldText = this.heldText.slice(end + 1);
        this.line(whole);
      }
      return;
    }
    if (this.shown) this.hide();
    this.flushHeld();
    this.out.write(delta);
    this.midLine = !delta.endsWith('\n');
    this.lastOutput = Date.now();
  }

  /** What was held back while the user typed, once they no longer do. */
  private flushHeld(): void {
    if (this.typing || this.heldText === '') return;
    this.out.write(this.heldText);
    this.midLine = true;
    this.heldText = '';
  }

  /** A question at the terminal (an approval), with no status line in the way; readline's own if there is one. */
  async ask(query: string, signal: AbortSignal): Promise<string> {
    // A line half typed to steer is put aside, or it would become the start of the answer.
    const typed = this.rl && this.typing && this.shown ? this.rl.line : '';
    if (typed !== '' && this.rl) clearInput(this.rl);
    this.held = true;
    if (this.shown) this.hide();
    if (this.midLine) this.line('');
    const rl = this.rl ?? createInterface({ input: process.stdin, output: process.stdout, terminal: true });
    // A lone question's readline holds the terminal raw, where Ctrl-C is a key: pass it on as the signal it means.
    if (!this.rl) rl.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
    try {
      this.out.write('\n'.repeat(this.pad));
      this.pad = 0;
      return await rl.question(query, { signal });
    } catch (error) {
      this.out.write('\n'); // a question cut short by Ctrl-C leaves the cursor on its line
      throw error;
    } finally {
      if (!this.rl) rl.close();
      this.held = false;
      this.lastOutput = Date.now();
      if (typed !== '') {
        this.show();
        this.rl?.write(typed);
      }
    }
  }

  /** The REPL's prompt, drawn where readline expects it. */
  prompt(text: string): void {
    this.redraw(text);
  }

  private tick(): void {
    if (this.held || this.waitingFor === null || !this.active) return;
    if (this.shown || Date.now() - this.lastOutput >= QUIET_MS) this.show();
  }

  /** The status line, then (while the user types) their line. */
  private show(): void {
    if (!this.enabled) return;
    if (this.midLine) {
      this.out.write('\n');
      this.midLine = false;
    }
    const seconds = Math.floor((Date.now() - this.since) / 1000);
    const frame = SPINNER[Math.floor(Date.now() / TICK_MS) % SPINNER.length];
    const width = Math.max((this.out.columns ?? 80) - 1, 20);
    const status = this.waitingFor === null ? '' : `  ${frame} ${this.waitingFor} · ${seconds} s`.slice(0, width);
    const painted = colour('dim', status, this.out);
    if (!this.rl) {
      this.out.write(`\r\x1b[K${painted}`);
    } else {
      this.redraw(this.typing ? `${status === '' ? '' : `${painted}\n`}» ` : painted);
    }
    this.shown = true;
  }

  /** Draws `prompt` and the typed line through readline, first giving back the rows hide() took from under it. */
  private redraw(prompt: string): void {
    if (!this.rl) return;
    this.out.write('\n'.repeat(this.pad));
    this.pad = 0;
    this.rl.setPrompt(prompt);
    this.rl.prompt(true);
  }

  private hide(): void {
    if (this.rl) {
      const rows = this.rl.getCursorPos().rows;
      moveCursor(this.out, 0, -rows);
      cursorTo(this.out, 0);
      clearScreenDown(this.out);
      this.pad = rows;
    } else {
      this.out.write('\r\x1b[K');
    }
    this.shown = false;
  }
}

/** The terminal view of the event stream: streamed text, one line per call and what came of it, a status line
 *  while the agent waits (model, tools, the verify command), and a footer per turn with tokens and cost. */
export function terminalPrinter(
  out: Output = process.stdout,
  { screen = new StatusLine(out), verify }: { screen?: StatusLine; verify?: string } = {},
): (event: SessionEvent) => void {
  const line = (format: Parameters<typeof styleText>[0], text: string) => screen.line(colour(format, text, out));
  const running = new Map<string, string>();
  return (event) => {
    switch (event.type) {
      case 'request':
        screen.wait('waiting for the model');
        return;
      case 'text':
        return screen.text(event.delta);
      case 'reply': {
        const { input, cacheRead, cacheWrite, output, costUsd } = event.totals;
        const allInput = input + cacheRead + cacheWrite;
        const cached = allInput > 0 ? Math.round((100 * cacheRead) / allInput) : 0;
        const cost = costUsd === null ? 'cost unknown' : `$${costUsd.toFixed(4)}`;
        if (event.stopReason === 'max_tokens') {
          const calls = event.calls === 0 ? '' : `; its ${event.calls} call(s) will not run`;
          line('yellow', `  (the reply was cut off at the output limit${calls}: the model is asked to go on)`);
        }
        line('dim', `  [turn ${event.turn} · in ${allInput} (${cached}% cached) · out ${output} · ${cost} so far]`);
        const judged = event.calls === 0 && !['max_tokens', 'pause_turn'].includes(event.stopReason ?? '');
        return screen.wait(judged ? (verify === undefined ? 'checking "done"' : `checking "done": ${verify}`) : null);
      }
      case 'call':
        screen.wait(null); // the hooks decide, and approval may ask
        return line('cyan', `→ ${event.call.name} ${summarize(event.call.input)}`);
      case 'running': {
        running.set(event.call.id, event.call.name);
        const names = [...running.values()];
        return screen.wait(names.length === 1 ? `${names[0]} running` : `${names.length} calls running`);
      }
      case 'decision':
        if (event.decision.action === 'deny') return;
        return line('dim', `  ${event.hook}: ${event.decision.action}`);
      case 'result': {
        const content = typeof event.result.content === 'string' ? event.result.content : '';
        if (running.delete(event.call.id) && running.size === 0) screen.wait('preparing the next request');
        if (event.result.is_error) return line('red', `  ✗ ${content.split('\n')[0]}`);
        // A one-line result is a tool's own summary ("edited add.js: replaced 1 line(s) at line 2 …"); of a longer
        // one (what was read), its size and how it starts.
        const lines = content.split('\n').length;
        const first = summarizeText(content.split('\n')[0]!);
        return line('dim', `  ✓ ${lines === 1 ? first : `${lines} lines: ${first}`}`);
      }
      case 'gate':
        screen.wait(event.passed ? null : 'preparing the next request');
        return line(
          event.passed ? 'green' : 'yellow',
          `gate: \`${event.command}\` ${event.reason}: ${event.passed ? 'pass' : 'not done'}${outsideSandbox(event)}`,
        );
      case 'notice':
        return line('yellow', event.text);
      case 'compaction':
        return line(
          'yellow',
          `compacted: ~${event.tokensBefore} → ~${event.tokensAfter} tokens; messages before ` +
            `#${event.keptFrom} are now a summary (still in the session file)`,
        );
      case 'context': {
        const b = event.breakdown;
        const parts =
          `system ${b.systemPrompt} · tools ${b.toolDefinitions} · AGENTS.md ${b.projectFiles} · ` +
          `messages ${b.messages} · free ${b.free}`;
        return line('dim', `context window ${b.window} tokens: ${parts}`);
      }
      case 'subagent':
        if (event.event.type === 'call')
          line('dim', `  [${event.id}] → ${event.event.call.name} ${summarize(event.event.call.input)}`);
        return;
      case 'halt':
        running.clear();
        screen.done();
        return line(
          event.halt.kind === 'accepted' ? 'green' : 'red',
          `halt: ${describeHalt(event.halt)} after ${event.turns} turn(s)`,
        );
      default:
        return;
    }
  };
}

/** --trace: each step tagged with the part of the loop doing it (seed 002's table), one line a part. A turn opens
 *  with its prompt (or the compaction before it), after the previous turn's halt check; each task after the first
 *  gets a heading, since turns count from 1 again. */
export function tracePrinter(out: NodeJS.WritableStream = process.stdout, prefix = ''): (event: SessionEvent) => void {
  let [task, turn, running, replied] = [0, 0, false, false];
  let text = '';
  /** What the API counted for the last request and its reply: the exact part of the next estimate. */
  let counted: number | null = null;
  const ran = new Set<string>();
  const decided = new Set<string>();
  const children = new Map<string, (event: AgentEvent) => void>();
  const say = (part: string, what: string) => out.write(`${prefix}[${turn}] ${part.padEnd(14)} ${what}\n`);
  /** The previous turn passed its halt check, since the loop goes round again. */
  const nextTurn = () => {
    if (!replied) return;
    say('halt check', 'no halt: go round again');
    [turn, replied] = [turn + 1, false];
  };
  return (event) => {
    switch (event.type) {
      case 'request': {
        nextTurn();
        turn = event.turn;
        say('state', `the model will see ${event.messages} message(s) of the transcript`);
        const exact = counted !== null && event.estimatedTokens >= counted;
        const how = exact ? `${counted} counted last turn + ~${event.estimatedTokens - counted!} new` : 'by characters';
        const what = `system prompt + tools + ${event.messages} message(s)`;
        return say('prompt builder', `sends ${what}: ~${event.estimatedTokens} tokens (${how})`);
      }
      case 'text':
        text += event.delta;
        return;
      case 'reply': {
        const said = text.trim() === '' ? '' : ` "${summarizeText(text)}"`;
        const { usage } = event;
        text = '';
        replied = true;
        counted = usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
        counted += usage.output_tokens;
        say(
          'model',
          `replied${said} (stop: ${event.stopReason}, ${usage.input_tokens} in / ${usage.output_tokens} out)`,
        );
        if (event.stopReason === 'max_tokens')
          say(
            'readout',
            event.calls === 0
              ? 'cut off at max_tokens: not a claim of "done"'
              : `cut off at max_tokens: ${event.calls} call(s) will not run`,
          );
        else
          say('readout', event.calls === 0 ? 'no tool calls: a claim of "done"' : `${event.calls} tool call(s) parsed`);
        return say('fold back', "appended the model's reply, as received");
      }
      case 'decision': {
        const { decision } = event;
        decided.add(event.call.id);
        const why = decision.action === 'deny' ? `refused: ${firstLine(decision.reason)}` : decision.action;
        return say(event.hook === 'validate' ? 'readout' : 'gate', `${event.call.name}: ${event.hook} ${why}`);
      }
      case 'running':
        ran.add(event.call.id);
        return say('gate', `${event.call.name} ${summarize(event.call.input)}: allowed`);
      case 'result': {
        const content = typeof event.result.content === 'string' ? event.result.content : '';
        if (!ran.has(event.call.id)) {
          // Refusals by a hook were told already, and a cut-off reply's calls by the readout.
          if (!decided.has(event.call.id) && !content.startsWith('not executed'))
            say('gate', `${event.call.name}: ${firstLine(content)}`);
          return;
        }
        return say(
          'environment',
          `${event.call.name} ${event.result.is_error ? 'failed' : 'ran'}: ${firstLine(content)}`,
        );
      }
      case 'message': {
        if (event.message.role === 'assistant') return; // told with the reply, after what the model said
        const blocks = typeof event.message.content === 'string' ? [] : event.message.content;
        const results = blocks.filter((b) => b.type === 'tool_result').length;
        const said = summarizeText(textOfMessage(event.message));
        if (results > 0)
          return say('fold back', `appended ${results} tool result(s) in call order${said ? `, then "${said}"` : ''}`);
        if (running) return say('fold back', `appended a user message: "${said}"`);
        // A user message while no task runs is the next task.
        [task, turn, running, replied] = [task + 1, 0, true, false];
        if (task > 1)
          out.write(`${prefix}\n${prefix}--- task ${task}: the transcript carries on, and turns count from 1\n`);
        return say('state', `appended a user message: "${said}"`);
      }
      case 'gate': {
        const verdict = event.passed ? 'passed' : 'not done, go on';
        return say('halt check', `verify \`${event.command}\` ${event.reason}: ${verdict}${outsideSandbox(event)}`);
      }
      case 'compaction':
        nextTurn();
        counted = null;
        return say(
          'prompt builder',
          `${running ? '' : '/compact: '}compacted the messages, ~${event.tokensBefore} → ~${event.tokensAfter} ` +
            `tokens by characters: a summary, then messages from #${event.keptFrom}`,
        );
      case 'context': {
        const b = event.breakdown;
        const parts =
          `system ${b.systemPrompt} · tools ${b.toolDefinitions} · AGENTS.md ${b.projectFiles} · ` +
          `messages ${b.messages} · free ${b.free}`;
        return say('prompt builder', `context window ${b.window} tokens (estimated): ${parts}`);
      }
      case 'notice':
        return say('note', event.text);
      case 'subagent': {
        let child = children.get(event.id);
        if (child === undefined) children.set(event.id, (child = tracePrinter(out, `${prefix}    ${event.id} `)));
        return child(event.event);
      }
      case 'halt':
        [running, replied] = [false, false];
        return say('halt check', `HALT: ${describeHalt(event.halt)}`);
      default:
        return;
    }
  };
}

const firstLine = (text: string) => summarizeText(text.split('\n')[0] ?? '');
const summarizeText = (text: string) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 90 ? `${flat.slice(0, 87)}...` : flat;
};

/** A gate line's mark when its check ran outside the OS sandbox, with the user's full rights. */
export const outsideSandbox = (event: Extract<AgentEvent, { type: 'gate' }>) =>
  event.sandboxed || event.exitCode === null ? '' : ' (outside the sandbox)';

/** The same events as JSON lines, for CI and other programs. */
export const jsonPrinter =
  (out: NodeJS.WritableStream = process.stdout) =>
  (event: SessionEvent) => {
    out.write(`${JSON.stringify(event)}\n`);
  };

function summarize(input: unknown): string {
  const json = JSON.stringify(input) ?? '';
  return json.length > 80 ? `${json.slice(0, 77)}...` : json;
}

/** Asks about one change at the terminal. Enter means no; y, yes, n, no, a, always are understood in any case, and
 *  anything else is asked again rather than taken for an answer. */
export function terminalApprover(screen: StatusLine, out: Output): Approver {
  return async ({ tool, preview, signal }) => {
    const painted = preview
      .split('\n')
      .map((l) => (l.startsWith('+') ? colour('green', l, out) : l.startsWith('-') ? colour('red', l, out) : l));
    screen.line(painted.join('\n'));
    const question = `Allow this ${tool}? [y]es, [N]o, [a]lways this session (Enter: no) `;
    let answer = APPROVAL_ANSWERS[(await screen.ask(question, signal)).trim().toLowerCase()];
    while (answer === undefined)
      answer =
        APPROVAL_ANSWERS[(await screen.ask('Please answer y, n or a (Enter: no) ', signal)).trim().toLowerCase()];
    if (answer !== 'no') return { approved: true, always: answer === 'always' };
    const reason = (await screen.ask('Why not? (optional, Enter to skip) ', signal)).trim();
    return reason === '' ? { approved: false } : { approved: false, reason };
  };
}

const APPROVAL_ANSWERS: Record<string, 'yes' | 'no' | 'always'> = {
  ...{ '': 'no', n: 'no', no: 'no', nope: 'no' },
  ...{ y: 'yes', yes: 'yes', ok: 'yes', a: 'always', always: 'always' },
};

/** Prevents /compact from making the view bigger: the summary is made on a copy of the session, and kept only if
 *  it is smaller than what it replaces. Returns why nothing changed, or null. */
async function compactOnRequest(agent: Agent, signal: AbortSignal): Promise<string | null> {
  const events: AgentEvent[] = [];
  const trial: Agent = { ...agent, config: { ...agent.config, onEvent: (event) => events.push(event) } };
  const compacted = await compact(trial, signal).catch((error: unknown) => errorText(error));
  const made = events.find((event) => event.type === 'compaction');
  const smaller = made !== undefined && made.tokensAfter < made.tokensBefore;
  for (const event of events) if (event !== made || smaller) agent.config.onEvent(event);
  if (typeof compacted === 'string') return compacted;
  if (compacted === null) return 'nothing old enough to summarise yet';
  if (!smaller) {
    const sizes = made ? ` (~${made.tokensAfter} tokens, against ~${made.tokensBefore} now)` : '';
    return `declined: the summary${sizes} would not make what the model sees smaller; nothing changed`;
  }
  [agent.compaction, agent.lastRequest] = [trial.compaction, null];
  return null;
}

/** Where the window goes, in estimated tokens: the numbers behind /context. */
export interface ContextBreakdown {
  window: number;
  systemPrompt: number;
  toolDefinitions: number;
  projectFiles: number;
  messages: number;
  free: number;
}

/** Where the window goes now, estimated as the harness estimates a request (each message measured once): the system
 *  prompt (AGENTS.md apart), the tool definitions, and the messages the model is shown. */
export function contextBreakdown(agent: Agent): ContextBreakdown {
  const projectFiles = agent.contextFiles.reduce((sum, file) => sum + estimateTokens(file.text), 0);
  const systemPrompt = estimateTokens(agent.system[0]?.text ?? '') - projectFiles;
  const toolDefinitions = estimateTokens(agent.toolDefinitions);
  const messages = estimateMessages(compactedView(agent, agent.messages));
  const free = Math.max(agent.contextWindow - (systemPrompt + projectFiles + toolDefinitions + messages), 0);
  return { window: agent.contextWindow, systemPrompt, toolDefinitions, projectFiles, messages, free };
}

/** The latest session file in the project, to suggest to /resume. */
async function latestSession(root: string): Promise<string | null> {
  const folder = path.join(root, '.agent', 'sessions');
  const files = await readdir(folder).catch(() => []);
  const latest = files
    .filter((file) => /^[^.]+\.jsonl$/.test(file))
    .sort()
    .at(-1);
  return latest === undefined ? null : path.relative(process.cwd(), path.join(folder, latest));
}

export interface ReplOptions {
  /** A person at a terminal: prompts, steering, Ctrl-C as a key. Otherwise lines are piped in, one task each. */
  interactive: boolean;
  switchSession: (file: string) => Promise<void>;
  /** The terminal printer's status line, which also draws the prompt; without it, readline's plain prompt. */
  screen?: StatusLine;
  /** Where the person's actions (a task, a steer, Ctrl-C) and the REPL's own notices are told. */
  tell: (event: SessionEvent) => void;
}

/** One task per line, handled one at a time and in order. Text typed while a run works steers it; Ctrl-C stops the
 *  run, not the program, and nothing starts by itself afterwards; lines that start with "/" are commands. Leaving a
 *  terminal's REPL (/exit, Ctrl-D, Ctrl-C at an empty prompt) exits 0; piped, the exit code is the last task's. */
export function repl(
  agent: Agent,
  rl: Interface,
  { interactive, switchSession, screen, tell }: ReplOptions,
): Promise<number> {
  let last: Halt | undefined;
  let running: AbortController | null = null; // a task or a command, which Ctrl-C stops
  let steerable = false; // a task: what is typed meanwhile steers it
  let busy = false;
  let closed = false;
  const pending: string[] = [];
  const notice = (text: string) => tell({ type: 'notice', text });
  // Piped input gets no prompt: it would land in the middle of the output (and break --json).
  const prompt = () => interactive && (screen ? screen.prompt(PROMPT) : rl.prompt(true));
  const command = async (input: string, signal: AbortSignal): Promise<void> => {
    const [name = '', ...rest] = input.split(/\s+/);
    const argument = rest.join(' ');
    if (name === '/context') return tell({ type: 'context', breakdown: contextBreakdown(agent) });
    if (name === '/compact') {
      const declined = await compactOnRequest(agent, signal);
      if (declined !== null) notice(`/compact: ${declined}`);
      return;
    }
    if (name === '/resume' && argument === '') {
      const latest = await latestSession(agent.config.root);
      return notice(`/resume needs a session file: /resume FILE${latest ? `, e.g. /resume ${latest}` : ''}`);
    }
    if (name === '/resume')
      return await switchSession(argument).catch((error: unknown) => notice(`/resume: ${errorText(error)}`));
    notice(`unknown command "${input}"; the commands are /context, /compact, /resume FILE, /exit`);
  };
  /** Prevents text typed during a run from starting a run by itself: what the agent did not read is shown back,
   *  not sent; after Ctrl-C, lines queued behind the run are dropped too, and the REPL waits at its prompt. */
  const unsent = (stopped: boolean) => {
    const dropped = [...agent.steering.splice(0), ...(stopped ? pending.splice(0) : [])];
    if (dropped.length === 0) return;
    const why = stopped ? 'the run was stopped' : 'the run ended before the agent read it';
    notice(`not sent (${why}): ${dropped.map((text) => `"${text}"`).join(', ')}; type it again to send it`);
  };
  return new Promise((resolve) => {
    const finish = () => {
      process.off('SIGINT', interrupt);
      resolve(interactive || last === undefined ? EXIT.accepted : exitCodeFor(last));
    };
    const work = async () => {
      busy = true;
      for (let input = pending.shift(); input !== undefined; input = pending.shift()) {
        running = new AbortController();
        if (input === '/exit') {
          pending.length = 0;
          rl.close();
        } else if (input.startsWith('/')) {
          await command(input, running.signal);
        } else {
          steerable = true;
          last = await runGivenTask(agent, input, running.signal, tell);
          steerable = false;
          unsent(running.signal.aborted);
        }
        running = null;
      }
      busy = false;
      if (closed) finish();
      else prompt();
    };
    rl.on('line', (line) => {
      const text = line.trim();
      if (steerable && interactive && text !== '' && !text.startsWith('/')) {
        steer(agent, text);
        tell({ type: 'steer', text });
        return notice('queued: the agent reads this before its next tool call');
      }
      if (text !== '') pending.push(text);
      if (busy) return;
      if (pending.length > 0) void work();
      else prompt();
    });
    function interrupt() {
      if (running) {
        if (running.signal.aborted) process.exit(EXIT.interrupted);
        running.abort();
        return tell({ type: 'interrupt' });
      }
      if (busy) return;
      if (interactive && rl.line !== '') return clearInput(rl);
      rl.close();
    }
    rl.on('SIGINT', interrupt); // a terminal: readline turns Ctrl-C into this event
    if (!interactive) process.on('SIGINT', interrupt);
    rl.on('close', () => {
      closed = true;
      if (!busy) finish();
    });
    rl.setPrompt(PROMPT);
    rl.resume();
    prompt();
  });
}

/** Runs a task typed or given on the command line, telling the session file first (a replay gives it again). */
export function runGivenTask(
  agent: Agent,
  task: string,
  signal: AbortSignal,
  tell: (event: ProgramEvent) => void,
): Promise<Halt> {
  tell({ type: 'task', text: task });
  return runTask(agent, task, signal);
}

const PROMPT = '\nyou> ';
