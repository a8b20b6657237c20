// P3 hardening, part 1: the hooks around every call, protected files, approval, budgets, the
// runaway guard, stop reasons, Ctrl-C and steering. One test per failure it prevents,
// each named after that failure.

import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { open, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import {
  type AfterCallHook,
  type Agent,
  approveAll,
  type Approver,
  type BeforeCallHook,
  type Model,
  resume,
  runTask,
} from '../../agent.ts';
import { call, reply, say, ScriptedModel, toolUse } from '../../scripted-model.ts';
import { defineTool, type Tool } from '../../tools.ts';
import {
  deferred,
  echoTool,
  scriptedAgent,
  SONNET_PRICE,
  tempProject,
  textOf,
  tokensSpent,
  toolResults,
  toolsWith,
  unmarked,
  violationsOf,
  within,
} from '../helpers.ts';

/** A tool with a fixed output, recording its runs. */
function fixedTool(name: string, output: string) {
  let runs = 0;
  const tool = defineTool({
    name,
    description: `Prints ${name}. A test tool.`,
    input: z.strictObject({}),
    readOnly: true,
    run: async () => {
      runs++;
      return output;
    },
  });
  return { tool, runs: () => runs };
}

describe("forkers' hooks (beforeCall / afterCall)", () => {
  test("a call a hook denies never runs, and the model is told the hook's reason", async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const policy: BeforeCallHook = {
      name: 'policy',
      check: () => ({ action: 'deny', reason: 'echo is switched off today' }),
    };
    const { agent } = await scriptedAgent(root, [call('echo', { text: 'hi' }), say('ok')], {
      tools: [tool],
      beforeCall: [policy],
    });
    await runTask(agent, 'echo hi');
    assert.deepEqual(runs, []);
    assert.deepEqual(toolResults(agent.messages), [
      { type: 'tool_result', tool_use_id: 'toolu_s1_0', content: 'echo is switched off today', is_error: true },
    ]);
  });

  test("a rewrite is what runs, not the model's original arguments", async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const rewrite: BeforeCallHook = {
      name: 'rewrite',
      check: ({ input }) => ({ action: 'rewrite', input: { text: `${(input as { text: string }).text}, politely` } }),
    };
    const { agent } = await scriptedAgent(root, [call('echo', { text: 'hi' }), say('ok')], {
      tools: [tool],
      beforeCall: [rewrite],
    });
    await runTask(agent, 'echo hi');
    assert.deepEqual(runs, ['hi, politely']);
    assert.equal(toolResults(agent.messages)[0]?.content, 'echo: hi, politely');
  });

  test('a rewrite cannot slip past the safety checks: what it produces is confined, protected and approved as rewritten', async (t) => {
    const root = await tempProject(t, { 'src/a.js': 'a\n', 'test/a.test.js': 'keep\n' });
    const toProtected: BeforeCallHook = {
      name: 'retarget',
      check: ({ input }) => ({ action: 'rewrite', input: { ...(input as object), path: 'test/a.test.js' } }),
    };
    const previews: string[] = [];
    const approve: Approver = async ({ preview }) => (previews.push(preview), { approved: true });
    const script = [call('edit_file', { path: 'src/new.js', old_str: '', new_str: 'x' }), say('ok')];
    const { agent } = await scriptedAgent(root, script, { beforeCall: [toProtected], protect: ['test/**'], approve });
    await runTask(agent, 'create src/new.js');
    assert.match(String(toolResults(agent.messages)[0]?.content), /test\/a\.test\.js is protected/);
    assert.equal(await readFile(path.join(root, 'test/a.test.js'), 'utf8'), 'keep\n');
    assert.deepEqual(previews, [], 'nothing was put to the user, since protect refused first');
  });

  test("a hook that answers in the tool's place is the result, and the tool never runs", async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const cache: BeforeCallHook = {
      name: 'cache',
      check: () => ({ action: 'answer', content: 'echo: hi (from cache)' }),
    };
    const { agent } = await scriptedAgent(root, [call('echo', { text: 'hi' }), say('ok')], {
      tools: [tool],
      beforeCall: [cache],
    });
    await runTask(agent, 'echo hi');
    assert.deepEqual(runs, []);
    assert.deepEqual(toolResults(agent.messages), [
      { type: 'tool_result', tool_use_id: 'toolu_s1_0', content: 'echo: hi (from cache)' },
    ]);
  });

  test('a hook that throws denies the call (fails closed) instead of waving it through', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const broken: BeforeCallHook = {
      name: 'policy',
      check: () => {
        throw new Error('policy server unreachable');
      },
    };
    const { agent } = await scriptedAgent(root, [call('echo', { text: 'hi' }), say('ok')], {
      tools: [tool],
      beforeCall: [broken],
    });
    const halt = await runTask(agent, 'echo hi');
    assert.equal(halt.kind, 'accepted', 'a broken hook must not crash the loop either');
    assert.deepEqual(runs, []);
    const [result] = toolResults(agent.messages);
    assert.equal(result?.is_error, true);
    assert.match(String(result?.content), /policy check failed \(policy server unreachable\)/);
  });

  test('a hook that never answers denies the call at its timeout instead of hanging the run', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const stuck: BeforeCallHook = { name: 'stuck', timeoutMs: 50, check: () => new Promise(() => {}) };
    const { agent } = await scriptedAgent(root, [call('echo', { text: 'hi' }), say('ok')], {
      tools: [tool],
      beforeCall: [stuck],
    });
    await runTask(agent, 'echo hi');
    assert.deepEqual(runs, []);
    const [result] = toolResults(agent.messages);
    assert.equal(result?.is_error, true);
    assert.match(String(result?.content), /stuck check failed \(no answer within 0\.05 s\)/);
  });

  test("a forker's hook only ever sees arguments the standard checks let through", async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    const seen: unknown[] = [];
    const spy: BeforeCallHook = { name: 'spy', check: ({ input }) => (seen.push(input), { action: 'allow' }) };
    const script = [call('echo', { text: 5 }), call('echo', { text: 'ok' }), say('ok')];
    const { agent } = await scriptedAgent(root, script, { tools: [tool], beforeCall: [spy] });
    await runTask(agent, 'echo');
    assert.deepEqual(seen, [{ text: 'ok' }]);
  });

  test("an after-call hook's result is what the model sees (a redactor works)", async (t) => {
    const root = await tempProject(t);
    const { tool } = fixedTool('env', 'USER=ada\nPASSWORD=hunter2-xyzzy\n');
    const redact: AfterCallHook = {
      name: 'redact',
      check: (_planned, outcome) => ({
        ...outcome,
        content: outcome.content.replaceAll('hunter2-xyzzy', '[redacted]'),
      }),
    };
    const model = new ScriptedModel([call('env', {}), say('ok')]);
    const { agent } = await scriptedAgent(root, [], { model, tools: [tool], afterCall: [redact] });
    await runTask(agent, 'show env');
    assert.equal(toolResults(agent.messages)[0]?.content, 'USER=ada\nPASSWORD=[redacted]\n');
    assert.ok(!JSON.stringify(model.requests[1]).includes('hunter2-xyzzy'), 'the secret reached the model');
  });

  test('a broken redaction hook withholds the result instead of leaking the secret', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = fixedTool('env', 'USER=ada\nAPI_KEY=sk-test-0123456789abcdef\n');
    const broken: AfterCallHook = {
      name: 'redact',
      check: () => {
        throw new Error('redactor crashed');
      },
    };
    const model = new ScriptedModel([call('env', {}), say('ok')]);
    const { agent } = await scriptedAgent(root, [], { model, tools: [tool], afterCall: [broken] });
    await runTask(agent, 'show env');
    assert.equal(runs(), 1);
    const [result] = toolResults(agent.messages);
    assert.equal(result?.is_error, true);
    assert.match(String(result?.content), /^result withheld: the redact check failed/);
    assert.equal(model.requests.length, 2);
    assert.ok(!JSON.stringify(model.requests[1]).includes('sk-test-0123456789abcdef'), 'the secret reached the model');
  });

  test('a redaction hook whose error quotes its input does not leak the secret through the "withheld" message', async (t) => {
    const root = await tempProject(t);
    const { tool } = fixedTool('pw', 'hunter2');
    // A redactor expecting JSON output: Node's JSON.parse error says `Unexpected token 'h', "hunter2" is not valid JSON`.
    const parsing: AfterCallHook = {
      name: 'redact',
      check: (_planned, outcome) => ({
        ...outcome,
        content: JSON.stringify({ ...JSON.parse(outcome.content), password: '[redacted]' }),
      }),
    };
    const model = new ScriptedModel([call('pw', {}), say('ok')]);
    const { agent } = await scriptedAgent(root, [], { model, tools: [tool], afterCall: [parsing] });
    await runTask(agent, 'show the password');
    const [result] = toolResults(agent.messages);
    assert.match(String(result?.content), /^result withheld/);
    assert.ok(
      !JSON.stringify(model.requests[1]).includes('hunter2'),
      `the secret reached the model: ${String(result?.content)}`,
    );
  });
});

