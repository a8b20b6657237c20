// The model's markdown drawn for a terminal: headings, emphasis, lists, code and tables as a person reads them,
// not as `## Done` and `**layout**`. marked parses it and marked-terminal draws it (see README, Dependencies); the
// program loads this only for a terminal that shows colour, since piped text and NO_COLOR keep the model's own words.

import { Marked } from 'marked';
import { markedTerminal } from 'marked-terminal';

/** Renders one finished block of markdown (see MarkdownBlocks in terminal.ts) for a terminal `width` columns wide. */
export function markdownRenderer(width: number): (block: string) => string {
  const marked = new Marked(
    markedTerminal({ width, reflowText: true, showSectionPrefix: false, emoji: false, tab: 2 }),
  );
  return (block) => marked.parse(block, { async: false }).replace(/\n+$/, '');
}
