// A folder the harness may not read, at the gate: one the check locks (chmod 000), or one locked before the session.
// The walks after the check (the --protect fingerprints, the protected names) must end in a verdict, never an
// exception. Played for real by test/sandbox/unreadable-scenarios.ts: in this process, or, where the tests run as root (whom
// chmod 000 does not stop), in one child process as root without the two capabilities that skip permission checks
// (so it still reads a private copy of the project, as Stryker's). Each test is named after the failure its guard
// prevents.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { playAll, type Outcome } from './unreadable-scenarios.ts';

/** setpriv's arguments that take away the capabilities letting root read and enter any folder. */
const NO_BYPASS = ['-dac_override,-dac_read_search'].flatMap((caps) => ['--bounding-set', caps, '--inh-caps', caps]);
const base = await realpath(await mkdtemp(path.join(os.tmpdir(), 'harness-unreadable-')));
after(() => rm(base, { recursive: true, force: true }));

/** The scenarios' outcomes, played once, as a user chmod 000 stops. */
async function played(): Promise<Awaited<ReturnType<typeof playAll>>> {
  if (process.getuid?.() !== 0) return await playAll(base);
  const script = path.join(import.meta.dirname, 'unreadable-scenarios.ts');
  const command = [...NO_BYPASS, process.execPath, '--import', 'tsx', script, base];
  const { stdout } = await promisify(execFile)('setpriv', command, { cwd: path.join(import.meta.dirname, '..', '..') });
  return JSON.parse(stdout);
}
const { noSandbox, outcomes } = await played();

/** Skips the test, saying why, where this machine cannot contain a command. */
function sandboxed(t: TestContext): boolean {
  if (noSandbox !== null) t.skip(`no OS sandbox here (${noSandbox}); CI installs bubblewrap`);
  return noSandbox === null;
}

const outcome = (name: string): Outcome => {
  const found = outcomes[name];
  assert.ok(found, `scenario ${name} was played`);
  return found;
};
const unreadable = (folder: string) => `${folder} (unreadable: its protected names cannot be checked)`;

test('a check that locks the folder of a --protect file, default protection off: a Halt, not a rejection, and it fails', () => {
  const { rejected, halt, gates, read } = outcome('lockedProtected');
  assert.deepEqual({ rejected, halt }, { rejected: null, halt: 'budget' });
  assert.deepEqual(gates, [{ passed: false, reason: 'changed protected paths: test/a.test.js (deleted)' }]);
  assert.equal(read['test/a.test.js'], 'assert(true);\n');
});

test('a folder locked before the session does not fail a passing check', () => {
  const { rejected, halt, gates, read } = outcome('lockedBefore');
  assert.deepEqual(
    { rejected, halt, gates },
    { rejected: null, halt: 'accepted', gates: [{ passed: true, reason: 'exited with code 0' }] },
  );
  assert.equal(read['locked/.git/HEAD'], 'ref: refs/heads/main\n');
});

test('a locked subfolder does not fail the whole listing: list_files shows the rest and names it as unread', () => {
  const { halt, results } = outcome('lockedListed');
  assert.equal(halt, 'accepted');
  assert.deepEqual(results, [JSON.stringify('a/\na/x.txt\nlocked/\nz.txt\n[could not read: locked/]')]);
});

test("a check that locks the project's own folder fails naming it, and its .git is not taken for gone", () => {
  const { rejected, halt, gates, read } = outcome('lockedRoot');
  assert.deepEqual({ rejected, halt }, { rejected: null, halt: 'budget' });
  assert.deepEqual(gates, [{ passed: false, reason: `changed protected paths: ${unreadable('.')}` }]);
  assert.equal(read['.git/HEAD'], 'ref: refs/heads/main\n');
});

test('a .git planted beside a folder locked before is removed: only what the locked folder holds is kept', () => {
  const { rejected, halt, gates, read } = outcome('plantedBesideLocked');
  assert.deepEqual({ rejected, halt }, { rejected: null, halt: 'budget' });
  assert.deepEqual(gates, [{ passed: false, reason: 'changed protected paths: src/.git (created, removed)' }]);
  assert.equal(read['src/.git'], null);
});

for (const mode of ['', 'sandboxed:']) {
  test(`${mode}a check that locks folders fails naming them, not "the check was not run", and they are kept`, (t) => {
    if (mode !== '' && !sandboxed(t)) return;
    const { rejected, halt, gates, read } = outcome(`${mode}lockedByCheck`);
    assert.deepEqual({ rejected, halt }, { rejected: null, halt: 'budget' });
    const reason = `changed protected paths: ${unreadable('locked')}, ${unreadable('src')}`;
    assert.deepEqual(gates, [{ passed: false, reason }]);
    assert.deepEqual(read, { 'src/index.js': 'mine\n', 'src/pkg/.git/HEAD': 'ref: refs/heads/main\n' });
  });

  test(`${mode}a check that unlocks a folder locked before: its .git is kept, not removed as new, and it fails`, (t) => {
    if (mode !== '' && !sandboxed(t)) return;
    const { rejected, halt, gates, read } = outcome(`${mode}unlockedByCheck`);
    assert.deepEqual({ rejected, halt }, { rejected: null, halt: 'budget' });
    const reason = 'changed protected paths: locked/.git (in a folder that was unreadable before: kept)';
    assert.deepEqual(gates, [{ passed: false, reason }]);
    assert.equal(read['locked/.git/HEAD'], 'ref: refs/heads/main\n');
  });
}
