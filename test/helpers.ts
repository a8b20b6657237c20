// Shared test scaffolding: a temporary project, and an agent wired to a scripted model.

import type Anthropic from '@anthropic-ai/sdk';
import { readFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { type AgentEvent, type ModelRequest } from '../agent.ts';
import { scriptedAgent, toolsWith, writeFiles } from '../lessons/stories.ts';
import { z } from 'zod';
import { defineTool } from '../tools.ts';
import { requestViolations } from '../lessons/api-rules.ts';

/** A fresh project folder with the given files, removed when the test ends. */
export async function tempProject(t: TestContext, files: Record<string, string> = {}): Promise<string> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'harness-test-')));
  t.after(() => rm(root, { recursive: true, force: true }));
  await writeFiles(root, files);
  return root;
}

export { scriptedAgent, toolsWith };

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

/** The API's objections to a request a model received: [] when the real API would accept it.
 *  A model receives no `model` or `max_tokens`, so valid ones are filled in. */
export function violationsOf(request: Pick<ModelRequest, 'messages'> & Partial<ModelRequest>): string[] {
  return requestViolations({ model: 'claude-test', max_tokens: 1024, ...request });
}

/** The tokens of every model call these events report, sub-agents' and summaries included: what a run spent. */
export function tokensSpent(events: readonly AgentEvent[]): number {
  return events.reduce((sum, event) => {
    const inner = event.type === 'subagent' ? event.event : event;
    if (!('usage' in inner)) return sum;
    const { input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens } = inner.usage;
    return sum + input_tokens + output_tokens + (cache_creation_input_tokens ?? 0) + (cache_read_input_tokens ?? 0);
  }, 0);
}

/** A promise to settle from outside: "b has started", "eight calls are running". */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Waits for `promise`, but rejects after `ms` (a generous bound, never a measurement), so a
 *  rendezvous that can never happen fails the test instead of hanging it. */
export function within<T>(promise: Promise<T>, what: string, ms = 2_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const fallback = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still waiting after ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, fallback]).finally(() => clearTimeout(timer));
}

/** Every tool_result in a transcript, in order. */
export const toolResults = (messages: Anthropic.MessageParam[]) =>
  messages.flatMap((m) =>
    m.role === 'user' && Array.isArray(m.content) ? m.content.filter((b) => b.type === 'tool_result') : [],
  );

/** A read-only tool that echoes its text and records every run, so a test can tell "not run" from "run". */
export function echoTool() {
  const runs: string[] = [];
  const tool = defineTool({
    name: 'echo',
    description: 'Echoes its text. A test tool that records its runs.',
    input: z.strictObject({ text: z.string() }),
    readOnly: true,
    run: async ({ text }) => (runs.push(text), `echo: ${text}`),
  });
  return { tool, runs };
}

/** Two models' list prices (dollars per million input and output tokens), for tests that budget in dollars. */
/** `{"a":{"a":…1…}}`, `depth` objects deep, built without recursion. */
export function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

/** Every project file an import names: static, type-only, re-exported or dynamic (`import('./x.ts')`). */
export function importsOf(file: string, source: string): string[] {
  const specifiers = [
    ...source.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'([^']+)'/gms),
    ...source.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
  ].map((match) => match[1]!);
  const local = specifiers.filter((s) => s.startsWith('.'));
  return [...new Set(local.map((s) => path.normalize(path.join(path.dirname(file), s))))];
}

/** An import circle in `graph` (each file → the files it imports) as `a → b → a`, or null where there is none. */
export function importCircle(graph: ReadonlyMap<string, readonly string[]>): string | null {
  const done = new Set<string>();
  const circleFrom = (file: string, trail: string[]): string | null => {
    if (trail.includes(file)) return [...trail.slice(trail.indexOf(file)), file].join(' → ');
    if (done.has(file)) return null;
    for (const imported of graph.get(file) ?? []) {
      const circle = circleFrom(imported, [...trail, file]);
      if (circle !== null) return circle;
    }
    done.add(file);
    return null;
  };
  for (const file of graph.keys()) {
    const circle = circleFrom(file, []);
    if (circle !== null) return circle;
  }
  return null;
}

export const HAIKU_PRICE = { input: 1, output: 5 };
export const SONNET_PRICE = { input: 3, output: 15 };

/** Whether a process still runs: not a zombie (killed, not yet reaped), nor one killed and tearing down (its exit
 *  code, the last field of its stat, already set). */
export function alive(pid: number): boolean {
  const stat = procFile(pid, 'stat');
  return stat !== '' && !/^\d+ \(.*\) Z/s.test(stat) && stat.trim().split(' ').at(-1) === '0';
}

function procFile(pid: number, name: string): string {
  try {
    return readFileSync(`/proc/${pid}/${name}`, 'utf8');
  } catch {
    return '';
  }
}
