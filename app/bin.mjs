#!/usr/bin/env node
// The `harness` command (package.json's bin): plain JavaScript, so it starts from any folder with only node on the
// PATH, as an editor starts an agent. It loads the TypeScript through tsx found from this package (not from the PATH
// or the current folder), then runs main.ts as the program.
import { register } from 'tsx/esm/api';

register();
const main = new URL('./main.ts', import.meta.url);
process.argv[1] = decodeURIComponent(main.pathname); // main.ts runs itself when it is the program
await import(main.href);
