// session-page/page.ts — the page around the transcript: the header (model, root, times, what the session spent with
// its sub-agents), the tasks and how each ended, the chart, and the transcript in parts; the stylesheet and the small
// script (tooltips, folds, parts, printing), under a Content-Security-Policy that lets the page run its own inline
// code and nothing else.
//
// The page is written as the session is read, part by part, so a session of any size exports in bounded memory. The
// first parts go in as they are, up to INLINE_BYTES; the rest go in gzipped (base64, in a data block the browser
// neither runs nor lays out), and the page's script unpacks each one as it is scrolled to or linked to. Each part gets
// an equal share of what is left of the page's size limit (PAGE_MAX_BYTES unless given); a part over its share is
// rendered again with its texts cut shorter.

import { createHash } from 'node:crypto';
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { DEFAULT_CONTEXT_WINDOW } from 'reference-harness';
import { type Tool } from '../harness.ts';
import { PROGRAM_TOOLS } from '../program-tools.ts';
import { exitCodeFor } from '../terminal.ts';
import { allTotals, ownTotals, priceFor, renderChart, subAgentTotals, type Totals } from './chart.ts';
import { count, dollars, duration, type Fragment, html, type Html, safeId, trusted } from './html.ts';
import {
  allWarnings,
  type Entry,
  isTaskStart,
  type SessionOutline,
  sessionEntries,
  type SubAgentOutline,
} from './read.ts';
import {
  forgetAnsweredCalls,
  noteCalls,
  renderEntries,
  type TranscriptContext,
  transcriptContext,
} from './transcript.ts';
import { describeHalt } from '../describe-halt.ts';

/** agent.ts compacts when a request would pass this share of the window (`compactAt`'s default). */
const COMPACT_AT = 0.75;

/** The page must stay easy to open and to send: texts are cut shorter until it fits. */
export const PAGE_MAX_BYTES = 5_000_000;
/** The longest any one text is shown, tried in turn until a part fits its share; the first is the usual one. */
export const TEXT_CAPS = [20_000, 4_000, 1_000, 250];
/** A part of the transcript: this many messages, or fewer when their lines in the file add up to PART_CHARS. */
export const PART_MESSAGES = 100;
const PART_CHARS = 4_000_000;
/** The first parts go into the page as they are, up to this many bytes (and an eighth of the page's limit): a small
 *  session's page is plain HTML. */
const INLINE_BYTES = 600_000;
/** Room kept for the end of the page (the script) when a part's share is worked out. */
const TAIL_BYTES = 16_000;

export interface PageOptions {
  /** The context window the session ran with, for the chart: format 1 does not record it. */
  contextWindow?: number;
  /** The most bytes the page should take; default PAGE_MAX_BYTES. */
  maxBytes?: number;
  /** The tools whose calls the page says in words and marks as approved; default the program's (PROGRAM_TOOLS). */
  tools?: readonly Tool[];
}

export interface WrittenPage {
  /** What the page could not show, from every session in it, and how it was cut to fit; also written on it. */
  warnings: string[];
  bytes: number;
}

/** Writes the page of a session (outlined already by `outlineSession`) to `out`, streaming the transcript. */
export async function writePage(outline: SessionOutline, out: string, options: PageOptions = {}): Promise<WrittenPage> {
  // Written beside its place and moved there when whole: a failed export leaves no half page.
  const partial = path.join(path.dirname(out), `.${path.basename(out)}.partial`);
  const file = await open(partial, 'w');
  try {
    const page = new PageWriter(file);
    const window = windowOf(outline, options);
    await page.write(pageTop(outline, window));
    const maxBytes = options.maxBytes ?? PAGE_MAX_BYTES;
    const tools = options.tools ?? PROGRAM_TOOLS;
    const cut = await writeParts(outline, page, { contextWindow: window.tokens, maxBytes, tools });
    await page.write(pageBottom());
    await file.close();
    await rename(partial, out);
    const notes = cut.length === 0 ? [] : [`to stay under ${megabytes(maxBytes)}, ${cutNote(cut)}`];
    const over = page.bytes > maxBytes && [
      `the page is ${(page.bytes / 1e6).toFixed(1)} MB even with every text cut short`,
    ];
    return { warnings: [...allWarnings(outline), ...notes, ...(over || [])], bytes: page.bytes };
  } catch (error) {
    await file.close().catch(() => {});
    await rm(partial, { force: true });
    throw error;
  }
}

