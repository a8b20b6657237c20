// The program's half of test/tools/routes-agents-md.test.ts: the start-up names each AGENTS.md it skipped, and why.

import assert from 'node:assert/strict';
import { symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { say } from 'reference-harness/scripted-model';
import { tempProject } from '../../test/helpers.ts';
import { runCli } from './helpers.ts';

test('an AGENTS.md linked out of the root is named at start as skipped, with its reason, in one notice', async (t) => {
  const base = await tempProject(t, { 'outside/secret.md': 'SECRET-OUTSIDE\n', 'project/a.txt': '' });
  const root = path.join(base, 'project');
  symlinkSync(path.join(base, 'outside', 'secret.md'), path.join(root, 'AGENTS.md'));
  writeFileSync(path.join(root, 'script.json'), JSON.stringify([say('done')]));
  const { stdout } = await runCli(['--script', path.join(root, 'script.json'), '--root', root, '--yes', 'hi']);
  assert.equal(stdout.split('context: skipped').length, 2, stdout);
  const said = stdout.replace(/\s+/g, ' '); // the terminal may wrap the notice to its width
  assert.match(said, /context: skipped .*AGENTS\.md: a link out of its folder, to .*secret\.md/);
  assert.doesNotMatch(stdout, /SECRET-OUTSIDE/);
});
