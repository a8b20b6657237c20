// The program's half of test/sandbox/routes-sandbox.check.ts: a root the sandbox cannot hold is refused by the harness, and
// the program stops with that error before any run. How the launcher prints it (one line, exit non-zero) needs the
// program as a process: app/test/process.check.ts, in npm run test:terminal.

import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { say } from 'reference-harness/scripted-model';
import { tempProject } from '../../test/helpers.ts';
import { main } from '../main.ts';

test('a refused root stops the program with the one error that says why, before it prints anything', async (t) => {
  const script = path.join(await tempProject(t), 'script.json');
  await writeFile(script, JSON.stringify([say('Done.')]));
  const out = new PassThrough();
  let printed = '';
  out.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  await assert.rejects(main(['--root', '/tmp', '--script', script, 'go'], { NO_COLOR: '1' }, out), {
    message: 'the root /tmp is refused: it holds /tmp, the temporary folder the sandbox replaces',
  });
  assert.equal(printed, '', 'no run started, so nothing was said of one');
});
