// Shared test scaffolding: a temporary project, and an agent wired to a scripted model.

import type Anthropic from '@anthropic-ai/sdk';
import { mkdtemp, mkdir, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { type AgentConfig, type AgentEvent, approveAll, createAgent } from '../agent.ts';
import { type ScriptEntry, ScriptedModel } from '../scripted-model.ts';
import { TOOLS } from '../tools.ts';

/** A fresh project folder with the given files, removed when the test ends. */
export async function tempProject(t: TestContext, files: Record<string, string> = {}): Promise<string> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'harness-test-')));
  t.after(() => rm(root, { recursive: true, force: true }));
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await writeFile(path.join(root, name), content);
  }
  return root;
}

/** An agent on a scripted model; `events` collects everything the loop emitted. */
export async function scriptedAgent(root: string, script: readonly ScriptEntry[], config: Partial<AgentConfig> = {}) {
  const model = new ScriptedModel(script);
  const events: AgentEvent[] = [];
  const agent = await createAgent({
    root,
    model,
    tools: TOOLS,
    verify: undefined,
    verifyTimeoutMs: 30_000,
    budgets: { maxTurns: 25 },
    protect: [],
    approve: approveAll,
    onEvent: (event) => events.push(event),
    ...config,
  });
  return { agent, model, events };
}

/** A request's messages as the transcript holds them: the per-request cache mark taken off. */
export function unmarked(messages: Anthropic.MessageParam[]): Anthropic.MessageParam[] {
  return JSON.parse(JSON.stringify(messages, (key, value: unknown) => (key === 'cache_control' ? undefined : value)));
}

/** The text of a message, whether its content is a string or blocks. */
export function textOf(message: Anthropic.MessageParam | undefined): string {
  if (message === undefined) return '';
  if (typeof message.content === 'string') return message.content;
  return message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
}