const megabytes = (bytes: number) => `${bytes / 1_000_000} MB`;

class PageWriter {
  bytes = 0;
  constructor(private readonly file: FileHandle) {}
  async write(markup: string | Html): Promise<void> {
    const text = typeof markup === 'string' ? markup : markup.markup;
    this.bytes += Buffer.byteLength(text);
    await this.file.write(text);
  }
}

/** Which caps the parts were cut to, for the warnings: "3 parts of the transcript show at most 1,000 characters". */
function cutNote(cut: number[]): string {
  const counts = new Map<number, number>();
  for (const cap of cut) counts.set(cap, (counts.get(cap) ?? 0) + 1);
  const parts = (n: number) => (n === 1 ? '1 part of the transcript shows' : `${n} parts of the transcript show`);
  return [...counts].map(([cap, n]) => `${parts(n)} at most ${count(cap)} characters of any text`).join('; ');
}

/** The window to draw: the one given, else the one the session records, else the harness's default. */
function windowOf(outline: SessionOutline, options: PageOptions): { tokens: number; source: string } {
  if (options.contextWindow !== undefined) return { tokens: options.contextWindow, source: 'as given for this page' };
  if (outline.header?.contextWindow) return { tokens: outline.header.contextWindow, source: 'as the session records' };
  return { tokens: DEFAULT_CONTEXT_WINDOW, source: 'the default: the session does not record it' };
}

// =============================================================================================
// The top of the page: everything but the transcript

