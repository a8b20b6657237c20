// session-page/chart.ts — one bar per model request, drawn as plain SVG: the input split into uncached,
// cache write and cache read, the output on top; the context window and the compaction threshold as lines;
// the cumulative cost as a line when the model's price is known. Each bar is a link to its request in the
// transcript, and carries its numbers for the tooltip (`data-tip`, shown by the page's script) and for
// screen readers (`<title>`, which also makes the browser's own tooltip).

import { costOf } from '../../agent.ts';
import { priceOf } from '../prices.ts';
import { usageOf } from '../../scripted-model.ts';
import { count, dollars, type Fragment, html, type Html } from './html.ts';
import type { Request, Tokens } from './read.ts';

export interface ChartOptions {
  model: string;
  contextWindow: number;
  /** The share of the window at which the harness compacts (`compactAt`, 0.75 by default). */
  compactAt: number;
  /** Prefixes every anchor, so a sub-agent's chart links into its own transcript. */
  idPrefix: string;
}

const PLOT_HEIGHT = 220;
const TOP = 24;
const LEFT = 72;
/** Room for the running cost's label at the end of its line. */
const RIGHT = 110;
const BOTTOM = 28;
/** Bars get narrower as requests get more, down to a width that still takes a pointer; then the chart scrolls. */
const SLOT = { max: 32, min: 6, room: 960 };
/** So that a chart of two requests still has room for the labels of its lines. */
const MIN_PLOT_WIDTH = 480;

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

/** A request's price in dollars, by the harness's own price table; null when the model has no price there. */
export function requestCost(model: string, tokens: Tokens): number | null {
  const usage = usageOf({
    input_tokens: tokens.uncached,
    cache_creation_input_tokens: tokens.cacheWrite,
    cache_read_input_tokens: tokens.cacheRead,
    output_tokens: tokens.output,
  });
  return costOf(priceOf({ name: model }), usage);
}

/** Each request's cost and the running total, or nulls for all when any one is unknown. */
function costs(model: string, requests: Request[]): { each: number; sum: number }[] | null {
  let sum = 0;
  const out: { each: number; sum: number }[] = [];
  for (const request of requests) {
    const each = requestCost(model, request.tokens);
    if (each === null) return null;
    out.push({ each, sum: (sum += each) });
  }
  return out;
}

export function renderChart(requests: Request[], options: ChartOptions): Html {
  if (requests.length === 0) return html`<p class="muted">No model requests were recorded.</p>`;
  const priced = costs(options.model, requests);
  const slot = Math.max(SLOT.min, Math.min(SLOT.max, Math.floor(SLOT.room / requests.length)));
  const yMax = requests.reduce((max, r) => Math.max(max, totalOf(r.tokens)), options.contextWindow) * 1.08;
  const y = (tokens: number) => round(TOP + PLOT_HEIGHT * (1 - tokens / yMax));
  const width = LEFT + Math.max(requests.length * slot, MIN_PLOT_WIDTH) + RIGHT;
  const height = TOP + PLOT_HEIGHT + BOTTOM;
  const bars = requests.map((request, i) =>
    renderBar(request, LEFT + i * slot, slot, y, tipOf(request, priced?.[i] ?? null, options.model), options),
  );
  return html`<figure class="chart" id="${options.idPrefix}chart">
    <div class="chart-scroll">
      <svg
        class="requests"
        width="${width}"
        height="${height}"
        viewBox="0 0 ${width} ${height}"
        role="group"
        aria-label="${requests.length} model requests"
      >
        ${axis(yMax, y, options.contextWindow, width)} ${limitLines(options, y, width)} ${bars}
        ${priced && costLine(priced, slot)} ${xLabels(requests.length, slot, height)}
      </svg>
    </div>
    <figcaption>${legend(priced !== null)} ${totals(requests, priced, options.model)}</figcaption>
  </figure>`;
}

function renderBar(
  request: Request,
  x: number,
  slot: number,
  y: (tokens: number) => number,
  tip: string,
  options: ChartOptions,
): Html {
  const barWidth = Math.max(slot - 2, 3);
  let base = 0;
  const segments = SEGMENTS.map(({ key }) => {
    const from = base;
    base += request.tokens[key];
    return (
      base > from &&
      html`<rect class="${key}" x="${x}" y="${y(base)}" width="${barWidth}" height="${round(y(from) - y(base))}" />`
    );
  });
  const marked = request.compaction !== null;
  return html`<a
    class="bar${marked ? ' compaction' : ''}"
    href="#${options.idPrefix}r-${request.number}"
    tabindex="0"
    data-tip="${tip}"
    ><title>${tip}</title> <rect class="hit" x="${x}" y="${TOP}" width="${slot}" height="${PLOT_HEIGHT}" />${segments}
    ${marked && html`<text class="cut-mark" x="${x + barWidth / 2}" y="${y(base) - 4}">✂</text>`}</a
  >`;
}

