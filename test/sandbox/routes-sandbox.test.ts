// Issue 28's routes out through the check, tried for real (bubblewrap, git): a check that plants a `.git` or replaces
// the harness's `.agent`, reads the person's keys and tokens, rewrites the protected test, or runs with a root that
// holds /tmp or $HOME. Each test is named after the failure its guard prevents.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { type AgentConfig, type AgentEvent, createAgent, type Halt, runTask } from '../../agent.ts';
import { say, ScriptedModel } from '../../scripted-model.ts';
import { hashProtected, runCommand, sandboxProblem, TOOLS } from '../../tools.ts';
import { writeFiles } from '../../lessons/stories.ts';
import { tempProject } from '../helpers.ts';

const noSandbox = await sandboxProblem();

/** Skips the test, saying why, where this machine cannot contain a command. */
function sandboxed(t: TestContext): boolean {
  if (noSandbox !== null) t.skip(`no OS sandbox here (${noSandbox}); CI installs bubblewrap`);
  return noSandbox === null;
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, stdio: 'pipe' }).toString();
const never = new AbortController().signal;
const contained = (root: string, more: Partial<Parameters<typeof runCommand>[1]> = {}) => ({
  cwd: root,
  timeoutMs: 20_000,
  signal: never,
  sandbox: true,
  ...more,
});

/** One "done" through the gate with `verify` as the check, sandboxed: the gate events and the halt. */
async function checkedDone(root: string, verify: string, config: Partial<AgentConfig> = {}) {
  const gates: Extract<AgentEvent, { type: 'gate' }>[] = [];
  const onEvent = (event: AgentEvent) => void (event.type === 'gate' && gates.push(event));
  const model = new ScriptedModel([say('Done.')]);
  const settings = { root, model, tools: TOOLS, verify, sandbox: true, contextFiles: false as const, onEvent };
  const agent = await createAgent({ ...settings, budgets: { maxTurns: 1 }, ...config });
  const halt: Halt = await runTask(agent, 'finish');
  return { halt, gates, told: JSON.stringify(agent.messages) };
}

test('a check that plants a .git with core.fsmonitor or a hook fails, the plant is removed, and git status then runs no payload', async (t) => {
  if (!sandboxed(t)) return;
  const root = await tempProject(t, { 'sub/keep.txt': 'x\n' });
  const marker = path.join(await tempProject(t), 'payload-ran');
  git(root, 'init', '-q');
  const config = await readFile(path.join(root, '.git', 'config'), 'utf8');
  const plant = [
    `git config core.fsmonitor 'touch ${marker}; true'`, // the root's own .git: read-only
    `printf '#!/bin/sh\\ntouch ${marker}\\n' > .git/hooks/post-checkout`,
    `cd sub && git init -q && git config core.fsmonitor 'touch ${marker}; true'`, // a new .git in a subfolder
  ].join('; ');
  const { halt, gates } = await checkedDone(root, `${plant}; exit 0`);
  assert.notEqual(halt.kind, 'accepted');
  assert.deepEqual(
    gates.map(({ passed, reason }) => ({ passed, reason })),
    [{ passed: false, reason: 'changed protected paths: sub/.git (created, removed)' }],
  );
  assert.equal(await readFile(path.join(root, '.git', 'config'), 'utf8'), config);
  assert.equal(existsSync(path.join(root, '.git', 'hooks', 'post-checkout')), false);
  assert.equal(existsSync(path.join(root, 'sub', '.git')), false);
  git(path.join(root, 'sub'), 'status');
  git(root, 'status');
  assert.equal(existsSync(marker), false, 'git status ran the planted payload');
});

test('with defaultProtection false the same plant stays and git status runs it: the guard above is what held', async (t) => {
  if (!sandboxed(t)) return;
  const root = await tempProject(t, { 'sub/keep.txt': 'x\n' });
  const marker = path.join(await tempProject(t), 'payload-ran');
  const run = await runCommand(
    `cd sub && git init -q && git config core.fsmonitor 'touch ${marker}; true'`,
    contained(root, { defaultProtection: false }),
  );
  assert.deepEqual([run.exitCode, run.protectedTouched], [0, []]);
  git(path.join(root, 'sub'), 'status');
  assert.equal(existsSync(marker), true);
});

