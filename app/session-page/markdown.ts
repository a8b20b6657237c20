// session-page/markdown.ts — the small part of Markdown that model replies lean on: code blocks, paragraphs,
// lists, headings shown bold, code spans and bold. Every piece of text goes through `html`, which escapes it,
// and only then gets our own tags around it: a reply can format itself, never inject markup.
//
// Worked example: "Fixed **add.js**:\n\n- `a + b`\n- tests pass" →
//   <p>Fixed <strong>add.js</strong>:</p><ul><li><code>a + b</code></li><li>tests pass</li></ul>

import { type Fragment, html, type Html } from './html.ts';

const FENCE = /^\s*```/;
const LIST_ITEM = /^\s*([-*+]|\d+[.)])\s+(.*)$/;
const HEADING = /^\s*#{1,6}\s+(.*)$/;

/** A run of lines of one kind. */
type Block =
  | { kind: 'code'; lines: string[] }
  | { kind: 'list'; ordered: boolean; items: string[] }
  | { kind: 'heading'; text: string }
  | { kind: 'paragraph'; lines: string[] };

export function renderMarkdown(text: string): Html {
  return html`${blocksOf(text).map(renderBlock)}`;
}

/** Splits the text into blocks: a fence runs to the next fence (or the end), a blank line ends anything else. */
function blocksOf(text: string): Block[] {
  const blocks: Block[] = [];
  let open: Block | null = null;
  for (const line of text.split('\n')) {
    if (open?.kind === 'code') {
      if (FENCE.test(line)) open = null;
      else open.lines.push(line);
      continue;
    }
    const item = LIST_ITEM.exec(line);
    const heading = HEADING.exec(line);
    if (FENCE.test(line)) blocks.push((open = { kind: 'code', lines: [] }));
    else if (line.trim() === '') open = null;
    else if (heading) {
      blocks.push({ kind: 'heading', text: heading[1]! });
      open = null;
    } else if (item && open?.kind === 'list') open.items.push(item[2]!);
    else if (item) blocks.push((open = { kind: 'list', ordered: /\d/.test(item[1]!), items: [item[2]!] }));
    else if (open?.kind === 'paragraph') open.lines.push(line);
    else if (open?.kind === 'list') open.items[open.items.length - 1] += ` ${line.trim()}`;
    else blocks.push((open = { kind: 'paragraph', lines: [line] }));
  }
  return blocks;
}

function renderBlock(block: Block): Html {
  switch (block.kind) {
    case 'code':
      return html`<pre><code>${block.lines.join('\n')}</code></pre>`;
    case 'heading':
      return html`<p><strong>${inline(block.text)}</strong></p>`;
    case 'list': {
      const items = block.items.map((item) => html`<li>${inline(item)}</li>`);
      return block.ordered
        ? html`<ol>
            ${items}
          </ol>`
        : html`<ul>
            ${items}
          </ul>`;
    }
    case 'paragraph':
      return html`<p>${block.lines.map((line, i) => [i > 0 && html`<br />`, inline(line)])}</p>`;
  }
}

/** Code spans first (nothing inside them is formatted), then bold in what is left. */
function inline(text: string): Fragment {
  return text.split(/(`[^`]+`)/).map((part, i) => (i % 2 === 1 ? html`<code>${part.slice(1, -1)}</code>` : bold(part)));
}

function bold(text: string): Fragment {
  return text.split(/\*\*(.+?)\*\*/).map((part, i) => (i % 2 === 1 ? html`<strong>${part}</strong>` : part));
}
