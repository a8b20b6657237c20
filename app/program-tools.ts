// The program's tools: what every session of the command line, the editor (--acp) and the eval is given, what a
// replay offers of them (those the recording names), and what the page and the terminal describe calls with. A fork
// adds its own here, `[...TOOLS, yours]`, and every view follows; nothing else in app/ names a tool.

import { TOOLS } from 'reference-harness/tools';
import { type Tool } from './harness.ts';

export const PROGRAM_TOOLS: readonly Tool[] = TOOLS;
