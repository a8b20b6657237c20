// The program's half of test/routes-sandbox.test.ts: a root the sandbox cannot hold is refused by the harness, and
// the program says so in one line, before any run.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { say } from '../../scripted-model.ts';
import { tempProject } from '../../test/helpers.ts';

test('the program says a refused root in one line and exits non-zero', async (t) => {
  const script = path.join(await tempProject(t), 'script.json');
  await writeFile(script, JSON.stringify([say('Done.')]));
  const main = path.join(import.meta.dirname, '..', 'main.ts');
  const run = spawnSync(process.execPath, ['--import', 'tsx', main, '--root', '/tmp', '--script', script, 'go'], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  assert.notEqual(run.status, 0);
  assert.match(run.stderr, /^harness: the root \/tmp is refused: it holds \/tmp, the temporary folder the sandbox /);
  const lines = run.stderr.trim().split('\n');
  assert.equal(lines.filter((line) => !line.startsWith('  ')).length, 1, `one message, wrapped at most: ${run.stderr}`);
});