function pageTop(outline: SessionOutline, window: { tokens: number; source: string }): string {
  const name = path.basename(outline.file);
  const firstTask = outline.tasks[0];
  const title = `Session ${name}${firstTask ? ` — ${headline(firstTask.headline, 80)}` : ''}`;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta http-equiv="Content-Security-Policy" content="${CSP}" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${title}</title>
        ${trusted(`<style>${STYLE}</style>`)}
      </head>
      <body>
        <header class="page-head">
          <h1>Session <code>${name}</code></h1>
          ${renderMeta(outline, window)}
        </header>
        <nav class="toolbar">
          <button type="button" data-fold="open">open every fold</button>
          <button type="button" data-fold="close">close every fold</button>
        </nav>
        ${renderTasks(outline)} ${renderWarnings(allWarnings(outline))}
        <h2>Requests</h2>
        ${renderChart(outline, { contextWindow: window.tokens, compactAt: COMPACT_AT, idPrefix: '' })}
        <h2>Transcript</h2>
        <div class="transcript"></div>
      </body>
    </html>`.markup;
}

function pageBottom(): Html {
  return html`</div>
        <div id="tip" role="tooltip" hidden></div>
        ${trusted(`<script>${SCRIPT}</script>`)}
      </body>
    </html>
`;
}

function renderMeta(outline: SessionOutline, window: { tokens: number; source: string }): Html {
  const header = outline.header;
  if (header === null) return html`<p class="muted">No session header: model, root and start time unknown.</p>`;
  const lasted = outline.firstAt !== null && outline.lastAt !== null && Date.parse(header.startedAt) > 0;
  const approvals = {
    yes: 'every change approved (--yes)',
    ask: 'asked at the terminal',
    deny: 'nobody to ask: changes refused',
  };
  return html`<dl class="meta">
    <dt>model</dt>
    <dd>${header.model}</dd>
    <dt>project root</dt>
    <dd><code>${header.root}</code></dd>
    <dt>started</dt>
    <dd>
      ${header.startedAt}${lasted && `, last entry ${duration(outline.lastAt! - Date.parse(header.startedAt))} later`}
    </dd>
    <dt>spent</dt>
    <dd>${spentLine(outline)}</dd>
    <dt>context window</dt>
    <dd>${count(window.tokens)} tokens (${window.source})</dd>
    ${
      header.approval &&
      html`<dt>approvals</dt>
        <dd>${approvals[header.approval]}</dd>`
    }
    ${
      header.noSandbox &&
      html`<dt>verify command</dt>
        <dd class="outside">run outside the OS sandbox (--no-sandbox), with the user's full rights</dd>`
    }
    <dt>format</dt>
    <dd>session format ${header.version ?? '(none given)'}</dd>
  </dl>`;
}

/** What the session spent, its sub-agents included, as the terminal counts it; and how much of that they spent. */
function spentLine(outline: SessionOutline): Fragment {
  const all = allTotals(outline);
  const subs = subAgentTotals(outline);
  const own = ownTotals(outline);
  const input = all.tokens.uncached + all.tokens.cacheWrite + all.tokens.cacheRead;
  const cached = input === 0 ? 0 : Math.round((100 * all.tokens.cacheRead) / input);
  const n = outline.subAgents.length;
  const cost = (totals: Totals) => (totals.costUsd === null ? 'cost unknown' : dollars(totals.costUsd));
  const model = outline.header?.model ?? '(unknown model)';
  return [
    html`<span class="total-cost"
      >${all.costUsd === null ? `cost unknown (no price for ${model})` : dollars(all.costUsd)}</span
    >`,
    ` · ${count(all.requests)} requests · input ${count(input)} tokens (${cached}% read from cache) · `,
    `output ${count(all.tokens.output)}`,
    all.modelMs > 0 && ` · ${duration(all.modelMs)} waiting for the model`,
    n > 0 &&
      html`<br /><span class="muted"
          >of which ${n} sub-agent${n === 1 ? '' : 's'}: ${count(subs.requests)} requests, ${cost(subs)}; the agent
          itself: ${count(own.requests)} requests, ${cost(own)}</span
        >`,
  ];
}

/** The start of a task, for the title and the list at the top; the transcript has it whole. */
const headline = (text: string, chars: number) => (text.length > chars ? `${text.slice(0, chars)}…` : text);

/** Each task: the first user message, linked to its place, how it ended, the exit code it gave, how long it took. */
function renderTasks(outline: SessionOutline): Html {
  const { tasks } = outline;
  if (tasks.length === 0) return html`<p class="muted">No task was recorded.</p>`;
  const items = tasks.map(
    ({ index, headline: text, halt, at, haltAt }) =>
      html`<li>
        <a href="#m-${index}">${text}</a> ${
          halt
            ? html`<span class="halt ${halt.kind}">${describeHalt(halt)} · exit code ${exitCodeFor(halt)}</span>`
            : html`<span class="halt none">no halt recorded: the process ended before the task did</span>`
        }${at !== null && haltAt !== null && html` <span class="muted">· took ${duration(haltAt - at)}</span>`}
      </li>`,
  );
  return html`<h2>${tasks.length === 1 ? 'Task' : 'Tasks'}</h2>
    <ol class="tasks">
      ${items}
    </ol>`;
}

function renderWarnings(warnings: string[]): Html | null {
  if (warnings.length === 0) return null;
  return html`<div class="warnings" role="note">
    <h2>Warnings</h2>
    <ul>
      ${warnings.map((w) => html`<li>${w}</li>`)}
    </ul>
  </div>`;
}

// =============================================================================================
// The transcript, part by part

/** A new part starts at a reply or a task, so that a call, its approval and its result stay in one part. */
const startsPart = (entry: Entry) =>
  entry.type === 'message' && (entry.message.role === 'assistant' || isTaskStart(entry.message));

/** Streams the session's entries into parts and writes each; returns the caps of the parts whose texts were cut. */
async function writeParts(
  outline: SessionOutline,
  page: PageWriter,
  { contextWindow, maxBytes, tools }: { contextWindow: number; maxBytes: number; tools: readonly Tool[] },
): Promise<number[]> {
  const ctx = transcriptContext(outline, {
    tools,
    idPrefix: '',
    textCap: TEXT_CAPS[0]!,
    price: priceFor(outline.header),
    subAgent: false,
  });
  const cut: number[] = [];
  let part: Entry[] = [];
  let [messagesInPart, charsInPart, messagesDone] = [0, 0, 0];
  let inlineLeft = Math.min(INLINE_BYTES, maxBytes / 8);
  let lastCap = 0; // the cap the last part needed: the next starts one larger, not at the top, to try fewer times
  const flush = async () => {
    if (part.length === 0) return;
    noteCalls(part, ctx);
    const partsLeft = Math.max(1, Math.ceil((outline.messages - messagesDone) / PART_MESSAGES));
    const share = (maxBytes - page.bytes - TAIL_BYTES) / partsLeft;
    const subSessions = await subSessionEntries(part, outline);
    for (const [i, cap] of TEXT_CAPS.entries()) {
      if (i < lastCap - 1) continue;
      ctx.textCap = cap;
      ctx.nested = renderSubSessions(subSessions, ctx, contextWindow);
      const markup = renderPart(part, ctx, i > 0 && maxBytes);
      const inline = i === 0 && Buffer.byteLength(markup) <= inlineLeft;
      const packed = inline ? '' : gzipSync(markup).toString('base64');
      if (inline || packed.length <= share || i === TEXT_CAPS.length - 1) {
        await page.write(inline ? partElement(part, outline, markup, null) : partElement(part, outline, '', packed));
        if (inline) inlineLeft -= Buffer.byteLength(markup);
        else inlineLeft = 0; // the parts after a packed one are packed too: the page reads in order
        if (i > 0) cut.push(cap);
        lastCap = i;
        break;
      }
    }
    forgetAnsweredCalls(part, ctx);
    messagesDone += messagesInPart;
    [part, messagesInPart, charsInPart] = [[], 0, 0];
  };
  for await (const { entry, size } of sessionEntries(outline.file)) {
    if (entry.type === 'session') continue;
    if (startsPart(entry) && (messagesInPart >= PART_MESSAGES || charsInPart >= PART_CHARS)) await flush();
    part.push(entry);
    charsInPart += size;
    if (entry.type === 'message') messagesInPart++;
  }
  await flush();
  return cut;
}

/** A part's markup; `cutFor`: the page's size limit, when this part's texts were cut shorter to keep it. */
function renderPart(part: Entry[], ctx: TranscriptContext, cutFor: number | false): string {
  const note =
    cutFor !== false &&
    html`<p class="part-cut">
      In this part, each text shows at most ${count(ctx.textCap)} characters, so that the page stays under
      ${megabytes(cutFor)}; the session file has them all.
    </p>`;
  return html`${note}${renderEntries(part, ctx)}`.markup;
}

/** A part of the transcript, with the ranges of what it holds, so a link into a packed part can unpack it first:
 *  messages (m), requests (r), compactions (k) and the cuts before the messages they kept (c). */
function partElement(part: Entry[], outline: SessionOutline, markup: string, packed: string | null): Html {
  const messages = part.flatMap((e) => (e.type === 'message' ? [e.message.index] : []));
  const cuts = outline.compactions.flatMap((c) => (messages.includes(c.keptFrom) ? [c.number] : []));
  const requests = part.flatMap((e) =>
    e.type === 'usage' ? [e.request.number] : e.type === 'compaction' ? [e.compaction.request.number] : [],
  );
  const compactions = part.flatMap((e) => (e.type === 'compaction' ? [e.compaction.number] : []));
  const range = (numbers: number[]) => `${Math.min(...numbers)} ${Math.max(...numbers)}`;
  const ranges = { m: messages, r: requests, k: compactions, c: cuts };
  const attributes = Object.entries(ranges).map(
    ([key, numbers]) => numbers.length > 0 && html` data-${trusted(key)}="${range(numbers)}"`,
  );
  if (packed === null) return html`<section class="part" ${attributes}>${trusted(markup)}</section>`;
  const what = messages.length === 0 ? 'entries' : `messages #${messages[0]}–#${messages.at(-1)}`;
  return html`<section class="part packed" ${attributes}>
    <p class="part-note">
      ${what} (${requests.length} requests) — <button type="button" data-unpack>show</button>; they are shown as you
      scroll to them
    </p>
    ${trusted(`<script type="application/octet-stream" class="packed">${packed}</script>`)}
  </section>`;
}

