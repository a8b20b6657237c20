// Long sessions written straight to disk (no harness run), for the session page's tests and its benchmark
// (app/test/bench/session-page.ts): a test of the page's limits need not run 500 turns, nor load the browser the
// benchmark drives.

import { createWriteStream } from 'node:fs';
import { once } from 'node:events';

/** A session of `messages` messages, as JSONL: a task, reads answered with `resultChars` characters each, and a final
 *  reply. Written directly, so that a test of the page's limits does not have to run 500 turns. The results are lines of
 *  made-up words, which compress about as well as real source files do (a page packs its parts with gzip). */
export function longSession(messages: number, resultChars: number): string {
  const lines: string[] = [];
  for (const line of sessionLines(messages, resultChars)) lines.push(line);
  return lines.join('');
}

/** The same session written to `file` line by line, in bounded memory, however large. */
export async function writeLongSession(file: string, messages: number, resultChars: number): Promise<number> {
  const out = createWriteStream(file);
  let bytes = 0;
  for (const line of sessionLines(messages, resultChars)) {
    bytes += Buffer.byteLength(line);
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return bytes;
}

const START = Date.parse('2026-12-01T10:00:00Z');

function* sessionLines(messages: number, resultChars: number): Generator<string> {
  const line = (entry: unknown) => `${JSON.stringify(entry)}\n`;
  const at = (ms: number) => new Date(START + ms).toISOString();
  yield line({ type: 'session', version: 2, model: 'claude-sonnet-4-5', root: '/project', startedAt: at(0) });
  yield line({ type: 'message', message: { role: 'user', content: 'Read every file under src/.' }, at: at(0) });
  const text = wordPool();
  for (let turn = 1; turn <= (messages - 2) / 2; turn++) {
    const id = `toolu_${turn}`;
    const read = { type: 'tool_use', id, name: 'read_file', input: { path: `src/f${turn}.ts` } };
    const from = (turn * 7_919) % (text.length - resultChars);
    const answer = { type: 'tool_result', tool_use_id: id, content: text.slice(from, from + resultChars) };
    const usage = {
      input_tokens: 3,
      cache_creation_input_tokens: 700,
      cache_read_input_tokens: 700 * turn,
      output_tokens: 40,
    };
    const ms = turn * 3_000;
    yield line({ type: 'message', message: { role: 'assistant', content: [read] }, at: at(ms + 2_000) });
    yield line({ type: 'usage', turn, usage, ms: 2_000, at: at(ms + 2_000) });
    yield line({
      type: 'message',
      message: { role: 'user', content: [answer] },
      callMs: { [id]: 40 },
      at: at(ms + 2_040),
    });
  }
  yield line({ type: 'message', message: { role: 'assistant', content: 'Read them all.' }, at: at(messages * 1_500) });
}

/** About 2 MB of lines of made-up words, from a seeded generator: the same text on every run, made once. */
const wordPool = () => (pool ??= makeWordPool());
let pool: string | undefined;

function makeWordPool(): string {
  let seed = 42;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  const syllables = [
    'con',
    'st',
    'ret',
    'urn',
    'fun',
    'ction',
    'val',
    'ue',
    'int',
    'er',
    'face',
    'ex',
    'port',
    'im',
    'type',
    'str',
    'ing',
    'num',
    'ber',
    'as',
    'ync',
    'aw',
    'ait',
    'pro',
    'mise',
    'map',
    'fil',
    'ter',
    'red',
    'uce',
  ];
  const words = Array.from({ length: 3_000 }, () =>
    Array.from({ length: 1 + Math.floor(next() * 3) }, () => syllables[Math.floor(next() * syllables.length)]).join(''),
  );
  const lines: string[] = [];
  for (let size = 0; size < 2_000_000;) {
    const indent = '  '.repeat(Math.floor(next() * 4));
    const line = `${indent}${Array.from({ length: 2 + Math.floor(next() * 9) }, () => words[Math.floor(next() * words.length)]).join(next() < 0.3 ? '.' : ' ')};`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n');
}