/** The numbers of one request, one fact a line: the tooltip and the title share them. */
function tipOf(request: Request, cost: { each: number; sum: number } | null, model: string): string {
  const t = request.tokens;
  return [
    `request ${request.number}${request.turn === null ? '' : ` (turn ${request.turn})`}` +
      (request.compaction === null ? '' : `: the summary of compaction ${request.compaction}`),
    `input ${count(inputOf(t))}: uncached ${count(t.uncached)}, cache write ${count(t.cacheWrite)}, ` +
      `cache read ${count(t.cacheRead)}`,
    `output ${count(t.output)}`,
    cost ? `cost ${dollars(cost.each)}, ${dollars(cost.sum)} so far` : `cost unknown: no price for ${model}`,
  ].join('\n');
}

function axis(yMax: number, y: (tokens: number) => number, window: number, width: number): Html {
  const step = window / 4;
  const ticks: Fragment[] = [];
  for (let tokens = 0; tokens <= yMax; tokens += step)
    ticks.push(
      html`<line class="grid" x1="${LEFT}" x2="${width - RIGHT}" y1="${y(tokens)}" y2="${y(tokens)}" />`,
      html`<text class="tick" x="${LEFT - 6}" y="${y(tokens) + 4}">${count(tokens)}</text>`,
    );
  return html`<g class="axis">${ticks}<text class="axis-name" x="4" y="${TOP - 10}">tokens</text></g>`;
}

function limitLines(options: ChartOptions, y: (tokens: number) => number, width: number): Html {
  const threshold = options.contextWindow * options.compactAt;
  const line = (tokens: number, cls: string, label: string) =>
    html`<line class="${cls}" x1="${LEFT}" x2="${width - RIGHT}" y1="${y(tokens)}" y2="${y(tokens)}" />
      <text class="${cls}-label" x="${LEFT + 4}" y="${y(tokens) - 4}">${label}</text>`;
  return html`${line(options.contextWindow, 'window', `context window ${count(options.contextWindow)}`)}
  ${line(threshold, 'threshold', `compaction threshold ${Math.round(options.compactAt * 100)}%`)}`;
}

/** The running cost, scaled to the plot's height, with its final value at the right edge. */
/** The running cost on a scale of its own (its total at the top), labelled where it ends. */
function costLine(priced: { sum: number }[], slot: number): Html {
  const total = priced.at(-1)!.sum;
  if (total === 0) return html``;
  const points = priced.map(
    ({ sum }, i) => `${LEFT + i * slot + slot / 2},${round(TOP + PLOT_HEIGHT * (1 - sum / total))}`,
  );
  const end = LEFT + priced.length * slot;
  return html`<polyline class="cost" points="${points.join(' ')}" />
    <text class="cost-label" x="${end + 4}" y="${TOP + 4}">${dollars(total)} in all</text>`;
}

/** Request numbers under the bars, thinned out so they never overlap. */
function xLabels(n: number, slot: number, height: number): Html {
  const every = Math.ceil(40 / slot);
  const labels: Fragment[] = [];
  for (let i = 0; i < n; i += every)
    labels.push(html`<text class="tick-x" x="${LEFT + i * slot + slot / 2}" y="${height - 10}">${i + 1}</text>`);
  return html`<g class="axis">${labels}</g>`;
}

function legend(priced: boolean): Html {
  const items = SEGMENTS.map(
    ({ key, label }) =>
      html`<span class="key"
        ><svg width="12" height="12"><rect class="${key}" width="12" height="12" /></svg> ${label}</span
      >`,
  );
  return html`<span class="legend"
    >${items}<span class="key"><span class="cut-key">✂</span> compaction</span
    >${priced && html`<span class="key"><span class="cost-key">┈</span> cost so far (its own scale)</span>`}</span
  >`;
}

function totals(requests: Request[], priced: { sum: number }[] | null, model: string): Html {
  const sum = (key: keyof Tokens) => requests.reduce((total, r) => total + r.tokens[key], 0);
  const input = sum('uncached') + sum('cacheWrite') + sum('cacheRead');
  const cached = input === 0 ? 0 : Math.round((100 * sum('cacheRead')) / input);
  const cost = priced ? dollars(priced.at(-1)!.sum) : `unknown (no price for ${model})`;
  const output = count(sum('output'));
  return html`<span class="totals"
    >${requests.length} requests · input ${count(input)} (${cached}% read from cache) · output ${output} · cost
    ${cost}</span
  >`;
}