// --- Sub-agents: each one's whole session, nested under the call that started it

/** The entries of the sub-agents started in this part, read once for every cap the part is tried at. */
async function subSessionEntries(part: Entry[], outline: SessionOutline): Promise<Map<SubAgentOutline, Entry[]>> {
  const read = new Map<SubAgentOutline, Entry[]>();
  for (const entry of part) {
    const sub = entry.type === 'subagent' ? outline.subAgents.find((s) => s.link.id === entry.link.id) : undefined;
    if (!sub?.session) continue;
    const entries: Entry[] = [];
    for await (const { entry: inner } of sessionEntries(sub.session.file))
      if (inner.type !== 'session') entries.push(inner);
    read.set(sub, entries);
  }
  return read;
}

function renderSubSessions(read: Map<SubAgentOutline, Entry[]>, parent: TranscriptContext, contextWindow: number) {
  const nested = new Map<string, Html>();
  for (const [sub, entries] of read) {
    const outline = sub.session!;
    const idPrefix = `${parent.idPrefix}${safeId(sub.link.id)}-`;
    const ctx = transcriptContext(outline, {
      tools: parent.tools,
      idPrefix,
      textCap: parent.textCap,
      price: priceFor(outline.header),
      subAgent: true,
    });
    noteCalls(entries, ctx);
    nested.set(
      sub.link.id,
      html`${renderWarnings(outline.warnings)}
        <h3>Requests</h3>
        ${renderChart(outline, { contextWindow, compactAt: COMPACT_AT, idPrefix })}
        <h3>Transcript</h3>
        <div class="transcript">${renderEntries(entries, ctx)}</div>`,
    );
  }
  return nested;
}

