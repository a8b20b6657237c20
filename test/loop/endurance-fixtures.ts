// What the endurance tests share, the harness's (test/loop/endurance.test.ts) and the program's (app/test/): generated
// projects, a model that reads them one file per turn and answers summary requests, and the sub-agent's scripts.

import type { TestContext } from 'node:test';
import type Anthropic from '@anthropic-ai/sdk';
import type { ModelRequest } from '../../agent.ts';
import { call, reply, say, type ScriptedReply, toolUse } from '../../scripted-model.ts';
import { tempProject } from '../helpers.ts';

/** A summary request ends with a user message whose (string) content asks for the summary. */
export const isSummaryRequest = (request: ModelRequest) => {
  const last = request.messages.at(-1);
  return last?.role === 'user' && typeof last.content === 'string' && last.content.includes('Write a summary');
};

/** `count` source files of a few KB each, with distinct lines, so every read result is unique. */
export function generatedProject(count: number, lines = 45): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++) {
    const body = Array.from(
      { length: lines },
      (_, k) => `export const m${i}_${k} = ${k}; // ${'filler '.repeat(6)}${i}.${k}`,
    );
    files[`src/mod${String(i).padStart(2, '0')}.ts`] = `${body.join('\n')}\n`;
  }
  return files;
}

/** What a reading script has answered so far. */
export interface ReadingState {
  reads: number;
  edited: boolean;
  requests: number;
  /** Request index → the summary written for it. */
  summaries: Map<number, string>;
  /** How many files had been read when each summary was written. */
  readsAtSummary: number[];
}

/**
 * A model that reads the given files one per turn, answers every summary request with a numbered
 * summary, optionally makes one edit, then says it is done. One function serves every turn, so the
 * script is as long as the run needs; `state` tells the test what it answered.
 */
export function readingScript(
  paths: string[],
  options: {
    edit?: { path: string; old_str: string; new_str: string };
    stopReadingWhen?: (state: ReadingState) => boolean;
    usage?: ScriptedReply['usage'];
  } = {},
) {
  const state: ReadingState = { reads: 0, edited: false, requests: 0, summaries: new Map(), readsAtSummary: [] };
  const withUsage = (r: ScriptedReply): ScriptedReply => (options.usage ? { ...r, usage: options.usage } : r);
  const entry = (request: ModelRequest): ScriptedReply => {
    const index = state.requests++;
    if (isSummaryRequest(request)) {
      const summary = `SUMMARY #${state.summaries.size + 1}: the task is to read every file; ${state.reads} read so far.`;
      state.summaries.set(index, summary);
      state.readsAtSummary.push(state.reads);
      return withUsage(say(summary));
    }
    if (state.reads < paths.length && !(options.stopReadingWhen?.(state) ?? false))
      return withUsage(call('read_file', { path: paths[state.reads++] }));
    if (options.edit && !state.edited) {
      state.edited = true;
      return withUsage(call('edit_file', options.edit));
    }
    return withUsage(say(`Done: read ${state.reads} files${options.edit ? ' and made the edit' : ''}.`));
  };
  return { script: Array.from({ length: 500 }, () => entry), state };
}

// The sub-agent (the task tool): a parent that starts one child, and the child's two replies.
export const PROMPT = 'Where is the answer kept?';
export const FINAL = 'CHILD-FINAL: the answer is 42, in a.txt line 1.';
export const parentScript = () => [
  {
    ...call('task', { description: 'find the answer', prompt: PROMPT }),
    usage: { input_tokens: 10, output_tokens: 5 },
  },
  { ...say('The answer is 42.'), usage: { input_tokens: 10, output_tokens: 5 } },
];
export const childScript = () => [
  {
    ...reply(toolUse('read_file', { path: 'a.txt' }, 'toolu_child_1')),
    usage: { input_tokens: 400, output_tokens: 100 },
  },
  { ...say(FINAL), usage: { input_tokens: 400, output_tokens: 100 } },
];
export const project = (t: TestContext) => tempProject(t, { 'a.txt': 'the answer is 42 FILE-BODY-MARKER\n' });

/** Four sub-agents started in one reply. */
export const TASKS = ['a', 'b', 'c', 'd'].map((name) =>
  toolUse('task', { description: name, prompt: `Search ${name}.` }),
);

/** An earlier user message that counts how often it is stringified: each message is measured once. */
export function countedMessage(): { message: Anthropic.MessageParam; measured: () => number } {
  let count = 0;
  const message = {
    role: 'user',
    content: 'an earlier task',
    toJSON: () => (count++, { role: 'user', content: 'an earlier task' }),
  } as Anthropic.MessageParam;
  return { message, measured: () => count };
}
