// The gate's sandbox, tried for real: the model edits the code under test so that, when the check imports it, it
// writes above the project, deletes a file above it, writes under $HOME and calls a server. Contained, none of it
// happens and the run is still judged by the test's own exit code; with --no-sandbox, all of it does. And the gate's
// policy (at the end): the sandbox asked for and missing, or there.

import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { call, say } from '../../scripted-model.ts';
import { runTask } from '../../agent.ts';
import { scriptedAgent, tempProject } from '../helpers.ts';
import { sandboxProblem, sandboxableRoot, seatbeltArgs } from '../../hardening/index.ts';
import { containedRunner } from '../../hardening/index.ts';

const noSandbox = await sandboxProblem();
const skip = noSandbox === null ? false : `no OS sandbox here (${noSandbox}); CI installs bubblewrap`;
/** Whether bubblewrap, asked directly, contains a command here: the answer sandboxProblem must agree with. */
const bwrapRuns =
  process.platform === 'linux' &&
  spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-user', '--unshare-pid', '--unshare-net', '--', 'true'])
    .status === 0;

/** A project whose add.js the script "fixes", planting four escapes: in a folder outside /tmp (which the sandbox
 *  replaces with a private one), beside a file to delete, with a server that counts the requests it gets. */
async function plantedRun(t: TestContext, sandbox?: boolean) {
  const outside = await realpath(await mkdtemp(path.join(existsSync('/var/tmp') ? '/var/tmp' : os.tmpdir(), 'sbx-')));
  const home = path.join(os.homedir(), `.harness-sandbox-check-${path.basename(outside)}`);
  let requests = 0;
  const server = createServer((_request, response) => void (requests++, response.end('ok')));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    server.close();
    await rm(outside, { recursive: true, force: true });
    await rm(home, { recursive: true, force: true });
  });
  const root = path.join(outside, 'project');
  await mkdir(root);
  await writeFile(path.join(outside, 'victim.txt'), 'keep me\n');
  await writeFile(path.join(root, 'package.json'), '{ "type": "module" }\n');
  await writeFile(path.join(root, 'add.js'), 'export function add(a, b) {\n  return a - b;\n}\n');
  await writeFile(
    path.join(root, 'test.js'),
    "import { add } from './add.js';\nif (add(2, 3) !== 5) throw new Error('add(2, 3) is not 5');\n",
  );
  const { port } = server.address() as AddressInfo;
  const escapes = [
    `import fs from 'node:fs';`,
    `const attempt = (f) => { try { f(); } catch {} };`,
    `attempt(() => fs.writeFileSync('../planted.txt', 'escaped'));`,
    `attempt(() => fs.unlinkSync('../victim.txt'));`,
    `attempt(() => fs.mkdirSync(${JSON.stringify(home)}));`,
    `await fetch('http://127.0.0.1:${port}/').catch(() => {});`,
  ].join('\n');
  const fix = { path: 'add.js', old_str: 'export function add(a, b) {\n  return a - b;', new_str: '' };
  fix.new_str = `${escapes}\nexport function add(a, b) {\n  return a + b;`;
  const script = [call('read_file', { path: 'add.js' }), call('edit_file', fix), say('Done.')];
  const { agent, events } = await scriptedAgent(root, script, { verify: 'node test.js', sandbox });
  const halt = await runTask(agent, 'fix add');
  return {
    halt: halt.kind,
    gate: events.find((event) => event.type === 'gate'),
    planted: existsSync(path.join(outside, 'planted.txt')),
    victimKept: existsSync(path.join(outside, 'victim.txt')),
    homeWritten: existsSync(home),
    requests,
    fixed: await readFile(path.join(root, 'add.js'), 'utf8'),
  };
}

test(
  'code the model wrote, run by the gate, cannot write or delete above the root, write under $HOME or reach a server, and the run is still judged by the test',
  { skip },
  async (t) => {
    const run = await plantedRun(t);
    assert.equal(run.halt, 'accepted', 'accepted: the test itself passes');
    assert.deepEqual(run.gate, { ...run.gate, passed: true, sandboxed: true });
    assert.match(run.fixed, /return a \+ b;/);
    assert.deepEqual(
      { planted: run.planted, victimKept: run.victimKept, homeWritten: run.homeWritten, requests: run.requests },
      { planted: false, victimKept: true, homeWritten: false, requests: 0 },
    );
  },
);

