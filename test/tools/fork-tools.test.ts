// A fork's tools beside the shipped ones (test/tools/fork-tools.ts): the harness runs as it did, spends the same, asks
// before the changing one with its preview, gives the read-only one to sub-agents, and each call reads in words; a
// command-running tool gets the gate's sandbox, time limit and environment from its context.

import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { type ApprovalRequest, runTask } from '../../agent.ts';
import { call, reply, say, ScriptedModel, toolUse } from '../../scripted-model.ts';
import { commandOptions, describeArguments, describeCall } from '../../tools.ts';
import { append_line, FORKED_TOOLS, SHIPPED_TOOLS, word_count } from './fork-tools.ts';
import { scriptedAgent, tempProject } from '../helpers.ts';
import { sandboxProblem } from '../../hardening/index.ts';
import { containedRunner, guardedDisk } from '../../hardening/index.ts';

const FILES = { 'add.js': 'export const add = (a, b) => a - b;\n', 'notes.txt': 'one two three\n' };

/** A task on the shipped tools alone: read add.js, fix it, say done. */
const SHIPPED_SCRIPT = [
  call('read_file', { path: 'add.js' }),
  call('edit_file', { path: 'add.js', old_str: 'a - b', new_str: 'a + b' }),
  say('Fixed.'),
];

describe('two tools added the README way, `[...TOOLS, yours]`', () => {
  test('a run that uses only the shipped tools goes as it did: the same messages, the same default usage', async (t) => {
    const runs = [];
    for (const tools of [SHIPPED_TOOLS, FORKED_TOOLS]) {
      const { agent } = await scriptedAgent(await tempProject(t, FILES), SHIPPED_SCRIPT, { tools });
      assert.equal((await runTask(agent, 'Fix add.')).kind, 'accepted');
      runs.push({ messages: JSON.stringify(agent.messages), usage: agent.usage });
    }
    assert.equal(runs[1]!.messages, runs[0]!.messages);
    assert.deepEqual(runs[1]!.usage, runs[0]!.usage, 'the scripted model does not charge the tool definitions');
  });

  test('the model is shown them, the changing one is approved with its preview, and both run', async (t) => {
    const root = await tempProject(t, FILES);
    const asked: ApprovalRequest[] = [];
    const script = [
      reply(toolUse('word_count', { path: 'notes.txt' }), toolUse('append_line', { path: 'notes.txt', line: 'four' })),
      say('Done.'),
    ];
    const { agent, model } = await scriptedAgent(root, script, {
      tools: FORKED_TOOLS,
      approve: async (request) => {
        asked.push(request);
        return { approved: true };
      },
    });
    assert.equal((await runTask(agent, 'Count, then add a line.')).kind, 'accepted');
    const offered = model.requests[0]!.tools!.map((tool) => ('name' in tool ? tool.name : ''));
    assert.deepEqual(offered, [...FORKED_TOOLS.map((tool) => tool.name), 'task'], "the session's tools, in order");
    assert.deepEqual(offered.slice(-3), ['word_count', 'append_line', 'task']);
    assert.deepEqual(
      asked.map(({ tool, preview }) => [tool, preview]),
      [
        [
          'append_line',
          `${'='.repeat(67)}\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1,1 +1,2 @@\n one two three\n+four\n`,
        ],
      ],
      'only the tool that changes files asks, and shows its preview',
    );
    assert.equal(await readFile(path.join(root, 'notes.txt'), 'utf8'), 'one two three\nfour\n');
    const results = JSON.stringify(agent.messages[2]);
    assert.match(results, /notes\.txt: 3 words/);
  });

  test('a sub-agent gets the read-only tool and not the changing one', async (t) => {
    const parent = [call('task', { description: 'count', prompt: 'How many words in notes.txt?' }), say('Three.')];
    const child = [call('word_count', { path: 'notes.txt' }), say('3 words.')];
    const taskModel = new ScriptedModel(child);
    const { agent } = await scriptedAgent(await tempProject(t, FILES), parent, { tools: FORKED_TOOLS, taskModel });
    assert.equal((await runTask(agent, 'Ask a sub-agent.')).kind, 'accepted');
    const offered = taskModel.requests[0]!.tools!.map((tool) => ('name' in tool ? tool.name : ''));
    const readOnly = FORKED_TOOLS.filter((tool) => tool.readOnly).map((tool) => tool.name);
    assert.deepEqual(offered, readOnly, "the session's read-only tools, in order");
    assert.ok(offered.includes('word_count') && !offered.includes('append_line'));
  });

  test('their calls read in words, and so does a call of a tool the program does not have, never as JSON', () => {
    assert.equal(describeCall('word_count', { path: 'notes.txt' }, FORKED_TOOLS), 'word_count notes.txt');
    assert.equal(describeCall(append_line, { path: 'a b.txt', line: 'four' }), 'append_line "a b.txt" (4 characters)');
    assert.equal(word_count.kind, 'read');
    assert.equal(append_line.kind, 'edit');
    // Input its schema refuses, and a tool it does not know: the arguments, named.
    assert.equal(describeCall(word_count, { path: 3 }), 'word_count path=3');
    assert.equal(
      describeCall('grep', { path: 'src', pattern: 'TODO', files: ['a', 'b'] }),
      'grep src pattern=TODO files=[2 items]',
    );
    assert.equal(
      describeCall('word_count', { path: 'notes.txt' }),
      'word_count notes.txt',
      'not in TOOLS: by arguments',
    );
    assert.equal(describeArguments('bash', { command: 'rm -rf "$HOME"\n' }), 'bash command="rm -rf \\"$HOME\\"\\n"');
    assert.equal(describeArguments('odd', 'not an object'), 'odd');
  });
});

