// session-page/page.ts — the page around the transcript: the header (tasks and how each ended, model, root,
// start time, warnings), the chart, the stylesheet and the small script (tooltips, folds, printing), under a
// Content-Security-Policy that lets the page run its own inline code and nothing else.

import { createHash } from 'node:crypto';
import path from 'node:path';
import { DEFAULT_CONTEXT_WINDOW, describeHalt } from '../../agent.ts';
import { exitCodeFor } from '../terminal.ts';
import { renderChart } from './chart.ts';
import { count, html, type Html, trusted } from './html.ts';
import type { SessionRecord } from './read.ts';
import { renderTranscript, tasksOf, textOf } from './transcript.ts';

/** agent.ts compacts when a request would pass this share of the window (`compactAt`'s default). */
const COMPACT_AT = 0.75;

/** The page must stay easy to open and to send: texts are cut shorter until it fits. */
export const PAGE_MAX_BYTES = 5_000_000;
/** The longest any one text is shown, tried in turn until the page fits; the first is the usual one. */
const TEXT_CAPS = [20_000, 4_000, 1_000, 250];

export interface PageOptions {
  /** The context window the session ran with, for the chart: format 1 does not record it. */
  contextWindow?: number;
}

export interface RenderedPage {
  page: string;
  /** What the page could not show, from every session in it; also written on the page. */
  warnings: string[];
}

/** Renders the page, cutting long texts shorter (and saying so) until it is under PAGE_MAX_BYTES. */
export function renderPage(session: SessionRecord, options: PageOptions = {}): RenderedPage {
  const warnings = allWarnings(session);
  let page = '';
  for (const cap of TEXT_CAPS) {
    const note =
      cap === TEXT_CAPS[0]
        ? []
        : [
            `to stay under ${PAGE_MAX_BYTES / 1_000_000} MB, ` +
              `the page shows at most ${count(cap)} characters of any text`,
          ];
    page = renderWithCap(session, { ...options, textCap: cap, notes: note });
    if (Buffer.byteLength(page) <= PAGE_MAX_BYTES) return { page, warnings: [...warnings, ...note] };
  }
  const size = (Buffer.byteLength(page) / 1_000_000).toFixed(1);
  return { page, warnings: [...warnings, `the page is ${size} MB even with every text cut short`] };
}

function allWarnings(session: SessionRecord): string[] {
  const children = session.entries.flatMap((entry) =>
    entry.type === 'subagent' && entry.subagent.session ? allWarnings(entry.subagent.session) : [],
  );
  return [...session.warnings, ...children];
}

/** How one rendering goes: the longest text shown, and notes about the page for its warnings list. */
interface RenderOptions extends PageOptions {
  textCap: number;
  notes: string[];
}

