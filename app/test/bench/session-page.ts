// The session page at scale: sessions of many messages written straight to disk (no harness run), their export time,
// size and memory, and how fast Chromium opens the page.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { exportSession } from '../../session-page/export.ts';
import { longSession, writeLongSession } from '../long-session.ts';
import { type Measurement, median, spreadOf } from '../../../test/bench/loop.ts';

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