describe('hooks reach everywhere a call can run', () => {
  test('a rewrite into arguments that break the schema is refused, not handed to the tool', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const broken: BeforeCallHook = { name: 'broken', check: () => ({ action: 'rewrite', input: { text: 42 } }) };
    const { agent } = await scriptedAgent(root, [call('echo', { text: 'hi' }), say('ok')], {
      tools: [tool],
      beforeCall: [broken],
    });
    await runTask(agent, 'echo');
    assert.deepEqual(runs, []);
    assert.match(
      String(toolResults(agent.messages)[0]?.content),
      /the broken hook rewrote the call into invalid arguments for echo: text/,
    );
  });

  test('a sub-agent obeys the forker\'s hooks too, so "task" is no way around a policy', async (t) => {
    const root = await tempProject(t, { '.env': 'TOKEN=secret-value\n' });
    const noDotEnv: BeforeCallHook = {
      name: 'no .env',
      check: ({ tool, input }) =>
        tool.name === 'read_file' && (input as { path: string }).path === '.env'
          ? { action: 'deny', reason: '.env is off limits' }
          : { action: 'allow' },
    };
    const child = new ScriptedModel([call('read_file', { path: '.env' }), say('I could not read it.')]);
    const script = [
      call('task', { description: 'read the settings', prompt: 'What token do the settings hold?' }),
      say('done'),
    ];
    const { agent } = await scriptedAgent(root, script, { beforeCall: [noDotEnv], taskModel: child });
    await runTask(agent, 'find the token');
    assert.equal(child.requests.length, 2, 'the sub-agent ran');
    assert.doesNotMatch(JSON.stringify(child.requests), /secret-value/);
    assert.doesNotMatch(JSON.stringify(agent.messages), /secret-value/);
  });
});

