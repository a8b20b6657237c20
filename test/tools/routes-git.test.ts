// Route 3 of issue 28: nothing the model writes through the tools reaches `.git` (config, hooks), editors' settings
// or the harness's own files, however the path is spelled; `.git` is not read either (a token in a remote URL). Run
// for real: a real repository, the real git, the tools alone and through the agent.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { z } from 'zod';
import { runTask } from '../../agent.ts';
import { call, reply, say, toolUse } from '../../scripted-model.ts';
import { defineTool, edit_file, list_files, read_file, type ToolContext } from '../../tools.ts';
import { scriptedAgent, tempProject, toolResults, toolsWith } from '../helpers.ts';

const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');

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

describe("protected paths: the tools never write .git, editors' settings or .agent, at any depth, by any spelling", () => {
  test('edit_file cannot write .git/config, so git status runs no model-written fsmonitor', async (t) => {
    const { root, config, pwned } = await repository(t);
    const before = readFileSync(config, 'utf8');
    symlinkSync('.git', path.join(root, 'gitlink')); // a link inside the root, into .git
    // As if the model had read it: the refusal must come from the protection, not from read-before-edit.
    const ctx: ToolContext = { root, seen: new Map([[config, sha256(before)]]) };
    for (const spelling of ['.git/config', 'sub/../.git/config', './.git/config', 'gitlink/config']) {
      await assert.rejects(
        edit_file.run({ path: spelling, old_str: '[core]', new_str: fsmonitor(pwned) }, ctx),
        /is protected \("\.git"/,
        spelling,
      );
    }
    await assert.rejects(edit_file.run({ path: './.GIT/config', old_str: '', new_str: fsmonitor(pwned) }, ctx));
    const { agent } = await scriptedAgent(root, [
      call('edit_file', { path: 'sub/../.git/config', old_str: '[core]', new_str: fsmonitor(pwned) }),
      say('done'),
    ]);
    agent.toolContext.seen.set(config, sha256(before));
    await runTask(agent, 'configure git');
    assert.match(String(toolResults(agent.messages)[0]?.content), /is protected \("\.git"/);
    assert.equal(readFileSync(config, 'utf8'), before);
    git(root, 'status', '--short');
    assert.equal(existsSync(pwned), false, 'git status ran a payload');
    // The payload is real: written by hand, the same `git status` runs it.
    writeFileSync(config, before.replace('[core]', fsmonitor(pwned)));
    git(root, 'status', '--short');
    assert.equal(existsSync(pwned), true, 'the control payload did not run: the test proves nothing');
  });

  test('edit_file cannot create .git/hooks/pre-commit or set core.hooksPath, so git commit runs no model code', async (t) => {
    const { root, config, pwned } = await repository(t);
    const hook = `#!/bin/sh\ntouch ${pwned}\n`;
    const { agent } = await scriptedAgent(root, [
      reply(
        toolUse('edit_file', { path: '.git/hooks/pre-commit', old_str: '', new_str: hook }),
        toolUse('edit_file', { path: 'src/.git/hooks/pre-commit', old_str: '', new_str: hook }),
        toolUse('edit_file', { path: '.husky/pre-commit', old_str: '', new_str: hook }),
      ),
      say('done'),
    ]);
    await runTask(agent, 'add a hook');
    const results = toolResults(agent.messages);
    assert.equal(results.length, 3);
    for (const result of results) assert.match(String(result.content), /is protected \("\.(git|husky)"/);
    assert.equal(existsSync(path.join(root, '.git', 'hooks', 'pre-commit')), false);
    assert.equal(existsSync(path.join(root, 'src')), false, 'a folder was made for a refused file');
    writeFileSync(path.join(root, 'a.txt'), 'b\n');
    git(root, 'commit', '-q', '-am', 'second');
    assert.equal(existsSync(pwned), false, 'git commit ran a hook');
    // The hook is real: installed by hand (executable), the next commit runs it.
    writeFileSync(path.join(root, '.git', 'hooks', 'pre-commit'), hook);
    chmodSync(path.join(root, '.git', 'hooks', 'pre-commit'), 0o755);
    writeFileSync(path.join(root, 'a.txt'), 'c\n');
    git(root, 'commit', '-q', '-am', 'third');
    assert.equal(existsSync(pwned), true, 'the control hook did not run: the test proves nothing');
    assert.doesNotMatch(readFileSync(config, 'utf8'), /hooksPath/);
  });

  test("editors' and agents' settings are refused at any depth: .vscode/settings.json, .idea/, .agent/, a nested .vscode", async (t) => {
    const root = await tempProject(t);
    const ctx: ToolContext = { root, seen: new Map() };
    const paths = ['.vscode/settings.json', '.idea/workspace.xml', 'packages/web/.vscode/tasks.json', '.agent/x.json'];
    for (const name of [...paths, '.devcontainer/devcontainer.json', '.mcp.json', '.npmrc', '.gitmodules']) {
      await assert.rejects(edit_file.run({ path: name, old_str: '', new_str: '{}' }, ctx), /is protected/, name);
      assert.equal(existsSync(path.join(root, name)), false, name);
    }
    assert.equal(existsSync(path.join(root, 'packages')), false, 'a folder was made for a refused file');
    // A `.git` that is a link to a folder inside: git reads through the name, so the name is protected too.
    await mkdir(path.join(root, 'elsewhere'));
    symlinkSync('elsewhere', path.join(root, '.git'));
    await assert.rejects(edit_file.run({ path: '.git/config', old_str: '', new_str: '[core]' }, ctx), /protected/);
    assert.equal(existsSync(path.join(root, 'elsewhere', 'config')), false);
    // Names that only look alike are ordinary files.
    await edit_file.run({ path: '.gitignore', old_str: '', new_str: 'x\n' }, ctx);
    await edit_file.run({ path: 'vscode/settings.json', old_str: '', new_str: '{}' }, ctx);
  });

  test("a forker's own writing tool cannot write .git/hooks either: the protect hook refuses the call before it runs", async (t) => {
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
    assert.match(String(toolResults(agent.messages)[0]?.content), /is protected \("\.git"/);
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
    const opted: ToolContext = { root, seen: new Map(), defaultProtection: false };
    assert.match(await read_file.run({ path: '.git/config' }, opted), /\[core\]/);
    assert.match(await list_files.run({ path: '.git' }, opted), /config/);
    await assert.rejects(read_file.run({ path: '.git/config' }, { root, seen: new Map() }), /never read/);
    assert.ok(existsSync(config));
  });
});
