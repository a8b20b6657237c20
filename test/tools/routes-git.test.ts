// Issue 47's class 4: a write another program may run or load unasked (a hidden name, a folder git would open as a
// repository, core.hooksPath, an executable) asks a person every time and is refused with nobody to ask; `.git` is
// not read either (a token in a remote URL). Run for real: a real repository, the real git, through the agent.

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { z } from 'zod';
import { type ApprovalRequest, type Approver, runTask } from '../../agent.ts';
import { call, reply, say, toolUse } from '../../scripted-model.ts';
import { defineTool, edit_file, list_files, read_file, type ToolContext } from '../../tools.ts';
import { scriptedAgent, tempProject, toolResults, toolsWith } from '../helpers.ts';
import { pathOf } from '../../tools.ts';
import { containedRunner, guardedDisk, runsLaterReason, trustedProgram } from '../../hardening/index.ts';
import { repositoryAround, runsLaterCheck } from '../../hardening/runs-later.ts';

/** Runs the real git in `root`, with an identity so a commit works and no global configuration. */
const git = (root: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], {
    cwd: root,
    env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  }).toString();

/** A repository with one committed file; `pwned` is where a payload that ran would leave its mark. */
async function repository(t: TestContext) {
  const root = await tempProject(t, { 'a.txt': 'a\n' });
  git(root, 'init', '-q');
  git(root, 'add', 'a.txt');
  git(root, 'commit', '-q', '-m', 'first');
  const config = path.join(root, '.git', 'config');
  return { root, config, pwned: path.join(root, 'pwned') };
}

/** The fsmonitor payload: `git status` runs core.fsmonitor's command through the shell, outside any sandbox. */
const fsmonitor = (pwned: string) => `[core]\n\tfsmonitor = "touch ${pwned}; false"`;

