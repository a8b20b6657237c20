// The terminal: the status line, the printers (plain, --trace, --json), the approval prompt and the REPL. They draw
// the harness's events and pass the person's actions in through its API: steer, the abort signal, the approver.

import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { clearScreenDown, cursorTo, moveCursor } from 'node:readline';
import { createInterface, type Interface } from 'node:readline/promises';
import { styleText } from 'node:util';
import type Anthropic from '@anthropic-ai/sdk';
import { structuredPatch } from 'diff';
import { costOf, errorText, runTask, steer, type Task, withdrawSteering } from 'reference-harness';
import { describeCall, shownPath } from 'reference-harness/tools';
import { PROGRAM_TOOLS } from './program-tools.ts';
import {
  type Agent,
  type AgentEvent,
  type ApprovalAnswer,
  type Approver,
  type Halt,
  type Price,
  type Tool,
  type UsageTotals,
} from './harness.ts';
import { describeHalt } from './describe-halt.ts';
import { contextBreakdown } from './context-breakdown.ts';
import { compactNow } from './compact-now.ts';

/** What the person did, which the harness never sees as an event: the program tells the session file, so a replay can
 *  do the same at the same point. */
export type ProgramEvent =
  /** content: the task's blocks, when it has more than text (an editor's image) */
  | { type: 'task'; text: string; content?: Exclude<Task, string> }
  | { type: 'approval'; tool: string; preview: string; answer: ApprovalAnswer; callId: string }
  | { type: 'steer'; text: string }
  /** Ctrl-C; or SIGTERM, SIGHUP, which stop the run the same way and then end the program. */
  | { type: 'interrupt'; signal?: EndingSignal }
  /** The program's own report of where the window goes (/context, and at start); never recorded. */
  | { type: 'context'; breakdown: ContextBreakdown };

/** What the session file and the printers are told: the harness's events and the person's. */
export type SessionEvent = AgentEvent | ProgramEvent;

/** Exit codes: what a shell or CI reads of a run's halt. A signal that ends the program gives 128 + its number. */
export const EXIT = { accepted: 0, notAccepted: 1, usage: 2, interrupted: 130, SIGHUP: 129, SIGTERM: 143 } as const;

/** The signals that end the program after stopping its run as Ctrl-C does. */
export type EndingSignal = 'SIGTERM' | 'SIGHUP';

/** Why the program must end before its work is done, and with what exit code: a signal, or a session file that can
 *  no longer be written (`problem`, said on stderr). An AbortController's reason. */
export interface Ending {
  code: number;
  signal?: EndingSignal;
  problem?: string;
}

export function exitCodeFor(h: Halt): number {
  if (h.kind === 'accepted') return EXIT.accepted;
  if (h.kind === 'interrupted') return EXIT.interrupted;
  return EXIT.notAccepted;
}

/** Where the printers write: stdout, or any stream (a test's). Colour only on a terminal. */
export type Output = NodeJS.WritableStream & { isTTY?: boolean; columns?: number; hasColors?: () => boolean };

/** Colour only on a terminal that shows it, and not when NO_COLOR asks for none (https://no-color.org): Node's own
 *  judgement (hasColors: NO_COLOR, NODE_DISABLE_COLORS, TERM=dumb, FORCE_COLOR), which its styleText follows too. */
export const colourOn = (out: Output) => out.isTTY === true && !process.env.NO_COLOR && (out.hasColors?.() ?? true);

const colour = (format: Parameters<typeof styleText>[0], text: string, out: Output) =>
  colourOn(out) ? styleText(format, text) : text;

