// The session page at scale: sessions of many messages written straight to disk (no harness run), their export time,
// size and memory, and how fast Chromium opens the page.

import { execFile } from 'node:child_process';
import { existsSync, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { once } from 'node:events';
import { chromium } from 'playwright-core';
import { exportSession } from '../../session-page/export.ts';
import { type Measurement, median, spreadOf } from '../../../test/bench/loop.ts';

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

/** What exporting a session in a child process took, and how its page opens in Chromium. */
export interface PageAtScale {
  sessionBytes: number;
  messages: number;
  exportMs: number;
  pageBytes: number;
  /** Node and tsx before the export, and the process's peak. */
  beforeKiB: number;
  peakKiB: number;
  /** The browser's own load time (navigation start to the end of the load event), one per opening. */
  loadMs: number[];
}

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

/** Writes a session of `messages` messages, exports it in a child process, and opens the page `opens` times. */
export async function pageAtScale(messages: number, resultChars: number, opens: number): Promise<PageAtScale> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (set CHROMIUM)`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-page-'));
  try {
    const file = path.join(dir, 'session.jsonl');
    const sessionBytes = await writeLongSession(file, messages, resultChars);
    const child = path.join(import.meta.dirname, 'export-page.ts');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', child, file], {
      cwd: path.join(import.meta.dirname, '..', '..', '..'),
      maxBuffer: 1e6,
    });
    const report = JSON.parse(stdout) as {
      failed?: string;
      ms: number;
      bytes: number;
      beforeKiB: number;
      peakKiB: number;
    };
    if (report.failed !== undefined) throw new Error(`the export failed: ${report.failed}`);
    return {
      sessionBytes,
      messages,
      exportMs: report.ms,
      pageBytes: report.bytes,
      beforeKiB: report.beforeKiB,
      peakKiB: report.peakKiB,
      loadMs: await loadTimes(path.join(dir, 'session.html'), opens),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Opens a page from disk `times` times, each in a fresh tab, and reads the browser's own load time. */
async function loadTimes(page: string, times: number): Promise<number[]> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const loads: number[] = [];
    for (let i = 0; i < times; i++) {
      const tab = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
      await tab.goto(pathToFileURL(page).href, { timeout: 600_000 });
      loads.push(await tab.evaluate<number>(`performance.getEntriesByType('navigation')[0].loadEventEnd`));
      await tab.close();
    }
    return loads;
  } finally {
    await browser.close();
  }
}

/** The rows of one session at scale: its page's size, its load time, the export's time and peak memory. */
export function pageRows(scale: PageAtScale): {
  size: Measurement;
  load: Measurement;
  time: Measurement;
  rss: Measurement;
} {
  const what = `${scale.messages.toLocaleString('en-US')} messages, a ${(scale.sessionBytes / 1e6).toFixed(0)} MB file`;
  const mb = (kib: number) => (kib * 1024) / 1e6;
  return {
    size: { value: scale.pageBytes / 1e6, note: what },
    load: { ...spreadOf(scale.loadMs), note: "Chromium's load event, the page opened from disk in a fresh tab" },
    time: { value: scale.exportMs / 1000, note: `${what}; in a child process that only exports` },
    rss: { value: mb(scale.peakKiB), note: `of which ${mb(scale.beforeKiB).toFixed(0)} MB was Node + tsx` },
  };
}
