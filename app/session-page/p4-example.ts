// npm run page:p4 [-- DIR]: plays lesson P4's endurance session (a sub-agent, 45 reads, a compaction) offline with a
// session file, exports its page, and prints the page's path. DIR defaults to a new temporary folder. The session is
// built here from the harness's API and its scripted model, as lesson P4's story plays it (lessons/stories.ts,
// "endurance"). The scripted model has no price; the session is recorded as if run with `--price 3,15`, so that the
// page shows what it would have cost.

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createAgent, runTask } from 'reference-harness';
import { ScriptedModel } from 'reference-harness/scripted-model';
import { type ModelRequest } from '../harness.ts';
import { SESSION_VERSION, sessionRecorder } from '../session-file.ts';
import { exportSession } from './export.ts';

/** Dollars per million input and output tokens: what the example is priced at, as `--price 3,15` would record. */
const EXAMPLE_PRICE = { input: 3, output: 15 };
/** A window small enough that 45 reads of the notes fill it several times over. */
const CONTEXT_WINDOW = 20_000;

const NOTES = Array.from({ length: 15 }, (_, i) => `notes/n${String(i + 1).padStart(2, '0')}.md`);
const noteText = (i: number) => `# Note ${i + 1}\n${`Line of note ${i + 1}, kept long on purpose. `.repeat(60)}\n`;
const TASK = 'Read every note and add a table of contents to notes/README.md.';
const QUESTION = 'Which files are in notes/?';

type Reply = Exclude<ConstructorParameters<typeof ScriptedModel>[0][number], (request: ModelRequest) => unknown>;
type Call = { name: string; input: unknown; id: string };
const calling = (...calls: Call[]): Reply => ({ content: calls.map((call) => ({ type: 'tool_use', ...call })) });
const saying = (text: string): Reply => ({ content: [{ type: 'text', text }] });

/** The parent's steps: the sub-agent, fifteen turns of three reads (each note three times), the edit, the answer. */
function steps(): Reply[] {
  const reads = Array.from({ length: 15 }, (_, step) =>
    calling(
      ...[0, 1, 2].map((j) => ({
        name: 'read_file',
        input: { path: NOTES[(step * 3 + j) % NOTES.length] },
        id: `toolu_read_${step}_${j}`,
      })),
    ),
  );
  const contents = NOTES.map((note) => `- ${note}\n`).join('');
  return [
    calling({ name: 'task', input: { description: 'list the notes', prompt: QUESTION }, id: 'toolu_task' }),
    ...reads,
    calling({ name: 'edit_file', input: { path: 'notes/README.md', old_str: '', new_str: contents }, id: 'toolu_toc' }),
    saying(`Added notes/README.md with all ${NOTES.length} notes.`),
  ];
}

/** The ids of the calls a reply makes. */
const callIds = (reply: Reply) =>
  reply.content.flatMap((block) => (block.type === 'tool_use' && block.id !== undefined ? [block.id] : []));

/** Whether `request` goes on with the loop after `previous`: it ends with the task (no step yet) or with the results
 *  of every call of the step before. Anything else is a request on the side, a summary request. */
function goesOn(request: ModelRequest, previous: Reply | undefined): boolean {
  const last = request.messages.at(-1);
  if (last?.role !== 'user') return false;
  if (previous === undefined) return JSON.stringify(last.content).includes(TASK);
  const blocks = typeof last.content === 'string' ? [] : last.content;
  const answered = new Set(blocks.flatMap((block) => (block.type === 'tool_result' ? [block.tool_use_id] : [])));
  return callIds(previous).every((id) => answered.has(id));
}

/** The parent's model: a request that goes on with the loop gets the next step; any other is the harness asking for a
 *  summary, and gets the next summary. */
function parentModel(): ScriptedModel {
  const script = steps();
  let next = 0;
  let summaries = 0;
  const answer = (request: ModelRequest): Reply => {
    if (next < script.length && goesOn(request, script[next - 1])) return script[next++]!;
    summaries++;
    return saying(`Goal: a table of contents in notes/README.md. Done: the notes read so far (summary ${summaries}).`);
  };
  return new ScriptedModel(Array.from({ length: 2 * script.length + 10 }, () => answer));
}

/** Records the P4 session on a project in `dir/project` into `dir/p4.jsonl` (its sub-agent beside it) and exports
 *  `dir/p4.html`. */
export async function exportP4(dir: string): Promise<{ session: string; out: string; warnings: string[] }> {
  const session = path.join(dir, 'p4.jsonl');
  // A session file is only ever appended to: a second run into the same file would be two sessions in one.
  if (existsSync(session)) throw new Error(`${session} already exists; give an empty folder`);
  const root = path.join(await realpath(dir), 'project');
  await mkdir(path.join(root, 'notes'), { recursive: true });
  await Promise.all(NOTES.map((note, i) => writeFile(path.join(root, note), noteText(i))));
  const header = {
    type: 'session' as const,
    version: SESSION_VERSION,
    model: 'scripted',
    price: EXAMPLE_PRICE,
    root,
    startedAt: new Date().toISOString(),
  };
  const agent = await createAgent({
    root,
    model: parentModel(),
    taskModel: new ScriptedModel([
      calling({ name: 'list_files', input: { path: 'notes' }, id: 'toolu_list' }),
      saying('notes/ holds n01.md to n15.md.'),
    ]),
    contextWindow: CONTEXT_WINDOW,
    contextFiles: false,
    onEvent: sessionRecorder(session, header, []),
  });
  const halt = await runTask(agent, TASK);
  if (halt.kind !== 'accepted') throw new Error(`the P4 session halted ${halt.kind}, not accepted`);
  return { session, ...(await exportSession(session, undefined, { contextWindow: CONTEXT_WINDOW })) };
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