/** Control characters (C0 but newline and tab, DEL, C1: ESC, CSI, OSC, BEL, backspace, carriage return) and bidi
 *  controls: what a terminal obeys, or what reorders a line, rather than shows. */
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Prevents the terminal from obeying what the model, a file, a path, a diff or the check wrote: shown as escapes. */
export const visible = (text: string) =>
  text.replace(UNSAFE, (c) =>
    c < '\u0100' ? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}` : unicodeEscape(c),
  );

/** A character as JSON escapes it: \u and four hex digits for each of its UTF-16 code units. */
const unicodeEscape = (c: string) =>
  [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join('');

/** The widest line the program writes itself: --help, errors, and the printers' lines. */
export const MAX_COLUMNS = 100;

/** Where the printers' lines must fit: the terminal's width, at most MAX_COLUMNS. */
const widthOf = (out: Output) => Math.max(Math.min(out.columns ?? MAX_COLUMNS, MAX_COLUMNS), 20);

/** Prevents a line wider than `width`: each line of the text broken at spaces, its continuations indented like it
 *  and then by `indent` (a word longer than a line is cut). */
export function wrap(text: string, width: number, indent = ''): string[] {
  return text.split('\n').flatMap((given) => {
    const lead = /^ */.exec(given)![0];
    const more = `${lead}${indent}`;
    const lines: string[] = [];
    let line = lead;
    for (const word of given.slice(lead.length).split(' ')) {
      if (line.trim() !== '' && line.length + 1 + word.length > width) {
        lines.push(line);
        line = `${more}${word}`;
      } else {
        line = line.trim() === '' ? `${line}${word}` : `${line} ${word}`;
      }
      while (line.length > width && width > more.length) {
        lines.push(line.slice(0, width));
        line = `${more}${line.slice(width)}`;
      }
    }
    return [...lines, line];
  });
}

/** One line, cut to `width` with an ellipsis: for what is a single thing, like a call or a line of output. */
const cut = (text: string, width: number) => (text.length > width ? `${text.slice(0, width - 1)}…` : text);

/** Numbers with thousands separators: 12,345. */
export const grouped = (n: number) => n.toLocaleString('en-US');

/** Every error the program reports, in one form: "harness: …", wrapped to MAX_COLUMNS. */
export const programError = (message: string) => wrap(`harness: ${visible(message)}`, MAX_COLUMNS, '  ').join('\n');

/** Empties the line being typed, through readline (Ctrl-E, Ctrl-U), so it redraws what it knows it drew. */
function clearInput(rl: Interface): void {
  rl.write('', { ctrl: true, name: 'e' });
  rl.write('', { ctrl: true, name: 'u' });
}

/** Bracketed paste: the terminal marks the start and end of what is pasted. */
const PASTE_MARKS_ON = '\x1b[?2004h';
const PASTE_MARKS_OFF = '\x1b[?2004l';

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
  /** What the session has spent so far, shown after the wait's clock. */
  private spent = '';
  /** The last line of what the awaited command prints, shown last. */
  private latest = '';
  /** The REPL's prompt is on the screen, waiting: a line printed now goes above it, and it is drawn again. */
  private prompting = false;
  /** Between the terminal's marks around a paste: Enter is part of what is pasted, not a send. */
  pasting = false;

  private readonly rl: Interface | undefined;

  /** `terminal`: the REPL's readline and the keyboard it reads, when there is one. */
  constructor(
    private readonly out: Output,
    terminal?: { rl: Interface; input: NodeJS.ReadableStream },
  ) {
    this.rl = terminal?.rl;
    // Before readline sees the key: a first character opens the input line, Enter closes it into the scrollback.
    terminal?.input.prependListener('keypress', (typed: string | undefined, key: { name?: string; ctrl?: boolean }) => {
      if (key.name === 'paste-start' || key.name === 'paste-end') this.pasting = key.name === 'paste-start';
      if (key.name === 'return' || key.name === 'enter') this.prompting = false; // readline moves to a new line
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
    if (what !== this.waitingFor) [this.since, this.latest] = [Date.now(), ''];
    this.waitingFor = what;
    [this.active, this.prompting] = [true, false];
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

  /** What the session has spent so far (tokens, dollars), shown on the status line after the clock. */
  spending(text: string): void {
    this.spent = text;
  }

  /** The last line the awaited command printed, shown at the end of the status line until the wait changes. */
  tail(text: string): void {
    this.latest = text;
  }

  /** Whole lines, above the status line (or above the REPL's prompt, which is then drawn again below them). */
  line(text: string): void {
    const prompting = this.prompting && this.rl !== undefined;
    if (this.shown || prompting) this.hide();
    this.flushHeld();
    if (this.midLine) this.out.write('\n');
    this.out.write(`${text}\n`);
    this.midLine = false;
    this.lastOutput = Date.now();
    if (this.typing) this.show();
    else if (prompting) this.redraw(this.rl!.getPrompt());
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
    this.prompting = true;
  }

  /** The REPL reads the keyboard: a paste comes marked (bracketed paste), so it can be told from typing. Until
   *  the program ends, whichever way it ends. */
  startReading(): void {
    if (!this.enabled) return;
    this.out.write(PASTE_MARKS_ON);
    process.once('exit', () => this.out.write(PASTE_MARKS_OFF));
  }

  /** The REPL is left: the terminal gets its own paste back, and the shell's prompt a line of its own. */
  close(): void {
    if (!this.enabled) return;
    if (this.shown) this.hide();
    this.out.write(`${this.prompting || this.midLine ? '\n' : ''}${PASTE_MARKS_OFF}`);
    [this.prompting, this.midLine] = [false, false];
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
    const width = Math.max(Math.min((this.out.columns ?? 80) - 1, MAX_COLUMNS), 20);
    const parts = [`  ${frame} ${this.waitingFor} · ${seconds} s`, this.spent, this.latest].filter((part) => part);
    const status = this.waitingFor === null ? '' : cut(visible(parts.join(' · ')), width);
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

export interface PrinterOptions {
  /** The status line (and the REPL's prompt) the printer draws on. */
  screen?: StatusLine;
  verify?: string;
  /** The model's price: each turn's footer says what the turn cost. */
  price?: Price;
  /** What the session has spent so far, sub-agents and summaries included: on the status line and after a halt. */
  session?: () => UsageTotals;
  /** Renders a finished block of the model's markdown for the terminal; without it, text prints as it streams. */
  markdown?: (block: string) => string;
  /** The agent's tools (`task` included), whose calls the printer says in words; default PROGRAM_TOOLS. */
  tools?: () => readonly Tool[];
}

/** The terminal view of the event stream: the model's text, one line per call and what came of it (an edit as a
 *  diff), the gate's verdict with the end of a failing check's output, a status line while the agent waits (model,
 *  tools, the verify command and its latest line), and a footer per turn with that turn's tokens and cost. */
export function terminalPrinter(
  out: Output = process.stdout,
  { screen = new StatusLine(out), verify, price, session, markdown, tools = () => PROGRAM_TOOLS }: PrinterOptions = {},
): (event: SessionEvent) => void {
  const width = widthOf(out);
  /** Text that may wrap: each line indented like the first, and by two more. */
  const line = (format: Format, text: string) =>
    screen.line(
      wrap(visible(text), width, '  ')
        .map((part) => colour(format, part, out))
        .join('\n'),
    );
  /** Lines that are one thing each (a call, a line of output): cut to the width, never wrapped. */
  const lines = (format: Format, texts: string[]) =>
    screen.line(texts.map((text) => colour(format, cut(visible(text), width), out)).join('\n'));
  const running = new Map<string, string>();
  const blocks = new MarkdownBlocks();
  const show = (done: string[]) => {
    for (const block of done) screen.text(block === '' ? '\n' : `${markdown!(block)}\n`);
  };
  const spent = () => (session === undefined ? '' : spentText(session()));
  const changesFiles = (name: string) => tools().some((tool) => tool.name === name && !tool.readOnly);
  let diffShown = false; // the person was asked about this edit and saw its diff then
  let checkOutput = '';
  let thinking = false; // the model's thinking is being drawn, dimmed
  /** The thinking ends on a line of its own, before the reply's text or anything else. */
  const endThinking = () => {
    if (thinking) screen.text('\n');
    thinking = false;
  };
  return (event) => {
    if (event.type !== 'thinking') endThinking();
    switch (event.type) {
      case 'request':
        screen.wait('waiting for the model');
        return screen.spending(spent());
      case 'thinking':
        thinking = true;
        return screen.text(colour('dim', visible(event.delta), out));
      case 'text': {
        if (!markdown) return screen.text(visible(event.delta));
        const done = blocks.add(visible(event.delta));
        // Text drawn a block at a time: until a block is whole, the status line says the model is writing.
        return done.length > 0 ? show(done) : screen.wait('the model is writing');
      }
      case 'reply': {
        if (markdown) show(blocks.end());
        if (event.stopReason === 'max_tokens') {
          const calls = event.calls === 0 ? '' : `; its ${event.calls} call(s) will not run`;
          line('yellow', `  (cut off at the output limit${calls}: the model is asked to go on)`);
        }
        line('dim', `  [turn ${event.turn} · ${turnText(event.usage, price)}]`);
        screen.spending(spent());
        const judged = event.calls === 0 && !['max_tokens', 'pause_turn'].includes(event.stopReason ?? '');
        return screen.wait(judged ? (verify === undefined ? 'checking "done"' : `checking "done": ${verify}`) : null);
      }
      case 'call':
        screen.wait(null); // the hooks decide, and approval may ask
        diffShown = false;
        return lines('cyan', [`→ ${describeCall(event.call.name, event.call.input, tools())}`]);
      case 'approval':
        diffShown = true;
        return;
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
        if (event.result.is_error) return lines('red', [`  ✗ ${content.split('\n')[0]}`]);
        if (changesFiles(event.call.name) && !diffShown) showEdit(event.call.input);
        // A one-line result is a tool's own summary ("edited add.js: replaced 1 line(s) at line 2 …"); of a longer
        // one (what was read), its size and how it starts.
        const count = content.split('\n').length;
        const first = summarizeText(content.split('\n')[0]!);
        return lines('dim', [`  ✓ ${count === 1 ? first : `${grouped(count)} lines: ${first}`}`]);
      }
      case 'gate-output':
        checkOutput = `${checkOutput}${event.text}`.slice(-4_096);
        return screen.tail(lastLines(checkOutput, 1)[0] ?? '');
      case 'gate': {
        checkOutput = '';
        screen.wait(event.passed ? null : 'preparing the next request');
        const verdict = `${event.reason}: ${event.passed ? 'pass' : 'not done'}${outsideSandbox(event)}`;
        line(event.passed ? 'green' : 'yellow', `gate: \`${event.command}\` ${verdict}`);
        const tail = event.passed ? [] : lastLines(event.output, FAILED_CHECK_LINES).map((text) => `  │ ${text}`);
        if (tail.length > 0) lines('dim', tail);
        return;
      }
      case 'notice':
        return line('yellow', event.text);
      case 'compaction':
        return line(
          'yellow',
          `compacted: ~${grouped(event.tokensBefore)} → ~${grouped(event.tokensAfter)} tokens; messages before ` +
            `#${event.keptFrom} are now a summary (still in the session file)`,
        );
      case 'context':
        return line('dim', contextText(event.breakdown));
      case 'subagent':
        if (event.event.type === 'call')
          lines('dim', [`  [${event.id}] → ${describeCall(event.event.call.name, event.event.call.input, tools())}`]);
        if (event.event.type === 'reply') screen.spending(spent());
        return;
      case 'halt': {
        if (markdown) show(blocks.end());
        running.clear();
        screen.done();
        const colour = event.halt.kind === 'accepted' ? 'green' : 'red';
        line(colour, `halt: ${haltText(event.halt)} after ${event.turns} turn(s)`);
        if (spent() !== '') line('dim', `  session: ${spent()}`);
        return;
      }
      default:
        return;
    }
  };

  /** A change that replaces a snippet (an old_str and a new_str, as edit_file's) as a compact diff of what it
   *  replaced; nothing for any other change. */
  function showEdit(input: unknown): void {
    const { old_str: before, new_str: after } = (input ?? {}) as Record<string, unknown>;
    if (typeof before !== 'string' || typeof after !== 'string') return;
    const diff = compactDiff(before, after);
    if (diff.length === 0) return;
    const painted = diff.map((text) => {
      const shown = cut(`    ${visible(text)}`, width);
      return colour(text.startsWith('+') ? 'green' : text.startsWith('-') ? 'red' : 'dim', shown, out);
    });
    screen.line(painted.join('\n'));
  }
}

