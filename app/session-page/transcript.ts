// session-page/transcript.ts — the transcript as the model saw it, entry by entry in file order: each message
// with an anchor (`#m-12`), each call with its arguments, each result (errors and "not run" answers marked, long
// ones folded), the gate's "not done" verdicts, steering, each request's usage, each compaction (the part it
// replaced folded and marked, the cut where the verbatim part starts), each halt, and each sub-agent's session
// nested under the `task` call that started it.

import { describeHalt, type Halt } from '../../agent.ts';
import { exitCodeFor } from '../terminal.ts';
import { requestCost } from './chart.ts';
import { clip, count, dollars, type Fragment, html, type Html, safeId } from './html.ts';
import { renderMarkdown } from './markdown.ts';
import type { Block, CompactionInfo, Entry, Message, Request, SessionRecord, SubAgentLink } from './read.ts';

export interface TranscriptOptions {
  /** Prefixes every anchor: '' for the session, 'task-1-' for its first sub-agent. */
  idPrefix: string;
  /** The most characters of any one text the page shows (see `clip`). */
  textCap: number;
  model: string;
  /** Renders a linked sub-agent's session where its `task` call is shown. */
  renderSubSession: (session: SessionRecord, idPrefix: string) => Html;
}

/** Everything a part of the transcript needs to know about the rest of it. */
interface Context extends TranscriptOptions {
  callNames: Map<string, string>;
  subAgentOfCall: Map<string, SubAgentLink>;
  compactions: CompactionInfo[];
  taskNumbers: Map<number, number>;
}

/** Above this many lines or characters a text is folded; it can still be opened, and prints opened. */
const FOLD = { lines: 12, chars: 1_200 };
const GATE_VERDICT = /^The task is not done/;
const NOT_RUN = /^(not run|skipped|not executed)\b/;

export function renderTranscript(session: SessionRecord, options: TranscriptOptions): Html {
  const ctx: Context = {
    ...options,
    callNames: callNamesOf(session.messages),
    subAgentOfCall: matchSubAgents(session.entries),
    compactions: session.entries.flatMap((entry) => (entry.type === 'compaction' ? [entry.compaction] : [])),
    taskNumbers: new Map(tasksOf(session).map((task, i) => [task.message.index, i + 1])),
  };
  return html`<div class="transcript">${foldReplacedParts(session.entries, ctx)}</div>`;
}

/** The tasks of a session: each starts with a user message of plain text that is not the gate's answer,
 *  and ends with the next halt (none when the process ended first). */
export function tasksOf(session: SessionRecord): { message: Message; halt: Halt | null }[] {
  const tasks: { message: Message; halt: Halt | null }[] = [];
  for (const entry of session.entries) {
    if (entry.type === 'message' && isTaskStart(entry.message)) tasks.push({ message: entry.message, halt: null });
    const current = tasks.at(-1);
    if (entry.type === 'halt' && current && current.halt === null) current.halt = entry.halt;
  }
  return tasks;
}

const isTaskStart = (message: Message) =>
  message.role === 'user' && message.blocks.every((block) => block.kind === 'text') && !isGateVerdict(message);

const isGateVerdict = (message: Message) => {
  const first = message.blocks[0];
  return message.role === 'user' && first?.kind === 'text' && GATE_VERDICT.test(first.text);
};

/** The plain text of a message, as a task is shown in the page's header. */
export const textOf = (message: Message) =>
  message.blocks.map((block) => (block.kind === 'text' ? block.text : '')).join('\n');

function callNamesOf(messages: Message[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const message of messages)
    for (const block of message.blocks) if (block.kind === 'call') names.set(block.id, block.name);
  return names;
}

/** Which `task` call started which sub-agent. Sub-agents are numbered in start order, and a call that was
 *  refused starts none, so each sub-agent is matched to the earliest unmatched `task` call before it with the
 *  same description (or, failing that, the earliest unmatched one). */
