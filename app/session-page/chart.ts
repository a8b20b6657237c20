// session-page/chart.ts — the model requests as plain SVG: one bar per request (input split into uncached, cache
// write and cache read, the output on top), on a scale fitted to the requests, so that small requests in a large
// window do not lie flat; the context window and the compaction threshold as lines where they fall on that scale, and
// named at the top where they do not; and under the bars, on an axis of its own, the cost so far, sub-agents included,
// when the price is known. Past a few hundred requests each bar stands for a run of them (the tallest shown), so the
// chart stays the same size for any session. Each bar links to its request in the transcript, and carries its numbers
// for the tooltip (`data-tip`, shown by the page's script) and for screen readers (`<title>`).

import { costOf } from 'reference-harness';
import { priceOf } from '../prices.ts';
import { count, dollars, duration, type Fragment, html, type Html } from './html.ts';
import type { Header, Request, SessionOutline, Tokens } from './read.ts';
import { type Price } from '../harness.ts';

export interface ChartOptions {
  contextWindow: number;
  /** The share of the window at which the harness compacts (`compactAt`, 0.75 by default). */
  compactAt: number;
  /** Prefixes every anchor, so a sub-agent's chart links into its own transcript. */
  idPrefix: string;
}

const WIDTH = 1040;
const LEFT = 72;
const RIGHT = 16;
const PLOT_WIDTH = WIDTH - LEFT - RIGHT;
const TOP = 30;
const PLOT_HEIGHT = 210;
/** The request numbers under the bars. */
const X_LABELS = 24;
/** The cost panel under them: its own axis, so it never crosses a line of the token scale. */
const COST_TOP = 26;
const COST_HEIGHT = 64;
const BOTTOM = 8;
/** Past this many requests, a bar stands for a run of them: a bar keeps at least 3 pixels. */
const MAX_BARS = 300;
/** A bar is never wider than this, however few the requests. */
const MAX_BAR_WIDTH = 44;
/** When the window is at most this many times the largest request, the scale goes up to it, lines and all. */
const SHOW_WINDOW_WITHIN = 1.6;

const SEGMENTS: { key: keyof Tokens; label: string }[] = [
  { key: 'uncached', label: 'input, uncached' },
  { key: 'cacheWrite', label: 'input, cache write' },
  { key: 'cacheRead', label: 'input, cache read' },
  { key: 'output', label: 'output' },
];

/** A tenth of a pixel is as fine as a screen shows; more digits only make the page bigger. */
const round = (n: number) => Math.round(n * 10) / 10;
const inputOf = (t: Tokens) => t.uncached + t.cacheWrite + t.cacheRead;
const totalOf = (t: Tokens) => inputOf(t) + t.output;

/** What the session's model costs: the price it recorded (--price), else the price table's for its name. */
export const priceFor = (header: Header | null): Price | undefined =>
  header?.price ?? (header ? priceOf({ name: header.model }) : undefined);

/** A request's price in dollars; null when the model has no price. */
export function requestCost(price: Price | undefined, tokens: Tokens): number | null {
  return costOf(price, {
    input_tokens: tokens.uncached,
    cache_creation_input_tokens: tokens.cacheWrite,
    cache_read_input_tokens: tokens.cacheRead,
    output_tokens: tokens.output,
  });
}

// =============================================================================================
// Totals: a session's own requests, and every sub-agent's with them

export interface Totals {
  requests: number;
  tokens: Tokens;
  /** Null when any request's model has no price. */
  costUsd: number | null;
  /** The time spent waiting for the model, where the session recorded it. */
  modelMs: number;
}

const noTotals = (): Totals => ({
  requests: 0,
  tokens: { uncached: 0, cacheWrite: 0, cacheRead: 0, output: 0 },
  costUsd: 0,
  modelMs: 0,
});

function add(into: Totals, more: Totals): void {
  into.requests += more.requests;
  for (const { key } of SEGMENTS) into.tokens[key] += more.tokens[key];
  into.costUsd = into.costUsd === null || more.costUsd === null ? null : into.costUsd + more.costUsd;
  into.modelMs += more.modelMs;
}