describe("a fork's command tool runs under the gate's sandbox, time limit and environment", () => {
  test('the agent hands its tools its disk and runner, the policy, the verify timeout, the passed names and --protect, and no more', async (t) => {
    const config = { sandbox: false, verifyTimeoutMs: 7_000, passEnv: ['NODE_OPTIONS'], protect: ['test/**'] };
    const { agent } = await scriptedAgent(await tempProject(t), [], config);
    assert.equal(agent.toolContext.runner, containedRunner, 'the default runner is the sandboxed one');
    assert.deepEqual(agent.toolContext.protect, ['test/**']);
    assert.deepEqual(Object.keys(agent.toolContext).sort(), [
      'defaultProtection',
      'disk',
      'passEnv',
      'protect',
      'root',
      'runner',
      'sandbox',
      'sandboxRead',
      'seen',
      'verifyTimeoutMs',
    ]);
    const options = await commandOptions({ ...agent.toolContext, signal: new AbortController().signal });
    assert.deepEqual(
      { ...options, signal: undefined },
      {
        cwd: agent.config.root,
        timeoutMs: 7_000,
        signal: undefined,
        sandbox: false,
        passEnv: ['NODE_OPTIONS'],
        sandboxRead: [],
      },
    );
    const ran = await agent.toolContext.runner('echo ran', options);
    assert.deepEqual([ran.exitCode, ran.output.trim(), ran.contained], [0, 'ran', false]);
  });

  test('a tool run without a run signal, passed names or readable paths can still be stopped, and passes and opens none', async (t) => {
    const root = await tempProject(t);
    const unset = await commandOptions({
      root,
      seen: new Map(),
      disk: guardedDisk,
      runner: containedRunner,
      sandbox: false,
    });
    assert.ok(unset.signal instanceof AbortSignal && !unset.signal.aborted);
    assert.deepEqual([unset.passEnv, unset.sandboxRead], [[], []]);
    const signal = new AbortController().signal;
    const set = await commandOptions({
      root,
      seen: new Map(),
      disk: guardedDisk,
      runner: containedRunner,
      sandbox: false,
      signal,
      sandboxRead: ['/opt/x'],
    });
    assert.deepEqual([set.signal === signal, set.sandboxRead], [true, ['/opt/x']]);
  });

  test('as the gate does: contained wherever this machine can, and not run at all where a sandbox is required and none is here', async (t) => {
    const root = await tempProject(t);
    const problem = await sandboxProblem();
    const context = { root, seen: new Map(), disk: guardedDisk, runner: containedRunner };
    const unset = await containedRunner('echo ran', commandOptions(context));
    assert.equal(unset.contained, problem === null, `sandbox: ${problem ?? 'available'}`);
    const required = containedRunner('echo ran', commandOptions({ ...context, sandbox: true }));
    if (problem === null) assert.equal((await required).contained, true);
    else await assert.rejects(required, (error: unknown) => error instanceof Error && error.message.includes(problem));
  });
});
