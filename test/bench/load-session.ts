// Child process for the resume rows: what --resume does with a session file, and nothing else, so its time and
// peak RSS are the resume's own (plus Node and tsx, reported apart).
// Usage: node --import tsx bench/load-session.ts <file>
// Prints {"loadMs":…,"resumeMs":…,"messages":…,"beforeKiB":…,"peakKiB":…}; on a failure, the step and its error.

import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { createAgent, resume } from '../../agent.ts';
import { loadSession } from '../../app/session-file.ts';
import { ReplayModel } from './replay-model.ts';

const file = process.argv[2];
if (file === undefined) throw new Error('usage: load-session.ts <file>');
const beforeKiB = process.resourceUsage().maxRSS;
let step = 'loadSession';
try {
  const started = performance.now();
  const loaded = await loadSession(file);
  const loadMs = performance.now() - started;
  step = 'resume';
  const agent = await createAgent({ root: os.tmpdir(), model: new ReplayModel([]), tools: [], contextFiles: false });
  resume(agent, loaded);
  const resumeMs = performance.now() - started;
  const peakKiB = process.resourceUsage().maxRSS;
  console.log(JSON.stringify({ loadMs, resumeMs, messages: agent.messages.length, beforeKiB, peakKiB }));
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  console.log(JSON.stringify({ failed: `${step} failed: ${message}`, peakKiB: process.resourceUsage().maxRSS }));
}
