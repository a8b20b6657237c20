// Child process for the session page rows: exports one session and nothing else, so its time and peak RSS are the
// export's own (plus Node and tsx, reported apart).
// Usage: node --import tsx app/test/bench/export-page.ts <file>
// Prints {"ms":…,"bytes":…,"beforeKiB":…,"peakKiB":…}; on a failure, {"failed":…}.

import { statSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { exportSession } from '../../session-page/export.ts';

const file = process.argv[2];
if (file === undefined) throw new Error('usage: export-page.ts <file>');
const beforeKiB = process.resourceUsage().maxRSS;
try {
  const started = performance.now();
  const { out } = await exportSession(file);
  const ms = performance.now() - started;
  console.log(JSON.stringify({ ms, bytes: statSync(out).size, beforeKiB, peakKiB: process.resourceUsage().maxRSS }));
} catch (error) {
  console.log(JSON.stringify({ failed: error instanceof Error ? error.message : String(error) }));
}