describe('what could run later asks a person every time: never covered by a blanket yes, by any spelling', () => {
  /** Runs `calls` (each an edit_file argument set) through the agent with `approve`; the results and who was asked. */
  async function edits(root: string, inputs: object[], approve?: Approver) {
    const asked: ApprovalRequest[] = [];
    const approver: Approver | undefined =
      approve && (async (request) => (asked.push(request), await approve(request)));
    const script = [...inputs.map((input) => call('edit_file', input)), say('done')];
    const { agent } = await scriptedAgent(root, script, approver ? { approve: approver } : {});
    await runTask(agent, 'edit');
    return { results: toolResults(agent.messages), asked };
  }
  const refusedUnasked = /nobody was asked, and no blanket yes covers it \(defaultProtection: false/;

  test('a blanket yes cannot write .git/config, so git status runs no model-written fsmonitor', async (t) => {
    const { root, config, pwned } = await repository(t);
    const before = readFileSync(config, 'utf8');
    const spellings = ['.git/config', 'sub/../.git/config', './.git/config', './.GIT/config'];
    const inputs = spellings.map((spelling) => ({ path: spelling, old_str: '', new_str: fsmonitor(pwned) }));
    const { results } = await edits(root, inputs);
    assert.equal(results.length, 4);
    for (const result of results) assert.match(String(result.content), refusedUnasked);
    assert.equal(readFileSync(config, 'utf8'), before);
    git(root, 'status');
    assert.equal(existsSync(pwned), false);
  });

  test('hooks, editor and agent settings, at any depth, and a folder git would take for a repository under another name are refused unasked', async (t) => {
    const { root, pwned } = await repository(t);
    await mkdir(path.join(root, 'shaped', 'objects'), { recursive: true });
    await mkdir(path.join(root, 'shaped', 'refs'));
    writeFileSync(path.join(root, 'shaped', 'HEAD'), 'ref: refs/heads/main\n');
    const hook = `#!/bin/sh\ntouch ${pwned}\n`;
    const paths = ['.git/hooks/pre-commit', '.vscode/tasks.json', 'deep/er/.idea/x.xml', 'shaped/hooks/post-checkout'];
    const { results } = await edits(
      root,
      paths.map((file) => ({ path: file, old_str: '', new_str: hook })),
    );
    assert.deepEqual(
      results.map((result) => refusedUnasked.test(String(result.content))),
      [true, true, true, true],
    );
    assert.match(String(results[3]?.content), /inside shaped, which git would open as a repository/);
    for (const file of paths) assert.equal(existsSync(path.join(root, file)), false, file);
  });

  test('the folder core.hooksPath names, an executable, a VS Code workspace and mise.toml are refused unasked, though none is hidden', async (t) => {
    const { root } = await repository(t);
    git(root, 'config', 'core.hooksPath', 'githooks');
    writeFileSync(path.join(root, 'run.sh'), 'echo hi\n');
    chmodSync(path.join(root, 'run.sh'), 0o755);
    const { results } = await edits(root, [
      { path: 'githooks/pre-commit', old_str: '', new_str: 'touch pwned\n' },
      { path: 'run.sh', old_str: 'echo hi', new_str: 'touch pwned' },
      { path: 'team.code-workspace', old_str: '', new_str: '{ "tasks": {} }\n' },
      { path: 'mise.toml', old_str: '', new_str: '[hooks]\n' },
    ]);
    for (const result of results.slice(2))
      assert.match(String(result.content), /a file its tool loads when the folder is opened; nobody was asked/);
    assert.match(String(results[0]?.content), /in core\.hooksPath \(.*githooks\), whose files git runs/);
    assert.match(String(results[1]?.content), /an executable file; nobody was asked/);
    assert.equal(existsSync(path.join(root, 'githooks')), false);
    assert.equal(readFileSync(path.join(root, 'run.sh'), 'utf8'), 'echo hi\n');
  });

  test('runs later knows its classes, not every loader: installed packages, a virtual environment, npm install scripts and what an install runs by its presence are refused unasked; source, a Makefile and a test script pass', async (t) => {
    const { root } = await repository(t);
    const manifest = '{\n  "name": "p",\n  "scripts": {\n    "test": "node test.js"\n  }\n}\n';
    for (const folder of ['deep', 'env', 'pipe']) await mkdir(path.join(root, folder));
    execFileSync('mkfifo', [path.join(root, 'pipe', 'package.json')]);
    writeFileSync(path.join(root, 'package.json'), manifest);
    writeFileSync(path.join(root, 'deep', 'package.json'), manifest);
    writeFileSync(path.join(root, 'env', 'pyvenv.cfg'), 'home = /usr/bin\n');
    const refused = [
      { path: 'node_modules/left-pad/index.js', old_str: '', new_str: 'require("child_process");\n' },
      { path: 'lib/python3.11/site-packages/evil.pth', old_str: '', new_str: 'import os\n' },
      { path: 'env/bin/activate', old_str: '', new_str: 'touch pwned\n' },
      { path: 'package.json', old_str: '"test": "node test.js"', new_str: '"postinstall": "touch pwned"' },
      { path: 'deep/package.json', old_str: '"test"', new_str: '"prepare"' }, // a workspace's own runs too
      { path: 'pipe/package.json', old_str: '"test"', new_str: '"prepare"' }, // a named pipe: not read, refused
      { path: 'binding.gyp', old_str: '', new_str: "{ 'targets': [{ 'target_name': '<!(touch pwned)' }] }\n" },
      { path: 'py/setup.py', old_str: '', new_str: 'import os\n' },
      { path: 'pyproject.toml', old_str: '', new_str: "[build-system]\nbackend-path = ['.']\n" },
    ];
    const passed = [
      { path: 'src/x.js', old_str: '', new_str: 'module.exports = 1;\n' },
      { path: 'Makefile', old_str: '', new_str: 'test:\n\tnode test.js\n' },
      { path: 'tools/package.json', old_str: '', new_str: manifest.replace('node test.js', 'node --test') },
    ];
    const { results } = await edits(root, [...refused, ...passed]);
    const reasons = results.map((result) => / is (.*); nobody was asked/.exec(String(result.content))?.[1] ?? 'ok');
    assert.deepEqual(reasons, [
      'inside node_modules, where programs load installed packages from',
      'inside site-packages, where programs load installed packages from',
      'inside env, a Python virtual environment (pyvenv.cfg)',
      "npm's manifest, with a script npm install runs on its own (postinstall)",
      "npm's manifest, with a script npm install runs on its own (prepare)",
      "npm's manifest, with a script npm install runs on its own (preinstall, install, postinstall, prepublish, " +
        'preprepare, prepare, postprepare, dependencies)',
      'a file an install runs as code, by its mere presence',
      'a file an install runs as code, by its mere presence',
      'a file an install runs as code, by its mere presence',
      'ok',
      'ok',
      'ok',
    ]);
    assert.deepEqual(
      results.slice(refused.length).map((result) => result.is_error),
      [undefined, undefined, undefined],
    );
    assert.equal(readFileSync(path.join(root, 'package.json'), 'utf8'), manifest);
  });

  test("pip install imports what a setup.cfg's attr: names, in a setuptools project: setup.cfg is refused unasked, as pyproject.toml is", async (t) => {
    const root = await tempProject(t, {
      'pyproject.toml': '[build-system]\nbuild-backend = "setuptools.build_meta"\n',
    });
    const config = '[metadata]\nname = p\nversion = attr: p.version.VERSION\n'; // p/version.py runs at install
    const { results } = await edits(root, [{ path: 'setup.cfg', old_str: '', new_str: config }]);
    assert.match(String(results[0]?.content), /a file an install runs as code, by its mere presence; nobody was asked/);
    assert.equal(existsSync(path.join(root, 'setup.cfg')), false);
  });

  test('python -m pip in the project imports a pip.py the model wrote, outside any sandbox: a module at the root named as one Python has installed is refused unasked', async (t) => {
    const python = trustedProgram('python3');
    if (python === null) return void t.skip('no python3 in the system folders');
    const root = await tempProject(t);
    const pwned = path.join(root, 'pwned');
    const payload = `open(${JSON.stringify(pwned)}, 'w').write('ran')\n`;
    const { results } = await edits(root, [
      { path: 'pip.py', old_str: '', new_str: payload },
      { path: 'json/__init__.py', old_str: '', new_str: payload },
      { path: 'main.py', old_str: '', new_str: payload },
      { path: 'src/pip.py', old_str: '', new_str: payload },
      { path: 'json_tools/__init__.py', old_str: '', new_str: payload },
    ]);
    const reasons = results.map((result) => / is (.*); nobody was asked/.exec(String(result.content))?.[1] ?? 'ok');
    assert.deepEqual(reasons, [
      'a module Python imports in place of its installed pip (python -m pip)',
      'a module Python imports in place of its installed json (python -m json)',
      'ok',
      'ok',
      'ok',
    ]);
    // The attack is real: written there, `python -m pip` runs it.
    writeFileSync(path.join(root, 'pip.py'), payload);
    spawnSync(python, ['-m', 'pip', '--version'], { cwd: root, stdio: 'ignore' });
    assert.equal(existsSync(pwned), true, 'python -m pip ran the pip.py of the folder it was started in');
  });

  test('on a file system that ignores case (macOS, Windows), SETUP.PY is setup.py, Package.json is the manifest, Site-Packages holds packages and x/head makes a repository: runs later folds names as it does', async (t) => {
    const root = await tempProject(t, { 'package.json': '{ "scripts": {} }\n' });
    await mkdir(path.join(root, 'shaped', 'objects'), { recursive: true });
    await mkdir(path.join(root, 'shaped', 'refs'));
    const { results } = await edits(root, [
      { path: 'SETUP.PY', old_str: '', new_str: 'import os\n' },
      { path: 'sub/Package.json', old_str: '', new_str: '{ "scripts": { "postinstall": "touch pwned" } }\n' },
      { path: 'lib/python3.11/Site-Packages/evil.pth', old_str: '', new_str: 'import os\n' },
      { path: 'shaped/head', old_str: '', new_str: 'ref: refs/heads/main\n' },
      { path: 'Team.Code-Workspace', old_str: '', new_str: '{}\n' },
    ]);
    const reasons = results.map((result) => / is (.*); nobody was asked/.exec(String(result.content))?.[1] ?? 'ok');
    assert.deepEqual(reasons, [
      'a file an install runs as code, by its mere presence',
      "npm's manifest, with a script npm install runs on its own (postinstall)",
      'inside Site-Packages, where programs load installed packages from',
      'inside shaped, which git would open as a repository',
      'a file its tool loads when the folder is opened',
    ]);
  });

  test('a person is asked about each such write, told why, and "always" does not cover the next one', async (t) => {
    const root = await tempProject(t);
    const always: Approver = async () => ({ approved: true, always: true });
    const inputs = [
      { path: 'plain.txt', old_str: '', new_str: 'a\n' }, // answered "always": plain files are not asked again
      { path: '.vscode/a.json', old_str: '', new_str: '{}\n' },
      { path: '.vscode/b.json', old_str: '', new_str: '{}\n' },
      { path: 'other.txt', old_str: '', new_str: 'b\n' },
    ];
    const { results, asked } = await edits(root, inputs, always);
    assert.deepEqual(
      asked.map((request) => [pathOf(request.call.input), request.runsLater]),
      [
        ['plain.txt', null],
        ['.vscode/a.json', 'a hidden name (".vscode"), which tools load on their own'],
        ['.vscode/b.json', 'a hidden name (".vscode"), which tools load on their own'],
      ],
    );
    assert.deepEqual(
      results.map((result) => result.is_error),
      [undefined, undefined, undefined, undefined],
    );
  });

  test('the path approved is the path changed: an edit through a link inside the project is refused, naming the target', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'a\n' });
    symlinkSync('a.txt', path.join(root, 'link.txt'));
    const asked: string[] = [];
    const { agent } = await scriptedAgent(
      root,
      [call('read_file', { path: 'link.txt' }), call('edit_file', { path: 'link.txt', old_str: 'a', new_str: 'b' })],
      { approve: async ({ preview }) => (asked.push(preview), { approved: true }) },
    );
    await runTask(agent, 'edit');
    assert.match(
      String(toolResults(agent.messages)[1]?.content),
      /link\.txt goes through a link to a\.txt; edit that path itself/,
    );
    assert.equal(readFileSync(path.join(root, 'a.txt'), 'utf8'), 'a\n');
  });

  test("a forker's own writing tool cannot write .git/hooks either: approval refuses the call before it runs", async (t) => {
    const { root, pwned } = await repository(t);
    const writes: string[] = [];
    const write_file = defineTool({
      name: 'write_file',
      description: 'Writes a file, as a forker might add one.',
      input: z.strictObject({ path: z.string(), content: z.string() }),
      readOnly: false,
      run: async ({ path: file, content }) => {
        writes.push(file);
        writeFileSync(path.join(root, file), content);
        return 'written';
      },
    });
    const { agent } = await scriptedAgent(
      root,
      [call('write_file', { path: '.git/hooks/post-checkout', content: `#!/bin/sh\ntouch ${pwned}\n` }), say('done')],
      { tools: toolsWith(write_file) },
    );
    await runTask(agent, 'write a hook');
    assert.deepEqual(writes, []);
    assert.match(String(toolResults(agent.messages)[0]?.content), refusedUnasked);
    assert.equal(existsSync(path.join(root, '.git', 'hooks', 'post-checkout')), false);
  });

  test('read_file .git/config is refused, so a token kept in a remote URL never reaches the model', async (t) => {
    const { root, config } = await repository(t);
    const token = 'ghp_s3cretTOKENs3cretTOKENs3cretTOKEN';
    git(root, 'remote', 'add', 'origin', `https://x-access-token:${token}@github.com/o/r.git`);
    assert.match(readFileSync(config, 'utf8'), new RegExp(token));
    symlinkSync('.git/config', path.join(root, 'notes.txt')); // a link inside the root to it
    const { agent } = await scriptedAgent(root, [
      reply(
        toolUse('read_file', { path: '.git/config' }),
        toolUse('read_file', { path: 'notes.txt' }),
        toolUse('read_file', { path: 'x/../.GIT/config' }),
        toolUse('list_files', { path: '.git' }),
        toolUse('list_files', {}),
      ),
      say('done'),
    ]);
    await runTask(agent, 'find the token');
    const results = toolResults(agent.messages);
    assert.equal(results.length, 5);
    for (const result of results.slice(0, 4)) {
      assert.equal(result.is_error, true);
      assert.match(String(result.content), /inside "\.git", which the tools never read/);
    }
    assert.doesNotMatch(JSON.stringify(agent.messages), new RegExp(token));
    assert.doesNotMatch(String(results[4]?.content), /\.git\//);
  });

  test('the person can opt out (defaultProtection: false): then the tools read .git and write .vscode', async (t) => {
    const { root, config } = await repository(t);
    const { agent } = await scriptedAgent(
      root,
      [
        call('read_file', { path: '.git/config' }),
        call('edit_file', { path: '.vscode/settings.json', old_str: '', new_str: '{}\n' }),
        say('done'),
      ],
      { defaultProtection: false },
    );
    await runTask(agent, 'configure the editor');
    const [read, edit] = toolResults(agent.messages);
    assert.match(String(read?.content), /repositoryformatversion/);
    assert.equal(edit?.is_error, undefined);
    assert.equal(readFileSync(path.join(root, '.vscode', 'settings.json'), 'utf8'), '{}\n');
    // The tools alone take the same option from their context, and protect when it is absent.
    const opted: ToolContext = {
      root,
      seen: new Map(),
      disk: guardedDisk,
      runner: containedRunner,
      defaultProtection: false,
    };
    assert.match(await read_file.run({ path: '.git/config' }, opted), /\[core\]/);
    assert.match(await list_files.run({ path: '.git' }, opted), /config/);
    await assert.rejects(
      read_file.run({ path: '.git/config' }, { root, seen: new Map(), disk: guardedDisk, runner: containedRunner }),
      /never read/,
    );
    assert.ok(existsSync(config));
  });
});

