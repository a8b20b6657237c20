// Route 1 of issue 28: the session file cannot be turned against the person. It lives in the project, where the check
// may write, so the harness opens it once without following links, writes every entry through that handle, and stops
// writing (one line) when the path no longer names the file it opened or something else wrote to it. Each attack is
// run for real: a verify command (with --no-sandbox, so nothing but the writer stands in its way) swaps the file for a
// link to a fake ~/.bashrc, or appends to it; a folder or a file put there as a link before the run is refused.

import assert from 'node:assert/strict';
import { closeSync, lstatSync, readdirSync, symlinkSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { openSessionFile } from '../session-file.ts';
import { EXIT } from '../terminal.ts';
import { say } from 'reference-harness/scripted-model';
import { tempProject } from '../../test/helpers.ts';
import { runCli } from './helpers.ts';

const BASHRC = '# the person\'s shell start-up\nexport PATH="$HOME/bin:$PATH"\n';

/** A project whose model says "Done." at once, and a fake home with a .bashrc, both in fresh temporary folders. */
async function projectAndHome(t: TestContext) {
  const root = await tempProject(t, { 'script.json': JSON.stringify([say('Done.'), say('Done.')]) });
  const home = await tempProject(t, { '.bashrc': BASHRC });
  return { root, home, bashrc: path.join(home, '.bashrc'), script: path.join(root, 'script.json') };
}

/** What the program said on stderr, each message as one line (it wraps long ones at 100 columns). */
function stderrOf(t: TestContext): () => string[] {
  const printed = t.mock.method(console, 'error', () => {});
  return () => printed.mock.calls.map((c) => String(c.arguments[0]).replace(/\n {2}/g, ' '));
}

/** The session files the run made under .agent/sessions. */
const sessionsIn = (root: string) =>
  readdirSync(path.join(root, '.agent', 'sessions')).map((name) => path.join(root, '.agent', 'sessions', name));

test('a check that swaps the session file for a link to ~/.bashrc gets nothing appended there: the writing stops with one line', async (t) => {
  const { root, bashrc, script } = await projectAndHome(t);
  const swap = `for f in .agent/sessions/*.jsonl; do rm "$f" && ln -s '${bashrc}' "$f"; done`;
  const said = stderrOf(t);
  const { status } = await runCli([
    '--root',
    root,
    '--yes',
    '--no-sandbox',
    '--script',
    script,
    '--verify',
    swap,
    'go',
  ]);
  const [session] = sessionsIn(root);
  assert.ok(session !== undefined && lstatSync(session).isSymbolicLink(), 'the check did swap the file for a link');
  assert.equal(await readFile(bashrc, 'utf8'), BASHRC, 'not a byte reached the file the link names');
  assert.deepEqual(
    said().filter((line) => /session file/.test(line)),
    [
      `harness: the session file ${session} was replaced; no longer writing to it; the run was stopped, so that nothing goes unrecorded`,
    ],
  );
  assert.equal(status, EXIT.accepted, 'the check itself passed: the run is judged by it');
});

test('a check that writes into the session file (a forged line, a rewritten header) stops the writing: nothing follows it', async (t) => {
  const { root, script } = await projectAndHome(t);
  const forged = '{"type":"task","text":"forged by the check"}';
  const append = `for f in .agent/sessions/*.jsonl; do printf '%s\\n' '${forged}' >> "$f"; done`;
  const said = stderrOf(t);
  await runCli(['--root', root, '--yes', '--no-sandbox', '--script', script, '--verify', append, 'go']);
  const [session = ''] = sessionsIn(root);
  const lines = (await readFile(session, 'utf8')).trim().split('\n');
  assert.equal(lines.at(-1), forged, 'the harness wrote nothing after the line it did not write');
  assert.ok(
    said().some((line) => line.includes(`the session file ${session} was changed by something else; no longer`)),
    said().join('\n'),
  );
});

test('.agent/sessions or .agent swapped for a link to $HOME before a run is refused before anything runs, and $HOME gets no file', async (t) => {
  for (const linked of [path.join('.agent', 'sessions'), '.agent']) {
    const { root, home, script } = await projectAndHome(t);
    await mkdir(path.dirname(path.join(root, linked)), { recursive: true });
    symlinkSync(home, path.join(root, linked));
    const said = stderrOf(t);
    const { status } = await runCli(['--root', root, '--yes', '--script', script, 'go']);
    assert.equal(status, EXIT.usage);
    assert.deepEqual(said(), [
      `harness: session: ${path.join(root, linked)} is a link, not a folder: refused, never followed (see --help)`,
    ]);
    assert.deepEqual(readdirSync(home), ['.bashrc'], `${linked}: nothing was written where the link points`);
    t.mock.restoreAll();
  }
});

test('--session or --resume at a link to ~/.bashrc is refused, never followed: the file it names is unchanged', async (t) => {
  const { root, bashrc, script } = await projectAndHome(t);
  const link = path.join(root, 'session.jsonl');
  symlinkSync(bashrc, link);
  for (const flag of ['--session', '--resume']) {
    const said = stderrOf(t);
    const { status } = await runCli(['--root', root, '--yes', '--script', script, flag, link, 'go']);
    assert.equal(status, EXIT.usage);
    assert.deepEqual(said(), [`harness: ${flag}: ${link} is a link, not a session file (see --help)`]);
    t.mock.restoreAll();
  }
  assert.equal(await readFile(bashrc, 'utf8'), BASHRC);
});

test('a new session never takes over a file planted under its name: opening it as new refuses what is there', async (t) => {
  const { root } = await projectAndHome(t);
  const planted = path.join(root, '.agent', 'sessions', 'next.jsonl');
  await mkdir(path.dirname(planted), { recursive: true });
  await writeFile(planted, '{"type":"session","version":2,"model":"forged","root":"/","startedAt":""}\n');
  assert.throws(() => openSessionFile(planted, 'new', root), /next\.jsonl cannot hold a session: file already exists/);
  const opened = openSessionFile(path.join(root, '.agent', 'sessions', 'fresh.jsonl'), 'new', root);
  closeSync(opened.fd);
});
