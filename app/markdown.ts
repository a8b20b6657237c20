// The model's markdown drawn for a terminal: headings, emphasis, lists, code and tables as a person reads them,
// not as `## Done` and `**layout**`. marked parses it and marked-terminal draws it (see README, Dependencies); the
// program loads this only for a terminal that shows colour, since piped text and NO_COLOR keep the model's own words.
// What it is given is already visible (terminal.ts's `visible`); the only escapes in what it returns are its colours.

import { Marked, type Tokens } from 'marked';
import { markedTerminal } from 'marked-terminal';
import { visible } from './terminal.ts';

/** Renders one finished block of markdown (see MarkdownBlocks in terminal.ts) for a terminal `width` columns wide. */
export function markdownRenderer(width: number): (block: string) => string {
  const marked = new Marked(
    markedTerminal({ width, reflowText: true, showSectionPrefix: false, emoji: false, tab: 2 }),
    { renderer: { link: honestLink } },
  );
  return (block) => coloursOnly(marked.parse(block, { async: false }).replace(/\n+$/, ''));
}

/** Prevents the renderer from writing a control its input did not hold: marked decodes character references (`&#x202e;`
 *  becomes a right-to-left override), so in what it returns all but its own colours (SGR) is made visible. */
const coloursOnly = (rendered: string) =>
  rendered
    .split(/(\x1b\[[\d;]*m)/)
    .map((part, i) => (i % 2 === 1 ? part : visible(part)))
    .join('');

/** Prevents a link that lies about its target: marked-terminal makes `[text](href)` a terminal hyperlink (OSC 8) that
 *  shows only its text, wherever the terminal supports them; here the target is always shown after the text. */
function honestLink(this: { parser: { parseInline: (tokens: Tokens.Link['tokens']) => string } }, link: Tokens.Link) {
  const text = this.parser.parseInline(link.tokens);
  return text === link.href ? link.href : `${text} (${link.href})`;
}
