// Defends against: a tool that reads showing the model git's data (.git/config can keep a token in
// a remote URL) or the harness's own session files, by any spelling or link. Never read or listed:
// a folder git would open as a repository (a HEAD with objects/ and refs/, whatever its name), and
// by name `.git` (also a file pointing elsewhere, in worktrees) and `.agent` (the session files).
// `defaultProtection: false` lifts it. The check sees the same two names empty unless
// --sandbox-read names them (sandbox.ts's hiddenFromCheck), so its output cannot show them.
// Tests: test/loop/guards.test.ts ("a forker's read-only tool out of .git"),
// test/tools/routes-git.test.ts ("never read", "opt out"), test/tools/tools.test.ts (".git",
// ".agent"), test/tools/routes-read-swap.test.ts.

import path from 'node:path';
import { pathOf, safe_path, type Tool, type ToolContext, ToolError } from '../tools.ts';
import { ALLOW, type HookAgent, type HookDecision, repositoryAround } from './runs-later.ts';
import { REPOSITORY_DATA } from './sandbox.ts';

/** Prevents any read-only tool's `path` from reaching repository data. */
export const repositoryDataCheck = {
  name: 'repository data',
  async check(
    { tool, input }: { tool: Tool; input: unknown },
    { toolContext: ctx }: HookAgent,
  ): Promise<HookDecision> {
    const requested = pathOf(input);
    if (tool.readOnly && requested !== undefined) await readablePath(ctx, requested);
    return ALLOW;
  },
};

/** The real path of `requested`, as safe_path gives it, unless it is repository data. */
export async function readablePath(ctx: ToolContext, requested: string): Promise<string> {
  const real = await safe_path(ctx.root, requested);
  if (ctx.defaultProtection === false) return real;
  const relatives = [
    path.relative(ctx.root, path.resolve(ctx.root, requested)),
    path.relative(ctx.root, real),
  ];
  const segments = relatives.flatMap((relative) => relative.toLowerCase().split(/[\\/]/));
  const name = REPOSITORY_DATA.find((unreadable) => segments.includes(unreadable));
  const repository = name ?? (await repositoryAround(ctx.root, real));
  if (repository !== null)
    throw new ToolError(
      `${JSON.stringify(requested)} is inside "${repository}", which the tools never read`,
    );
  return real;
}