describe('protected files', () => {
  const TEST_FILE = 'assert.equal(add(2, 3), 5);\n';
  const tamperTool = (root: string, content: string, name = 'run_script'): Tool =>
    defineTool({
      name,
      description: "Runs a project script. A test tool that writes test/x.test.js behind the harness's back.",
      input: z.strictObject({}),
      readOnly: false,
      run: async () => {
        await writeFile(path.join(root, 'test/x.test.js'), content);
        return 'script ran';
      },
    });

  test('an edit of a protected test file is refused and the file stays as it was', async (t) => {
    const root = await tempProject(t, { 'test/x.test.js': TEST_FILE });
    const script = [
      call('read_file', { path: 'test/x.test.js' }),
      call('edit_file', { path: 'test/x.test.js', old_str: 'assert.equal(add(2, 3), 5);', new_str: '// skipped' }),
      say('done'),
    ];
    const { agent } = await scriptedAgent(root, script, { protect: ['test/**'] });
    await runTask(agent, 'make the tests pass');
    const [, edit] = toolResults(agent.messages);
    assert.equal(edit?.is_error, true);
    assert.match(String(edit?.content), /test\/x\.test\.js is protected \("test\/\*\*"\)/);
    assert.equal(await readFile(path.join(root, 'test/x.test.js'), 'utf8'), TEST_FILE);
  });

  test('a protected file changed behind the harness\'s back blocks "done" even though the check passes', async (t) => {
    const root = await tempProject(t, { 'test/x.test.js': TEST_FILE });
    const script = [call('run_script', {}), say('done'), say('done, really')];
    const { agent, events } = await scriptedAgent(root, script, {
      tools: toolsWith(tamperTool(root, 'pass();\n')),
      protect: ['test/**'],
      verify: 'exit 0',
      budgets: { maxTurns: 3 },
    });
    const halt = await runTask(agent, 'make the tests pass');
    const spent = { tokens: tokensSpent(events), costUsd: null };
    assert.deepEqual(halt, { kind: 'budget', budget: 'turns', limit: 3, spent });
    const refusals = agent.messages.filter((m) => m.role === 'user' && /^The task is not done/.test(textOf(m)));
    assert.equal(refusals.length, 2);
    for (const refusal of refusals)
      assert.match(textOf(refusal), /protected files changed since the \w+ started: test\/x\.test\.js \(changed\)/);
    assert.ok(events.every((e) => e.type !== 'gate' || !e.passed));
  });

  test('once the protected file is restored, the same "done" is accepted', async (t) => {
    const root = await tempProject(t, { 'test/x.test.js': TEST_FILE });
    const script = [call('run_script', {}), say('done'), call('restore', {}), say('done, tests restored')];
    const { agent } = await scriptedAgent(root, script, {
      tools: toolsWith(tamperTool(root, 'pass();\n'), tamperTool(root, TEST_FILE, 'restore')),
      protect: ['test/**'],
      verify: 'exit 0',
    });
    const halt = await runTask(agent, 'make the tests pass');
    assert.deepEqual(halt, { kind: 'accepted', verifiedBy: 'exit 0' });
    assert.match(textOf(agent.messages[4]), /test\/x\.test\.js \(changed\)/);
  });

  test('a protected file changed in one run is not laundered by the next run ("keep going")', async (t) => {
    const root = await tempProject(t, { 'test/x.test.js': TEST_FILE });
    const script = [call('run_script', {}), say('done'), say('done'), say('done')];
    const { agent, events } = await scriptedAgent(root, script, {
      tools: toolsWith(tamperTool(root, 'pass();\n')),
      protect: ['test/**'],
      verify: 'exit 0',
      budgets: { maxTurns: 2 },
    });
    for (const task of ['make the tests pass', 'keep going']) {
      const halt = await runTask(agent, task);
      const spent = { tokens: tokensSpent(events.splice(0)), costUsd: null }; // each run's own
      assert.deepEqual(halt, { kind: 'budget', budget: 'turns', limit: 2, spent });
    }
  });

  test('a protected file changed between two runs is not laundered by resume: the gate compares with the first start', async (t) => {
    const root = await tempProject(t, { 'test.js': 'process.exit(1);\n' });
    const config = { protect: ['test.js'], verify: 'node test.js', budgets: { maxTurns: 1 } };
    const first = await scriptedAgent(root, [say('Done.')], config);
    assert.equal((await runTask(first.agent, 'fix it')).kind, 'budget');
    await writeFile(path.join(root, 'test.js'), 'process.exit(0);\n'); // "fixed" by editing the test itself
    const second = await scriptedAgent(root, [say('Done.')], config);
    const saved = { compaction: null, subAgents: 0, repair: null, warnings: [] };
    resume(second.agent, { ...saved, messages: first.agent.messages, protectedAtStart: first.agent.protectedAtStart });
    assert.notEqual((await runTask(second.agent, 'keep going')).kind, 'accepted');
    const gate = second.events.flatMap((e) => (e.type === 'gate' ? [e.reason] : []));
    assert.match(gate.join('\n'), /protected files changed/);
  });

  test('a file no longer protected when a session resumes is not held to its first fingerprint', async (t) => {
    const root = await tempProject(t, { 'test.js': 'process.exit(0);\n', 'old.js': 'one\n' });
    const before = { protect: ['test.js', 'old.js'], verify: 'node test.js', budgets: { maxTurns: 1 } };
    const first = await scriptedAgent(root, [say('Done.')], before);
    await runTask(first.agent, 'fix it');
    await writeFile(path.join(root, 'old.js'), 'two\n'); // the person's own change, once unprotected
    const second = await scriptedAgent(root, [say('Done.')], { ...before, protect: ['test.js'] });
    const saved = { compaction: null, subAgents: 0, repair: null, warnings: [] };
    resume(second.agent, { ...saved, messages: first.agent.messages, protectedAtStart: first.agent.protectedAtStart });
    assert.equal((await runTask(second.agent, 'keep going')).kind, 'accepted');
  });

  test('--protect matches exactly as minimatch does: dotfiles are protected ("config/*" takes config/.secret), and a file named "test" is not under "test/**"', async (t) => {
    const root = await tempProject(t, { test: 'a file, not a folder\n', '.env': 'KEY=1\n', 'test2/x.js': 'x\n' });
    const edits = ['test', '.env', '.github/ci.yml', 'config/.secret', 'test/new.js'].map((file) =>
      call('edit_file', { path: file, old_str: '', new_str: 'changed\n' }),
    );
    const protect = ['test/**', '.env', '.github/**', 'config/*'];
    const { agent } = await scriptedAgent(root, [...edits, say('done')], { protect });
    await runTask(agent, 'try each');
    const refused = toolResults(agent.messages).map((r) => /is protected/.test(String(r.content)));
    assert.deepEqual(refused, [false, true, true, true, true]);
  });

  test('a named pipe under --protect "**" hangs neither the start nor the gate: it is fingerprinted by its kind, never opened', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const pipe = path.join(root, 'pipe');
    execFileSync('mkfifo', [pipe]);
    // Should a regression open the pipe after all, a writer releases it, so the test fails instead of hanging.
    const release = () => open(pipe, constants.O_WRONLY | constants.O_NONBLOCK).then((handle) => handle.close());
    const bounded = <T>(promise: Promise<T>, what: string) =>
      within(promise, what).catch(async (error: unknown) => {
        await release().catch(() => {});
        throw error;
      });
    await symlink('a.txt', path.join(root, 'link.txt'));
    const replacePipe = defineTool({
      name: 'replace_pipe',
      description: 'Replaces the pipe with a file and changes a.txt. A test tool.',
      input: z.strictObject({}),
      readOnly: false,
      run: async () => {
        await rm(pipe);
        await writeFile(pipe, 'now a file\n');
        await writeFile(path.join(root, 'a.txt'), 'ALPHA\n');
        return 'replaced';
      },
    });
    const script = [say('done'), call('replace_pipe', {}), say('done'), say('done')];
    const started = scriptedAgent(root, script, { tools: toolsWith(replacePipe), protect: ['**'], verify: 'exit 0' });
    const { agent } = await bounded(started, 'fingerprinting the project at the start');
    const first = await bounded(runTask(agent, 'check'), 'the gate');
    assert.deepEqual(first, { kind: 'accepted', verifiedBy: 'exit 0' }, 'an untouched pipe is no change');
    await bounded(runTask(agent, 'replace the pipe'), 'the gate after the change');
    const refusal = agent.messages.find((m) => m.role === 'user' && /^The task is not done/.test(textOf(m)));
    assert.match(textOf(refusal), /a\.txt \(changed\), link\.txt \(changed\), pipe \(changed\)/);
  });
});

