// Defends against: a tool call shown to the person as something it is not. What the model sent is
// shown, never obeyed: a path with a newline, a right-to-left override or a zero-width character
// could make `edit_file invoice\u202efdp.exe` read as a harmless file, so such a path is shown
// quoted and escaped; a long or nested argument is cut or only counted.
// Tests: test/tools/tools-views.test.ts, app/test/terminal-escapes.test.ts.

/** A call by its arguments, for a tool that says nothing of its own calls: its name, then a path as
 *  it is and any other argument as `key=value`, a long string cut and a nested value only counted:
 *  `grep src pattern=TODO`. */
export function describeArguments(name: string, input: unknown): string {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return name;
  const parts = Object.entries(input).map(([key, value]) => {
    if (key === 'path' && typeof value === 'string') return shownPath(value);
    return `${shownPath(key)}=${shownValue(value)}`;
  });
  return [name, ...parts].join(' ');
}

/** An argument's value in a few characters: a string quoted where it could hide what it says. */
function shownValue(value: unknown): string {
  if (typeof value === 'string')
    return shownPath(value.length > 40 ? `${value.slice(0, 39)}…` : value);
  if (Array.isArray(value)) return `[${value.length} item${value.length === 1 ? '' : 's'}]`;
  if (typeof value === 'object' && value !== null) return '{…}';
  return String(value);
}

/** Characters a path is quoted for, since they could hide what it names: whitespace, quotes,
 *  backslashes, and control, format (bidi, zero-width) or unassigned characters. */
const HIDING = /[\s"\\\p{C}]/u;

/** Prevents a path from hiding what it names (a newline, a right-to-left override): such a path is
 *  shown as a JSON string, with every character that is not plainly visible escaped as \uXXXX (JSON
 *  itself leaves format and separator characters as they are); any other path as it is. */
export function shownPath(name: string): string {
  if (name !== '' && !HIDING.test(name)) return name;
  const escape = (c: string) => (c === ' ' ? c : unicodeEscapes(c));
  return JSON.stringify(name).replace(/[\p{C}\p{Z}]/gu, escape);
}

/** `\uXXXX` for each UTF-16 code unit of `c`. */
const unicodeEscapes = (c: string) =>
  Array.from(
    { length: c.length },
    (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`,
  ).join('');
