// The session page's export time: a 1,000-message session read from disk and written as one HTML page.

import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { exportSession } from '../../app/session-page/export.ts';
import { type Measurement, median } from './loop.ts';

/** A session of `messages` messages, as JSONL: a task, reads answered with `resultChars` characters each, and
 *  a final reply. Written directly, so that a test of the page's limits does not have to run 500 turns. */
export function longSession(messages: number, resultChars: number): string {
  const entries: unknown[] = [
    { type: 'session', version: 1, model: 'claude-sonnet-4-5', root: '/project', startedAt: '2026-12-01T10:00:00Z' },
    { type: 'message', message: { role: 'user', content: 'Read every file under src/.' } },
  ];
  const result = `${'x'.repeat(99)}\n`.repeat(Math.ceil(resultChars / 100)).slice(0, resultChars);
  for (let turn = 1; turn <= (messages - 2) / 2; turn++) {
    const id = `toolu_${turn}`;
    const read = { type: 'tool_use', id, name: 'read_file', input: { path: `src/f${turn}.ts` } };
    const answer = { type: 'tool_result', tool_use_id: id, content: result };
    const usage = {
      input_tokens: 3,
      cache_creation_input_tokens: 700,
      cache_read_input_tokens: 700 * turn,
      output_tokens: 40,
    };
    entries.push(
      { type: 'message', message: { role: 'assistant', content: [read] } },
      { type: 'usage', turn, usage },
      { type: 'message', message: { role: 'user', content: [answer] } },
    );
  }
  entries.push({ type: 'message', message: { role: 'assistant', content: 'Read them all.' } });
  return `${entries.map((entry) => JSON.stringify(entry)).join('\n')}\n`;
}

/** Median of 5 exports of a 1,000-message session whose results are 2,000 characters each. */
export async function exportTime(): Promise<Measurement> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-page-'));
  try {
    const file = path.join(dir, 'long.jsonl');
    await writeFile(file, longSession(1_000, 2_000));
    await exportSession(file); // warm-up: the first export also pays for JIT compilation
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const start = performance.now();
      await exportSession(file);
      times.push(performance.now() - start);
    }
    const bytes = (await stat(path.join(dir, 'long.html'))).size;
    return { value: median(times), note: `a ${(bytes / 1e6).toFixed(1)} MB page from a 1,000-message session` };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