describe('approval', () => {
  const SUB = 'export function sub(a, b) {\n  return a + b;\n}\n';
  const fixSub = [
    call('read_file', { path: 'sub.js' }),
    call('edit_file', { path: 'sub.js', old_str: '  return a + b;', new_str: '  return a - b;' }),
  ];

  test('a declined edit is not made, the model is told why, and the run goes on', async (t) => {
    const root = await tempProject(t, { 'sub.js': SUB });
    const approve: Approver = async () => ({ approved: false, reason: 'not now' });
    const model = new ScriptedModel([...fixSub, say('Understood, leaving it.')]);
    const { agent } = await scriptedAgent(root, [], { model, approve });
    const halt = await runTask(agent, 'fix sub');
    assert.equal(halt.kind, 'accepted');
    assert.equal(model.requests.length, 3);
    const [, edit] = toolResults(agent.messages);
    assert.deepEqual(edit, {
      type: 'tool_result',
      tool_use_id: 'toolu_s2_0',
      content: 'the user declined this edit_file call: not now',
      is_error: true,
    });
    assert.equal(await readFile(path.join(root, 'sub.js'), 'utf8'), SUB);
  });

  test('the user approves a diff of exactly what would change, before anything changes', async (t) => {
    const root = await tempProject(t, { 'sub.js': SUB });
    const asked: { tool: string; preview: string; onDisk: string }[] = [];
    const approve: Approver = async (request) => {
      asked.push({ ...request, onDisk: await readFile(path.join(root, 'sub.js'), 'utf8') });
      return { approved: true };
    };
    const { agent } = await scriptedAgent(root, [...fixSub, say('fixed')], { approve });
    await runTask(agent, 'fix sub');
    assert.equal(asked.length, 1);
    assert.equal(asked[0]!.tool, 'edit_file');
    assert.equal(asked[0]!.onDisk, SUB, 'asked before the edit, not after');
    const changed = asked[0]!.preview.split('\n').filter((l) => /^[-+](?![-+]{2} )/.test(l));
    assert.deepEqual(changed, ['-  return a + b;', '+  return a - b;']);
    assert.match(asked[0]!.preview, /^--- a\/sub\.js/m);
    assert.equal(await readFile(path.join(root, 'sub.js'), 'utf8'), SUB.replace('a + b', 'a - b'));
  });

  test('"always" is asked once: later edits in the session are not asked again', async (t) => {
    const root = await tempProject(t, { 'sub.js': SUB });
    let asked = 0;
    const approve: Approver = async () => (asked++, { approved: true, always: true });
    const script = [
      ...fixSub,
      call('edit_file', { path: 'sub.js', old_str: 'export function sub', new_str: 'export function subtract' }),
      call('edit_file', { path: 'notes.txt', old_str: '', new_str: 'renamed sub\n' }),
      say('done'),
    ];
    const { agent } = await scriptedAgent(root, script, { approve });
    await runTask(agent, 'fix and rename sub');
    assert.equal(asked, 1);
    assert.ok(toolResults(agent.messages).every((r) => r.is_error !== true));
    assert.equal(
      await readFile(path.join(root, 'sub.js'), 'utf8'),
      'export function subtract(a, b) {\n  return a - b;\n}\n',
    );
  });

  test('read-only tools never ask for approval', async (t) => {
    const root = await tempProject(t, { 'sub.js': SUB });
    let asked = 0;
    const approve: Approver = async () => (asked++, { approved: false, reason: 'no' });
    const script = [reply(toolUse('list_files', {}), toolUse('read_file', { path: 'sub.js' })), say('read it')];
    const { agent } = await scriptedAgent(root, script, { approve });
    await runTask(agent, 'look around');
    assert.equal(asked, 0);
    assert.ok(toolResults(agent.messages).every((r) => r.is_error !== true));
  });

  test('with approve-all (--yes) no preview is built: nobody would read it, and a big edit would be planned twice', async (t) => {
    const root = await tempProject(t);
    const previews: unknown[] = [];
    const writes: unknown[] = [];
    const write = defineTool({
      name: 'write_note',
      description: 'Writes a note. A test tool that records its previews and runs.',
      input: z.strictObject({ note: z.string() }),
      readOnly: false,
      preview: async (input) => (previews.push(input), `would write ${input.note}`),
      run: async (input) => (writes.push(input), 'written'),
    });
    const script = [call('write_note', { note: 'a' }), call('write_note', { note: 'b' }), say('done')];
    const { agent } = await scriptedAgent(root, script, { tools: [write], approve: approveAll });
    assert.equal((await runTask(agent, 'write two notes')).kind, 'accepted');
    assert.deepEqual(writes, [{ note: 'a' }, { note: 'b' }]);
    assert.deepEqual(previews, []);
  });
});