test(
  'with the sandbox off (--no-sandbox) the same edit escapes, so the contained run above proves the sandbox, not a harmless script',
  { skip },
  async (t) => {
    const run = await plantedRun(t, false);
    assert.equal(run.halt, 'accepted');
    assert.deepEqual(run.gate, { ...run.gate, passed: true, sandboxed: false });
    assert.deepEqual(
      { planted: run.planted, victimKept: run.victimKept, homeWritten: run.homeWritten, requests: run.requests },
      { planted: true, victimKept: false, homeWritten: true, requests: 1 },
    );
  },
);

test(
  'a failing check fails in the sandbox as it does outside: its exit code and output come through',
  { skip },
  async (t) => {
    const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-fail-')));
    t.after(() => rm(root, { recursive: true, force: true }));
    const run = (sandbox: boolean) =>
      containedRunner('echo checking; exit 3', {
        cwd: root,
        timeoutMs: 10_000,
        signal: new AbortController().signal,
        sandbox,
      });
    const [contained, plain] = [await run(true), await run(false)];
    assert.deepEqual([contained.exitCode, contained.output], [plain.exitCode, plain.output]);
    assert.deepEqual([contained.contained, plain.contained], [true, false]);
    assert.equal((await run(true)).exitCode, 3);
  },
);

test(
  'the sandboxed check gets none of the harness secrets: ANTHROPIC_ variables are not passed on',
  { skip },
  async (t) => {
    const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-env-')));
    t.after(() => rm(root, { recursive: true, force: true }));
    process.env.ANTHROPIC_API_KEY_FOR_SANDBOX_TEST = 'sk-secret';
    t.after(() => delete process.env.ANTHROPIC_API_KEY_FOR_SANDBOX_TEST);
    const signal = new AbortController().signal;
    const run = await containedRunner('env', { cwd: root, timeoutMs: 10_000, signal, sandbox: true });
    assert.equal(run.exitCode, 0);
    assert.doesNotMatch(run.output, /sk-secret/);
  },
);

test(
  'a machine where bubblewrap runs is not reported as having no OS sandbox (which would skip every contained test)',
  { skip: bwrapRuns ? false : 'bubblewrap does not run here' },
  () => {
    assert.equal(noSandbox, null);
  },
);

test(
  'the sandboxed check has no capabilities: root inside the user namespace cannot mount or undo the read-only binds',
  { skip },
  async (t) => {
    const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-caps-')));
    t.after(() => rm(root, { recursive: true, force: true }));
    const signal = new AbortController().signal;
    const run = await containedRunner('grep CapEff /proc/self/status', {
      cwd: root,
      timeoutMs: 10_000,
      signal,
      sandbox: true,
    });
    assert.equal(run.exitCode, 0);
    assert.match(run.output, /^CapEff:\s+0+\n?$/);
  },
);

test(
  "the sandboxed check sees neither the host's /tmp nor its /run, where other programs' files and sockets are",
  { skip },
  async (t) => {
    const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-tmp-')));
    const marker = path.join('/tmp', `host-only-${path.basename(root)}`);
    await writeFile(marker, 'the host\n');
    t.after(() => Promise.all([rm(root, { recursive: true, force: true }), rm(marker, { force: true })]));
    assert.notDeepEqual(await readdir('/run'), [], 'the host has a /run to hide');
    const signal = new AbortController().signal;
    const contained = (command: string) =>
      containedRunner(command, { cwd: root, timeoutMs: 10_000, signal, sandbox: true });
    const run = await contained('ls -A /run');
    assert.deepEqual(
      [run.exitCode, run.output],
      [2, "ls: cannot access '/run': No such file or directory\n"],
      'no /run',
    );
    const read = await contained(`cat ${marker}`);
    assert.notEqual(read.exitCode, 0);
    assert.doesNotMatch(read.output, /the host/);
  },
);

test(
  "the sandboxed check's environment is the allowlist: LC_* and the names passed on come through, nothing else does, and its temporary files go to its private /tmp",
  { skip },
  async (t) => {
    const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-allow-')));
    const added = { LC_SANDBOX_TEST: 'lc', SANDBOX_TEST_PASSED: 'passed', SANDBOX_TEST_KEPT_OUT: 'kept out' };
    Object.assign(process.env, added);
    t.after(async () => {
      for (const name of Object.keys(added)) delete process.env[name];
      await rm(root, { recursive: true, force: true });
    });
    const signal = new AbortController().signal;
    const options = { cwd: root, timeoutMs: 10_000, signal, sandbox: true, passEnv: ['SANDBOX_TEST_PASSED'] };
    const run = await containedRunner('env', options);
    const env = new Map(run.output.split('\n').map((line) => [line.split('=')[0], line.slice(line.indexOf('=') + 1)]));
    assert.deepEqual(
      ['LC_SANDBOX_TEST', 'SANDBOX_TEST_PASSED', 'SANDBOX_TEST_KEPT_OUT', 'TMPDIR', 'TMP', 'TEMP', 'PATH'].map((name) =>
        env.get(name),
      ),
      ['lc', 'passed', undefined, '/tmp', '/tmp', '/tmp', process.env.PATH],
    );
  },
);

