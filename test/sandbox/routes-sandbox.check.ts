// Issue 47's routes out through the check, tried for real (bubblewrap, git): the check's world is an allowlist of the
// machine, its writes land on a throwaway overlay, and the programs that build the sandbox are never found through
// PATH. Each test is named after the failure its guard prevents.

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readlinkSync, realpathSync } from 'node:fs';
import {
  chmod,
  copyFile,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  realpath,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { pathToFileURL } from 'node:url';
import { type AgentConfig, type AgentEvent, createAgent, type Halt, runTask } from '../../agent.ts';
import { say, ScriptedModel } from '../../scripted-model.ts';
import { TOOLS } from '../../tools.ts';
import { writeFiles } from '../../lessons/stories.ts';
import { tempProject } from '../helpers.ts';
import { containedRunner, hashProtected, sandboxProblem, trustedProgram } from '../../hardening/index.ts';

const noSandbox = await sandboxProblem();

/** Skips the test, saying why, where this machine cannot contain a command. */
function sandboxed(t: TestContext): boolean {
  if (noSandbox !== null) t.skip(`no OS sandbox here (${noSandbox}); CI installs bubblewrap`);
  return noSandbox === null;
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, stdio: 'pipe' }).toString();
const never = new AbortController().signal;
const contained = (root: string, more: Partial<Parameters<typeof containedRunner>[1]> = {}) => ({
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

/** Every path under `root` with what it is: mode, and the content of a file or the target of a link. */
async function treeOf(root: string): Promise<string[]> {
  const entries: string[] = [];
  const visit = async (dir: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      const file = path.join(dir, name);
      const info = await lstat(file);
      const what = info.isSymbolicLink()
        ? `-> ${await readlink(file)}`
        : info.isDirectory()
          ? 'dir'
          : await readFile(file, 'utf8');
      entries.push(`${path.relative(root, file)} ${info.mode.toString(8)} ${what}`);
      if (info.isDirectory() && !info.isSymbolicLink()) await visit(file);
    }
  };
  await visit(root);
  return entries;
}

test("the check's writes survive it: after one that writes, makes folders, plants repositories, chmods and links, the tree is as before", async (t) => {
  if (!sandboxed(t)) return;
  const root = await tempProject(t, { 'src/a.js': 'one\n', 'test.js': 'ok\n', 'locked/keep.txt': 'k\n' });
  git(root, 'init', '-q');
  const before = await treeOf(root);
  const marker = path.join(await tempProject(t), 'payload-ran');
  const plant = [
    'echo changed > src/a.js',
    'echo new > new.txt',
    'mkdir -p build/out && echo cache > build/out/c.txt',
    `git config core.fsmonitor 'touch ${marker}; true'`,
    `printf '#!/bin/sh\\ntouch ${marker}\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout`,
    'cd src && git init -q && cd ..',
    'mkdir -p shaped/objects shaped/refs && echo "ref: refs/heads/main" > shaped/HEAD',
    'mkdir -p .vscode && echo "{}" > .vscode/tasks.json',
    'ln -s /etc/passwd link && chmod 000 locked && chmod +x test.js && rm src/a.js',
    'test -f new.txt', // the check sees its own writes
  ].join(' && ');
  // With .git given back (--sandbox-read), so that the check can write into it too.
  const { halt, gates } = await checkedDone(root, plant, { sandboxRead: [path.join(root, '.git')] });
  assert.equal(halt.kind, 'accepted', JSON.stringify(gates));
  assert.deepEqual(await treeOf(root), before);
  git(root, 'status', '--short');
  assert.equal(existsSync(marker), false, 'git status ran no payload');
});

test('a check that writes caches and build output still passes, inside its copy', async (t) => {
  if (!sandboxed(t)) return;
  const root = await tempProject(t, { 'node_modules/pkg/index.js': 'module.exports = 2;\n' });
  const build = 'mkdir -p dist node_modules/.cache && echo built > dist/out.js && cat dist/out.js';
  const run = await containedRunner(build, contained(root));
  assert.deepEqual([run.exitCode, run.output], [0, 'built\n']);
  assert.equal(existsSync(path.join(root, 'dist')), false);
});

test('the check sees the machine through an allowlist: canaries under HOME, /opt, /srv, /var/lib and a socket under /var are unreachable', async (t) => {
  if (!sandboxed(t)) return;
  const tag = `harness-canary-${process.pid}`;
  const places = [os.homedir(), '/opt', '/srv', '/var/lib'].map((folder) => path.join(folder, tag));
  for (const folder of places) {
    await mkdir(folder, { recursive: true });
    await writeFile(path.join(folder, 'secret'), 'CANARY\n');
  }
  const socketFolder = path.join('/var', tag);
  await mkdir(socketFolder, { recursive: true });
  const socket = path.join(socketFolder, 's.sock');
  let connections = 0;
  const server = createServer((connection) => void (connections++, connection.end('CANARY\n')));
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  t.after(async () => {
    server.close();
    for (const folder of [...places, socketFolder]) await rm(folder, { recursive: true, force: true });
  });
  const root = await tempProject(t);
  const reads = places.map((folder) => `cat ${folder}/secret`).join('; ');
  const probe = `${reads}; ls ${os.homedir()} /opt /srv /var/lib /var; node -e "require('net').connect('${socket}').on('data', d => process.stdout.write(String(d))).on('error', () => {})"; echo end`;
  const run = await containedRunner(probe, contained(root));
  assert.match(run.output, /end/, 'the probe ran to the end');
  assert.doesNotMatch(run.output, /CANARY/);
  assert.equal(connections, 0);
  const allowed = await containedRunner(`cat ${places[1]}/secret`, contained(root, { sandboxRead: [places[1]!] }));
  assert.equal(allowed.output, 'CANARY\n', '--sandbox-read opens exactly the path it names');
});

test('a bubblewrap planted on PATH or in the project is never started: the sandbox tools come from the system folders', async (t) => {
  if (!sandboxed(t)) return;
  const root = await tempProject(t);
  const marker = path.join(root, 'fake-ran');
  const bin = path.join(root, 'node_modules', '.bin');
  await mkdir(bin, { recursive: true });
  await chmod(bin, 0o777);
  for (const name of ['bwrap', 'mount', 'setpriv', 'unshare', 'sh']) {
    await writeFile(path.join(bin, name), `#!/bin/sh\ntouch ${marker}\nexit 0\n`);
    await chmod(path.join(bin, name), 0o755);
  }
  const saved = process.env.PATH;
  process.env.PATH = `${bin}:.:${saved}`;
  t.after(() => void (process.env.PATH = saved));
  const found = trustedProgram('bwrap');
  assert.equal(path.dirname(found ?? ''), path.dirname(realpathSync('/usr/bin/bwrap')), 'PATH plays no part');
  assert.equal(trustedProgram('bwrap', [bin]), null, 'a folder writable by others than root is not trusted');
  await chmod(bin, 0o755);
  const link = path.join(root, 'usr-bin');
  await symlink(path.dirname(found!), link);
  assert.equal(trustedProgram('bwrap', [link]), found, 'a link is followed to where the program really is');
  const run = await containedRunner('echo contained', contained(root));
  assert.deepEqual([run.exitCode, run.output], [0, 'contained\n']);
  assert.equal(existsSync(marker), false);
  const spawned = spawnSync('bwrap', ['--version'], { env: process.env }).stdout.toString();
  assert.equal(spawned, '', 'a plain PATH lookup would have started the planted one');
});

test('the check shares no namespace with the harness: System V shared memory, the host name and cgroups are its own too, as are users, processes, mounts and the network', async (t) => {
  if (!sandboxed(t)) return;
  const root = await tempProject(t);
  const kinds = ['cgroup', 'ipc', 'mnt', 'net', 'pid', 'user', 'uts'];
  const inside = await containedRunner(
    kinds.map((kind) => `readlink /proc/self/ns/${kind}`).join('; '),
    contained(root),
  );
  const outside = kinds.map((kind) => readlinkSync(`/proc/self/ns/${kind}`));
  const shared = inside.output
    .trim()
    .split('\n')
    .filter((ns) => outside.includes(ns));
  assert.deepEqual(shared, [], inside.output);
});

test("the check shares the person's kernel keyring: a key held there is read, and one it adds outlives it", async (t) => {
  if (!sandboxed(t)) return;
  if (!existsSync('/usr/bin/python3')) return void t.skip('python3 calls the keyring here, and it is not installed');
  const root = await tempProject(t);
  // add_key, request_key and keyctl by number (x86-64, then arm64), as the check's code could.
  const calls = process.arch === 'arm64' ? [217, 218, 219] : [248, 249, 250];
  const script = [
    'import ctypes',
    'libc = ctypes.CDLL(None, use_errno=True)',
    `add, request, keyctl = ${JSON.stringify(calls)}`,
    "made = libc.syscall(add, b'user', b'kept', b'WRITTEN', 7, -3)",
    "print('add', made, ctypes.get_errno())",
    "found = libc.syscall(request, b'user', b'person-key', None, -3)",
    "print('request', found, ctypes.get_errno())",
    "print('keyctl', libc.syscall(keyctl, 0, -3, 0), ctypes.get_errno())",
  ].join('\n');
  await writeFile(path.join(root, 'keys.py'), script);
  const run = await containedRunner('python3 keys.py', contained(root));
  assert.equal(run.output, 'add -1 1\nrequest -1 1\nkeyctl -1 1\n', 'every keyring call is refused (EPERM)');
});

test('started from /, where every PATH entry lies inside the folder started in, the sandbox is still found: the check is never run uncontained for want of a trusted bubblewrap', async (t) => {
  if (!sandboxed(t)) return;
  const harness = pathToFileURL(path.join(import.meta.dirname, '..', '..', 'hardening', 'index.ts')).href;
  const script = `const { sandboxProblem } = await import(${JSON.stringify(harness)}); console.log(await sandboxProblem());`;
  const ran = spawnSync(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), '--input-type=module', '-e', script],
    {
      cwd: '/',
    },
  );
  assert.equal(ran.stdout.toString().trim(), 'null', ran.stderr.toString());
});