// --- The page's own code: a stylesheet and a script, allowed by their hashes and nothing else.

const STYLE = `
:root { color-scheme: light; --ink: #1d2430; --muted: #647084; --line: #d8dde6; --paper: #fff; --soft: #f5f7fa;
  --uncached: #4e79a7; --cacheWrite: #f28e2b; --cacheRead: #59a14f; --output: #8e6bbf;
  --error: #b3261e; --not-run: #8a5a00; --ok: #2e6b34; --you: #1f5fbf; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, sans-serif; color: var(--ink); background: var(--paper); margin: 0 auto;
  padding: 1.5rem; max-width: 1100px; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; } h2 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; }
h3 { font-size: 1rem; margin: 1rem 0 .4rem; }
code, pre { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--soft); border: 1px solid var(--line);
  border-radius: 4px; padding: .5rem .75rem; margin: .25rem 0; }
a { color: var(--you); }
[id] { scroll-margin-top: 3rem; }
.muted { color: var(--muted); }
.meta { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; margin: 0; }
.meta dt { color: var(--muted); } .meta dd { margin: 0; overflow-wrap: anywhere; }
.total-cost { font-weight: 600; }
.meta .outside { color: var(--error); font-weight: 600; }
.tasks li { margin: .25rem 0; overflow-wrap: anywhere; }
.halt { font-weight: 600; }
.halt.accepted { color: var(--ok); } .halt.budget, .halt.error, .halt.none { color: var(--error); }
.halt.interrupted { color: var(--not-run); }
div.halt { border-top: 2px solid currentColor; padding: .25rem 0; margin: .75rem 0; }
.warnings { border: 1px solid var(--not-run); background: #fff8e6; border-radius: 4px; padding: 0 1rem; }
.toolbar { position: sticky; top: 0; background: var(--paper); padding: .4rem 0; z-index: 1;
  border-bottom: 1px solid var(--line); }
.chart { margin: 0; } .chart svg.requests { display: block; width: 100%; height: auto; border: 1px solid var(--line);
  border-radius: 4px; }
.requests text { font: 11px system-ui, sans-serif; fill: var(--muted); }
.requests .tick { text-anchor: end; } .requests .tick-x, .requests .cut-mark { text-anchor: middle; }
.requests .grid { stroke: var(--line); }
.requests .window { stroke: var(--error); stroke-width: 1.5; }
.requests .threshold { stroke: var(--not-run); stroke-width: 1.5; stroke-dasharray: 6 4; }
.requests .window-label { fill: var(--error); }
.requests .threshold-label { fill: var(--not-run); text-anchor: end; }
.requests .offscale { fill: var(--error); text-anchor: end; }
.requests .cost { fill: none; stroke: var(--ink); stroke-width: 1.5; }
.requests .cut-mark { fill: var(--ink); font-size: 13px; }
.uncached { fill: var(--uncached); } .cacheWrite { fill: var(--cacheWrite); }
.cacheRead { fill: var(--cacheRead); } .output { fill: var(--output); }
.bar .hit { fill: transparent; }
.bar:hover .hit, .bar:focus .hit { fill: rgba(31, 95, 191, .12); }
.bar.compaction rect:not(.hit) { stroke: var(--ink); stroke-width: 1; }
.bar:focus { outline: none; } .bar:focus-visible .hit { stroke: var(--you); stroke-width: 2; }
figcaption { font-size: 13px; color: var(--muted); margin: .3rem 0; }
.legend .key { margin-right: .8rem; white-space: nowrap; } .legend svg { vertical-align: -1px; }
#tip { position: absolute; z-index: 2; white-space: pre-line; background: var(--ink); color: #fff; font-size: 12px;
  padding: .35rem .55rem; border-radius: 4px; pointer-events: none; max-width: 460px; }
.msg { border-left: 3px solid var(--line); padding: .2rem 0 .2rem .8rem; margin: .8rem 0; }
.msg > header { font-size: 12px; color: var(--muted); }
.msg .anchor { color: var(--muted); text-decoration: none; margin-right: .4rem; }
.msg .who { font-weight: 600; text-transform: uppercase; letter-spacing: .03em; }
.at { color: var(--muted); font-size: 12px; font-variant-numeric: tabular-nums; }
.msg.assistant { border-color: #8e6bbf; } .msg.task { border-color: var(--you); }
.msg.gate { border-color: var(--error); }
.msg:target { background: #fffbe0; }
pre.user-text { font: inherit; background: none; border: 0; padding: 0; }
.reply p { margin: .3rem 0; }
.label { font-size: 11px; font-weight: 700; text-transform: uppercase; letter-spacing: .04em; border-radius: 3px;
  padding: 0 .35rem; background: var(--soft); border: 1px solid var(--line); }
.call { border: 1px solid var(--line); border-radius: 4px; padding: .4rem .6rem; margin: .4rem 0; }
.call .tool { font-weight: 600; font-family: ui-monospace, monospace; }
.approval { font-size: 12px; font-weight: 600; margin-left: .4rem; }
.approval.yes { color: var(--ok); } .approval.no { color: var(--error); }
table.args { border-collapse: collapse; margin-top: .25rem; width: 100%; }
table.args th { text-align: left; vertical-align: top; color: var(--muted); font-weight: 500; padding-right: .8rem;
  width: 1%; white-space: nowrap; }
table.args td { overflow-wrap: anywhere; }
.diff-head { margin-top: .25rem; font-size: 13px; } .added { color: var(--ok); } .removed { color: var(--error); }
pre.diff { padding: .3rem 0; }
pre.diff > span { display: block; padding-right: .6rem; }
pre.diff .add { background: #e6f4ea; } pre.diff .del { background: #fbe9e7; }
pre.diff .gap { color: var(--muted); padding-left: 7.5em; }
pre.diff .ln { display: inline-block; width: 3.5em; padding-right: .6em; text-align: right; color: var(--muted);
  user-select: none; }
.result { margin: .4rem 0; } .result.error .label { color: var(--error); border-color: var(--error); }
.result.not-run .label { color: var(--not-run); border-color: var(--not-run); }
.result.error pre { border-color: var(--error); }
.took { color: var(--muted); font-size: 12px; }
.why { color: var(--not-run); }
.gate-verdict .label, .steer .label { color: var(--error); border-color: var(--error); }
pre.check-output { border-color: var(--error); background: #fdf3f2; }
.steer { margin: .5rem 0; border-left: 3px solid var(--you); padding-left: .6rem; }
.person { margin: .5rem 0; border-left: 3px solid var(--you); padding-left: .6rem; font-size: 14px; }
.person .label { color: var(--you); border-color: var(--you); }
.req { font-size: 12px; color: var(--muted); margin: .2rem 0; }
.req:target { background: #fffbe0; }
details > summary { cursor: pointer; color: var(--muted); }
details.long > summary code { color: var(--ink); }
details.replaced { border: 1px dashed var(--muted); border-radius: 4px; padding: .3rem .6rem; background: var(--soft); }
details.replaced > summary { font-weight: 600; }
.cut { border-top: 2px dashed var(--ink); margin: 1rem 0 .5rem; padding-top: .2rem; font-weight: 600; }
.compaction { border: 2px solid var(--ink); border-radius: 4px; padding: .5rem .8rem; margin: 1rem 0; }
.subagent { border: 1px solid #8e6bbf; border-radius: 4px; padding: .3rem .6rem; margin: .4rem 0 .2rem; }
.subagent.missing { border-style: dashed; color: var(--error); }
.subagent > summary { color: var(--ink); }
.report { margin: .3rem 0 .1rem 1rem; padding-left: .6rem; border-left: 3px solid #8e6bbf; color: var(--ink);
  white-space: pre-line; }
.summary { border-left: 3px solid var(--ink); padding-left: .6rem; }
.part.packed { border: 1px dashed var(--line); border-radius: 4px; margin: .8rem 0; padding: 0 .8rem; }
.part-note { color: var(--muted); }
.part-cut { color: var(--not-run); font-size: 13px; }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  .toolbar, #tip, .part-note button { display: none; }
  .msg, .call, .result { break-inside: avoid-page; }
  details > summary::after { content: " (folded on screen)"; font-style: italic; }
  details:not([open]) > summary::after { content: " (folded: open it on screen to read it)"; }
  .part.packed .part-note::after { content: " (not shown on screen yet, so not printed)"; font-style: italic; }
  a { color: inherit; text-decoration: none; }
}
`;

