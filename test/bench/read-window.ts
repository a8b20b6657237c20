// Child process for the peak-RSS row: it does nothing but one read_file call, so its peak is the read's cost plus
// Node and tsx, and nothing from the benchmark runner.
// Usage: node --import tsx bench/read-window.ts <file> [offset]   prints {"beforeKiB":…,"peakKiB":…}

import path from 'node:path';
import { read_file } from '../../tools.ts';
import { containedRunner, guardedDisk } from '../../hardening/index.ts';

const [file, offset] = process.argv.slice(2);
if (file === undefined) throw new Error('usage: read-window.ts <file> [offset]');
// maxRSS is a high-water mark, so the value before the read shows what Node and tsx cost alone.
const beforeKiB = process.resourceUsage().maxRSS;
const input = { path: path.basename(file), ...(offset !== undefined && { offset: Number(offset) }) };
await read_file.run(input, { root: path.dirname(file), seen: new Map(), disk: guardedDisk, runner: containedRunner });
const peakKiB = process.resourceUsage().maxRSS;
console.log(JSON.stringify({ beforeKiB, peakKiB }));
