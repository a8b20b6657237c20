// npm run page:p4 [-- DIR]: plays lesson P4's story (a sub-agent, 45 reads, a compaction) offline with a session
// file, exports its page, and prints the page's path. DIR defaults to a new temporary folder. The scripted model has
// no price; the session is recorded as if run with `--price 3,15`, so that the page shows what it would have cost.

import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as agentTs from 'reference-harness';
import { SESSION_VERSION, sessionRecorder } from '../session-file.ts';
import { playStory, STORIES } from '../../lessons/stories.ts';
import { exportSession } from './export.ts';

const P4_STORY = STORIES.find((story) => story.lesson === 'p4')!;
/** Dollars per million input and output tokens: what the example is priced at, as `--price 3,15` would record. */
const EXAMPLE_PRICE = { input: 3, output: 15 };

/** Records the P4 story into `dir/p4.jsonl` (its sub-agent beside it) and exports `dir/p4.html`. */
export async function exportP4(dir: string): Promise<{ session: string; out: string; warnings: string[] }> {
  const session = path.join(dir, 'p4.jsonl');
  // A session file is only ever appended to: a second run into the same file would be two sessions in one.
  if (existsSync(session)) throw new Error(`${session} already exists; give an empty folder`);
  const problem = await playStory(agentTs, P4_STORY, {
    listen: (root) =>
      sessionRecorder(
        session,
        {
          type: 'session',
          version: SESSION_VERSION,
          model: 'scripted',
          price: EXAMPLE_PRICE,
          root,
          startedAt: new Date().toISOString(),
        },
        [],
      ),
  });
  if (problem !== null) throw new Error(`the P4 story failed: ${problem}`);
  const { contextWindow } = P4_STORY.options?.() ?? {};
  return { session, ...(await exportSession(session, undefined, { contextWindow })) };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dir = process.argv[2] ?? (await mkdtemp(path.join(os.tmpdir(), 'page-p4-')));
  try {
    const { session, out, warnings } = await exportP4(dir);
    for (const warning of warnings) console.error(`warning: ${warning}`);
    console.log(`session: ${session}\npage:    ${out}\nopen it: ${pathToFileURL(out).href}`);
  } catch (error) {
    console.error(`page:p4: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 2;
  }
}
