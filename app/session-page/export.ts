// session-page/export.ts — turns a session file into one self-contained web page: everything inline, nothing
// fetched, opens from disk, prints. `npx harness --export S.jsonl [--out F.html]`
//
// The page is rendered here, in Node, with an escaper (see html.ts); the page's own script only shows tooltips, opens
// folds and unpacks the parts of a long transcript. The reading order: read.ts (the session file, streamed),
// transcript.ts and chart.ts (the two views), page.ts (the page around them, written part by part), html.ts and
// markdown.ts (how text becomes markup, safely).

import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type PageOptions, writePage } from './page.ts';
import { outlineSession } from './read.ts';

/** Writes the page of `sessionFile` to `outFile` (default: beside it, `.html` for `.jsonl`). Throws, with a
 *  one-line message, only when there is no session to show; anything else becomes a warning on the page. */
export async function exportSession(
  sessionFile: string,
  outFile?: string,
  options: PageOptions = {},
): Promise<{ out: string; warnings: string[] }> {
  const outline = await outlineSession(sessionFile).catch((error: NodeJS.ErrnoException) => {
    throw new Error(`cannot read ${sessionFile}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`);
  });
  requireSomething(outline.header, outline.messages + outline.requests.length + outline.subAgents.length, sessionFile);
  const out = outFile ?? defaultOut(sessionFile);
  const { warnings } = await writePage(outline, out, options);
  return { out, warnings };
}

/** Prevents an empty page posing as a session: a file with no readable entry at all is refused. */
function requireSomething(header: unknown, entries: number, file: string): void {
  if (header === null && entries === 0) throw new Error(`${file} holds no session entry (is it a session file?)`);
}

/** S.jsonl → S.html; any other name gets .html added. */
export const defaultOut = (sessionFile: string) => sessionFile.replace(/(\.jsonl)?$/, '.html');

const USAGE = 'usage: npx tsx session-page/export.ts SESSION.jsonl [--out PAGE.html] [--context-window TOKENS]';

function parseExportArgs(argv: string[]): { file: string; out: string | undefined; options: PageOptions } {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { out: { type: 'string' }, 'context-window': { type: 'string' } },
    allowPositionals: true,
  });
  const [file, ...extra] = positionals;
  if (file === undefined || extra.length > 0) throw new Error(USAGE);
  const window = values['context-window'];
  if (window !== undefined && !/^[1-9]\d*$/.test(window))
    throw new Error(`--context-window takes a whole number of tokens, not "${window}"`);
  return { file, out: values.out, options: window === undefined ? {} : { contextWindow: Number(window) } };
}

/** The command line: prints the page's path, and warnings on stderr; exit 2, with one line, on bad input. */
export async function cli(argv: string[]): Promise<number> {
  try {
    const { file, out, options } = parseExportArgs(argv);
    const result = await exportSession(file, out, options);
    for (const warning of result.warnings) console.error(`warning: ${warning}`);
    console.log(result.out);
    return 0;
  } catch (error) {
    console.error(`export: ${error instanceof Error ? error.message : String(error)}`);
    return 2;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  void cli(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
