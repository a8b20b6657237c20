// The harness's types as the program names them, derived from what the harness exports
// (`reference-harness` and its subpaths, package.json's `exports`), so the program imports the
// harness's small public API and nothing of its internals (app/test/layout.test.ts counts it).

import type { createAgent, resume, runTask } from 'reference-harness';
import type { transcriptRepair } from 'reference-harness/hardening';
import type { z } from 'zod';

export type AgentConfig = Parameters<typeof createAgent>[0];
export type Agent = Awaited<ReturnType<typeof createAgent>>;
export type AgentEvent = Parameters<NonNullable<AgentConfig['onEvent']>>[0];
export type Halt = Awaited<ReturnType<typeof runTask>>;
export type Task = Parameters<typeof runTask>[1];
export type Model = AgentConfig['model'];
export type Tool = NonNullable<AgentConfig['tools']>[number];
export type Approver = NonNullable<AgentConfig['approve']>;
export type ApprovalAnswer = Awaited<ReturnType<Approver>>;
export type BeforeCallHook = NonNullable<AgentConfig['beforeCall']>[number];
export type Budgets = NonNullable<AgentConfig['budgets']>;
export type BudgetName = Extract<Halt, { kind: 'budget' }>['budget'];
export type LoadedSession = Parameters<typeof resume>[1];
export type Compaction = NonNullable<LoadedSession['compaction']>;
export type ModelRequest = Parameters<Model['complete']>[0];
export type ModelCallOptions = Parameters<Model['complete']>[1];
export type Price = NonNullable<Model['price']>;
export type UsageTotals = Agent['usage'];
export type ToolContext = Parameters<Tool['run']>[1];
export type Disk = ToolContext['disk'];
/** What the program knows of a call a session ended in the middle of (an edit's intent). */
export type KnownOutcome =
  Parameters<ReturnType<typeof transcriptRepair>['finish']>[0] extends ReadonlyMap<string, infer Known> ? Known : never;

/** A schema's refusal in one line: each issue's path and message. */
export const issuesText = (error: z.ZodError) =>
  error.issues.map((issue) => `${issue.path.join('.') || '(input)'}: ${issue.message}`).join('; ');
