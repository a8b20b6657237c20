// marked-terminal ships no types; this is the one function the program uses (app/markdown.ts).
declare module 'marked-terminal' {
  /** marked's extension that renders to the terminal; options as in marked-terminal's README. */
  export function markedTerminal(
    options?: Record<string, unknown>,
    highlightOptions?: Record<string, unknown>,
  ): import('marked').MarkedExtension;
}