describe('budgets', () => {
  test("the turn budget halts, and the last reply's calls are all answered", async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    const script = [
      reply(toolUse('echo', { text: 'a' }), toolUse('echo', { text: 'b' })),
      reply(toolUse('echo', { text: 'c' }), toolUse('echo', { text: 'd' })),
      say('never'),
    ];
    const { agent, model, events } = await scriptedAgent(root, script, { tools: [tool], budgets: { maxTurns: 2 } });
    const halt = await runTask(agent, 'loop');
    assert.deepEqual(halt, {
      kind: 'budget',
      budget: 'turns',
      limit: 2,
      spent: { tokens: tokensSpent(events), costUsd: null },
    });
    assert.equal(model.requests.length, 2);
    assert.deepEqual(violationsOf({ messages: agent.messages }), []);
    assert.equal(agent.messages.at(-1)?.role, 'user');
  });

  test('the token budget halts the run once input plus output tokens reach it', async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    const script = [{ ...call('echo', { text: 'a' }), usage: { input_tokens: 600, output_tokens: 500 } }, say('never')];
    const { agent, model } = await scriptedAgent(root, script, {
      tools: [tool],
      budgets: { maxTurns: 25, maxTokens: 1000 },
    });
    const spent = { tokens: 1100, costUsd: null };
    assert.deepEqual(await runTask(agent, 'spend'), { kind: 'budget', budget: 'tokens', limit: 1000, spent });
    assert.equal(model.requests.length, 1);
    assert.deepEqual(violationsOf({ messages: agent.messages }), []);
    assert.equal(toolResults(agent.messages).length, 1);
  });

  test('the cost budget halts the run once the priced usage reaches it', async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    // claude-sonnet-4-5: $3 in, $15 out per million tokens, so each reply costs $0.30 + $0.15.
    const usage = { input_tokens: 100_000, output_tokens: 10_000 };
    const script = [{ ...call('echo', { text: 'a' }), usage }, { ...call('echo', { text: 'b' }), usage }, say('never')];
    const model = new ScriptedModel(script, 'claude-sonnet-4-5', SONNET_PRICE);
    const { agent } = await scriptedAgent(root, [], {
      model,
      tools: [tool],
      budgets: { maxTurns: 25, maxCostUsd: 0.5 },
    });
    const spent = { tokens: 220_000, costUsd: 0.9 };
    assert.deepEqual(await runTask(agent, 'spend'), { kind: 'budget', budget: 'cost', limit: 0.5, spent });
    assert.equal(model.requests.length, 2);
    assert.ok(Math.abs(agent.usage.costUsd! - 0.9) < 1e-9, String(agent.usage.costUsd));
    assert.deepEqual(violationsOf({ messages: agent.messages }), []);
  });

  /** A tool that runs until the run is stopped, then does `then` and finishes (well within the grace a stopped call
   *  gets). */
  const untilStopped = (then = () => {}) =>
    defineTool({
      name: 'slow',
      description: 'Takes as long as the run lets it. A test tool.',
      input: z.strictObject({}),
      readOnly: false,
      run: async (_input, { signal }) => {
        assert.ok(signal, "a tool is given the run's signal");
        // A timer the signal cancels: it also keeps the event loop alive (the budget's own timer does not).
        await sleep(10_000, undefined, { signal }).catch(() => {});
        then();
        return 'slow finished';
      },
    });

  test('the time budget stops the run; the running call finishes and later calls are answered "not run"', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const slow = untilStopped();
    const script = [reply(toolUse('slow', {}), toolUse('echo', { text: 'later' })), say('never')];
    const { agent, model, events } = await scriptedAgent(root, script, {
      tools: [slow, tool],
      budgets: { maxTurns: 25, timeoutMs: 200 },
    });
    const halt = await runTask(agent, 'be slow');
    assert.deepEqual(halt, {
      kind: 'budget',
      budget: 'time',
      limit: 200,
      spent: { tokens: tokensSpent(events), costUsd: null },
    });
    assert.equal(model.requests.length, 1);
    assert.deepEqual(runs, []);
    const [first, second] = toolResults(agent.messages);
    assert.equal(first?.content, 'slow finished');
    assert.match(String(second?.content), /^not run: the time budget of this run ran out/);
    assert.deepEqual(violationsOf({ messages: agent.messages }), []);
  });

  test('Ctrl-C on top of a spent time budget: the halt and the calls not run both say interrupted', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const user = new AbortController();
    // The person presses Ctrl-C once the time budget has stopped the tool: both have fired before the next call.
    const slow = untilStopped(() => user.abort());
    const script = [reply(toolUse('slow', {}), toolUse('echo', { text: 'later' })), say('never')];
    const { agent } = await scriptedAgent(root, script, {
      tools: [slow, tool],
      budgets: { maxTurns: 25, timeoutMs: 100 },
    });
    assert.deepEqual(await runTask(agent, 'be slow', user.signal), { kind: 'interrupted' });
    assert.deepEqual(runs, []);
    assert.equal(toolResults(agent.messages)[1]?.content, 'not run: the user interrupted');
  });

  test("an unknown model's cost is unknown (null), never a made-up $0", async (t) => {
    const root = await tempProject(t);
    const script = [{ ...say('hello'), usage: { input_tokens: 100_000, output_tokens: 10_000 } }];
    const { agent, events } = await scriptedAgent(root, script);
    assert.equal(agent.config.model.name, 'scripted');
    assert.equal(agent.usage.costUsd, null, 'unknown before the first reply, too');
    await runTask(agent, 'hi');
    assert.equal(agent.usage.input, 100_000);
    assert.equal(agent.usage.costUsd, null);
    const replyEvent = events.find((e) => e.type === 'reply');
    assert.equal(replyEvent?.type === 'reply' ? replyEvent.totals.costUsd : 'missing', null);
  });
});

