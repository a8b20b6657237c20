// Sessions for the session page's tests (app/test/session-page.test.ts and app/test/browser.check.ts), recorded by
// the real harness on a scripted model, as the CLI records them.

import { mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { z } from 'zod';
import {
  type Agent,
  type AgentConfig,
  type ApprovalAnswer,
  type Approver,
  runTask,
  steer,
  type UsageTotals,
} from 'reference-harness';
import {
  recordAnswers,
  SESSION_VERSION,
  type SessionEntry,
  type SessionHeader,
  sessionRecorder,
} from '../session-file.ts';
import type { SessionEvent } from '../terminal.ts';
import { call, reply, say, type ScriptEntry, ScriptedModel, text, toolUse } from 'reference-harness/scripted-model';
import { defineTool } from 'reference-harness/tools';
import { scriptedAgent, tempProject, toolsWith } from '../../test/helpers.ts';

export const HOSTILE = {
  script: '<script>alert(1)</script>',
  img: '</script><img src=x onerror=alert(1)>',
  fileName: `a"b<c>'d`,
};

export async function tempDir(t: TestContext): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'session-page-')));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs tasks through the real loop on a scripted model, recording the session as the CLI does. */
export async function recordSession(
  t: TestContext,
  options: {
    name?: string;
    files?: Record<string, string>;
    script: readonly ScriptEntry[];
    tasks: string[];
    config?: (holder: { agent?: Agent }) => Partial<AgentConfig>;
    model?: string;
  },
): Promise<string> {
  const root = await tempProject(t, options.files);
  const file = path.join(await tempDir(t), options.name ?? 'session.jsonl');
  const startedAt = '2026-12-01T10:00:00.000Z';
  const header: Extract<SessionEntry, { type: 'session' }> = {
    type: 'session',
    version: SESSION_VERSION,
    model: options.model ?? 'scripted',
    root,
    startedAt,
  };
  const holder: { agent?: Agent } = {};
  const { agent } = await scriptedAgent(root, options.script, {
    ...options.config?.(holder),
    onEvent: sessionRecorder(file, header, []),
  });
  holder.agent = agent;
  for (const task of options.tasks) await runTask(agent, task);
  return file;
}

/** A session with most of what a transcript can hold: two tasks, a steering message that makes the next
 *  call "skipped", a cut-off call "not executed", a refused call, and the gate's "not done". */
export async function richSession(t: TestContext, model = 'scripted'): Promise<string> {
  const nudge = (holder: { agent?: Agent }) =>
    defineTool({
      name: 'nudge',
      description: 'Stands for the user typing while the agent works.',
      input: z.strictObject({}),
      readOnly: false,
      run: async () => {
        steer(holder.agent!, 'please also keep the README short');
        return 'nudged';
      },
    });
  return recordSession(t, {
    model,
    files: { 'a.txt': 'alpha\n' },
    script: [
      reply(text('Starting.'), toolUse('nudge', {}), toolUse('read_file', { path: 'a.txt' })),
      { ...reply(toolUse('edit_file', { path: 'done.txt', old_str: '', new_str: 'do' })), stop_reason: 'max_tokens' },
      call('read_file', { path: '../outside.txt' }),
      say('Done.'),
      call('edit_file', { path: 'done.txt', old_str: '', new_str: 'done\n' }),
      say('Now it is done.'),
      say('Second task done.'),
    ],
    tasks: ['Make done.txt.', 'And a second task.'],
    config: (holder) => ({ tools: toolsWith(nudge(holder)), verify: 'test -f done.txt' }),
  });
}

/** A session whose task, project file name, tool result and reply hold the hostile strings, saved under a
 *  hostile file name. */
export async function hostileSession(t: TestContext): Promise<string> {
  const hostileFile = `${HOSTILE.fileName}.txt`;
  return recordSession(t, {
    name: `${HOSTILE.fileName}.jsonl`,
    files: { [hostileFile]: `${HOSTILE.script}\n${HOSTILE.img}\n` },
    script: [call('read_file', { path: hostileFile }), say(`It says **${HOSTILE.img}** and \`${HOSTILE.script}\`.`)],
    tasks: [`Read ${hostileFile} ${HOSTILE.script}`],
  });
}

/** The test file of the showcase: an assertion, so a failed check prints Node's AssertionError and a stack. */
const ADD_TEST =
  "const assert = require('node:assert');\nconst { add } = require('./add.js');\n" +
  'assert.strictEqual(add(2, 3), 5);\n';