/** tools.ts loaded afresh under `tag`, its sandbox check not yet made: the check is made once per copy. */
const freshSandbox = (tag: string) =>
  import(`../../hardening/sandbox.ts?${tag}`) as Promise<typeof import('../../hardening/sandbox.ts')>;

/** Sets process.env[name] for the rest of the test. */
function setEnv(t: TestContext, name: string, value: string) {
  const was = process.env[name];
  process.env[name] = value;
  t.after(() => {
    if (was === undefined) delete process.env[name];
    else process.env[name] = was;
  });
}

/** A folder made for the test and removed after it. */
async function tempFolder(t: TestContext, prefix: string) {
  const folder = await realpath(await mkdtemp(path.join(os.tmpdir(), prefix)));
  t.after(() => rm(folder, { recursive: true, force: true }));
  return folder;
}

const linuxOnly = process.platform === 'linux' ? false : 'bubblewrap is the sandbox on Linux only';

test('without bubblewrap a contained command is not run, saying what to install', { skip: linuxOnly }, async (t) => {
  const root = await tempFolder(t, 'no-bwrap-');
  const sandbox = await freshSandbox('no-bwrap');
  sandbox.lookForProgramsIn([root]);
  assert.match((await sandbox.sandboxProblem()) ?? 'null', /bubblewrap is not installed/);
  const signal = new AbortController().signal;
  const run = sandbox.containedRunner('echo ran', { cwd: root, timeoutMs: 10_000, signal, sandbox: true });
  await assert.rejects(run, /bubblewrap is not installed/);
});

test(
  'a contained run leaves no private temporary folder behind, even one the command wrote in',
  { skip },
  async (t) => {
    const root = await tempFolder(t, 'sbx-rm-');
    const tmp = await tempFolder(t, 'run-tmp-');
    setEnv(t, 'TMPDIR', tmp);
    const signal = new AbortController().signal;
    const command = 'echo kept > /tmp/note && cat /tmp/note';
    const run = await containedRunner(command, { cwd: root, timeoutMs: 10_000, signal, sandbox: true });
    assert.deepEqual([run.exitCode, run.output], [0, 'kept\n']);
    assert.deepEqual(await readdir(tmp), []);
  },
);

test(
  'a contained command runs where $HOME does not exist: no credential store to hide is no error',
  { skip },
  async (t) => {
    const root = await tempFolder(t, 'sbx-no-home-');
    setEnv(t, 'HOME', path.join(root, 'missing-home'));
    const signal = new AbortController().signal;
    const run = await containedRunner('echo ran', { cwd: root, timeoutMs: 10_000, signal, sandbox: true });
    assert.deepEqual([run.exitCode, run.output], [0, 'ran\n']);
  },
);

test('the root / is refused as the whole file system, and a $HOME that does not exist refuses nothing', async (t) => {
  await assert.rejects(sandboxableRoot('/'), /the whole file system/);
  const root = await tempFolder(t, 'no-home-');
  setEnv(t, 'HOME', path.join(root, 'missing-home'));
  const project = path.join(root, 'project');
  await mkdir(project);
  assert.equal(await sandboxableRoot(project), project);
});

