// Defends against: "old_str was not found" in a file whose line breaks differ from the model's
// (it sees lines without \r) or from line to line, and a new line that breaks a CRLF file's style.
// No regular expression: an old_str of thousands of lines is found by plain search.
// Tests: test/tools/tools-inputs.test.ts ("mostly-CRLF"),
// test/tools/tools-details.test.ts ("CRLF"),
// test/tools/routes-lost-update.test.ts (an old_str of thousands of lines).

/** Prevents "not found" in a file whose line breaks differ from line to line (a\r\nb\nc\r\n): the
 *  model sees lines without \r, so the snippet is looked for in the text with each \r\n read as
 *  \n, and found places are mapped back. Overlapping matches count too: "aa" is in "aaa" twice. */
export function findSnippet(text: string, snippet: string): { at: number; length: number }[] {
  const crs: number[] = []; // where a \r was dropped, in the plain text's positions
  const plain = text.replace(/\r\n/g, (_, at: number) => (crs.push(at - crs.length), '\n'));
  const wanted = snippet.replace(/\r\n/g, '\n');
  const original = (at: number) => at + crs.filter((cr) => cr < at).length;
  const found: { at: number; length: number }[] = [];
  for (let at = plain.indexOf(wanted); at !== -1; at = plain.indexOf(wanted, at + 1)) {
    const start = original(at);
    found.push({ at: start, length: original(at + wanted.length) - start });
  }
  return found;
}

/** True when more of the file's lines end in \r\n than in a bare \n. */
export function mostlyCrlf(text: string): boolean {
  const crlf = text.split('\r\n').length - 1;
  return crlf > text.split('\n').length - 1 - crlf;
}

/** `text` with each line break as \r\n. */
export const toCrlf = (text: string) => text.replace(/\r?\n/g, '\r\n');
