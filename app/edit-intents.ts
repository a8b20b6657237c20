// An edit said before it is made: the program's disk records each write's intent in the session file (the file, its
// content's hash before and after) before the file changes, so a resume after a crash can tell the model whether an
// edit whose result was never recorded landed, by hashing the file as it is now.

import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { safe_path } from 'reference-harness/tools';
import type { Disk, KnownOutcome } from './harness.ts';

/** A write about to be made: by which call, to which file (relative to the root), from what to what (sha256 of the
 *  content; `before` null: the file did not exist). */
export interface EditIntent {
  callId: string;
  path: string;
  before: string | null;
  after: string;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Prevents a resume after a crash from telling the model an edit that landed did not run (so it makes it again):
 *  each write of a call is told to `intend` first, which records it durably or throws (then nothing is written). */
export function intentRecorded(disk: Disk, intend: (intent: EditIntent) => void): Disk {
  return {
    ...disk,
    async write(file, content, before, ctx) {
      // A write outside a tool call answers no call: there is nothing to tell a resume.
      if (ctx.callId !== undefined) {
        const hashes = { before: before === null ? null : sha256(before), after: sha256(content) };
        intend({ callId: ctx.callId, path: path.relative(ctx.root, file), ...hashes });
      }
      await disk.write(file, content, before, ctx);
    },
  };
}

/** What the disk shows of each edit whose result the session never recorded (the calls of one reply, in the order
 *  they ran): its file now holds the new content (applied), the old one (not applied), or neither (changed since:
 *  read it again). An edit that a later one of the same file was made on top of landed if that one did. */
export async function intentOutcomes(given: EditIntent[], root: string): Promise<Map<string, KnownOutcome>> {
  const intents = await insideProject(given, root);
  const now = new Map<string, string | null>();
  for (const { path: edited } of intents)
    if (!now.has(edited)) now.set(edited, await hashNow(path.resolve(root, edited)));
  const landed = (at: number): boolean => {
    const { path: edited, after } = intents[at]!;
    if (now.get(edited) === after) return true;
    const next = intents.findIndex((later, i) => i > at && later.path === edited && later.before === after);
    return next !== -1 && landed(next);
  };
  return new Map(intents.map((intent, at) => [intent.callId, outcome(intent, landed(at), now.get(intent.path)!)]));
}

/** Prevents a session file the model could write from making the resume an oracle for files outside the project
 *  (an intent naming `../secret` and a guessed hash would be told "applied"): an intent whose path leads outside is
 *  dropped, and its call answered "not run" like any other. */
async function insideProject(intents: EditIntent[], root: string): Promise<EditIntent[]> {
  const inside = await Promise.all(
    intents.map((intent) =>
      safe_path(root, intent.path).then(
        () => true,
        () => false,
      ),
    ),
  );
  return intents.filter((_, at) => inside[at]);
}

function outcome(intent: EditIntent, landed: boolean, now: string | null): KnownOutcome {
  const edit = `the edit of ${intent.path}`;
  if (landed)
    return {
      content: `applied: ${edit} landed before the session ended (the file has the new content); do not make it again`,
      isError: false,
    };
  if (now === intent.before)
    return {
      content: `not applied: the session ended before ${edit} was written; the file is as it was`,
      isError: true,
    };
  const changed = now === null ? 'is gone' : 'holds neither the content it had nor the edit';
  return {
    content: `unknown: ${intent.path} changed since the session ended (it ${changed}); read it again`,
    isError: true,
  };
}

/** The sha256 of a regular file's content now; null if there is none (missing, a folder, a pipe). Opened without
 *  waiting (a named pipe put there since) and streamed: the file may be of any size. */
async function hashNow(file: string): Promise<string | null> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK).catch(() => null);
  if (handle === null) return null;
  try {
    if (!(await handle.stat()).isFile()) return null;
    const hash = createHash('sha256');
    for await (const chunk of handle.createReadStream({ autoClose: false })) hash.update(chunk as Buffer);
    return hash.digest('hex');
  } finally {
    await handle.close();
  }
}