test('a folder git would open as a worktree-style repository (HEAD and a commondir naming where objects and refs are) is asked, and refused under a blanket yes', async (t) => {
  const root = await tempProject(t, { 'store/objects/README': 'x\n', 'store/refs/README': 'x\n' });
  const writes = [
    reply(
      toolUse('edit_file', { path: 'tools/HEAD', old_str: '', new_str: 'ref: refs/heads/main\n' }, 'toolu_head'),
      toolUse('edit_file', { path: 'tools/commondir', old_str: '', new_str: '../store\n' }, 'toolu_common'),
    ),
    say('done'),
  ];
  const { agent } = await scriptedAgent(root, writes);
  await runTask(agent, 'set up tools');
  const [, common] = toolResults(agent.messages);
  assert.equal(common?.is_error, true);
  assert.match(String(common?.content), /tools\/commondir is inside tools, which git would open as a repository/);
  assert.equal(existsSync(path.join(root, 'tools', 'commondir')), false);
});

describe('what runs later, decided file by file', () => {
  /** Why a write to `file` (a path from the root) runs later, or null. */
  const reason = (root: string, file: string) =>
    runsLaterReason({ root } as ToolContext, { path: file }, file, path.join(root, file));

  test('a read-only tool, a call without a path, and a plain write are allowed without asking', async (t) => {
    const { root } = await repository(t);
    const ask = (tool: typeof read_file | typeof edit_file, input: unknown, defaultProtection?: false) =>
      runsLaterCheck.check({ tool, input }, { toolContext: { root, defaultProtection } as ToolContext });
    const allowed = { action: 'allow' };
    assert.deepEqual(await ask(read_file, { path: '.vscode/tasks.json' }), allowed);
    assert.deepEqual(await ask(edit_file, { old_str: '', new_str: 'x' }), allowed);
    assert.deepEqual(await ask(edit_file, { path: '.vscode/tasks.json' }, false), allowed);
    assert.deepEqual(await ask(edit_file, { path: 'src/a.ts' }), allowed);
    assert.deepEqual(await ask(edit_file, { path: '.vscode/tasks.json' }), {
      action: 'ask',
      reason: 'a hidden name (".vscode"), which tools load on their own',
    });
  });

  test('only a VS Code workspace and mise.toml by their exact names are files opened on load', async (t) => {
    const root = await tempProject(t);
    const opened = ['team.code-workspace', 'mise.toml', 'mise.local.toml', 'mise.dev-ci.toml'];
    const plain = ['team.code-workspace.bak', 'premise.toml', 'mise.toml.bak', 'mise..toml'];
    for (const file of opened)
      assert.equal(await reason(root, file), 'a file its tool loads when the folder is opened');
    for (const file of plain) assert.equal(await reason(root, file), null, file);
  });

  test('a folder is a repository only with a HEAD file and objects/ and refs/ folders, or a HEAD and a commondir', async (t) => {
    const root = await tempProject(t, {
      'full/HEAD': 'ref: refs/heads/main\n',
      'full/objects/README': '',
      'full/refs/README': '',
      'worktree/HEAD': 'ref: refs/heads/main\n',
      'worktree/commondir': '../full\n',
      'no-refs/HEAD': 'ref: refs/heads/main\n',
      'no-refs/objects/README': '',
      'no-head/objects/README': '',
      'no-head/refs/README': '',
      'head-folder/HEAD/README': '',
      'head-folder/objects/README': '',
      'head-folder/refs/README': '',
      'only-head/HEAD': 'ref: refs/heads/main\n',
    });
    for (const folder of ['full', 'worktree'])
      assert.equal(await repositoryAround(root, path.join(root, folder, 'x.txt')), folder);
    for (const folder of ['no-refs', 'no-head', 'head-folder', 'only-head'])
      assert.equal(await repositoryAround(root, path.join(root, folder, 'x.txt')), null, folder);
  });

  test('an empty core.hooksPath does not make every file of the project a hook', async (t) => {
    const { root } = await repository(t);
    git(root, 'config', 'core.hooksPath', '');
    assert.equal(await reason(root, 'src/a.ts'), null);
  });
});