type Format = Parameters<typeof styleText>[0];

/** Lines of a failing check's output shown under the gate's verdict: its end, where the failure usually is. */
const FAILED_CHECK_LINES = 10;

/** One turn's figures: what it sent (and how much of that the cache served), what came back, what it cost. */
function turnText(usage: Anthropic.Usage, price: Price | undefined): string {
  const cacheRead = usage.cache_read_input_tokens ?? 0;
  const allInput = usage.input_tokens + cacheRead + (usage.cache_creation_input_tokens ?? 0);
  const cached = allInput > 0 ? Math.round((100 * cacheRead) / allInput) : 0;
  const cost = costOf(price, usage);
  const dollars = cost === null ? 'cost unknown' : dollarText(cost);
  return `in ${grouped(allInput)} (${cached}% cached) · out ${grouped(usage.output_tokens)} · ${dollars}`;
}

/** What a session has spent: its tokens, and its dollars when the price is known. */
function spentText(totals: UsageTotals): string {
  const tokens = totals.input + totals.cacheWrite + totals.cacheRead + totals.output;
  if (tokens === 0) return '';
  return `${grouped(tokens)} tokens${totals.costUsd === null ? '' : ` · ${dollarText(totals.costUsd)}`}`;
}

const dollarText = (usd: number) =>
  `$${usd.toLocaleString('en-US', { minimumFractionDigits: 4, maximumFractionDigits: 4 })}`;

