// The program's half of test/sandbox/sandbox.check.ts: when the command line asks for the gate's sandbox, and that running
// the check outside it (--no-sandbox) is said, traced and recorded.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { call, say } from 'reference-harness/scripted-model';
import { sandboxPolicy } from '../options.ts';
import { runCli } from './helpers.ts';

test('the command line asks for the sandbox when nobody reviews a real model (--yes), and never with --no-sandbox', () => {
  const policy = (flags: { yes?: boolean; script?: string; noSandbox?: boolean }) =>
    sandboxPolicy({ yes: false, script: undefined, noSandbox: false, ...flags });
  assert.equal(policy({ yes: true }), true, 'a real model under --yes: the sandbox or no check');
  assert.equal(policy({ yes: true, noSandbox: true }), false);
  assert.equal(policy({}), undefined, 'a person approves each edit: the sandbox where there is one');
  assert.equal(policy({ yes: true, script: 'replies.json' }), undefined, 'a scripted run: only a warning');
});

test('--no-sandbox is never silent: said at start, on the traced gate line, and recorded in the session header', async (t) => {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-said-')));
  t.after(() => rm(root, { recursive: true, force: true }));
  await writeFile(path.join(root, 'test.js'), 'process.exit(0);\n');
  const script = path.join(root, 'script.json');
  await writeFile(script, JSON.stringify([say('Done.')]));
  const session = path.join(root, 'session.jsonl');
  const args = ['--root', root, '--script', script, '--yes', '--verify', 'node test.js', '--session', session];
  const { status, stdout } = await runCli([...args, '--no-sandbox', '--trace', 'check']);
  assert.equal(status, 0);
  assert.match(stdout, /--no-sandbox: the verify command runs outside the OS sandbox, with your full rights/);
  assert.match(stdout, /verify `node test.js` exited with code 0: passed \(outside the sandbox\)/);
  const header = JSON.parse((await readFile(session, 'utf8')).split('\n')[0]!) as { options: { noSandbox: boolean } };
  assert.equal(header.options.noSandbox, true);
});

test('--no-default-protection is explicit: said at start, recorded in the header, and only then may --yes write .vscode', async (t) => {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-optout-')));
  t.after(() => rm(root, { recursive: true, force: true }));
  const settings = '.vscode/settings.json';
  const edit = { path: settings, old_str: '', new_str: '{}\n' };
  const script = path.join(root, 'script.json');
  await writeFile(script, JSON.stringify([call('edit_file', edit), say('Done.')]));
  const run = async (...extra: string[]) => {
    const session = path.join(root, `session${extra.length}.jsonl`);
    const result = await runCli(['--root', root, '--script', script, '--yes', '--session', session, ...extra, 'go']);
    const header = JSON.parse((await readFile(session, 'utf8')).split('\n')[0]!) as {
      options: { noDefaultProtection: boolean; passEnv: string[] };
    };
    return { ...result, header };
  };
  const kept = await run('--pass-env', 'MY_TOKEN');
  assert.equal(kept.status, 0);
  assert.doesNotMatch(kept.stdout, /--no-default-protection/);
  assert.equal(existsSync(path.join(root, settings)), false, 'by default .vscode is never written');
  assert.equal(kept.header.options.noDefaultProtection, false);
  assert.deepEqual(kept.header.options.passEnv, ['MY_TOKEN'], '--pass-env is recorded too');
  const lifted = await run('--no-default-protection');
  assert.equal(lifted.status, 0);
  assert.match(
    lifted.stdout,
    /--no-default-protection: --yes covers writes that could run later, and the tools read \.git/,
  );
  assert.equal(readFileSync(path.join(root, settings), 'utf8'), '{}\n');
  assert.equal(lifted.header.options.noDefaultProtection, true);
});