function matchSubAgents(entries: Entry[]): Map<string, SubAgentLink> {
  const matched = new Map<string, SubAgentLink>();
  const open: { id: string; description: unknown }[] = [];
  for (const entry of entries) {
    if (entry.type === 'message')
      for (const block of entry.message.blocks)
        if (block.kind === 'call' && block.name === 'task')
          open.push({ id: block.id, description: descriptionOf(block.input) });
    if (entry.type !== 'subagent') continue;
    const at = open.findIndex((call) => call.description === entry.subagent.description);
    const [call] = open.splice(at === -1 ? 0 : at, 1);
    if (call) matched.set(call.id, entry.subagent);
  }
  return matched;
}

const descriptionOf = (input: unknown) =>
  typeof input === 'object' && input !== null && 'description' in input ? input.description : undefined;

// --- The order on the page: entries as in the file, runs of replaced messages folded together.

/** The compaction whose summary replaced message `index`, if any. */
function replacedBy(index: number, ctx: Context): CompactionInfo | null {
  return ctx.compactions.find((c) => c.replacedFrom <= index && index < c.keptFrom) ?? null;
}

interface Fold {
  by: CompactionInfo;
  first: number;
  last: number;
  parts: Fragment[];
}

/** The entries in file order; each run of messages one summary replaced (with whatever came between them)
 *  goes into one fold, and the cut marker goes in front of the first message kept verbatim. */
function foldReplacedParts(entries: Entry[], ctx: Context): Fragment[] {
  const page: Fragment[] = [];
  let fold: Fold | null = null;
  for (const entry of entries) {
    if (entry.type === 'message') {
      const index = entry.message.index;
      const by = replacedBy(index, ctx);
      if (fold && by !== fold.by) {
        page.push(renderFold(fold));
        fold = null;
      }
      if (by && !fold) fold = { by, first: index, last: index, parts: [] };
      if (fold) fold.last = index;
      const cuts = ctx.compactions.filter((c) => c.keptFrom === index).map((c) => renderCut(c, ctx));
      (fold?.parts ?? page).push(cuts);
    }
    (fold?.parts ?? page).push(renderEntry(entry, ctx));
  }
  if (fold) page.push(renderFold(fold));
  return page;
}

function renderFold(fold: Fold): Html {
  return html`<details class="replaced">
    <summary>
      Messages #${fold.first}–#${fold.last}: replaced by the summary of compaction ${fold.by.number} (request
      ${fold.by.request.number}); from then on the model saw only the summary of them
    </summary>
    ${fold.parts}
  </details>`;
}

function renderCut(compaction: CompactionInfo, ctx: Context): Html {
  const p = ctx.idPrefix;
  return html`<div class="cut" id="${p}cut-${compaction.number}">
    ✂ compaction ${compaction.number}: the verbatim part starts here. After it, the model saw
    <a href="#${p}k-${compaction.number}">the summary</a>, then the messages from #${compaction.keptFrom} on, word for
    word.
  </div>`;
}

function renderEntry(entry: Entry, ctx: Context): Html {
  switch (entry.type) {
    case 'message':
      return renderMessage(entry.message, ctx);
    case 'usage':
      return renderRequest(entry.request, ctx);
    case 'compaction':
      return renderCompaction(entry.compaction, ctx);
    case 'subagent':
      return [...ctx.subAgentOfCall.values()].includes(entry.subagent)
        ? html``
        : renderSubAgent(entry.subagent, ctx, 'its task call is not in this transcript');
    case 'halt':
      return html`<div class="halt ${entry.halt.kind}">
        halt: ${describeHalt(entry.halt)} · exit code ${exitCodeFor(entry.halt)}
      </div>`;
  }
}

// --- Messages