test("the check's code reads ~/.ssh, ~/.aws, ~/.profile, GITHUB_TOKEN and /proc/1/environ: none of it reaches the gate's output", async (t) => {
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
  assert.match(output, /No such file or directory/, 'the check ran; HOME is empty, so not even .profile is there');
  assert.doesNotMatch(output, /READABLE-PROFILE/);
  assert.match(output, /HOME=/, '/proc/1/environ and env were printed');
  assert.deepEqual(
    [output, told].flatMap((text) => text.match(/SECRET-[A-Z-]+/g) ?? []),
    [],
  );
  const passed = await containedRunner('echo "token=$GITHUB_TOKEN"', contained(root, { passEnv: ['GITHUB_TOKEN'] }));
  assert.match(passed.output, /token=SECRET-ENV-TOKEN/, 'a name the person passes does get through');
});

test('a check that rewrites the protected test: the rewrite does not survive it, and uncontained it is not accepted', async (t) => {
  if (!sandboxed(t)) return;
  const files = {
    // The model's code, which the test imports: it rewrites the test, then ends the run before the test asserts.
    'add.js': "require('node:fs').writeFileSync(__dirname + '/test.js', 'process.exit(0);\\n');\nprocess.exit(0);\n",
    'test.js': "const assert = require('node:assert');\nassert.equal(require('./add.js').add(2, 3), 5);\n",
  };
  const root = await tempProject(t, files);
  await checkedDone(root, 'node test.js', { protect: ['test.js'] });
  assert.equal(await readFile(path.join(root, 'test.js'), 'utf8'), files['test.js']);
  const { halt, gates } = await checkedDone(root, 'node test.js', { protect: ['test.js'], sandbox: false });
  assert.notEqual(halt.kind, 'accepted');
  assert.deepEqual(
    gates.map(({ exitCode, passed, reason }) => ({ exitCode, passed, reason })),
    [{ exitCode: 0, passed: false, reason: 'changed protected files: test.js (changed)' }],
  );
});