describe('runaway guard', () => {
  test('a model repeating the same call is stopped at the third time in a row and told so', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const same = call('echo', { text: 'again' });
    const { agent } = await scriptedAgent(root, [same, same, same, say('ok')], { tools: [tool] });
    await runTask(agent, 'echo');
    assert.deepEqual(runs, ['again', 'again']);
    const third = toolResults(agent.messages)[2];
    assert.equal(third?.is_error, true);
    assert.match(String(third?.content), /made this exact call 3 times in a row/);
  });

  test('a reply without calls in between (a "done" the check refused) ends the row, so the call after it runs', async (t) => {
    const root = await tempProject(t, { 'test.js': 'process.exit(1)\n' });
    const { tool, runs } = echoTool();
    const same = call('echo', { text: 'again' });
    const script = [same, same, say('Done.'), same, say('Done.')];
    const { agent } = await scriptedAgent(root, script, { tools: [tool], verify: 'exit 1', budgets: { maxTurns: 5 } });
    await runTask(agent, 'echo');
    assert.deepEqual(runs, ['again', 'again', 'again']);
    assert.ok(toolResults(agent.messages).every((r) => r.is_error !== true));
  });

  test('a different call in between resets the count, so legitimate repeats still run', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const a = toolUse('echo', { text: 'a' });
    const script = [reply(a, a, toolUse('echo', { text: 'b' }), a, a), say('ok')];
    const { agent } = await scriptedAgent(root, script, { tools: [tool] });
    await runTask(agent, 'echo');
    assert.deepEqual(runs, ['a', 'a', 'b', 'a', 'a']);
    assert.ok(toolResults(agent.messages).every((r) => r.is_error !== true));
  });

  test('a different call skipped because the user spoke still breaks the row: the guard counts the calls made', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    let live: Agent | undefined;
    let steered = 0;
    const steer = defineTool({
      name: 'steer',
      description: 'Types a message as if the user did. A test tool.',
      input: z.strictObject({}),
      readOnly: true,
      run: async () => (live!.steering.push(`message ${++steered}`), 'typed'),
    });
    // steer, echo (skipped: the user spoke), steer, steer: never three steers in a row.
    const script = [reply(toolUse('steer', {}), toolUse('echo', { text: 'a' })), call('steer', {}), call('steer', {})];
    const { agent } = await scriptedAgent(root, [...script, say('ok')], { tools: [tool, steer] });
    live = agent;
    await runTask(agent, 'go');
    assert.deepEqual(runs, [], 'the echo was skipped');
    assert.equal(steered, 3, 'the third steer ran: it was not the third call in a row');
  });

  test('a resumed session starts a new row: the guard counts calls as they come, at a cost that never grows with the transcript', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const same = call('echo', { text: 'again' });
    const first = await scriptedAgent(root, [same, same, say('ok')], { tools: [tool] });
    await runTask(first.agent, 'echo');
    const second = await scriptedAgent(root, [same, same, same, say('ok')], { tools: [tool] });
    const saved = { compaction: null, subAgents: 0, repair: null, protectedAtStart: null, warnings: [] };
    resume(second.agent, { ...saved, messages: first.agent.messages });
    await runTask(second.agent, 'echo once more');
    assert.deepEqual(runs, ['again', 'again', 'again', 'again'], 'two before the resume, two after');
    assert.match(String(toolResults(second.agent.messages).at(-1)?.content), /3 times in a row/);
  });
});

