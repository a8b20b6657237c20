// Sessions for the session page's tests (test/session-page.test.ts and test/browser.check.ts), recorded by
// the real harness on a scripted model, as the CLI records them.

import { mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { z } from 'zod';
import { type Agent, type AgentConfig, runTask } from '../agent.ts';
import { SESSION_VERSION, type SessionEntry, sessionRecorder } from '../app/session-file.ts';
import { call, reply, say, type ScriptEntry, text, toolUse } from '../scripted-model.ts';
import { defineTool, TOOLS } from '../tools.ts';
import { scriptedAgent, tempProject } from './helpers.ts';

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
        holder.agent!.steering.push('please also keep the README short');
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
    config: (holder) => ({ tools: [...TOOLS, nudge(holder)], verify: 'test -f done.txt' }),
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