/** How a run ended, its numbers grouped (a budget halt names tokens by the ten thousand). Only a budget's words are
 *  the harness's own; an error or a verify command is shown as it is. */
function haltText(halt: Halt): string {
  const text = describeHalt(halt);
  return halt.kind === 'budget' ? text.replace(/(?<![\d.])\d{4,}(?![\d.])/g, (n) => grouped(Number(n))) : text;
}

type ContextBreakdown = ReturnType<typeof contextBreakdown>;

function contextText(b: ContextBreakdown): string {
  const parts =
    `system ${grouped(b.systemPrompt)} · tools ${grouped(b.toolDefinitions)} · AGENTS.md ${grouped(b.projectFiles)}` +
    ` · messages ${grouped(b.messages)} · free ${grouped(b.free)}`;
  return `context window ${grouped(b.window)} tokens: ${parts}`;
}

/** What an edit replaced, as diff lines (" " context, "-" removed, "+" added) with one line of context around each
 *  change, "…" between changes, and at most `limit` lines (the rest counted). */
export function compactDiff(before: string, after: string, limit = 16): string[] {
  const whole = (text: string) => (text === '' || text.endsWith('\n') ? text : `${text}\n`);
  const { hunks } = structuredPatch('', '', whole(before), whole(after), '', '', { context: 1 });
  const diff = hunks.flatMap((hunk, i) => [...(i > 0 ? ['…'] : []), ...hunk.lines]);
  if (diff.length <= limit) return diff;
  return [...diff.slice(0, limit - 1), `… ${grouped(diff.length - limit + 1)} more lines`];
}

