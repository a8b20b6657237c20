/** Shortens `text` to at most `max` characters, ending with "…" when something was cut. */
export function truncate(text, max) {
  if (text.length <= max) return text;
  return text.slice(0, max - 1) + '…';
}