test("on macOS the profile denies every write but the temporary folders, and reads of HOME but the project and --sandbox-read paths, and of the project's .git and .agent", () => {
  const where = { root: '/Users/me/p', read: ['/opt/sdk'], passEnv: [] };
  const [tool, flag, profile = '', ...rest] = seatbeltArgs('make test', where);
  assert.deepEqual(
    [tool, flag, ...rest],
    [
      '/usr/bin/sandbox-exec',
      '-p',
      ...['-D', `HOME=${os.homedir()}`, '-D', 'READ0=/Users/me/p', '-D', 'READ1=/opt/sdk'],
      ...['-D', 'HIDE0=/Users/me/p/.git', '-D', 'HIDE1=/Users/me/p/.agent'],
      ...['/bin/sh', '-c', 'make test'],
    ],
  );
  assert.match(profile, /^\(version 1\)/);
  assert.match(profile, /\(deny file-write\*\)\n\(allow file-write\* \(subpath "\/private\/tmp"\)/);
  const rules = [
    '(deny file-read* (subpath (param "HOME")))',
    '(allow file-read* (subpath (param "READ0")))',
    '(allow file-read* (subpath (param "READ1")))',
    '(deny file-read* (subpath (param "HIDE0")))',
    '(deny file-read* (subpath (param "HIDE1")))',
  ];
  assert.ok(profile.endsWith(`\n${rules.join('\n')}`), profile);
  const git = seatbeltArgs('git diff', { ...where, read: ['/Users/me/p/.git'] });
  assert.deepEqual(
    git.filter((arg) => arg.startsWith('HIDE')),
    ['HIDE0=/Users/me/p/.agent'],
    '--sandbox-read gives .git back',
  );
});

test('on macOS a project inside the temporary folders (a clone in /tmp) would be writable by the check, .git/hooks and all: the project and the --sandbox-read paths are never writable', () => {
  const where = { root: '/private/tmp/clone', read: ['/private/var/folders/x/T/sdk'], passEnv: [] };
  const profile = seatbeltArgs('make test', where)[2] ?? '';
  const temporary = profile.indexOf('(allow file-write* (subpath "/private/tmp")');
  const denials = ['READ0', 'READ1'].map((name) => profile.indexOf(`(deny file-write* (subpath (param "${name}")))`));
  assert.ok(temporary >= 0, profile);
  for (const denial of denials)
    assert.ok(denial > temporary, `denied after the temporary folders are allowed (the last rule wins): ${profile}`);
});

// Found unpinned by `npm run mutate:agent` (test/mutation/MUTATION-SURVIVORS.md): agent.ts's gate with the sandbox
// asked for, missing or there. Here rather than in test/loop/guards-mutants.test.ts because they start a second
// harness or bubblewrap; mutate-agent.ts imports this file too.
describe("the gate's sandbox policy", () => {
  const runNode = promisify(execFile);

  test('on a machine without the OS sandbox, a check asked to run in it is not run, and one not asked runs unconfined', async (t) => {
    // In a child that looks for the sandbox's tools where there are none, and whose PATH holds node but no bwrap. Its environment is this process's otherwise, so a mutant that
    // `npm run mutate:agent` switched on here (through the environment) is switched on in the child too.
    const root = await tempProject(t, { 'test.js': "require('node:fs').appendFileSync('ran.txt', 'ran\\n');\n" });
    const nodeOnly = await tempProject(t);
    await symlink(process.execPath, path.join(nodeOnly, 'node'));
    const url = (file: string) => pathToFileURL(path.join(import.meta.dirname, '..', '..', file)).href;
    const probe = [
      `import { createAgent, runTask } from '${url('agent.ts')}';`,
      `import { say, ScriptedModel } from '${url('scripted-model.ts')}';`,
      `import { lookForProgramsIn } from '${url('hardening/index.ts')}';`,
      `lookForProgramsIn(['${nodeOnly}']);`,
      `for (const sandbox of [true, undefined]) {`,
      `  const gates = [];`,
      `  const model = new ScriptedModel([say('Done.')]);`,
      `  const onEvent = (event) => event.type === 'gate' && gates.push(event.sandboxed);`,
      `  const config = { root: '${root}', model, tools: [], verify: 'node test.js', sandbox, onEvent };`,
      `  console.log(JSON.stringify({ halt: await runTask(await createAgent(config), 'task'), gates }));`,
      `}`,
    ].join('\n');
    await writeFile(path.join(root, 'probe.mts'), probe);
    const { stdout } = await runNode(process.execPath, ['--import', 'tsx', path.join(root, 'probe.mts')], {
      cwd: path.join(import.meta.dirname, '..', '..'),
      env: { ...process.env, PATH: nodeOnly },
    });
    const [asked, notAsked] = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
    const missing = 'no OS sandbox: bubblewrap is not installed (apt-get install bubblewrap)';
    assert.deepEqual(asked, { halt: { kind: 'error', message: `the check was not run: ${missing}` }, gates: [] });
    assert.deepEqual(notAsked, { halt: { kind: 'accepted', verifiedBy: 'node test.js' }, gates: [false] });
    assert.equal(await readFile(path.join(root, 'ran.txt'), 'utf8'), 'ran\n', 'the check ran once: unconfined');
  });

  test(
    'a check asked to run in the OS sandbox, where there is one, runs in it',
    { skip: noSandbox ?? false },
    async (t) => {
      const root = await tempProject(t);
      const { agent, events } = await scriptedAgent(root, [say('done')], { verify: 'exit 0', sandbox: true });
      assert.deepEqual(await runTask(agent, 'work'), { kind: 'accepted', verifiedBy: 'exit 0' });
      assert.deepEqual(
        events.flatMap((event) => (event.type === 'gate' ? [event.sandboxed] : [])),
        [true],
      );
    },
  );
});