test('a --protect glob under node_modules counts: an uncontained check that changes node_modules/pkg/index.js is not accepted', async (t) => {
  const root = await tempProject(t, {
    'node_modules/pkg/index.js': 'module.exports = 1;\n',
    'node_modules/other/index.js': 'module.exports = 2;\n',
    'test/a.test.js': '\n',
  });
  const hashed = await hashProtected(root, ['node_modules/pkg/**', 'test/**']);
  assert.deepEqual([...hashed.keys()], ['node_modules/pkg/index.js', 'test/a.test.js']);
  assert.deepEqual([...(await hashProtected(root, ['**/index.js'])).keys()], [], 'a glob that names no node_modules');
  const change = `echo 'module.exports = 5;' > node_modules/pkg/index.js; exit 0`;
  const { halt, gates } = await checkedDone(root, change, { protect: ['node_modules/pkg/**'], sandbox: false });
  assert.notEqual(halt.kind, 'accepted');
  assert.equal(gates[0]?.reason, 'changed protected files: node_modules/pkg/index.js (changed)');
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

test("the check cannot change the kernel's settings: /proc/sys is read-only inside, root or not (core_pattern would run a program on the host)", async (t) => {
  if (!sandboxed(t)) return;
  const root = await tempProject(t);
  const write = (file: string) => `v=$(cat ${file}); echo "$v" > ${file} 2>/dev/null && echo WROTE ${file}; true`;
  const probe = ['/proc/sys/kernel/core_pattern', '/proc/sys/kernel/hostname'].map(write).join('; ');
  const run = await containedRunner(probe, contained(root));
  assert.equal(run.exitCode, 0, run.output);
  assert.doesNotMatch(run.output, /WROTE/);
});

test('the check gets node alone, not the folder two levels above it: a node under $HOME/bin does not bring $HOME in', async (t) => {
  if (!sandboxed(t)) return;
  // A home outside /tmp, which the sandbox replaces: node in its bin, a canary beside.
  const home = await mkdtemp('/var/tmp/harness-home-');
  t.after(() => rm(home, { recursive: true, force: true }));
  await writeFile(path.join(home, 'canary-home.txt'), 'SECRET HOME\n');
  await mkdir(path.join(home, 'bin'));
  const node = path.join(home, 'bin', 'node');
  await copyFile(process.execPath, node);
  await chmod(node, 0o755);
  const canary = JSON.stringify(path.join(home, 'canary-home.txt'));
  const root = await tempProject(t, { 'test.js': `console.log(require('fs').existsSync(${canary}))\n` });
  const sandbox = JSON.stringify(
    pathToFileURL(path.join(import.meta.dirname, '..', '..', 'hardening', 'sandbox.ts')).href,
  );
  const options = `{ cwd: ${JSON.stringify(root)}, timeoutMs: 20000, signal: new AbortController().signal, sandbox: true }`;
  const script = [
    `const { containedRunner } = await import(${sandbox});`,
    `const run = await containedRunner(${JSON.stringify(`${node} test.js`)}, ${options});`,
    'console.log(run.output.trim());',
  ].join('\n');
  const out = execFileSync(node, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: path.join(import.meta.dirname, '..', '..'),
  }).toString();
  assert.equal(out.trim(), 'false', 'node ran inside, and the home beside it is not there');
});

test('a file descriptor the harness inherited without close-on-exec reaches the check: contained or not, it never does', async (t) => {
  if (!sandboxed(t)) return;
  // The harness started by a program that left a descriptor open on a secret (an editor's extra pipe, a shell's
  // `exec 40<secret`): number 40, above the few that node marks close-on-exec itself at start.
  const secret = path.join(await tempProject(t, { secret: 'SECRET-FD\n' }), 'secret');
  const root = await tempProject(t);
  const hardening = JSON.stringify(
    pathToFileURL(path.join(import.meta.dirname, '..', '..', 'hardening', 'index.ts')).href,
  );
  const read = 'cat /proc/self/fd/40 /dev/fd/40; echo end';
  const options = (sandbox: boolean) =>
    `{ cwd: ${JSON.stringify(root)}, timeoutMs: 20000, signal: new AbortController().signal, sandbox: ${sandbox} }`;
  const script = [
    `const { containedRunner } = await import(${hardening});`,
    `const { spawnSync } = await import('node:child_process');`,
    `const plain = spawnSync('/bin/sh', ['-c', ${JSON.stringify(read)}]).stdout.toString();`,
    `const contained = (await containedRunner(${JSON.stringify(read)}, ${options(true)})).output;`,
    `const uncontained = (await containedRunner(${JSON.stringify(read)}, ${options(false)})).output;`,
    'console.log(JSON.stringify({ plain, contained, uncontained }));',
  ].join('\n');
  const fd = openSync(secret, 'r');
  t.after(() => closeSync(fd));
  const stdio: ('ignore' | 'pipe' | 'inherit' | number)[] = [
    'ignore',
    'pipe',
    'inherit',
    ...Array<'ignore'>(37).fill('ignore'),
    fd,
  ];
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: path.join(import.meta.dirname, '..', '..'),
    stdio,
  }).toString();
  const runs = JSON.parse(out) as Record<'plain' | 'contained' | 'uncontained', string>;
  assert.match(runs.plain, /SECRET-FD/, 'the attack is real: a plain spawn passes the descriptor on');
  for (const run of [runs.contained, runs.uncontained]) {
    assert.match(run, /end/, 'the probe ran to the end');
    assert.doesNotMatch(run, /SECRET-FD/);
  }
});

