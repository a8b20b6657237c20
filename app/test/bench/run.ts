// npm run bench:app: the program's rows of the bench (the harness's: test/bench/run.ts), in the same table: how soon
// the first model request leaves, a trip with the session file and the printer, the session page at scale, and resuming a 1 GB session file.
// `npm run bench:app -- WORDS` runs only the rows whose name contains WORDS.

import path from 'node:path';
import type { Measurement } from '../../../test/bench/loop.ts';
import { lastLine, MB, ms, type Row, runBench, spawnCaptured } from '../../../test/bench/table.ts';
import { SESSION_FILE_BYTES, withSessionFile } from './session-file.ts';
import { firstRequestAgainstClaudeCode, firstRequestAgainstNode } from './first-request.ts';
import { helpAgainstClaudeCode } from './help.ts';
import { exportTime, pageAtScale, pageRows } from './session-page.ts';
import { realisticTrip } from './trip.ts';

/** The window of the turn after the 1 GB resume: the default, so the older part is summarised a piece at a time. */
const TURN_WINDOW = 200_000;

const ROWS: Row[] = [
  {
    name: '--help: harness / Claude Code, paired',
    unit: '×',
    target: { op: '<=', limit: 1 },
    how: 'helpAgainstClaudeCode() in app/test/bench/help.ts: `node app/bin.mjs --help` and `claude --help`',
    measure: helpAgainstClaudeCode,
  },
  {
    name: 'start to the first model request, --acp / bare node, paired',
    unit: '×',
    how: 'firstRequestAgainstNode() in app/test/bench/first-request.ts: `node app/bin.mjs --acp` and `node -e "fetch(…)"`',
    measure: firstRequestAgainstNode,
  },
  {
    name: 'start to the first model request, a task: harness / Claude Code, paired',
    unit: '×',
    target: { op: '<=', limit: 1 },
    how: 'firstRequestAgainstClaudeCode() in app/test/bench/first-request.ts: `node app/bin.mjs "say ok"` and `claude -p`',
    measure: firstRequestAgainstClaudeCode,
  },
  {
    name: 'realistic trip: read_file + session file + printer',
    unit: 'ms',
    target: { op: '<=', limit: 1 },
    how: 'realisticTrip() in app/test/bench/trip.ts',
    measure: realisticTrip,
  },
  {
    name: 'session page export, 1,000 messages, median of 5',
    unit: 'ms',
    target: { op: '<', limit: 1000 },
    how: 'exportTime() in app/test/bench/session-page.ts: exportSession',
    measure: exportTime,
  },
  {
    name: 'session page, 10,000 messages: the page',
    unit: 'MB',
    target: { op: '<=', limit: 5 },
    how: 'pageAtScale() in app/test/bench/session-page.ts: writeLongSession, then export-page.ts in a child',
    measure: () => pageTenThousand().then((rows) => rows.size),
  },
  {
    name: 'session page, 10,000 messages: opened in Chromium, median of 5',
    unit: 'ms',
    target: { op: '<', limit: 1000 },
    how: 'the same page, opened 5 times in headless Chromium (playwright-core)',
    measure: () => pageTenThousand().then((rows) => rows.load),
  },
  {
    name: 'session page, 10,000 messages: export',
    unit: 's',
    how: 'the same child process',
    measure: () => pageTenThousand().then((rows) => rows.time),
  },
  {
    name: 'session page, a 200 MB session: export',
    unit: 's',
    how: 'pageAtScale() on 70,000 messages of 5,000-character results',
    measure: () => pageTwoHundred().then((rows) => rows.time),
  },
  {
    name: 'session page, a 200 MB session: export peak RSS',
    unit: 'MB',
    how: 'the same child process',
    measure: () => pageTwoHundred().then((rows) => rows.rss),
  },
  {
    name: 'session page, a 200 MB session: the page',
    unit: 'MB',
    how: 'the same export',
    measure: () => pageTwoHundred().then((rows) => rows.size),
  },
  {
    name: 'session page, a 200 MB session: opened in Chromium, median of 3',
    unit: 'ms',
    how: 'the same page, opened 3 times',
    measure: () => pageTwoHundred().then((rows) => rows.load),
  },
  {
    name: `resume a ${SESSION_FILE_BYTES / 1e9} GB session file: loadSession + resume`,
    unit: 's',
    how: `node --import tsx app/test/bench/load-session.ts FILE ${TURN_WINDOW}`,
    measure: () =>
      resumeRow((r, messages) => ({
        value: r.resumeMs / 1000,
        note: `${messages} messages; loadSession ${(r.loadMs / 1000).toFixed(1)} s of it`,
      })),
  },
  {
    name: `resume a ${SESSION_FILE_BYTES / 1e9} GB session file: peak RSS`,
    unit: 'MB',
    how: 'the same child process',
    measure: () =>
      resumeRow((r) => ({
        value: MB(r.resumedKiB),
        note: `after the resume, before the turn; of which ${MB(r.beforeKiB).toFixed(1)} MB was Node + tsx`,
      })),
  },
  {
    name: `resume a ${SESSION_FILE_BYTES / 1e9} GB session file, then one turn: total time`,
    unit: 's',
    how: `the same child: runTask(agent, 'go on'), contextWindow ${TURN_WINDOW.toLocaleString('en')}`,
    measure: () =>
      turnRow((r, messages) => ({
        value: (r.resumeMs + r.turnMs) / 1000,
        note:
          `the turn ${(r.turnMs / 1000).toFixed(1)} s of it, halted ${r.halt}; ${ms(r.firstSummaryMs)} from its ` +
          `start to the first summary request (the first look at all ${messages} messages), then a piece every ` +
          `${ms(r.earlyPieceMs)} over the first 500 and every ${ms(r.latePieceMs)} over the last 500 (medians)`,
      })),
  },
  {
    name: `resume a ${SESSION_FILE_BYTES / 1e9} GB session file, then one turn: summary calls`,
    unit: 'calls',
    how: 'the same child: each piece at most half the window',
    measure: () =>
      turnRow((r) => ({
        value: r.summaries,
        note:
          `${r.compactions} compactions, the largest piece ${r.largestPiece} messages (a piece fits half the ` +
          `window, ${TURN_WINDOW / 2} tokens, by the harness's estimate), ${(r.summarisedTokens / 1e6).toFixed(0)} ` +
          `million tokens summarised in all (its estimate, before long strings are cut); then ${r.replies} reply ("done")`,
      })),
  },
  {
    name: `resume a ${SESSION_FILE_BYTES / 1e9} GB session file, then one turn: peak RSS`,
    unit: 'MB',
    how: 'the same child',
    measure: () =>
      turnRow((r) => ({
        value: MB(r.peakKiB),
        note: `${(MB(r.peakKiB) - MB(r.resumedKiB)).toFixed(0)} MB above the peak after the resume`,
      })),
  },
];