test('a root that is a package inside a larger repository: a check that creates root/.git fails and it is removed', async (t) => {
  if (!sandboxed(t)) return;
  const outer = await tempProject(t, { 'pkg/package.json': '{}\n' });
  git(outer, 'init', '-q');
  const root = path.join(outer, 'pkg');
  const { halt, gates } = await checkedDone(root, 'git init -q . && exit 0');
  assert.notEqual(halt.kind, 'accepted');
  assert.equal(gates[0]?.reason, 'changed protected paths: .git (created, removed)');
  assert.equal(existsSync(path.join(root, '.git')), false);
  assert.match(git(outer, 'status', '--porcelain'), /pkg\//, 'the outer repository still sees the package');
});

test('a check that renames the folder holding a .git and plants a new one: the plant is removed, the original kept', async (t) => {
  if (!sandboxed(t)) return;
  const root = await tempProject(t, { 'sub/.git/HEAD': 'ref: refs/heads/main\n' });
  const run = await runCommand('mv sub moved && mkdir -p sub/.git/hooks', contained(root));
  assert.equal(run.exitCode, 0);
  assert.deepEqual(run.protectedTouched, ['moved/.git (moved here)', 'sub/.git (replaced, removed)']);
  assert.equal(await readFile(path.join(root, 'moved', '.git', 'HEAD'), 'utf8'), 'ref: refs/heads/main\n');
  assert.equal(existsSync(path.join(root, 'sub', '.git')), false);
});

test("a check cannot replace the harness's session file, and an .agent it creates is removed and fails it", async (t) => {
  if (!sandboxed(t)) return;
  const root = await tempProject(t, { '.agent/sessions/s.jsonl': '{"header":1}\n' });
  const swap = 'rm -rf .agent; ln -sf /tmp/elsewhere .agent/sessions/s.jsonl; echo x >> .agent/sessions/s.jsonl';
  const held = await runCommand(`${swap}; exit 0`, contained(root));
  assert.deepEqual(held.protectedTouched, []);
  assert.equal(await readFile(path.join(root, '.agent', 'sessions', 's.jsonl'), 'utf8'), '{"header":1}\n');
  const fresh = await tempProject(t);
  const created = await runCommand(
    'mkdir -p .agent/sessions && ln -s ~/.bashrc .agent/sessions/s.jsonl',
    contained(fresh),
  );
  assert.deepEqual(created.protectedTouched, ['.agent (created, removed)']);
  assert.equal(existsSync(path.join(fresh, '.agent')), false);
});

test("the check's code reads ~/.ssh, ~/.aws, GITHUB_TOKEN and /proc/1/environ: none of it reaches the gate's output", async (t) => {
  if (!sandboxed(t)) return;
  // Outside /tmp, which the sandbox replaces with a private one: a home there would be out of sight anyway.
  const home = await realpath(await mkdtemp(path.join(existsSync('/var/tmp') ? '/var/tmp' : os.homedir(), 'home-')));
  t.after(() => rm(home, { recursive: true, force: true }));
  await writeFiles(home, {
    '.ssh/id_ed25519': 'SECRET-SSH-KEY\n',
    '.aws/credentials': 'SECRET-AWS-KEY\n',
    '.config/gh/hosts.yml': 'SECRET-GH-TOKEN\n',
    '.npmrc': '//registry.npmjs.org/:_authToken=SECRET-NPM-TOKEN\n',
    '.profile': 'READABLE-PROFILE\n',
  });
  const root = await tempProject(t);
  const saved = { HOME: process.env.HOME, GITHUB_TOKEN: process.env.GITHUB_TOKEN, SSH: process.env.SSH_AUTH_SOCK };
  t.after(() => {
    for (const [name, value] of Object.entries({ HOME: saved.HOME, GITHUB_TOKEN: saved.GITHUB_TOKEN })) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    if (saved.SSH === undefined) delete process.env.SSH_AUTH_SOCK;
    else process.env.SSH_AUTH_SOCK = saved.SSH;
  });
  Object.assign(process.env, { HOME: home, GITHUB_TOKEN: 'SECRET-ENV-TOKEN', SSH_AUTH_SOCK: '/tmp/SECRET-AGENT-SOCK' });
  const reads = 'cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.config/gh/hosts.yml ~/.npmrc ~/.profile';
  const leak = `${reads}; echo "token=$GITHUB_TOKEN"; tr '\\0' '\\n' < /proc/1/environ; env; exit 1`;
  const { gates, told } = await checkedDone(root, leak);
  const output = gates[0]?.output ?? '';
  assert.match(output, /READABLE-PROFILE/, 'the check ran, with this HOME');
  assert.match(output, /HOME=/, '/proc/1/environ and env were printed');
  assert.deepEqual(
    [output, told].flatMap((text) => text.match(/SECRET-[A-Z-]+/g) ?? []),
    [],
  );
  const passed = await runCommand('echo "token=$GITHUB_TOKEN"', contained(root, { passEnv: ['GITHUB_TOKEN'] }));
  assert.match(passed.output, /token=SECRET-ENV-TOKEN/, 'a name the person passes does get through');
});

test('a check that rewrites the protected test and then exits 0 is not accepted', async (t) => {
  if (!sandboxed(t)) return;
  const root = await tempProject(t, {
    // The model's code, which the test imports: it rewrites the test, then ends the run before the test asserts.
    'add.js': "require('node:fs').writeFileSync(__dirname + '/test.js', 'process.exit(0);\\n');\nprocess.exit(0);\n",
    'test.js': "const assert = require('node:assert');\nassert.equal(require('./add.js').add(2, 3), 5);\n",
  });
  const { halt, gates, told } = await checkedDone(root, 'node test.js', { protect: ['test.js'] });
  assert.notEqual(halt.kind, 'accepted');
  assert.deepEqual(
    gates.map(({ exitCode, passed, reason }) => ({ exitCode, passed, reason })),
    [{ exitCode: 0, passed: false, reason: 'changed protected paths: test.js (changed)' }],
  );
  assert.match(told, /not done yet/);
});

test('a --protect glob under node_modules counts: a check that changes node_modules/pkg/index.js is not accepted', async (t) => {
  if (!sandboxed(t)) return;
  const root = await tempProject(t, {
    'node_modules/pkg/index.js': 'module.exports = 1;\n',
    'node_modules/other/index.js': 'module.exports = 2;\n',
    'test/a.test.js': '\n',
  });
  const hashed = await hashProtected(root, ['node_modules/pkg/**', 'test/**']);
  assert.deepEqual([...hashed.keys()], ['node_modules/pkg/index.js', 'test/a.test.js']);
  assert.deepEqual([...(await hashProtected(root, ['**/index.js'])).keys()], [], 'a glob that names no node_modules');
  const change = `echo 'module.exports = 5;' > node_modules/pkg/index.js; exit 0`;
  const { halt, gates } = await checkedDone(root, change, { protect: ['node_modules/pkg/**'] });
  assert.notEqual(halt.kind, 'accepted');
  assert.equal(gates[0]?.reason, 'changed protected paths: node_modules/pkg/index.js (changed)');
});

test('roots that hold what the sandbox hides are refused before the loop: /, /tmp, the temporary folder, $HOME and above', async () => {
  const model = new ScriptedModel([]);
  for (const root of ['/', '/tmp', os.tmpdir(), os.homedir(), path.dirname(os.homedir())]) {
    await assert.rejects(createAgent({ root, model, tools: TOOLS }), (error: Error) => {
      assert.match(error.message, /^the root \S+ is refused: it (is the whole file system|holds )[^\n]*$/);
      return true;
    });
  }
  const inside = path.join(os.tmpdir(), `harness-root-${process.pid}`);
  await mkdir(inside, { recursive: true });
  try {
    await createAgent({ root: inside, model, tools: TOOLS }); // a project under /tmp is fine
  } finally {
    await rm(inside, { recursive: true });
  }
});
