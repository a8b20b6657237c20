// Child process for the peak-RSS row: it does nothing but the read, so its peak is the read's
// cost plus Node and tsx, and nothing from the benchmark runner.
// Usage: node --import tsx bench/read-sparse.ts <file>   prints {"beforeKiB":…,"peakKiB":…}

import path from 'node:path';
import { read_file } from '../tools.ts';

const file = process.argv[2];
if (file === undefined) throw new Error('usage: read-sparse.ts <file>');
// maxRSS is a high-water mark, so the value before the read shows what Node and tsx cost alone.
const beforeKiB = process.resourceUsage().maxRSS;
await read_file.run({ path: path.basename(file) }, { root: path.dirname(file), seen: new Map() });
const peakKiB = process.resourceUsage().maxRSS;
console.log(JSON.stringify({ beforeKiB, peakKiB }));