function renderMessage(message: Message, ctx: Context): Html {
  const id = `${ctx.idPrefix}m-${message.index}`;
  const task = ctx.taskNumbers.get(message.index);
  const who =
    message.role === 'assistant'
      ? 'assistant'
      : task !== undefined
        ? `task ${task}`
        : isGateVerdict(message)
          ? 'gate'
          : 'user';
  const kind = who.split(' ')[0]!;
  const blocks =
    message.role === 'assistant'
      ? message.blocks.map((b) => renderAssistantBlock(b, ctx))
      : renderUserBlocks(message, ctx);
  return html`<section class="msg ${message.role}${kind === message.role ? '' : ` ${kind}`}" id="${id}">
    <header><a class="anchor" href="#${id}">#${message.index}</a> <span class="who">${who}</span></header>
    ${blocks}
  </section>`;
}

function renderAssistantBlock(block: Block, ctx: Context): Html {
  switch (block.kind) {
    case 'text':
      return html`<div class="reply">${renderMarkdown(clip(block.text, ctx.textCap))}</div>`;
    case 'thinking':
      return html`<details class="thinking">
        <summary>thinking</summary>
        <pre>${clip(block.text, ctx.textCap)}</pre>
      </details>`;
    case 'call':
      return renderCall(block, ctx);
    default:
      return renderOtherBlock(block);
  }
}

/** A user message: the task or the gate's verdict first, then the results, then anything typed meanwhile. */
function renderUserBlocks(message: Message, ctx: Context): Fragment[] {
  const gate = isGateVerdict(message);
  const hasResults = message.blocks.some((block) => block.kind === 'result');
  return message.blocks.map((block, i) => {
    if (block.kind === 'result') return renderResult(block, ctx);
    if (block.kind !== 'text') return renderOtherBlock(block);
    if (gate && i === 0) return renderGateVerdict(block.text, ctx);
    if (gate || hasResults)
      return html`<div class="steer">
        <span class="label">steering</span> typed while the agent worked:
        <pre class="user-text">${clip(block.text, ctx.textCap)}</pre>
      </div>`;
    return html`<pre class="user-text">${clip(block.text, ctx.textCap)}</pre>`;
  });
}

function renderGateVerdict(text: string, ctx: Context): Html {
  const [first = '', ...rest] = text.split('\n');
  return html`<div class="gate-verdict">
    <span class="label">not done</span> ${clip(first, ctx.textCap)}
    ${rest.length > 0 && foldable(rest.join('\n').trim(), 'the check’s output', ctx)}
  </div>`;
}

function renderOtherBlock(block: Block): Html {
  return html`<p class="muted">[a ${block.kind === 'other' ? block.type : block.kind} block, not shown]</p>`;
}

// --- Calls and results

function renderCall(call: Extract<Block, { kind: 'call' }>, ctx: Context): Html {
  const subAgent = ctx.subAgentOfCall.get(call.id);
  return html`<div class="call" data-tool="${call.name}" id="${ctx.idPrefix}call-${safeId(call.id)}">
    <div class="call-head"><span class="label">call</span> <span class="tool">${call.name}</span></div>
    ${renderArguments(call.input, ctx)} ${subAgent && renderSubAgent(subAgent, ctx, null)}
  </div>`;
}

/** Each argument on its own row; a long or multi-line string (a file's new text, a prompt) as a block. */
function renderArguments(input: unknown, ctx: Context): Html {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    return html`<pre class="args">${clip(JSON.stringify(input) ?? String(input), ctx.textCap)}</pre>`;
  const rows = Object.entries(input).map(([name, value]) => {
    // An empty string shows as "", so that it does not look like a missing argument.
    const text = typeof value === 'string' && value !== '' ? value : JSON.stringify(value);
    const shown =
      typeof value === 'string' && (value.includes('\n') || value.length > 80)
        ? foldable(value, name, ctx)
        : html`<code>${clip(text, ctx.textCap)}</code>`;
    return html`<tr>
      <th>${name}</th>
      <td>${shown}</td>
    </tr>`;
  });
  return html`<table class="args">
    ${rows}
  </table>`;
}