// ---------------------------------------------------------------------------------------------

let tenThousand: Promise<ReturnType<typeof pageRows>> | undefined;
let twoHundred: Promise<ReturnType<typeof pageRows>> | undefined;

/** The 10,000-message rows share one session and one export, as do the 200 MB rows. */
const pageTenThousand = () => (tenThousand ??= pageAtScale(10_000, 2_000, 5).then(pageRows));
const pageTwoHundred = () => (twoHundred ??= pageAtScale(70_000, 5_000, 3).then(pageRows));

interface ResumeReport {
  failed: string;
  loadMs: number;
  resumeMs: number;
  messages: number;
  beforeKiB: number;
  resumedKiB: number;
  peakKiB: number;
  turnMs: number;
  halt: string;
  accepted: boolean;
  summaries: number;
  compactions: number;
  summarisedTokens: number;
  replies: number;
  largestPiece: number;
  firstSummaryMs: number;
  earlyPieceMs: number;
  latePieceMs: number;
}

let resumed: Promise<{ report: Partial<ResumeReport>; messages: number; failure: string | undefined }> | undefined;

/** One child resumes the generated session and runs one task on it; every resume row reads its report. */
function resumeLargeSession() {
  return (resumed ??= withSessionFile(async (file, messages) => {
    const child = path.join(import.meta.dirname, 'load-session.ts');
    const run = await spawnCaptured(process.execPath, ['--import', 'tsx', child, file, `${TURN_WINDOW}`]);
    const report = (run.stdout.trim() === '' ? {} : JSON.parse(run.stdout)) as Partial<ResumeReport>;
    const died = run.code !== 0 ? `the child exited ${run.code}: ${lastLine(run.output)}` : undefined;
    return { report, messages, failure: report.failed ?? died };
  }));
}

/** A row of the resume itself: it stands even if the turn after it failed. */
async function resumeRow(measure: (report: ResumeReport, messages: number) => Measurement): Promise<Measurement> {
  const { report, messages, failure } = await resumeLargeSession();
  const peak = report.peakKiB === undefined ? '' : ` (peak RSS ${MB(report.peakKiB).toFixed(0)} MB)`;
  if (report.resumeMs === undefined) throw new Error(`${failure ?? 'no report'}${peak}`);
  if (report.messages !== messages) throw new Error(`resumed ${report.messages} of ${messages} messages`);
  return measure(report as ResumeReport, messages);
}

/** A row of the turn after the resume: it needs the turn to have ended accepted. */
function turnRow(measure: (report: ResumeReport, messages: number) => Measurement): Promise<Measurement> {
  return resumeRow((report, messages) => {
    if (report.turnMs === undefined) throw new Error(report.failed ?? 'no report of the turn');
    if (!report.accepted) throw new Error(`the turn halted ${report.halt}`);
    return measure(report, messages);
  });
}

await runBench(ROWS);
