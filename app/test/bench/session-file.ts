// A 1 GB session file shaped like a long real one: a header, a task, then turns of one read_file call, its ~4 KB
// result and the turn's usage. Written once per benchmark run (a few seconds) and always deleted.

import { mkdtemp, open, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SESSION_VERSION, type SessionEntry } from '../../session-file.ts';
import { usageOf } from 'reference-harness/scripted-model';

export const SESSION_FILE_BYTES = 1000 ** 3;

/** One turn's three lines: the call, its result, the usage. */
function turn(n: number): string {
  const id = `toolu_bench_${n}`;
  const file = `src/module${n % 500}.ts`;
  const body = Array.from({ length: 60 }, (_, i) => `export const value${i} = ${n * 60 + i}; // line ${i + 1}`);
  const entries: SessionEntry[] = [
    {
      type: 'message',
      message: {
        role: 'assistant',
        content: [{ type: 'tool_use', id, name: 'read_file', input: { path: file } }],
      },
    },
    {
      type: 'message',
      message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: body.join('\n') }] },
    },
    { type: 'usage', turn: n, usage: usage(n) },
  ];
  return entries.map((entry) => `${JSON.stringify(entry)}\n`).join('');
}

function usage(n: number) {
  return usageOf({
    input_tokens: 3,
    output_tokens: 40,
    cache_creation_input_tokens: 1_200,
    cache_read_input_tokens: 1_000 * n,
  });
}

/** Runs `use` on a fresh session file of about SESSION_FILE_BYTES and deletes it, even when `use` throws. */
export async function withSessionFile<T>(use: (file: string, messages: number) => Promise<T>): Promise<T> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'bench-session-')));
  const name = path.join(root, 'long.jsonl');
  try {
    const file = await open(name, 'w');
    let messages = 1;
    try {
      const header: SessionEntry = {
        type: 'session',
        version: SESSION_VERSION,
        model: 'claude-sonnet-5-5',
        root,
        startedAt: new Date(0).toISOString(),
      };
      const task: SessionEntry = {
        type: 'message',
        message: { role: 'user', content: [{ type: 'text', text: 'read every module under src/' }] },
      };
      let bytes = 0;
      let chunk = `${JSON.stringify(header)}\n${JSON.stringify(task)}\n`;
      for (let n = 1; bytes + chunk.length < SESSION_FILE_BYTES; n++, messages += 2) {
        chunk += turn(n);
        if (chunk.length > 1024 * 1024) {
          await file.write(chunk);
          bytes += chunk.length;
          chunk = '';
        }
      }
      await file.write(chunk);
    } finally {
      await file.close();
    }
    return await use(name, messages);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
