// Defends against: an AGENTS.md that hangs the start (a named pipe blocks whoever opens it, and so
// may a socket or a device) or is read whole at every start (a 3 GB file, where the prompt keeps
// 32 KiB). Only a regular file is opened, and only as much of it is read as the cap keeps. A file
// skipped says why, and the start goes on. (Its link out of its folder is refused before, by
// readContextFile in tools.ts.)
// Tests: test/tools/routes-agents-md.test.ts, test/loop/endurance.test.ts ("AGENTS.md").

import { open, stat } from 'node:fs/promises';

/** AGENTS.md at `real` (its real path): at most `most` bytes and one more, to tell a cut; or, as a
 *  string, why it is not read. */
export async function readAgentsFile(real: string, most: number): Promise<Buffer | string> {
  if (!(await stat(real)).isFile())
    return 'not a regular file (a named pipe, socket, device or folder)';
  // No more than can be shown: a 2 GB AGENTS.md would be read whole at every start.
  const handle = await open(real).catch((error: NodeJS.ErrnoException) => String(error.code));
  if (typeof handle === 'string') return `unreadable (${handle})`;
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(most + 1), 0, most + 1, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
