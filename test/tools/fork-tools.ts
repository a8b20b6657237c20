// Two tools added the README's way (defineTool, then `[...TOOLS, yours]`), as a forker would write them: one read-only,
// one that changes files and shows a preview. test/tools/fork-tools.test.ts runs the harness with them beside the shipped
// tools; app/test/fork-views.test.ts shows that every view prints their calls in words.

import { createTwoFilesPatch } from 'diff';
import { appendFile, readFile } from 'node:fs/promises';
import { z } from 'zod';
import { defineTool, safe_path, shownPath, type Tool, ToolError, TOOLS } from '../../tools.ts';

export const word_count = defineTool({
  name: 'word_count',
  description: 'Count the words of a text file of the project. Not for reading it: use read_file.',
  input: z.strictObject({ path: z.string().describe('File path relative to the project root') }),
  readOnly: true,
  kind: 'read',
  describe: ({ path }) => `word_count ${shownPath(path)}`,
  async run({ path: requested }, ctx) {
    const text = await readFile(await safe_path(ctx.root, requested), 'utf8');
    return `${requested}: ${text.split(/\s+/).filter((word) => word !== '').length} words`;
  },
});

export const append_line = defineTool({
  name: 'append_line',
  description: 'Add one line at the end of a text file of the project. Not for other changes: use edit_file.',
  input: z.strictObject({
    path: z.string().describe('File path relative to the project root'),
    line: z.string().describe('The line to add, without its newline'),
  }),
  readOnly: false,
  kind: 'edit',
  describe: ({ path, line }) => `append_line ${shownPath(path)} (${line.length} characters)`,
  async run({ path: requested, line }, ctx) {
    if (line.includes('\n')) throw new ToolError('line holds a newline; add one line at a time');
    // Written in tools.ts, it would write as edit_file does (writeAtomically: never half a file).
    await appendFile(await safe_path(ctx.root, requested), `${line}\n`);
    return `appended a line to ${requested}`;
  },
  // A diff as edit_file's preview is one, made with the harness's own dependency.
  async preview({ path, line }, ctx) {
    const before = await readFile(await safe_path(ctx.root, path), 'utf8').catch(() => '');
    return createTwoFilesPatch(`a/${path}`, `b/${path}`, before, `${before}${line}\n`);
  },
});

const ADDED = [word_count, append_line];

/** The shipped tools: TOOLS less these two, should a fork have added them there already. */
export const SHIPPED_TOOLS: readonly Tool[] = TOOLS.filter((tool) => !ADDED.some((added) => added.name === tool.name));

/** TOOLS as a fork that added the two has it. */
export const FORKED_TOOLS: readonly Tool[] = [...SHIPPED_TOOLS, ...ADDED];