describe('stop reasons', () => {
  test('a refusal halts with kind error instead of being taken as "done"', async (t) => {
    const root = await tempProject(t);
    const { agent, model } = await scriptedAgent(root, [
      { ...say("I can't help with that."), stop_reason: 'refusal' },
      say('never'),
    ]);
    const halt = await runTask(agent, 'do something bad');
    assert.equal(halt.kind, 'error');
    assert.match(halt.kind === 'error' ? halt.message : '', /refus/);
    assert.equal(model.requests.length, 1);
  });

  test('a full context window halts with kind error instead of being taken as "done"', async (t) => {
    const root = await tempProject(t);
    const { agent, model } = await scriptedAgent(root, [
      { ...say('Partial answer'), stop_reason: 'model_context_window_exceeded' },
      say('never'),
    ]);
    const halt = await runTask(agent, 'read everything');
    assert.equal(halt.kind, 'error');
    assert.match(halt.kind === 'error' ? halt.message : '', /context window/);
    assert.equal(model.requests.length, 1);
  });

  test('a paused turn is resumed by calling the model again, with no user message in between', async (t) => {
    const root = await tempProject(t);
    const { agent, model } = await scriptedAgent(root, [
      { ...say('Searching the web…'), stop_reason: 'pause_turn' },
      say('Found it.'),
    ]);
    const halt = await runTask(agent, 'search');
    assert.equal(halt.kind, 'accepted');
    assert.equal(model.requests.length, 2);
    const sent = unmarked(model.requests[1]!.messages);
    assert.deepEqual(sent.at(-1), {
      role: 'assistant',
      content: [{ type: 'text', text: 'Searching the web…', citations: null }],
    });
    assert.equal(sent.length, 2);
  });
});

