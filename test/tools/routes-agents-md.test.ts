// Route 8 of issue 28: AGENTS.md is read like any file the tools read. A link out of its folder does not put an
// outside file in the system prompt, a named pipe does not hang the start, and the start-up names each file skipped.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { constants, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { open, truncate } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { loadContextFiles } from '../../tools.ts';
import { scriptedAgent, tempProject, within } from '../helpers.ts';

describe('AGENTS.md: inside its folder after links, regular files only, skipped files named at start', () => {
  test('an AGENTS.md linked out of the root is skipped with its reason, so no outside file reaches the prompt', async (t) => {
    const base = await tempProject(t, { 'outside/secret.md': 'SECRET-OUTSIDE\n', 'project/a.txt': '' });
    const root = path.join(base, 'project');
    symlinkSync(path.join(base, 'outside', 'secret.md'), path.join(root, 'AGENTS.md'));
    const { agent } = await scriptedAgent(root, []);
    assert.doesNotMatch(agent.system[0]?.text ?? '', /SECRET-OUTSIDE/);
    assert.deepEqual(
      agent.contextFiles.map(({ path: file, skipped }) => [file, skipped]),
      [[path.join(root, 'AGENTS.md'), `a link out of its folder, to ${path.join(base, 'outside', 'secret.md')}`]],
    );
  });

  test("a link inside the folder is read (AGENTS.md -> CLAUDE.md), and a parent folder's link out of it is not", async (t) => {
    const base = await tempProject(t, { 'repo/CLAUDE.md': 'PARENT-OUTSIDE\n', 'repo/pkg/CLAUDE.md': 'INSIDE\n' });
    execFileSync('git', ['init', '-q'], { cwd: path.join(base, 'repo') });
    const root = path.join(base, 'repo', 'pkg');
    symlinkSync('CLAUDE.md', path.join(root, 'AGENTS.md'));
    // The repository's top folder's AGENTS.md is a link above the repository: outside the folder it stands for.
    writeFileSync(path.join(base, 'above.md'), 'ABOVE\n');
    symlinkSync(path.join(base, 'above.md'), path.join(base, 'repo', 'AGENTS.md'));
    const files = await loadContextFiles(root);
    assert.deepEqual(
      files.map(({ text, skipped }) => skipped ?? text),
      [`a link out of its folder, to ${path.join(base, 'above.md')}`, 'INSIDE\n'],
    );
  });

  test('a named pipe as AGENTS.md does not hang the start: it is skipped, never opened for a blocking read', async (t) => {
    const root = await tempProject(t);
    const fifo = path.join(root, 'AGENTS.md');
    execFileSync('mkfifo', [fifo]);
    // Should a read hang after all, a writer that opens and closes the pipe (before the folder goes) ends it, so the
    // suite still exits.
    const started = within(scriptedAgent(root, []), 'createAgent with a FIFO AGENTS.md');
    const { agent } = await started.finally(async () => {
      (await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => null))?.close();
    });
    assert.deepEqual(
      agent.contextFiles.map(({ skipped }) => skipped),
      ['not a regular file (a named pipe, socket, device or folder)'],
    );
  });

  test('the cap still holds: past 32 KiB the farther files are skipped, and say why', async (t) => {
    const base = await tempProject(t, { 'repo/AGENTS.md': 'far\n', 'repo/pkg/AGENTS.md': 'x'.repeat(40 * 1024) });
    mkdirSync(path.join(base, 'repo', '.git'));
    const files = await loadContextFiles(path.join(base, 'repo', 'pkg'));
    assert.deepEqual(
      files.map(({ skipped }) => skipped),
      ['nearer AGENTS.md files fill the 32 KiB cap', undefined],
    );
    assert.match(files[1]?.text ?? '', /^x{32768}\n\[cut: AGENTS\.md files are capped at 32 KiB in all\]$/);
  });
  test('a 3 GB AGENTS.md is read no further than the cap, instead of failing the start (a file too large to read whole)', async (t) => {
    const root = await tempProject(t, { 'AGENTS.md': 'rule\n' });
    await truncate(path.join(root, 'AGENTS.md'), 3 * 1024 ** 3); // sparse: no disk spent
    const [file] = await loadContextFiles(root);
    assert.equal(file?.skipped, undefined);
    assert.match(file?.text ?? '', /^rule\n\0{32763}\n\[cut: AGENTS\.md files are capped at 32 KiB in all\]$/);
  });

  test('an AGENTS.md exactly at the 32 KiB cap is read whole, with no cut note, and a farther one is skipped', async (t) => {
    const full = 'x'.repeat(32 * 1024);
    const base = await tempProject(t, { 'repo/AGENTS.md': 'far\n', 'repo/pkg/AGENTS.md': full });
    mkdirSync(path.join(base, 'repo', '.git'));
    const files = await loadContextFiles(path.join(base, 'repo', 'pkg'));
    assert.deepEqual(
      files.map(({ text, skipped }) => skipped ?? text),
      ['nearer AGENTS.md files fill the 32 KiB cap', full],
    );
  });

  test('a broken symlink as AGENTS.md is skipped with its reason instead of failing the start', async (t) => {
    const root = await tempProject(t);
    symlinkSync('gone.md', path.join(root, 'AGENTS.md'));
    const files = await loadContextFiles(root);
    assert.deepEqual(
      files.map(({ skipped }) => skipped),
      ['a broken symlink'],
    );
  });

  test('an AGENTS.md that is a socket is skipped with its reason instead of failing the start', async (t) => {
    const root = await tempProject(t);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(path.join(root, 'AGENTS.md'), resolve));
    t.after(() => server.close());
    const files = await loadContextFiles(root);
    assert.deepEqual(
      files.map(({ skipped }) => skipped),
      ['not a regular file (a named pipe, socket, device or folder)'],
    );
  });

  test('every AGENTS.md read closes its file: fifty starts leave no handle open', async (t) => {
    if (process.platform !== 'linux') return t.skip('counts /proc/self/fd');
    const root = await tempProject(t, { 'AGENTS.md': 'rules\n' });
    const before = readdirSync('/proc/self/fd').length;
    for (let i = 0; i < 50; i++) await loadContextFiles(root);
    assert.ok(readdirSync('/proc/self/fd').length < before + 10, 'file handles left open');
  });
});