/** What a session's own requests spent. */
export function ownTotals(outline: SessionOutline): Totals {
  const price = priceFor(outline.header);
  const totals = noTotals();
  for (const request of outline.requests)
    add(totals, {
      requests: 1,
      tokens: request.tokens,
      costUsd: requestCost(price, request.tokens),
      modelMs: request.ms ?? 0,
    });
  return totals;
}

/** What its sub-agents spent, theirs included; a sub-agent whose file is missing counts as an unknown cost. */
export function subAgentTotals(outline: SessionOutline): Totals {
  const totals = noTotals();
  for (const sub of outline.subAgents)
    if (sub.session) add(totals, allTotals(sub.session));
    else totals.costUsd = null;
  return totals;
}

/** Everything a session spent: its own requests and every sub-agent's, as the terminal's totals count them. */
export function allTotals(outline: SessionOutline): Totals {
  const totals = ownTotals(outline);
  add(totals, subAgentTotals(outline));
  return totals;
}

// =============================================================================================
// The chart

/** One bar: a request, or past MAX_BARS a run of them, drawn as its tallest. */
interface Bar {
  first: Request;
  last: Request;
  tallest: Request;
  compaction: number | null;
  /** The run's own cost, and the cost so far at its end with the sub-agents started before then. */
  cost: number | null;
  costSoFar: number | null;
  ms: number | null;
}

/** Groups the requests into at most MAX_BARS bars, each with its cost and the cost so far. */
function barsOf(outline: SessionOutline): Bar[] {
  const { requests } = outline;
  const size = Math.ceil(requests.length / MAX_BARS);
  const price = priceFor(outline.header);
  const subAgents = outline.subAgents.map((sub) => ({
    after: sub.afterRequest,
    cost: sub.session ? allTotals(sub.session).costUsd : null,
  }));
  const bars: Bar[] = [];
  let soFar: number | null = 0;
  for (let from = 0; from < requests.length; from += size) {
    const run = requests.slice(from, from + size);
    let cost: number | null = 0;
    let ms: number | null = 0;
    for (const request of run) {
      const each = requestCost(price, request.tokens);
      cost = cost === null || each === null ? null : cost + each;
      ms = ms === null || request.ms === null ? null : ms + request.ms;
    }
    // A sub-agent spends after the request that started it: the bar holding that request counts it.
    const subCost = subAgents
      .filter((sub) => sub.after > from && sub.after <= from + size)
      .reduce<number | null>((sum, sub) => (sum === null || sub.cost === null ? null : sum + sub.cost), 0);
    soFar = soFar === null || cost === null || subCost === null ? null : soFar + subCost + cost;
    bars.push({
      first: run[0]!,
      last: run.at(-1)!,
      tallest: run.reduce((a, b) => (totalOf(b.tokens) > totalOf(a.tokens) ? b : a)),
      compaction: run.find((request) => request.compaction !== null)?.compaction ?? null,
      cost,
      costSoFar: soFar,
      ms,
    });
  }
  return bars;
}

/** 1, 2, 2.5 or 5 times a power of ten, at least `n`: an axis's end and its steps. */
export function niceCeil(n: number): number {
  if (n <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(n));
  return [1, 2, 2.5, 5, 10].map((m) => m * power).find((nice) => nice >= n * (1 - 1e-9))!;
}

/** The token scale: up to the tallest request (and the window, when it is not far above), in 3 to 6 round steps. */
function scaleOf(bars: Bar[], options: ChartOptions): { max: number; step: number } {
  const tallest = Math.max(1, ...bars.map((bar) => totalOf(bar.tallest.tokens)));
  const top =
    1.05 * (options.contextWindow <= tallest * SHOW_WINDOW_WITHIN ? Math.max(tallest, options.contextWindow) : tallest);
  const scales = [3, 4, 5, 6].map((ticks) => {
    const step = niceCeil(top / ticks);
    return { max: step * Math.ceil(top / step), step };
  });
  return scales.reduce((best, scale) => (scale.max < best.max ? scale : best));
}

