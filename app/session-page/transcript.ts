// session-page/transcript.ts — the transcript as the model saw it, entry by entry in file order: each message with an
// anchor (`#m-12`) and the time it was written, each call with its arguments (an edit as a diff) and how it was
// approved, each result with how long its call ran (errors and "not run" answers marked, long ones folded), the
// gate's "not done" verdicts with the lines of the check's output that say why, what the person typed and when they
// pressed Ctrl-C, each request's usage and duration, each compaction (the part it replaced folded and marked, the cut
// where the verbatim part starts), each halt, and each sub-agent's session nested under the `task` call that started
// it, ending with the report it gave back. The page renders it part by part (see page.ts): everything here renders
// one list of entries, with what it needs of the rest of the session in the context.

import { structuredPatch } from 'diff';
import { describeCall } from 'reference-harness/tools';
import { exitCodeFor } from '../terminal.ts';
import { requestCost } from './chart.ts';
import { clip, clock, count, dollars, duration, type Fragment, html, type Html, safeId } from './html.ts';
import { renderMarkdown } from './markdown.ts';
import {
  type Approval,
  type Block,
  type CompactionInfo,
  type Entry,
  isGateVerdict,
  type Message,
  type Request,
  type SessionOutline,
  type SubAgentOutline,
} from './read.ts';
import { type Halt, type Price, type Tool } from '../harness.ts';
import { describeHalt } from '../describe-halt.ts';

/** Everything a part of the transcript needs to know about the rest of the session. */
export interface TranscriptContext {
  /** The tools whose calls are said in words, and marked as approved if they change files. */
  tools: readonly Tool[];
  /** Prefixes every anchor: '' for the session, 'task-1-' for its first sub-agent. */
  idPrefix: string;
  /** The most characters of any one text the page shows (see `clip`). */
  textCap: number;
  outline: SessionOutline;
  price: Price | undefined;
  /** Each task's first message, by index, and its number. */
  taskNumbers: Map<number, number>;
  /** The calls seen so far whose results may still come, by id: a result names its call. */
  calls: Map<string, { name: string }>;
  subAgentOfCall: Map<string, SubAgentOutline>;
  /** The sessions of the sub-agents in the entries being rendered, rendered already, by sub-agent id. */
  nested: Map<string, Html>;
  /** When the session started (ms since 1970): times are shown from there. */
  startAt: number | null;
  /** A sub-agent's session: it ends by reporting back, not through the gate, and has no exit code. */
  subAgent: boolean;
}

/** A context for rendering `outline`'s entries; `calls` and `nested` are filled as they are rendered. */
export function transcriptContext(
  outline: SessionOutline,
  options: Pick<TranscriptContext, 'tools' | 'idPrefix' | 'textCap' | 'price' | 'subAgent'>,
): TranscriptContext {
  return {
    ...options,
    outline,
    taskNumbers: new Map(outline.tasks.map((task, i) => [task.index, i + 1])),
    calls: new Map(),
    subAgentOfCall: new Map(outline.subAgents.flatMap((sub) => (sub.callId === null ? [] : [[sub.callId, sub]]))),
    nested: new Map(),
    startAt: startOf(outline),
  };
}

/** When a session started: its header's time, else its first timed entry's. */
const startOf = (outline: SessionOutline) => {
  const started = Date.parse(outline.header?.startedAt ?? '');
  return Number.isNaN(started) ? outline.firstAt : started;
};

/** Above this many lines or characters a text is folded; it can still be opened, and prints opened. */
const FOLD = { lines: 12, chars: 1_200 };
const NOT_RUN = /^(not run|skipped|not executed)\b/;

/** Notes every call in `entries`, so their results can name them, wherever they are rendered. */
export function noteCalls(entries: readonly Entry[], ctx: TranscriptContext): void {
  for (const entry of entries)
    if (entry.type === 'message')
      for (const block of entry.message.blocks)
        if (block.kind === 'call') ctx.calls.set(block.id, { name: block.name });
}

/** Forgets the calls answered in `entries`: what a long session keeps in memory stays small. */
export function forgetAnsweredCalls(entries: readonly Entry[], ctx: TranscriptContext): void {
  for (const entry of entries)
    if (entry.type === 'message')
      for (const block of entry.message.blocks) if (block.kind === 'result') ctx.calls.delete(block.callId);
}