const SCRIPT = `
'use strict';
const tip = document.getElementById('tip');
const barOf = (target) => (target instanceof Element ? target.closest('.bar') : null);

// A bar's numbers, shown above it while it is hovered or focused.
function showTip(bar) {
  tip.textContent = bar.getAttribute('data-tip');
  tip.hidden = false;
  const box = bar.getBoundingClientRect();
  tip.style.left = Math.max(4, window.scrollX + box.left + box.width / 2 - tip.offsetWidth / 2) + 'px';
  tip.style.top = Math.max(4, window.scrollY + box.top - tip.offsetHeight - 6) + 'px';
}
document.addEventListener('mouseover', (event) => {
  const bar = barOf(event.target);
  if (bar) showTip(bar);
  else tip.hidden = true;
});
document.addEventListener('focusin', (event) => {
  const bar = barOf(event.target);
  if (bar) showTip(bar);
});
document.addEventListener('focusout', () => (tip.hidden = true));

// A packed part of the transcript: gzipped markup, rendered by the exporter (escaped there), unpacked when needed.
const unpacking = new Map();
function unpack(part) {
  if (!unpacking.has(part)) unpacking.set(part, unpackNow(part));
  return unpacking.get(part);
}
async function unpackNow(part) {
  const data = part.querySelector(':scope > script.packed');
  if (!data) return;
  try {
    const bytes = Uint8Array.from(atob(data.textContent), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    part.innerHTML = await new Response(stream).text();
  } catch (error) {
    part.querySelector('.part-note').textContent = 'This part could not be shown here: ' + error;
    return;
  }
  part.classList.remove('packed');
  part.style.minHeight = '';
}
// Each packed part keeps about the room it will take, and is unpacked as it comes near the screen.
const near = new IntersectionObserver(
  (seen) => {
    for (const entry of seen)
      if (entry.isIntersecting) {
        near.unobserve(entry.target);
        unpack(entry.target);
      }
  },
  { rootMargin: '1500px 0px' },
);
for (const part of document.querySelectorAll('.part.packed')) {
  const [first, last] = (part.dataset.m || '0 0').split(' ').map(Number);
  part.style.minHeight = Math.min(200000, (last - first + 1) * 90) + 'px';
  near.observe(part);
}
for (const button of document.querySelectorAll('button[data-unpack]'))
  button.addEventListener('click', () => unpack(button.closest('.part')));

// The part that holds an anchor of the session's own (not a sub-agent's): by the ranges each part lists.
function partOf(id) {
  const match = /^(m|r|k|cut)-([0-9]+)$/.exec(id);
  if (!match) return null;
  const key = match[1] === 'cut' ? 'c' : match[1];
  const n = Number(match[2]);
  for (const part of document.querySelectorAll('.part[data-' + key + ']')) {
    const [first, last] = part.dataset[key].split(' ').map(Number);
    if (first <= n && n <= last) return part;
  }
  return null;
}

// A link into a packed part unpacks it; a link into a folded part opens the folds around its target.
async function reveal() {
  const id = decodeURIComponent(location.hash.slice(1));
  if (!id) return;
  if (!document.getElementById(id)) {
    const part = partOf(id);
    if (part) await unpack(part);
  }
  const target = document.getElementById(id);
  if (!target) return;
  for (let fold = target.closest('details'); fold; fold = fold.parentElement && fold.parentElement.closest('details'))
    fold.open = true;
  target.scrollIntoView();
}
window.addEventListener('hashchange', reveal);
reveal();

// The toolbar's buttons; and printing opens every fold, then closes again the ones it opened.
for (const button of document.querySelectorAll('button[data-fold]'))
  button.addEventListener('click', () => {
    for (const fold of document.querySelectorAll('details')) fold.open = button.dataset.fold === 'open';
  });
let openedForPrint = [];
window.addEventListener('beforeprint', () => {
  openedForPrint = [...document.querySelectorAll('details:not([open])')];
  for (const fold of openedForPrint) fold.open = true;
});
window.addEventListener('afterprint', () => {
  for (const fold of openedForPrint) fold.open = false;
});
`;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/** Prevents anything but the page's own stylesheet and script from running or loading, even if an escape
 *  were ever missed: no other script, style, image, frame, font, form target or connection is allowed. */
const CSP = [
  "default-src 'none'",
  `style-src ${sha256(STYLE)}`,
  `script-src ${sha256(SCRIPT)}`,
  "img-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');
