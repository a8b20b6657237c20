#!/usr/bin/env node
// The `harness` command (package.json's bin): plain JavaScript, so it starts from any folder with only node on the
// PATH, as an editor starts an agent. It runs main.ts as the program: compiled, with all it imports, into a build
// (bundle.mjs; built again at the first start after any of their files changed), or, where no build can be had, as
// TypeScript through tsx found from this package (not from the PATH or the current folder).
//
// `--help` alone is answered from help.txt without loading any TypeScript: loading it takes longer than all of
// Claude Code's --help (app/README.md has the figures). help.txt is what helpText() in options.ts prints, kept so by
// a test (app/test/cli.test.ts); `npm run --workspace app help.txt` writes it again.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) {
  process.stdout.write(readFileSync(new URL('./help.txt', import.meta.url)));
} else {
  const main = new URL('./main.ts', import.meta.url);
  process.argv[1] = decodeURIComponent(main.pathname); // main.ts runs itself when it is the program
  const { freshBuild } = await import('./bundle.mjs');
  const built = await freshBuild(fileURLToPath(main), fileURLToPath(new URL('./.build/', import.meta.url)));
  if (built) await import(built.href);
  else await throughTsx(main);
}

/** Without a build: the TypeScript through tsx found from this package (not from the PATH or the current folder). */
async function throughTsx(main) {
  // The JavaScript packages the start needs, loaded before tsx's hooks are: through them each of their modules (the
  // SDK alone has ~270) is a round trip to the hooks' thread, which made the first model request leave seconds after
  // the start (`npm run bench:app -- first`). A later import of the same package finds it loaded. Only speed
  // depends on this list: a package left out loads through the hooks, as any other.
  const has = (flag) => args.some((arg) => arg === flag || arg.startsWith(`${flag}=`));
  const needed = ['zod', 'diff', 'minimatch', 'ignore', ...(has('--script') ? [] : ['@anthropic-ai/sdk'])];
  await Promise.all([...needed, ...(has('--acp') ? ['@agentclientprotocol/sdk'] : [])].map((name) => import(name)));
  const { register } = await import('tsx/esm/api');
  // Prevents the project from steering the program's own code: tsx would read the tsconfig.json found from the
  // current folder upward (its "paths" can send `import 'zod'` to a file the model wrote). It reads none.
  register({ tsconfig: false });
  await import(main.href);
}
