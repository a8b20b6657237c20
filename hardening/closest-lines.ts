// Defends against: a model that retries a "not found" edit blind, guessing again and again at a
// line it misremembers (whitespace, a renamed variable). An after-call hook: a failed edit's
// answer gets the file's lines most like old_str's first line, so the next try copies them.
// Tests: test/tools/tools-details.test.ts ("closest lines"), test/tools/tools.test.ts.

import { edit_file, pathOf, safe_path, type Tool } from '../tools.ts';
import type { HookAgent } from './runs-later.ts';

/** Adds the closest lines to an edit_file answer that did not find old_str. */
export const closestLinesHint = {
  name: 'closest lines',
  async check(
    { tool, input }: { tool: Tool; input: unknown },
    outcome: { content: string; isError: boolean },
    { toolContext: ctx }: HookAgent,
  ) {
    const requested = pathOf(input);
    const oldStr = (input as { old_str?: unknown }).old_str;
    const notFound = outcome.isError && outcome.content.startsWith('old_str was not found');
    if (tool !== edit_file || !notFound || requested === undefined || typeof oldStr !== 'string')
      return outcome;
    const { whole } = await ctx.disk.read(await safe_path(ctx.root, requested), 1, ctx);
    if (whole === null) return outcome;
    const lines = closestLines(whole.toString('utf8'), oldStr);
    return { ...outcome, content: `${outcome.content}. Closest lines:\n${lines}` };
  },
};

/** The file's lines most like the first line of old_str, to show the model where it went wrong. */
export function closestLines(text: string, oldStr: string): string {
  const wanted =
    oldStr
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? oldStr;
  const pairs = (s: string) =>
    new Set(Array.from({ length: Math.max(s.length - 1, 0) }, (_, i) => s.slice(i, i + 2)));
  const wantedPairs = pairs(wanted);
  const scored = text.split('\n').map((line, i) => {
    const linePairs = pairs(line.trim());
    let shared = 0;
    for (const pair of linePairs) if (wantedPairs.has(pair)) shared++;
    return {
      i,
      line: line.replace(/\r$/, ''),
      score: (2 * shared) / (wantedPairs.size + linePairs.size || 1),
    };
  });
  // sort is stable: of equally close lines, the first in the file come first.
  const best = scored
    .sort((a, b) => b.score - a.score)
    .slice(0, 3)
    .filter((s) => s.score > 0);
  if (best.length === 0) return '(no similar lines)';
  return best
    .sort((a, b) => a.i - b.i)
    .map((s) => `${String(s.i + 1).padStart(6)}\t${s.line}`)
    .join('\n');
}