test("the check's output can show .git and the session folder: a check that prints them shows neither, unless --sandbox-read names .git", async (t) => {
  if (!sandboxed(t)) return;
  const root = await tempProject(t, {
    'test.js': 'ok\n',
    '.agent/sessions/old.jsonl': '{"type":"user","text":"SECRET-SESSION"}\n',
  });
  git(root, 'init', '-q');
  git(root, 'remote', 'add', 'origin', 'https://x:SECRET-TOKEN@example.com/r.git');
  git(root, 'add', 'test.js');
  git(root, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'one');
  const leak = 'cat .git/config .agent/sessions/old.jsonl; ls -a .git .agent; git remote -v; grep -r SECRET .; exit 1';
  const { gates, told } = await checkedDone(root, leak);
  assert.match(gates[0]?.output ?? '', /not a git repository/, 'the check ran, and git found no repository');
  assert.deepEqual(told.match(/SECRET-[A-Z]+/g) ?? [], []);
  // A check that needs git: --sandbox-read gives it the project's .git, and nothing else of what is hidden.
  const sees = { sandboxRead: [path.join(root, '.git')] };
  const diff = await checkedDone(root, 'git diff --exit-code && git remote -v && ls .agent', sees);
  assert.match(diff.gates[0]?.output ?? '', /SECRET-TOKEN/);
  assert.doesNotMatch(diff.gates[0]?.output ?? '', /sessions/, '.agent stays hidden');
  const clean = await checkedDone(root, 'git diff --exit-code', sees);
  assert.equal(clean.halt.kind, 'accepted', JSON.stringify(clean.gates));
});