function renderResult(result: Extract<Block, { kind: 'result' }>, ctx: Context): Html {
  const notRun = NOT_RUN.exec(result.text);
  const status = notRun ? 'not-run' : result.isError ? 'error' : 'ok';
  const label = notRun ? notRun[1]! : result.isError ? 'error' : 'result';
  const name = ctx.callNames.get(result.callId);
  const call = name
    ? html`<a href="#${ctx.idPrefix}call-${safeId(result.callId)}">${name}</a>`
    : html`an unknown call (${result.callId})`;
  const body = notRun
    ? html`<div class="why">why: ${clip(result.text.slice(notRun[0].length).replace(/^[:\s]+/, ''), ctx.textCap)}</div>`
    : foldable(result.text, `the ${label}`, ctx);
  return html`<div class="result ${status}">
    <div class="result-head"><span class="label">${label}</span> of ${call}</div>
    ${body}
  </div>`;
}

/** A text shown whole when short; folded behind a summary line when long (printing opens it). */
function foldable(text: string, what: string, ctx: Context): Html {
  if (text === '') return html`<pre class="muted">(empty)</pre>`;
  const shown = clip(text, ctx.textCap);
  const lines = text.split('\n').length;
  if (lines <= FOLD.lines && text.length <= FOLD.chars) return html`<pre>${shown}</pre>`;
  const first = (text.split('\n', 1)[0] ?? '').slice(0, 100);
  return html`<details class="long">
    <summary><code>${first}</code> … ${what}: ${count(lines)} lines, ${count(text.length)} characters</summary>
    <pre>${shown}</pre>
  </details>`;
}

// --- Requests, compactions, sub-agents

function requestLine(request: Request, ctx: Context): Fragment {
  const t = request.tokens;
  const cost = requestCost(ctx.model, t);
  return [
    html`<a href="#${ctx.idPrefix}chart">request ${request.number}</a>`,
    request.turn !== null && ` (turn ${request.turn})`,
    `: input ${count(t.uncached + t.cacheWrite + t.cacheRead)} (cache read ${count(t.cacheRead)}, `,
    `write ${count(t.cacheWrite)}), output ${count(t.output)}`,
    cost !== null && `, ${dollars(cost)}`,
  ];
}

function renderRequest(request: Request, ctx: Context): Html {
  return html`<div class="req" id="${ctx.idPrefix}r-${request.number}">${requestLine(request, ctx)}</div>`;
}

function renderCompaction(compaction: CompactionInfo, ctx: Context): Html {
  const p = ctx.idPrefix;
  const { number, replacedFrom, keptFrom, request } = compaction;
  return html`<section class="compaction" id="${p}k-${number}">
    <header>
      <span class="label">✂ compaction ${number}</span>
      <span class="req" id="${p}r-${request.number}">${requestLine(request, ctx)}</span>
    </header>
    <p>
      Messages #${replacedFrom}–#${keptFrom - 1} (folded above, marked “replaced”) were summarised. Then the model saw
      this summary, and the messages from <a href="#${p}cut-${number}">#${keptFrom}</a> on, word for word.
    </p>
    <div class="summary">
      <span class="label">summary</span> ${renderMarkdown(clip(compaction.summary, ctx.textCap))}
    </div>
  </section>`;
}

function renderSubAgent(link: SubAgentLink, ctx: Context, note: string | null): Html {
  const prefix = `${ctx.idPrefix}${safeId(link.id)}-`;
  const title = html`<span class="label">sub-agent ${link.id}</span> ${link.description}`;
  if (link.session === null)
    return html`<div class="subagent missing">
      <p>${title}: ${link.problem ?? 'not read'} <code>${link.file}</code>.</p>
    </div>`;
  const { session } = link;
  const halt = session.entries.findLast((entry) => entry.type === 'halt');
  return html`<details class="subagent" id="${prefix}session">
    <summary>
      ${title} (${session.messages.length} messages, ${session.requests.length} requests,
      ${halt ? describeHalt(halt.halt) : 'no halt recorded'})${note && ` — ${note}`}
    </summary>
    ${ctx.renderSubSession(session, prefix)}
  </details>`;
}