export function renderChart(outline: SessionOutline, options: ChartOptions): Html {
  if (outline.requests.length === 0) return html`<p class="muted">No model requests were recorded.</p>`;
  const bars = barsOf(outline);
  const scale = scaleOf(bars, options);
  const y = (tokens: number) => round(TOP + PLOT_HEIGHT * (1 - Math.min(tokens, scale.max) / scale.max));
  const slot = PLOT_WIDTH / bars.length;
  const priced = bars.every((bar) => bar.costSoFar !== null);
  const height = TOP + PLOT_HEIGHT + X_LABELS + (priced ? COST_TOP + COST_HEIGHT : 0) + BOTTOM;
  const model = outline.header?.model ?? '(unknown model)';
  const drawn = bars.map((bar, i) => renderBar(bar, LEFT + i * slot, slot, y, tipOf(bar, model), options));
  const many = bars.length < outline.requests.length;
  return html`<figure class="chart" id="${options.idPrefix}chart">
    <svg
      class="requests"
      viewBox="0 0 ${WIDTH} ${height}"
      role="group"
      aria-label="${outline.requests.length} model requests${many ? `, ${bars.length} bars` : ''}"
    >
      ${axis(scale, y)} ${limitLines(bars, scale.max, options, y)} ${drawn} ${xLabels(bars, slot)}
      ${priced && costPanel(bars, slot)}
    </svg>
    <figcaption>
      ${legend()}
      ${
        many &&
        html`<span class="muted">
          Each bar stands for ${Math.ceil(outline.requests.length / MAX_BARS)} requests in a row, drawn as the largest.
        </span>`
      }
      ${!priced && html`<span class="muted">Cost unknown: no price for ${model}.</span>`}
    </figcaption>
  </figure>`;
}

function renderBar(
  bar: Bar,
  x: number,
  slot: number,
  y: (tokens: number) => number,
  tip: string,
  options: ChartOptions,
): Html {
  const barWidth = round(Math.min(MAX_BAR_WIDTH, Math.max(slot * 0.8, slot - 2, 2)));
  const left = round(x + (slot - barWidth) / 2);
  let base = 0;
  const segments = SEGMENTS.map(({ key }) => {
    const from = base;
    base += bar.tallest.tokens[key];
    return (
      base > from &&
      html`<rect class="${key}" x="${left}" y="${y(base)}" width="${barWidth}" height="${round(y(from) - y(base))}" />`
    );
  });
  const marked = bar.compaction !== null;
  return html`<a
    class="bar${marked ? ' compaction' : ''}"
    href="#${options.idPrefix}r-${bar.first.number}"
    data-tip="${tip}"
    ><title>${tip}</title
    ><rect class="hit" x="${round(x)}" y="${TOP}" width="${round(slot)}" height="${PLOT_HEIGHT}" />${segments}
    ${marked && html`<text class="cut-mark" x="${round(left + barWidth / 2)}" y="${y(base) - 4}">✂</text>`}</a
  >`;
}

/** The numbers of one bar, one fact a line: the tooltip and the title share them. */
function tipOf(bar: Bar, model: string): string {
  const single = bar.first === bar.last;
  const t = bar.tallest.tokens;
  const name = (r: Request) =>
    `request ${r.number}${r.turn === null ? '' : ` (turn ${r.turn})`}` +
    (r.compaction === null ? '' : `: the summary of compaction ${r.compaction}`);
  return [
    single ? name(bar.first) : `requests ${bar.first.number}–${bar.last.number}; the largest, ${name(bar.tallest)}:`,
    `input ${count(inputOf(t))}: uncached ${count(t.uncached)}, cache write ${count(t.cacheWrite)}, ` +
      `cache read ${count(t.cacheRead)}`,
    `output ${count(t.output)}`,
    ...(bar.ms === null ? [] : [`${single ? 'took' : 'together took'} ${duration(bar.ms)}`]),
    bar.cost === null || bar.costSoFar === null
      ? `cost unknown: no price for ${model}`
      : `cost ${dollars(bar.cost)}, ${dollars(bar.costSoFar)} so far`,
  ].join('\n');
}

function axis(scale: { max: number; step: number }, y: (tokens: number) => number): Html {
  const ticks: Fragment[] = [];
  for (let tokens = 0; tokens <= scale.max; tokens += scale.step)
    ticks.push(
      html`<line class="grid" x1="${LEFT}" x2="${LEFT + PLOT_WIDTH}" y1="${y(tokens)}" y2="${y(tokens)}" />`,
      html`<text class="tick" x="${LEFT - 6}" y="${y(tokens) + 4}">${count(tokens)}</text>`,
    );
  return html`<g class="axis">${ticks}<text class="axis-name" x="4" y="${TOP - 14}">tokens</text></g>`;
}