/** The last `count` lines of a command's output as a terminal would leave them: colours, carriage-return redraws
 *  and other control characters gone, trailing blank lines dropped. */
function lastLines(output: string, count: number): string[] {
  const lines = output
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
    .split('\n')
    .map((text) => {
      const redrawn = text.replace(/\r+$/, '');
      return redrawn
        .slice(redrawn.lastIndexOf('\r') + 1)
        .replaceAll('\t', '  ')
        .replace(/[\x00-\x1f\x7f]/g, '')
        .trimEnd();
    });
  while (lines.length > 0 && lines.at(-1) === '') lines.pop();
  return lines.slice(-count);
}

/** The model's streamed markdown in blocks that render alone: a block ends at a blank line outside a code fence.
 *  Each call returns the blocks it finished, with '' for each blank line between them. */
export class MarkdownBlocks {
  private partial = '';
  private block: string[] = [];
  private fence: string | null = null;

  add(delta: string): string[] {
    const lines = `${this.partial}${delta}`.split('\n');
    this.partial = lines.pop()!;
    const done: string[] = [];
    for (const text of lines) {
      const fence = /^ {0,3}(`{3,}|~{3,})/.exec(text)?.[1];
      const open = this.fence;
      if (fence !== undefined && open === null) this.fence = fence;
      else if (fence !== undefined && open !== null && fence[0] === open[0] && fence.length >= open.length)
        this.fence = null; // a fence closes with the same character, at least as many times
      if (this.fence === null && text.trim() === '') {
        if (this.block.length > 0) done.push(this.block.join('\n'));
        this.block = [];
        done.push('');
      } else this.block.push(text);
    }
    return done;
  }

  /** The reply ended: what is left is a block. */
  end(): string[] {
    const rest = this.partial === '' ? this.block : [...this.block, this.partial];
    [this.partial, this.block, this.fence] = ['', [], null];
    return rest.length > 0 ? [rest.join('\n')] : [];
  }
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
  const say = (part: string, what: string) => out.write(`${prefix}[${turn}] ${part.padEnd(14)} ${visible(what)}\n`);
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
        const text = blocks.map((b) => (b.type === 'text' ? b.text : '')).join('');
        const said = summarizeText(typeof event.message.content === 'string' ? event.message.content : text);
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
    out.write(`${jsonLine(event)}\n`);
  };

/** What JSON leaves raw and a terminal would obey or reorder: DEL, C1, bidi controls, line and paragraph separators. */
const JSON_UNSAFE = /[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

/** Prevents a --json line from driving the terminal it is shown on: what JSON leaves raw is written as \u escapes,
 *  which parse to the same value. */
export const jsonLine = (value: unknown) => JSON.stringify(value).replace(JSON_UNSAFE, unicodeEscape);

function summarize(input: unknown): string {
  const json = JSON.stringify(input) ?? '';
  return json.length > 80 ? `${json.slice(0, 77)}...` : json;
}

/** Asks about one change at the terminal. Enter means no; y, yes, n, no, a, always are understood in any case, and
 *  anything else is asked again rather than taken for an answer. */
export function terminalApprover(screen: StatusLine, out: Output): Approver {
  return async ({ tool, preview, signal, call, runsLater }) => {
    const painted = quotedHeaders(preview, call.input)
      .split('\n')
      .map(visible)
      .map((l) => (l.startsWith('+') ? colour('green', l, out) : l.startsWith('-') ? colour('red', l, out) : l));
    screen.line(painted.join('\n'));
    // A write that could run later is asked every time, and says why: "always" does not cover it.
    if (runsLater !== null) screen.line(colour('yellow', `This path is ${visible(runsLater)}: asked every time.`, out));
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

/** Prevents a diff's header from hiding the file it changes: jsdiff quotes a path with a newline, a control or a
 *  non-ASCII character as git does, but not one with a space (`a.js ` reads as `a.js`); such a header's
 *  `--- a/PATH` and `+++ b/PATH` name the call's path quoted. */
function quotedHeaders(preview: string, input: unknown): string {
  const file = (input as { path?: unknown } | null)?.path;
  if (typeof file !== 'string' || shownPath(file) === file) return preview;
  return preview
    .replace(`--- a/${file}\n`, () => `--- ${shownPath(`a/${file}`)}\n`)
    .replace(`+++ b/${file}\n`, () => `+++ ${shownPath(`b/${file}`)}\n`);
}

const APPROVAL_ANSWERS: Record<string, 'yes' | 'no' | 'always'> = {
  ...{ '': 'no', n: 'no', no: 'no', nope: 'no' },
  ...{ y: 'yes', yes: 'yes', ok: 'yes', a: 'always', always: 'always' },
};

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
  /** Aborted (with an Ending) when the program must end: the run under way stops as Ctrl-C stops it, and the REPL
   *  closes once its halt is told, with the Ending's exit code. */
  ending?: AbortSignal;
}

/** One task per line, handled one at a time and in order. Text typed while a run works steers it; Ctrl-C stops the
 *  run, not the program, and nothing starts by itself afterwards; lines that start with "/" are commands. Leaving a
 *  terminal's REPL (/exit, Ctrl-D, Ctrl-C at an empty prompt) exits 0; piped, the exit code is the last task's. */
export function repl(
  agent: Agent,
  rl: Interface,
  { interactive, switchSession, screen, tell, ending = new AbortController().signal }: ReplOptions,
): Promise<number> {
  let last: Halt | undefined;
  let running: AbortController | null = null; // a task or a command, which Ctrl-C stops
  let steerable = false; // a task: what is typed meanwhile steers it
  let busy = false;
  let closed = false;
  let pasted: string[] = []; // the lines of a paste so far: sent with the line that ends it, as one message
  let leaveAskedAt = -Infinity; // when a Ctrl-C last said "press Ctrl-C again to exit"
  const pending: string[] = [];
  const notice = (text: string) => tell({ type: 'notice', text });
  // Piped input gets no prompt: it would land in the middle of the output (and break --json).
  const prompt = (text = PROMPT) => {
    if (!interactive) return;
    if (screen) return screen.prompt(text);
    rl.setPrompt(text);
    rl.prompt(true);
  };
  const command = async (input: string, signal: AbortSignal): Promise<void> => {
    const [name = '', ...rest] = input.split(/\s+/);
    const argument = rest.join(' ');
    if (name === '/help') return notice(REPL_HELP);
    if (name === '/context') return tell({ type: 'context', breakdown: contextBreakdown(agent) });
    if (name === '/compact') {
      const declined = await compactNow(agent, signal);
      if (declined !== null) notice(`/compact: ${declined}`);
      return;
    }
    if (name === '/resume' && argument === '') {
      const latest = await latestSession(agent.config.root);
      return notice(`/resume needs a session file: /resume FILE${latest ? `, e.g. /resume ${latest}` : ''}`);
    }
    if (name === '/resume')
      return await switchSession(argument).catch((error: unknown) => notice(`/resume: ${errorText(error)}`));
    notice(`unknown command "${input}"; the commands are /help, /context, /compact, /resume FILE, /exit`);
  };
  /** Prevents text typed during a run from starting a run by itself: what the agent did not read is shown back,
   *  not sent; after Ctrl-C, lines queued behind the run are dropped too, and the REPL waits at its prompt. */
  const unsent = (stopped: boolean) => {
    const dropped = [...withdrawSteering(agent), ...(stopped ? pending.splice(0) : [])];
    if (dropped.length === 0) return;
    const why = stopped ? 'the run was stopped' : 'the run ended before the agent read it';
    notice(`not sent (${why}): ${dropped.map((text) => `"${text}"`).join(', ')}; type it again to send it`);
  };
  return new Promise((resolve) => {
    const finish = () => {
      process.off('SIGINT', interrupt);
      ending.removeEventListener('abort', end);
      screen?.close();
      if (ending.aborted) resolve((ending.reason as Ending).code);
      else resolve(interactive || last === undefined ? EXIT.accepted : exitCodeFor(last));
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
      // Prevents a pasted block from becoming a task and then steering messages: its lines wait for the one the
      // person ends it with (Enter), and go as one message.
      if (screen?.pasting) {
        pasted.push(line);
        if (!busy) prompt(CONTINUATION);
        return;
      }
      const text = [...pasted, line].join('\n').trim();
      [pasted, leaveAskedAt] = [[], -Infinity];
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
    /** Ctrl-C: stops a run; clears what is typed; and at an empty prompt leaves, once asked twice. */
    function interrupt() {
      if (running && !running.signal.aborted) {
        running.abort();
        return tell({ type: 'interrupt' });
      }
      if (!interactive) {
        if (running) process.exit(EXIT.interrupted); // a second one while the run stops
        if (!busy) rl.close();
        return;
      }
      if (!busy && (rl.line !== '' || pasted.length > 0)) {
        leaveAskedAt = -Infinity; // typing since then: this Ctrl-C is about the text, not about leaving
        clearInput(rl);
        if (pasted.splice(0).length > 0) prompt();
        return;
      }
      // Prevents leaving by accident, e.g. with a second Ctrl-C meant for a run that had already stopped.
      if (Date.now() - leaveAskedAt < LEAVE_WITHIN_MS) {
        if (!busy) return rl.close();
        screen?.close();
        process.exit(EXIT.interrupted); // the run is still stopping: leave it
      }
      leaveAskedAt = Date.now();
      notice(busy ? 'the run is stopping; press Ctrl-C again to exit now' : 'press Ctrl-C again to exit');
    }
    /** The program must end: what was queued is dropped, the run under way stops as Ctrl-C stops it, and the REPL
     *  closes once that run's halt is told. */
    function end() {
      pending.length = 0;
      if (running && !running.signal.aborted) {
        running.abort();
        const { signal } = ending.reason as Ending;
        if (signal) notice(`${signal}: stopping the run; the program ends once its halt is written`);
        tell({ type: 'interrupt', ...(signal && { signal }) });
      }
      rl.close();
    }
    rl.on('SIGINT', interrupt); // a terminal: readline turns Ctrl-C into this event
    if (!interactive) process.on('SIGINT', interrupt);
    rl.on('close', () => {
      closed = true;
      if (!busy) finish();
    });
    if (ending.aborted) end();
    else ending.addEventListener('abort', end, { once: true });
    rl.setPrompt(PROMPT);
    if (interactive) screen?.startReading();
    rl.resume();
    prompt();
  });
}

/** How long a Ctrl-C at an empty prompt waits for the second one that leaves. */
const LEAVE_WITHIN_MS = 3_000;

const REPL_HELP = [
  'Type a task and press Enter: the agent works on it until it halts. While it works, what you type',
  'steers it (it reads it before its next tool call), and Ctrl-C stops the run.',
  'A pasted block of lines is one message: press Enter to send it.',
  '  /help           this list',
  '  /context        where the context window goes',
  '  /compact        summarise the older messages now',
  '  /resume FILE    continue a saved session (and keep appending to it)',
  '  /exit           leave; so do Ctrl-D, and Ctrl-C twice at an empty prompt',
].join('\n');

/** Runs a task typed or given on the command line, telling the session file first (a replay gives it again). */
export function runGivenTask(
  agent: Agent,
  task: Task,
  signal: AbortSignal,
  tell: (event: ProgramEvent) => void,
): Promise<Halt> {
  if (typeof task === 'string') tell({ type: 'task', text: task });
  else
    tell({
      type: 'task',
      text: task.map((block) => (block.type === 'text' ? block.text : '')).join(''),
      content: task,
    });
  return runTask(agent, task, signal);
}

const PROMPT = '\nyou> ';
/** The prompt under the first line of a paste, until Enter sends it. */
const CONTINUATION = '   … ';