function renderWithCap(session: SessionRecord, options: RenderOptions): string {
  const name = path.basename(session.file);
  const firstTask = tasksOf(session)[0];
  const title = `Session ${name}${firstTask ? ` — ${headline(textOf(firstTask.message), 80)}` : ''}`;
  const body = html`<header class="page-head">
      <h1>Session <code>${name}</code></h1>
      ${renderMeta(session, windowOf(session, options))}
    </header>
    <nav class="toolbar">
      <button type="button" data-fold="open">open every fold</button>
      <button type="button" data-fold="close">close every fold</button>
    </nav>
    ${renderSessionBody(session, '', options)}
    <div id="tip" role="tooltip" hidden></div>`;
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
        ${body} ${trusted(`<script>${SCRIPT}</script>`)}
      </body>
    </html> `.markup;
}

/** The window to draw: the one given, else the one the session records, else the harness's default. */
function windowOf(session: SessionRecord, options: PageOptions): { tokens: number; source: string } {
  if (options.contextWindow !== undefined) return { tokens: options.contextWindow, source: 'as given for this page' };
  if (session.header?.contextWindow) return { tokens: session.header.contextWindow, source: 'as the session records' };
  return { tokens: DEFAULT_CONTEXT_WINDOW, source: 'the default: the session does not record it' };
}

function renderMeta(session: SessionRecord, window: { tokens: number; source: string }): Html {
  const header = session.header;
  if (header === null) return html`<p class="muted">No session header: model, root and start time unknown.</p>`;
  return html`<dl class="meta">
    <dt>model</dt>
    <dd>${header.model}</dd>
    <dt>project root</dt>
    <dd><code>${header.root}</code></dd>
    <dt>started</dt>
    <dd>${header.startedAt}</dd>
    <dt>context window</dt>
    <dd>${count(window.tokens)} tokens (${window.source})</dd>
    <dt>format</dt>
    <dd>session format ${header.version ?? '(none given)'}</dd>
  </dl>`;
}

/** What the page and each nested sub-agent show: tasks, warnings, chart, transcript. A sub-agent runs with
 *  its parent's window. */
function renderSessionBody(session: SessionRecord, idPrefix: string, options: RenderOptions): Html {
  const model = session.header?.model ?? '(unknown model)';
  const contextWindow = windowOf(session, options).tokens;
  return html`${renderTasks(session, idPrefix)} ${renderWarnings([...session.warnings, ...options.notes])}
    <h2>Requests</h2>
    ${renderChart(session.requests, { model, contextWindow, compactAt: COMPACT_AT, idPrefix })}
    <h2>Transcript</h2>
    ${renderTranscript(session, {
      idPrefix,
      textCap: options.textCap,
      model,
      renderSubSession: (child, childPrefix) =>
        renderSessionBody(child, childPrefix, { ...options, contextWindow, notes: [] }),
    })}`;
}

/** The start of a task, for the title and the list at the top; the transcript has it whole. */
const headline = (text: string, chars: number) => (text.length > chars ? `${text.slice(0, chars)}…` : text);

/** Each task: the first user message, linked to its place, and how it ended with the exit code it gave. */
function renderTasks(session: SessionRecord, idPrefix: string): Html {
  const tasks = tasksOf(session);
  if (tasks.length === 0) return html`<p class="muted">No task was recorded.</p>`;
  const items = tasks.map(
    ({ message, halt }) =>
      html`<li>
        <a href="#${idPrefix}m-${message.index}">${headline(textOf(message), 300)}</a> ${
          halt
            ? html`<span class="halt ${halt.kind}">${describeHalt(halt)} · exit code ${exitCodeFor(halt)}</span>`
            : html`<span class="halt none">no halt recorded: the process ended before the task did</span>`
        }
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

// --- The page's own code: a stylesheet and a script, allowed by their hashes and nothing else.

const STYLE = `
:root { color-scheme: light; --ink: #1d2430; --muted: #647084; --line: #d8dde6; --paper: #fff; --soft: #f5f7fa;
  --uncached: #4e79a7; --cacheWrite: #f28e2b; --cacheRead: #59a14f; --output: #8e6bbf;
  --error: #b3261e; --not-run: #8a5a00; --ok: #2e6b34; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, sans-serif; color: var(--ink); background: var(--paper); margin: 0 auto;
  padding: 1.5rem; max-width: 1100px; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; } h2 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; }
code, pre { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--soft); border: 1px solid var(--line);
  border-radius: 4px; padding: .5rem .75rem; margin: .25rem 0; }
a { color: #1f5fbf; }
.muted { color: var(--muted); }
.meta { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; margin: 0; }
.meta dt { color: var(--muted); } .meta dd { margin: 0; overflow-wrap: anywhere; }
.tasks li { margin: .25rem 0; overflow-wrap: anywhere; }
.halt { font-weight: 600; }
.halt.accepted { color: var(--ok); } .halt.budget, .halt.error, .halt.none { color: var(--error); }
.halt.interrupted { color: var(--not-run); }
div.halt { border-top: 2px solid currentColor; padding: .25rem 0; margin: .75rem 0; }
.warnings { border: 1px solid var(--not-run); background: #fff8e6; border-radius: 4px; padding: 0 1rem; }
.toolbar { position: sticky; top: 0; background: var(--paper); padding: .4rem 0; z-index: 1;
  border-bottom: 1px solid var(--line); }
.chart { margin: 0; } .chart-scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 4px; }
.requests text { font: 11px system-ui, sans-serif; fill: var(--muted); }
.requests .tick { text-anchor: end; } .requests .tick-x, .requests .cut-mark { text-anchor: middle; }
.requests .grid { stroke: var(--line); }
.requests .window { stroke: var(--error); stroke-width: 1.5; }
.requests .threshold { stroke: var(--not-run); stroke-width: 1.5; stroke-dasharray: 6 4; }
.requests .window-label { fill: var(--error); } .requests .threshold-label { fill: var(--not-run); }
.requests .cost { fill: none; stroke: var(--ink); stroke-width: 1.5; stroke-dasharray: 2 2; }
.requests .cut-mark { fill: var(--ink); font-size: 13px; }
.uncached { fill: var(--uncached); } .cacheWrite { fill: var(--cacheWrite); }
.cacheRead { fill: var(--cacheRead); } .output { fill: var(--output); }
.bar .hit { fill: transparent; }
.bar:hover .hit, .bar:focus .hit { fill: rgba(31, 95, 191, .12); }
.bar.compaction rect:not(.hit) { stroke: var(--ink); stroke-width: 1; }
.bar:focus { outline: none; } .bar:focus-visible .hit { stroke: #1f5fbf; stroke-width: 2; }
figcaption { font-size: 13px; color: var(--muted); margin: .3rem 0; }
.legend .key { margin-right: .8rem; white-space: nowrap; } .legend svg { vertical-align: -1px; }
#tip { position: absolute; z-index: 2; white-space: pre-line; background: var(--ink); color: #fff; font-size: 12px;
  padding: .35rem .55rem; border-radius: 4px; pointer-events: none; max-width: 420px; }
.msg { border-left: 3px solid var(--line); padding: .2rem 0 .2rem .8rem; margin: .8rem 0; }
.msg > header { font-size: 12px; color: var(--muted); }
.msg .anchor { color: var(--muted); text-decoration: none; margin-right: .4rem; }
.msg .who { font-weight: 600; text-transform: uppercase; letter-spacing: .03em; }
.msg.assistant { border-color: #8e6bbf; } .msg.task { border-color: #1f5fbf; } .msg.gate { border-color: var(--error); }
.msg:target { background: #fffbe0; }
pre.user-text { font: inherit; background: none; border: 0; padding: 0; }
.reply p { margin: .3rem 0; }
.label { font-size: 11px; font-weight: 700; text-transform: uppercase; letter-spacing: .04em; border-radius: 3px;
  padding: 0 .35rem; background: var(--soft); border: 1px solid var(--line); }
.call { border: 1px solid var(--line); border-radius: 4px; padding: .4rem .6rem; margin: .4rem 0; }
.call .tool { font-weight: 600; font-family: ui-monospace, monospace; }
table.args { border-collapse: collapse; margin-top: .25rem; width: 100%; }
table.args th { text-align: left; vertical-align: top; color: var(--muted); font-weight: 500; padding-right: .8rem;
  width: 1%; white-space: nowrap; }
table.args td { overflow-wrap: anywhere; }
.result { margin: .4rem 0; } .result.error .label { color: var(--error); border-color: var(--error); }
.result.not-run .label { color: var(--not-run); border-color: var(--not-run); }
.result.error pre { border-color: var(--error); }
.why { color: var(--not-run); }
.gate-verdict .label, .steer .label { color: var(--error); border-color: var(--error); }
.steer { margin: .5rem 0; border-left: 3px solid #1f5fbf; padding-left: .6rem; }
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
.subagent h2 { font-size: 1rem; }
.summary { border-left: 3px solid var(--ink); padding-left: .6rem; }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  .toolbar, #tip { display: none; }
  .chart-scroll { overflow: visible; border: 0; }
  .msg, .call, .result { break-inside: avoid-page; }
  details > summary::after { content: " (folded on screen)"; font-style: italic; }
  details:not([open]) > summary::after { content: " (folded: open it on screen to read it)"; }
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

// A link into a folded part opens the folds around its target.
function reveal() {
  const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
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