/** A session with what the page shows around the transcript, recorded by the real harness as the CLI records it: a
 *  priced model, a sub-agent on another priced model, a failed check whose output is an assertion, an edit the person
 *  denies with a reason and one they approve while typing a message, the check passing; then a second task stopped
 *  with Ctrl-C. Returns the file, and what the harness itself counted as spent (sub-agents included). */
export async function showcaseSession(
  t: TestContext,
  options: { contextWindow?: number; name?: string } = {},
): Promise<{ file: string; costUsd: number | null; tokens: number }> {
  const root = await tempProject(t, {
    'package.json': '{ "type": "commonjs" }\n',
    'add.js': '// Adds two numbers.\nexports.add = (a, b) => a - b;\n',
    'test.js': ADD_TEST,
  });
  const file = path.join(await tempDir(t), options.name ?? 'showcase.jsonl');
  const model = new ScriptedModel(
    [
      reply(
        text('Let me find the adder first.'),
        toolUse('task', { description: 'find the adder', prompt: 'Which file defines add, and what tests it?' }),
      ),
      call('read_file', { path: 'add.js' }),
      say('The adder looks fine to me; done.'),
      call('edit_file', { path: 'add.js', old_str: 'a - b', new_str: 'a + b' }),
      call('edit_file', {
        path: 'add.js',
        old_str: 'exports.add = (a, b) => a - b;',
        new_str: 'exports.add = function add(a, b) {\n  return a + b;\n};',
      }),
      say('Fixed: `add` now **adds**, as a named function; the test passes.'),
      { ...say('Starting on it.'), delayMs: 5_000 },
    ],
    'claude-sonnet-4-5',
    { input: 3, output: 15 },
  );
  const holder: { agent?: Agent } = {};
  // The person types while the sub-agent works: the message goes to the agent with the task call's result.
  const typeMeanwhile = () => {
    steer(holder.agent!, 'and keep the comment above it');
    tell({ type: 'steer', text: 'and keep the comment above it' });
    return call('list_files', { path: '.' });
  };
  const taskModel = new ScriptedModel(
    [typeMeanwhile, say('add.js defines add; test.js checks that add(2, 3) is 5.')],
    'claude-haiku-4-5',
    { input: 1, output: 5 },
  );
  const header: SessionHeader = {
    type: 'session',
    version: SESSION_VERSION,
    model: model.name,
    root,
    startedAt: new Date().toISOString(),
    price: { input: 3, output: 15 },
    ...(options.contextWindow && { contextWindow: options.contextWindow }),
    options: {
      verify: 'node test.js',
      verifyTimeoutMs: 30_000,
      protect: ['test.js'],
      budgets: { maxTurns: 25 },
      approval: 'ask',
      tools: ['list_files', 'read_file', 'edit_file', 'task'],
      contextWindow: options.contextWindow,
      contextFiles: false,
      taskModel: taskModel.name,
    },
  };
  const record = sessionRecorder(file, header, []);
  let totals: UsageTotals | null = null;
  const tell = (event: SessionEvent) => {
    if (event.type === 'reply') totals = event.totals;
    record(event);
  };
  const answers: ApprovalAnswer[] = [{ approved: false, reason: 'keep it a named function' }, { approved: true }];
  const approver: Approver = async () => answers.shift()!;
  const { agent } = await scriptedAgent(root, [], {
    model,
    taskModel,
    verify: 'node test.js',
    protect: ['test.js'],
    contextFiles: false,
    ...(options.contextWindow && { contextWindow: options.contextWindow }),
    approve: recordAnswers(approver, tell),
    onEvent: tell,
  });
  holder.agent = agent;
  tell({ type: 'task', text: 'Make add(2, 3) return 5.' });
  await runTask(agent, 'Make add(2, 3) return 5.');
  const stop = new AbortController();
  tell({ type: 'task', text: 'Now add a subtract function.' });
  const stopped = runTask(agent, 'Now add a subtract function.', stop.signal);
  await new Promise((resolve) => setTimeout(resolve, 50));
  stop.abort();
  tell({ type: 'interrupt' });
  await stopped;
  const spent: UsageTotals = totals ?? { input: 0, cacheWrite: 0, cacheRead: 0, output: 0, costUsd: null };
  return {
    file,
    costUsd: spent.costUsd,
    tokens: spent.input + spent.cacheWrite + spent.cacheRead + spent.output,
  };
}