/** The window and the compaction threshold: a line where each falls on the scale (the window named at the left, the
 *  threshold at the right, so that close lines keep their names apart); above the scale, named at the top. */
function limitLines(bars: Bar[], max: number, options: ChartOptions, y: (tokens: number) => number): Html {
  const threshold = options.contextWindow * options.compactAt;
  const limits = [
    { tokens: options.contextWindow, cls: 'window', label: `context window ${count(options.contextWindow)}` },
    {
      tokens: threshold,
      cls: 'threshold',
      label: `compaction at ${Math.round(options.compactAt * 100)}%: ${count(threshold)}`,
    },
  ];
  const drawn = limits.filter(({ tokens }) => tokens <= max);
  const above = limits.filter((limit) => !drawn.includes(limit));
  const tallest = Math.max(...bars.map((bar) => totalOf(bar.tallest.tokens)));
  const share = Math.round((100 * tallest) / options.contextWindow);
  const note =
    above.length > 0 &&
    html`<text class="offscale" x="${LEFT + PLOT_WIDTH}" y="${TOP - 14}">
      ↑ above this scale: ${above.map((limit) => limit.label).join(' and ')} (the largest request used ${share}% of the
      window)
    </text>`;
  return html`${drawn.map(
    ({ tokens, cls, label }) =>
      html`<line class="${cls}" x1="${LEFT}" x2="${LEFT + PLOT_WIDTH}" y1="${y(tokens)}" y2="${y(tokens)}" />
        <text class="${cls}-label" x="${cls === 'window' ? LEFT + 4 : LEFT + PLOT_WIDTH - 4}" y="${y(tokens) - 4}">
          ${label}
        </text>`,
  )}
  ${note}`;
}

/** Request numbers under the bars, thinned out so they never overlap. */
function xLabels(bars: Bar[], slot: number): Html {
  const every = Math.ceil(44 / slot);
  const labels: Fragment[] = [];
  for (let i = 0; i < bars.length; i += every)
    labels.push(
      html`<text class="tick-x" x="${round(LEFT + i * slot + slot / 2)}" y="${TOP + PLOT_HEIGHT + 16}">
        ${bars[i]!.first.number}
      </text>`,
    );
  return html`<g class="axis">${labels}</g>`;
}

/** The cost so far under the bars, on a dollar axis of its own, ending with the total. */
function costPanel(bars: Bar[], slot: number): Html {
  const total = bars.at(-1)!.costSoFar ?? 0;
  const top = TOP + PLOT_HEIGHT + X_LABELS + COST_TOP;
  const max = niceCeil(total || 1e-4);
  const y = (usd: number) => round(top + COST_HEIGHT * (1 - usd / max));
  const points = bars.map((bar, i) => `${round(LEFT + (i + 1) * slot)},${y(bar.costSoFar ?? 0)}`);
  return html`<g class="cost-panel">
    <text class="axis-name" x="4" y="${top - 10}">cost so far, sub-agents included: ${dollars(total)}</text>
    <line class="grid" x1="${LEFT}" x2="${LEFT + PLOT_WIDTH}" y1="${y(max)}" y2="${y(max)}" />
    <line class="grid" x1="${LEFT}" x2="${LEFT + PLOT_WIDTH}" y1="${y(0)}" y2="${y(0)}" />
    <text class="tick" x="${LEFT - 6}" y="${y(max) + 4}">${dollars(max)}</text>
    <text class="tick" x="${LEFT - 6}" y="${y(0) + 4}">$0</text>
    <polyline class="cost" points="${LEFT},${y(0)} ${points.join(' ')}" />
  </g>`;
}

function legend(): Html {
  const items = SEGMENTS.map(
    ({ key, label }) =>
      html`<span class="key"
        ><svg width="12" height="12"><rect class="${key}" width="12" height="12" /></svg> ${label}</span
      >`,
  );
  return html`<span class="legend"
    >${items}<span class="key"><span class="cut-key">✂</span> compaction</span></span
  >`;
}
