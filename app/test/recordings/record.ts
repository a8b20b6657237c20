// Makes the recorded sessions in this folder, each with the harness's own command line, as a forker would with a
// key: `node --import tsx app/test/recordings/record.ts`. app/test/replay.test.ts replays every one on a fresh copy
// of its project and expects it to be identical. Run this again only when a change to the harness is meant to change what
// the recordings say (then review the diff of the .jsonl files like any other change).

import { cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type Anthropic from '@anthropic-ai/sdk';
import { main } from '../../main.ts';
import { fakeMessage, startFakeApi } from '../../../test/model/fake-api.ts';

const here = import.meta.dirname;
const PROJECT = path.join(here, 'projects', 'add');
const TASK = 'make add(2, 3) == 5';

/** One CLI run in a fresh copy of the project, writing its session to `name`.jsonl in this folder. */
async function record(name: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'recording-'));
  try {
    await cp(PROJECT, root, { recursive: true });
    const session = path.join(here, `${name}.jsonl`);
    await rm(session, { force: true });
    const common = ['--root', root, '--verify', 'node test.js', '--yes', '--session', session, '--no-context-files'];
    const code = await main([...common, ...args, TASK], { NO_COLOR: '1', ...env }, new PassThrough());
    console.log(`${name}.jsonl: exit ${code}`);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

const tool = (id: string, name: string, input: unknown): Anthropic.ToolUseBlock => ({
  type: 'tool_use',
  id,
  name,
  input,
  caller: { type: 'direct' },
});
const text = (t: string): Anthropic.TextBlock => ({ type: 'text', text: t, citations: null });

// 1. The seed story's eight scripted replies (lessons/scripts/seed-story.json), through --script.
await record('seed-story', ['--script', path.join(here, '..', '..', '..', 'lessons', 'scripts', 'seed-story.json')]);

// 2. Through the real SDK path against a local Anthropic-compatible endpoint (test/model/fake-api.ts): streamed replies,
// a signed thinking block, a tool call the gate later proves wrong, and a fix.
const api = await startFakeApi([
  {
    kind: 'reply',
    message: fakeMessage(
      [
        { type: 'thinking', thinking: 'The test says add(2, 3) should be 5. Read both files.', signature: '' },
        tool('toolu_rec_1', 'read_file', { path: 'add.js' }),
        tool('toolu_rec_2', 'read_file', { path: 'test.js' }),
      ],
      'tool_use',
    ),
  },
  {
    kind: 'reply',
    message: fakeMessage(
      [tool('toolu_rec_3', 'edit_file', { path: 'add.js', old_str: 'a - b', new_str: 'b - a' })],
      'tool_use',
    ),
  },
  { kind: 'reply', message: fakeMessage([text('Fixed: add now subtracts the other way round.')]) },
  {
    kind: 'reply',
    message: fakeMessage(
      [tool('toolu_rec_4', 'edit_file', { path: 'add.js', old_str: 'b - a', new_str: 'a + b' })],
      'tool_use',
    ),
  },
  { kind: 'reply', message: fakeMessage([text('Done: add returns a + b, and node test.js passes.')]) },
]);
try {
  const env = { ANTHROPIC_BASE_URL: api.baseURL, ANTHROPIC_API_KEY: 'recording-key-not-secret' };
  await record('local-endpoint', ['--model', 'claude-fake-1'], env);
} finally {
  await api.close();
}