describe('Ctrl-C (abort)', () => {
  test('an abort while a tool runs keeps its result, answers the rest "not run", and the session can go on', async (t) => {
    const root = await tempProject(t);
    const { tool, runs } = echoTool();
    const started = deferred();
    const slow = defineTool({
      name: 'slow',
      description: 'Signals that it started, then takes a moment. A test tool.',
      input: z.strictObject({}),
      readOnly: false,
      run: async () => {
        started.resolve();
        await sleep(100);
        return 'slow finished';
      },
    });
    const script = [reply(toolUse('slow', {}), toolUse('echo', { text: 'later' })), say('Carried on: done.')];
    const { agent, model } = await scriptedAgent(root, script, { tools: [slow, tool] });
    const controller = new AbortController();
    const running = runTask(agent, 'work', controller.signal);
    await started.promise;
    controller.abort();
    assert.deepEqual(await running, { kind: 'interrupted' });
    assert.deepEqual(runs, []);
    assert.deepEqual(toolResults(agent.messages), [
      { type: 'tool_result', tool_use_id: 'toolu_s1_0', content: 'slow finished' },
      { type: 'tool_result', tool_use_id: 'toolu_s1_1', content: 'not run: the user interrupted', is_error: true },
    ]);
    assert.deepEqual(violationsOf({ messages: agent.messages }), []);

    assert.deepEqual(await runTask(agent, 'keep going'), { kind: 'accepted', verifiedBy: null });
    assert.equal(model.requests.length, 2);
    assert.deepEqual(violationsOf(model.requests[1]!), []);
    assert.equal(textOf(unmarked(model.requests[1]!.messages).at(-1)), 'keep going');
  });

  test('an abort during the model call halts "interrupted" with no half reply in the transcript', async (t) => {
    const root = await tempProject(t);
    const entered = deferred();
    // Like the SDK: text streams in, then the call rejects when the signal aborts.
    const model: Model = {
      name: 'stub',
      complete: (_request, { signal, onText }) => {
        onText('Half a rep');
        entered.resolve();
        return new Promise((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
        );
      },
    };
    const { agent, events } = await scriptedAgent(root, [], { model });
    const controller = new AbortController();
    const running = runTask(agent, 'work', controller.signal);
    await entered.promise;
    controller.abort();
    assert.deepEqual(await running, { kind: 'interrupted' });
    assert.deepEqual(
      agent.messages.map((m) => [m.role, textOf(m)]),
      [['user', 'work']],
    );
    assert.ok(
      events.some((e) => e.type === 'text' && e.delta === 'Half a rep'),
      'the text did stream',
    );
    assert.ok(!events.some((e) => e.type === 'message' && e.message.role === 'assistant'));
  });

  test('a final reply that arrives after Ctrl-C is not accepted as "done" (nor verified)', async (t) => {
    const root = await tempProject(t);
    const controller = new AbortController();
    const script = [() => (controller.abort(), say('All done.'))];
    const { agent } = await scriptedAgent(root, script);
    assert.deepEqual(await runTask(agent, 'work', controller.signal), { kind: 'interrupted' });
  });

  test('a long run does not pile up abort listeners (MaxListenersExceededWarning on stderr after 10 calls)', async (t) => {
    const root = await tempProject(t);
    const { tool } = echoTool();
    const script = [...Array.from({ length: 12 }, (_, i) => call('echo', { text: `call ${i}` })), say('done')];
    const { agent } = await scriptedAgent(root, script, { tools: [tool] });
    const controller = new AbortController();
    assert.equal((await runTask(agent, 'echo a lot', controller.signal)).kind, 'accepted');
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  });
});

describe('Ctrl-C while the user is asked', () => {
  test('an edit approved after Ctrl-C was pressed does not run', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'old\n' });
    const controller = new AbortController();
    const approve: Approver = async () => {
      controller.abort(); // the user pressed Ctrl-C, then answered the prompt anyway
      return { approved: true };
    };
    const script = [
      call('read_file', { path: 'a.txt' }),
      call('edit_file', { path: 'a.txt', old_str: 'old', new_str: 'new' }),
      say('done'),
    ];
    const { agent } = await scriptedAgent(root, script, { approve });
    const halt = await runTask(agent, 'edit', controller.signal);
    assert.equal(halt.kind, 'interrupted');
    assert.equal(await readFile(path.join(root, 'a.txt'), 'utf8'), 'old\n');
    assert.match(String(toolResults(agent.messages).at(-1)?.content), /^not run: the user interrupted/);
  });
});

describe('steering', () => {
  test('a message typed while calls run skips the remaining calls, and follows their results', async (t) => {
    const root = await tempProject(t);
    const runs: number[] = [];
    let agent: Agent | undefined;
    const step = defineTool({
      name: 'step',
      description: 'Does one step of a plan. A test tool.',
      input: z.strictObject({ n: z.number() }),
      readOnly: false,
      run: async ({ n }) => {
        runs.push(n);
        if (n === 1) agent!.steering.push('stop: use tabs, not spaces');
        return `step ${n} done`;
      },
    });
    const script = [
      reply(toolUse('step', { n: 1 }), toolUse('step', { n: 2 }), toolUse('step', { n: 3 })),
      say('Switching to tabs.'),
    ];
    const made = await scriptedAgent(root, script, { tools: [step] });
    agent = made.agent;
    await runTask(agent, 'do the plan');
    assert.deepEqual(runs, [1]);
    const skipped = 'skipped: the user sent a message; read it before going on';
    assert.deepEqual(unmarked(made.model.requests[1]!.messages).at(-1), {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_s1_0', content: 'step 1 done' },
        { type: 'tool_result', tool_use_id: 'toolu_s1_1', content: skipped, is_error: true },
        { type: 'tool_result', tool_use_id: 'toolu_s1_2', content: skipped, is_error: true },
        { type: 'text', text: 'stop: use tabs, not spaces' },
      ],
    });
    assert.deepEqual(violationsOf(made.model.requests[1]!), []);
    assert.deepEqual(agent.steering, []);
  });
});

describe('steering after a refused "done"', () => {
  test("a message typed while the gate ran follows the gate's answer, instead of skipping the next calls", async (t) => {
    const root = await tempProject(t);
    let agent: Agent | undefined;
    const script = [
      () => {
        agent?.steering.push('also add a README');
        return say('done');
      },
      call('list_files', {}),
      say('done now'),
    ];
    const made = await scriptedAgent(root, script, { verify: 'exit 1', budgets: { maxTurns: 3 } });
    agent = made.agent;
    await runTask(agent, 'work');
    const refusal = unmarked(made.model.requests[1]!.messages).at(-1)!;
    assert.match(textOf(refusal), /not done yet[\s\S]*also add a README/);
    assert.doesNotMatch(JSON.stringify(toolResults(agent.messages)), /skipped/);
  });
});