// --- The order on the page: entries as in the file, runs of replaced messages folded together.

/** The compaction whose summary replaced message `index`, if any. */
function replacedBy(index: number, ctx: TranscriptContext) {
  return ctx.outline.compactions.find((c) => c.replacedFrom <= index && index < c.keptFrom) ?? null;
}

interface Fold {
  by: Omit<CompactionInfo, 'summary'>;
  first: number;
  last: number;
  parts: Fragment[];
}

/** The entries in file order; each run of messages one summary replaced (with whatever came between them) goes into
 *  one fold, and the cut marker goes in front of the first message kept verbatim. */
export function renderEntries(entries: readonly Entry[], ctx: TranscriptContext): Fragment[] {
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
      const cuts = ctx.outline.compactions.filter((c) => c.keptFrom === index).map((c) => renderCut(c, ctx));
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

function renderCut(compaction: Omit<CompactionInfo, 'summary'>, ctx: TranscriptContext): Html {
  const p = ctx.idPrefix;
  return html`<div class="cut" id="${p}cut-${compaction.number}">
    ✂ compaction ${compaction.number}: the verbatim part starts here. After it, the model saw
    <a href="#${p}k-${compaction.number}">the summary</a>, then the messages from #${compaction.keptFrom} on, word for
    word.
  </div>`;
}

/** The time since the session started, when the entry says when it was written. */
function when(at: number | null, ctx: TranscriptContext): Fragment {
  return (
    at !== null &&
    ctx.startAt !== null &&
    html`<span class="at" title="time since the session started">${clock(at - ctx.startAt)}</span>`
  );
}

function renderEntry(entry: Entry, ctx: TranscriptContext): Fragment {
  switch (entry.type) {
    case 'message':
      return renderMessage(entry.message, ctx);
    case 'usage':
      return renderRequest(entry.request, ctx);
    case 'compaction':
      return renderCompaction(entry.compaction, ctx);
    case 'subagent': {
      const sub = ctx.outline.subAgents.find((s) => s.link.id === entry.link.id);
      return sub && sub.callId === null ? renderSubAgent(sub, ctx, 'its task call is not in this transcript') : null;
    }
    case 'halt':
      return renderHalt(entry.halt, entry.at, ctx);
    case 'approval':
      // Shown with its call; an older session does not say which call it was, so it is shown where it was given.
      return (
        entry.approval.callId === null &&
        html`<div class="person">${renderApproval(entry.approval)} ${when(entry.at, ctx)}</div>`
      );
    case 'steer':
      return html`<div class="person">
        <span class="label">typed</span> during the run ${when(entry.at, ctx)}: <q>${clip(entry.text, ctx.textCap)}</q>
      </div>`;
    case 'interrupt':
      return html`<div class="person">
        <span class="label">Ctrl-C</span> the run was stopped ${when(entry.at, ctx)}
      </div>`;
    case 'session':
    case 'task': // the task's first message shows it
      return null;
  }
}

function renderHalt(halt: Halt, at: number | null, ctx: TranscriptContext): Html {
  const said = ctx.subAgent ? subAgentEnd(halt) : `${describeHalt(halt)} · exit code ${exitCodeFor(halt)}`;
  return html`<div class="halt ${halt.kind}">halt: ${said} ${when(at, ctx)}</div>`;
}

/** How a sub-agent ended, in its own terms: it reports back to the agent that started it; there is no gate. */
export function subAgentEnd(halt: Halt | null): string {
  if (halt === null) return 'no end recorded: the process ended first';
  return halt.kind === 'accepted' ? 'reported back to the agent' : `stopped: ${describeHalt(halt)}`;
}

// --- Messages

function renderMessage(message: Message, ctx: TranscriptContext): Html {
  const id = `${ctx.idPrefix}m-${message.index}`;
  const task = ctx.taskNumbers.get(message.index);
  const who =
    message.role === 'assistant'
      ? 'assistant'
      : task !== undefined
        ? ctx.subAgent
          ? 'task from the agent'
          : `task ${task}`
        : isGateVerdict(message)
          ? 'gate'
          : 'user';
  const kind = who.split(' ')[0]!;
  const blocks =
    message.role === 'assistant'
      ? message.blocks.map((b) => renderAssistantBlock(b, ctx))
      : renderUserBlocks(message, ctx);
  return html`<section class="msg ${message.role}${kind === message.role ? '' : ` ${kind}`}" id="${id}">
    <header>
      <a class="anchor" href="#${id}">#${message.index}</a> <span class="who">${who}</span> ${when(message.at, ctx)}
    </header>
    ${blocks}
  </section>`;
}

function renderAssistantBlock(block: Block, ctx: TranscriptContext): Html {
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
function renderUserBlocks(message: Message, ctx: TranscriptContext): Fragment[] {
  const gate = isGateVerdict(message);
  const hasResults = message.blocks.some((block) => block.kind === 'result');
  return message.blocks.map((block, i) => {
    if (block.kind === 'result') return renderResult(block, message.callMs.get(block.callId) ?? null, ctx);
    if (block.kind !== 'text') return renderOtherBlock(block);
    if (gate && i === 0) return renderGateVerdict(block.text, ctx);
    if (gate || hasResults)
      return html`<div class="steer">
        <span class="label">steering</span> sent to the model with these results:
        <pre class="user-text">${clip(block.text, ctx.textCap)}</pre>
      </div>`;
    return html`<pre class="user-text">${clip(block.text, ctx.textCap)}</pre>`;
  });
}

/** The harness's "not done yet" message: the verdict, then the check's output between "Its output:" and the advice. */
const VERDICT_PARTS = /^([^\n]*?)\s*Its output:\n\n([\s\S]*?)\n\n(Fix the cause[^\n]*)$/;

function renderGateVerdict(text: string, ctx: TranscriptContext): Html {
  const parts = VERDICT_PARTS.exec(text);
  const [verdict, output] = parts
    ? [parts[1]!, parts[2]!]
    : [text.split('\n', 1)[0]!, text.split('\n').slice(1).join('\n')];
  const key = keyLines(output);
  return html`<div class="gate-verdict">
    <span class="label">not done</span> ${clip(verdict, ctx.textCap)}
    ${key.length > 0 && html`<pre class="check-output">${key.join('\n')}</pre>`}
    ${output.trim() !== '' && foldable(output.trim(), 'the check’s whole output', ctx, true)}
  </div>`;
}

/** At most this many lines of a failed check's output are shown unfolded. */
const KEY_LINES = 8;
/** What a failed check prints that says nothing about why: stack frames, the source line an uncaught error points
 *  at with its caret, Node's version footer, the error's bookkeeping fields, blank lines. */
const NOISE = [
  /^\s*at\s/,
  /^\s*\^+\s*$/,
  /^Node\.js v\d/,
  /^\s*(generatedMessage|code|operator):/,
  /^\s*[{}]\s*$/,
  /^\s*\.\.\.\s*\d* (more|lines) /,
  /^\s*$/,
];
const FAILURE = /error|assert|expected|fail|not ok|✖|✗|×|!==|panic|exception/i;

/** Prevents a failed check's preview from being a stack frame (`node:internal/modules/run_main:123`): the lines that
 *  say why it failed, from the first line that names an error or an assertion, with the noise around them left out. */
export function keyLines(output: string): string[] {
  const lines = output.split('\n');
  const noise = new Set<number>();
  lines.forEach((line, i) => {
    if (NOISE.some((pattern) => pattern.test(line))) noise.add(i);
    // An uncaught error's preamble: where it was thrown (file:line), the source line, then the caret under it.
    if (/^\s*\^+\s*$/.test(line)) {
      noise.add(i - 1);
      if (/:\d+$/.test(lines[i - 2] ?? '')) noise.add(i - 2);
    }
  });
  const kept = lines.filter((_, i) => !noise.has(i));
  const first = kept.findIndex((line) => FAILURE.test(line));
  return (first === -1 ? kept.slice(-KEY_LINES) : kept.slice(first, first + KEY_LINES)).map((line) =>
    line.slice(0, 300),
  );
}

function renderOtherBlock(block: Block): Html {
  return html`<p class="muted">[a ${block.kind === 'other' ? block.type : block.kind} block, not shown]</p>`;
}

// --- Calls and results

function renderCall(call: Extract<Block, { kind: 'call' }>, ctx: TranscriptContext): Html {
  const sub = ctx.subAgentOfCall.get(call.id);
  const edit = editOf(call.input);
  return html`<div class="call" data-tool="${call.name}" id="${ctx.idPrefix}call-${safeId(call.id)}">
    <div class="call-head">
      <span class="label">call</span> <span class="tool">${describeCall(call.name, call.input, ctx.tools)}</span>
      ${approvalOf(call, ctx)}
    </div>
    ${
      changesFiles(call.name, ctx) && edit
        ? renderEdit(edit, ctx.outline.editLines.get(call.id) ?? null, ctx)
        : renderArguments(call.input, ctx)
    }
    ${sub && renderSubAgent(sub, ctx, null)}
  </div>`;
}

/** Whether a call's tool changes files (and so was approved, by someone or by --yes): a tool this program does not
 *  have is not said to. */
const changesFiles = (name: string, ctx: TranscriptContext) =>
  ctx.tools.some((tool) => tool.name === name && !tool.readOnly);

/** How a call that changes something was approved: by the person (the answer they gave), by --yes, or by nobody. */
function approvalOf(call: Extract<Block, { kind: 'call' }>, ctx: TranscriptContext): Fragment {
  const approval = ctx.outline.approvals.get(call.id);
  if (approval) return renderApproval(approval);
  if (!changesFiles(call.name, ctx)) return null;
  const mode = ctx.outline.header?.approval;
  if (mode === 'yes') return html`<span class="approval yes">approved by --yes</span>`;
  if (mode === 'deny')
    return html`<span class="approval no">denied: nobody could be asked (no terminal, no --yes)</span>`;
  return null;
}

function renderApproval(approval: Approval): Html {
  const { answer } = approval;
  if (answer.approved)
    return html`<span class="approval yes"
      >${answer.always ? `approved by you, for the rest of the session` : 'approved by you'}</span
    >`;
  return html`<span class="approval no">denied by you${answer.reason ? `: “${answer.reason}”` : ''}</span>`;
}

const editOf = (input: unknown) => {
  if (typeof input !== 'object' || input === null) return null;
  const { path, old_str, new_str } = input as Record<string, unknown>;
  return typeof path === 'string' && typeof old_str === 'string' && typeof new_str === 'string'
    ? { path, oldText: old_str, newText: new_str }
    : null;
};

/** An edit as a diff of what it replaced: removed lines, added lines, with the file's line numbers when the result
 *  said where the edit landed. A long diff is folded. */
function renderEdit(
  edit: { path: string; oldText: string; newText: string },
  line: number | null,
  ctx: TranscriptContext,
): Html {
  const withNewline = (text: string) => (text === '' || text.endsWith('\n') ? text : `${text}\n`);
  const oldText = clip(withNewline(edit.oldText), ctx.textCap);
  const newText = clip(withNewline(edit.newText), ctx.textCap);
  const { hunks } = structuredPatch(edit.path, edit.path, oldText, newText, '', '', { context: 3 });
  const offset = (line ?? 1) - 1;
  let added = 0;
  let removed = 0;
  const rows: Fragment[] = [];
  const ln = (n: number | null) => html`<span class="ln">${n}</span>`;
  for (const [h, hunk] of hunks.entries()) {
    if (h > 0) rows.push(html`<span class="gap">⋯</span>`);
    let [before, after] = [hunk.oldStart + offset, hunk.newStart + offset];
    for (const text of hunk.lines) {
      const sign = text[0];
      if (sign === '\\') continue; // "no newline at end of file": the snippet's end, not the file's
      const kind = sign === '-' ? 'del' : sign === '+' ? 'add' : 'same';
      if (kind === 'del') removed++;
      if (kind === 'add') added++;
      const [oldLine, newLine] = [kind === 'add' ? null : before++, kind === 'del' ? null : after++];
      rows.push(html`<span class="${kind}">${ln(oldLine)}${ln(newLine)}${sign}${text.slice(1)}</span>`);
    }
  }
  const created = edit.oldText === '';
  const head = html`<div class="diff-head">
    <code>${edit.path}</code> ${created ? 'new file, ' : ''}<span class="added">+${added}</span>
    <span class="removed">−${removed}</span>${line === null && !created ? ' (line numbers within the edit)' : ''}
  </div>`;
  const diff = html`<pre class="diff">${rows}</pre>`;
  if (added + removed <= FOLD.lines * 2) return html`${head}${diff}`;
  return html`${head}
    <details class="long">
      <summary>the diff: ${count(added + removed)} lines changed</summary>
      ${diff}
    </details>`;
}

/** Each argument on its own row; a long or multi-line string (a file's new text, a prompt) as a block. */
function renderArguments(input: unknown, ctx: TranscriptContext): Html {
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

function renderResult(result: Extract<Block, { kind: 'result' }>, ms: number | null, ctx: TranscriptContext): Html {
  const notRun = NOT_RUN.exec(result.text);
  const status = notRun ? 'not-run' : result.isError ? 'error' : 'ok';
  const label = notRun ? notRun[1]! : result.isError ? 'error' : 'result';
  const name = ctx.calls.get(result.callId)?.name;
  const call = name
    ? html`<a href="#${ctx.idPrefix}call-${safeId(result.callId)}">${name}</a>`
    : html`an unknown call (${result.callId})`;
  const body = notRun
    ? html`<div class="why">why: ${clip(result.text.slice(notRun[0].length).replace(/^[:\s]+/, ''), ctx.textCap)}</div>`
    : foldable(result.text, `the ${label}`, ctx);
  return html`<div class="result ${status}">
    <div class="result-head">
      <span class="label">${label}</span> of
      ${call}${ms !== null && html` <span class="took">· ran ${duration(ms)}</span>`}
    </div>
    ${body}
  </div>`;
}

/** A text shown whole when short; folded behind a summary line when long (printing opens it). `folded`: always. */
function foldable(text: string, what: string, ctx: TranscriptContext, folded = false): Html {
  if (text === '') return html`<pre class="muted">(empty)</pre>`;
  const shown = clip(text, ctx.textCap);
  const lines = text.split('\n').length;
  if (!folded && lines <= FOLD.lines && text.length <= FOLD.chars) return html`<pre>${shown}</pre>`;
  const first = folded ? '' : (text.split('\n', 1)[0] ?? '').slice(0, 100);
  return html`<details class="long">
    <summary>
      ${first && html`<code>${first}</code> … `}${what}: ${count(lines)} lines, ${count(text.length)} characters
    </summary>
    <pre>${shown}</pre>
  </details>`;
}

// --- Requests, compactions, sub-agents

function requestLine(request: Request, ctx: TranscriptContext): Fragment {
  const t = request.tokens;
  const cost = requestCost(ctx.price, t);
  return [
    html`<a href="#${ctx.idPrefix}chart">request ${request.number}</a>`,
    request.turn !== null && ` (turn ${request.turn})`,
    request.ms !== null && `, ${duration(request.ms)}`,
    `: input ${count(t.uncached + t.cacheWrite + t.cacheRead)} (cache read ${count(t.cacheRead)}, `,
    `write ${count(t.cacheWrite)}), output ${count(t.output)}`,
    cost !== null && `, ${dollars(cost)}`,
  ];
}

function renderRequest(request: Request, ctx: TranscriptContext): Html {
  return html`<div class="req" id="${ctx.idPrefix}r-${request.number}">${requestLine(request, ctx)}</div>`;
}

function renderCompaction(compaction: CompactionInfo, ctx: TranscriptContext): Html {
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

/** A sub-agent's session, folded under the call that started it: its summary line says how it ended, in its own
 *  terms, and quotes the start of the report it gave back. */
function renderSubAgent(sub: SubAgentOutline, ctx: TranscriptContext, note: string | null): Html {
  const { link, session } = sub;
  const title = html`<span class="label">sub-agent ${link.id}</span> ${link.description}`;
  if (session === null)
    return html`<div class="subagent missing">
      <p>${title}: ${link.problem ?? 'not read'} <code>${link.file}</code>.</p>
    </div>`;
  const lasted =
    session.firstAt !== null && session.lastAt !== null ? `, ${duration(session.lastAt - session.firstAt)}` : '';
  const report = session.lastHalt?.kind === 'accepted' ? session.lastReply : '';
  return html`<details class="subagent" id="${ctx.idPrefix}${safeId(link.id)}-session">
    <summary>
      ${title} (${session.messages} messages, ${session.requests.length} requests${lasted}):
      ${subAgentEnd(session.lastHalt)}${note && ` — ${note}`}
      ${report && html`<blockquote class="report">${clip(report, 400)}</blockquote>`}
    </summary>
    ${ctx.nested.get(link.id) ?? html`<p class="muted">(not rendered)</p>`}
  </details>`;
}
