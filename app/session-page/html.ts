// session-page/html.ts — the one way this page makes markup: the `html` tag escapes every value put
// into it, so session text (which may hold `</script>` or `<img onerror>`) can only ever become text.
// Markup that is ours (the stylesheet, the script) is marked with `trusted`, and nothing else is.

/** Markup that is already safe: built by `html`, or ours and constant. */
export class Html {
  constructor(readonly markup: string) {}
}

export type Fragment = Html | string | number | null | undefined | false | readonly Fragment[];

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Prevents session text from becoming markup: safe inside elements and inside quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ENTITIES[char]!);
}

/** Marks constant markup of our own as safe. Never call it on anything read from a session. */
export const trusted = (markup: string) => new Html(markup);

/** The template tag: `html`<p>${text}</p>`` escapes `text`; nested `html` results and lists stay markup;
 *  null, undefined and false leave nothing, so `${cond && html`...`}` reads naturally. */
export function html(strings: TemplateStringsArray, ...values: Fragment[]): Html {
  let markup = strings[0]!;
  values.forEach((value, i) => (markup += markupOf(value) + strings[i + 1]!));
  return new Html(markup);
}

function markupOf(value: Fragment): string {
  if (value instanceof Html) return value.markup;
  if (Array.isArray(value)) return value.map(markupOf).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** An id attribute value built from session text (a call id, a sub-agent id): only [A-Za-z0-9_-] survive. */
export const safeId = (text: string) => text.replace(/[^A-Za-z0-9_-]/g, '_');

/** Thousands separators, the same on every machine: 12345 → "12,345". */
export const count = (n: number) => Math.round(n).toLocaleString('en-US');

/** Dollars with enough digits for a single request: 0.00123 → "$0.0012". */
export const dollars = (usd: number) => `$${usd < 1 ? usd.toFixed(4) : usd.toFixed(2)}`;

/** A duration as a person reads it: 320 ms, 4.2 s, 3 min 12 s, 1 h 5 min. */
export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ${Math.floor((ms % 60_000) / 1_000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** A moment as time since the session started: 0:42, 12:05, 1:02:03. */
export function clock(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1_000));
  const [h, m, s] = [Math.floor(seconds / 3_600), Math.floor((seconds % 3_600) / 60), seconds % 60];
  const two = (n: number) => String(n).padStart(2, '0');
  return h > 0 ? `${h}:${two(m)}:${two(s)}` : `${m}:${two(s)}`;
}

/** Prevents one huge text from making the page unusable (or over its size cap): the head and the tail
 *  are kept, with a marker saying how much the page left out. The session file keeps everything. */
export function clip(text: string, cap: number): string {
  if (text.length <= cap) return text;
  const head = Math.floor(cap * 0.75);
  const tail = cap - head;
  const left = text.length - head - tail;
  const note = `[… ${count(left)} characters left out of this page; the session file has them all …]`;
  return `${text.slice(0, head)}\n${note}\n${text.slice(-tail)}`;
}