test("the check reads the project's real .git and .agent, and reaches a Unix socket in it, through the overlay's lower layer: that layer is gone once the overlay is mounted", async (t) => {
  if (!sandboxed(t)) return;
  const root = await tempProject(t, { 'test.js': 'ok\n', '.agent/s.jsonl': 'SECRET-SESSION\n' });
  git(root, 'init', '-q');
  git(root, 'remote', 'add', 'origin', 'https://x:SECRET-TOKEN@example.com/r.git');
  let connections = 0;
  const server = createServer((connection) => void (connections++, connection.end('SECRET-SOCKET\n')));
  await new Promise<void>((resolve) => server.listen(path.join(root, 'dev.sock'), resolve));
  t.after(() => server.close());
  // The attacker finds the layer where the kernel says it is, whatever the harness calls it.
  const lower = `$(sed -n 's/.*lowerdir=\\([^,]*\\).*/\\1/p' /proc/self/mountinfo | head -1)`;
  const connect = `require('net').connect(process.argv[1]).on('data', (d) => process.stdout.write(String(d))).on('error', () => {})`;
  const probe = `l=${lower}; echo "lower: $l"; cat "$l/.git/config" "$l/.agent/s.jsonl"; node -e "${connect}" "$l/dev.sock"; echo end`;
  const run = await containedRunner(probe, contained(root));
  assert.match(run.output, /lower: \/\S+/, 'the probe found the layer');
  assert.match(run.output, /end/, 'the probe ran to the end');
  assert.deepEqual(run.output.match(/SECRET-[A-Z]+/g) ?? [], []);
  assert.equal(connections, 0);
  const checkSees = await containedRunner('cat test.js', contained(root));
  assert.deepEqual([checkSees.exitCode, checkSees.output], [0, 'ok\n'], 'the project itself is still there');
});

test("the check reads /etc/ssl/private, where the machine's TLS keys live, as root or in the ssl-cert group: of /etc/ssl it gets the certificates alone", async (t) => {
  if (!sandboxed(t)) return;
  if (!existsSync('/etc/ssl/private')) return void t.skip('this machine has no /etc/ssl/private');
  const root = await tempProject(t);
  const run = await containedRunner(
    'ls -d /etc/ssl/*; test -e /etc/ssl/private && echo KEYS-FOLDER; echo end',
    contained(root),
  );
  assert.match(run.output, /end/, 'the probe ran to the end');
  assert.doesNotMatch(run.output, /KEYS-FOLDER/);
  assert.equal(existsSync('/etc/ssl/certs'), /\/etc\/ssl\/certs/.test(run.output), 'the certificates are there');
});
