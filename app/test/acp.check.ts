// npm run test:acp: the program under an editor. Each test starts the real program with --acp as a child process and
// speaks the Agent Client Protocol to it over stdio, once with the protocol's own library as the client and once in
// raw JSON-RPC; every line the program writes is checked against the protocol's JSON Schema. Starting the program
// takes about a second, so they are kept out of `npm test`; .ci/run runs them too.

import * as acp from '@agentclientprotocol/sdk';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { reply, text, toolUse } from 'reference-harness/scripted-model';
import { agentTextOf, type JsonRpcMessage, protocolSchema, rawClient, startAcp, updatesIn } from './acp-wire.ts';
import { tempProject, within } from '../../test/helpers.ts';
import { RUN_WITHOUT_HALT } from '../session-file.ts';
import { processesNaming } from './helpers.ts';
import { HALT_META } from '../acp.ts';

const CALC = 'exports.add = (a, b) => a - b;\nexports.sub = (a, b) => a + b;\n';
const SUB_CHECK = 'if (sub(5, 3) !== 2) failures.push(`sub(5, 3) should be 2, got ${sub(5, 3)}`);\n';
const TEST = [
  "const { add, sub } = require('./calc.js');",
  'const failures = [];',
  'if (add(2, 3) !== 5) failures.push(`add(2, 3) should be 5, got ${add(2, 3)}`);',
  SUB_CHECK + 'for (const failure of failures) console.log(failure);',
  'process.exit(failures.length === 0 ? 0 : 1);',
  '',
].join('\n');
const VERIFY = ['--verify', 'node test.js'];

const script = (...replies: object[]) => JSON.stringify(replies);

test('the protocol schema the checks use rejects what the protocol does not allow, so the checks can fail', () => {
  const notification = protocolSchema('SessionNotification');
  const update = { sessionUpdate: 'tool_call', toolCallId: 'call_1', title: 'read_file calc.js', kind: 'read' };
  assert.equal(notification.safeParse({ sessionId: 's', update }).success, true);
  assert.equal(notification.safeParse({ sessionId: 's', update: { ...update, kind: 'look' } }).success, false);
  assert.equal(notification.safeParse({ sessionId: 's', update: { ...update, title: undefined } }).success, false);
});

test(
  'an editor drives a run through the protocol library: reads, a sub-agent, an approved edit, a denied one, a gate ' +
    'that refuses "done" then accepts it, a cancelled question and a cancelled model call, then a restart that loads ' +
    "the session; every message is the schema's",
  async (t) => {
    const fixedCalc = '// calc: two operations\nexports.add = (a, b) => a + b;\nexports.sub = (a, b) => a - b;\n';
    const root = await tempProject(t, {
      'calc.js': CALC,
      'test.js': TEST,
      'script.json': script(
        // the first prompt, in the first session
        reply(
          text('Let me look.'),
          toolUse('list_files', {}),
          toolUse('read_file', { path: 'calc.js' }),
          toolUse('read_file', { path: 'test.js' }),
          toolUse('task', { description: 'find the tests', prompt: 'Which file tests calc.js?' }),
        ),
        reply(toolUse('read_file', { path: 'test.js' })), // the sub-agent
        reply(text('test.js tests calc.js.')),
        reply(toolUse('edit_file', { path: 'calc.js', old_str: 'a - b', new_str: 'a + b' })), // allowed
        reply(toolUse('edit_file', { path: 'test.js', old_str: SUB_CHECK, new_str: '' })), // rejected
        reply(text('Done.')), // the gate: sub is still wrong
        reply(
          toolUse('edit_file', {
            path: 'calc.js',
            old_str: 'exports.sub = (a, b) => a + b;',
            new_str: 'exports.sub = (a, b) => a - b;',
          }), // allowed always
          toolUse('edit_file', {
            path: 'calc.js',
            old_str: 'exports.add',
            new_str: '// calc: two operations\nexports.add',
          }),
        ),
        reply(text('Both fixed.')),
        // the second session: a question cancelled, then a model call cancelled
        reply(toolUse('read_file', { path: 'calc.js' })),
        reply(toolUse('edit_file', { path: 'calc.js', old_str: '// calc', new_str: '// mul too\n// calc' })),
        { content: [text('Too late.')], delay_ms: 30_000 },
      ),
    });
    const agent = startAcp(t, root, ['--script', 'script.json', ...VERIFY, '--max-turns', '10']);
    type Answer = (params: acp.RequestPermissionRequest) => Promise<acp.RequestPermissionResponse>;
    const answers: Answer[] = [];
    const questions: acp.RequestPermissionRequest[] = [];
    const received: acp.SessionNotification[] = [];
    const selected =
      (optionId: string): Answer =>
      async () => ({ outcome: { outcome: 'selected', optionId } });
    const client = acp
      .client({ name: 'test editor' })
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
        questions.push(params);
        const answer = answers.shift();
        assert.ok(answer, `an unexpected question: ${params.toolCall.title}`);
        return answer(params);
      })
      .onNotification(acp.methods.client.session.update, ({ params }) => void received.push(params));
    const stream = acp.ndJsonStream(Writable.toWeb(agent.child.stdin), agent.output);
    await client.connectWith(stream, async (editor) => {
      const init = await editor.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
      });
      assert.equal(init.agentCapabilities?.loadSession, true);
      const first = await editor.request(acp.methods.agent.session.new, { cwd: root, mcpServers: [] });
      answers.push(selected('allow'), selected('reject'), selected('allow-always'));
      let from = agent.messages.length;
      const done = await within(
        editor.request(acp.methods.agent.session.prompt, {
          sessionId: first.sessionId,
          prompt: [{ type: 'text', text: 'make the tests pass' }],
        }),
        'the first prompt',
        20_000,
      );
      assert.equal(done.stopReason, 'end_turn');
      assert.equal(await readFile(path.join(root, 'calc.js'), 'utf8'), fixedCalc);
      assert.equal(await readFile(path.join(root, 'test.js'), 'utf8'), TEST, 'the rejected edit changed test.js');
      const updates = updatesIn(agent.messages, from);
      const calls = updates.filter((u) => u.sessionUpdate === 'tool_call' && u.kind !== 'execute');
      // The gate ran the check twice: not done, then pass.
      const checks = updates.filter((u) => u.sessionUpdate === 'tool_call' && u.kind === 'execute');
      const ended = checks.map((check) => updates.filter((u) => u.toolCallId === check.toolCallId).at(-1)!.status);
      assert.deepEqual(
        [checks.map((u) => u.title), ended],
        [
          ['node test.js', 'node test.js'],
          ['failed', 'completed'],
        ],
      );
      assert.deepEqual(
        calls.map((u) => [u.title, u.kind]),
        [
          ['list_files .', 'read'],
          ['read_file calc.js', 'read'],
          ['read_file test.js', 'read'],
          ['task "find the tests"', 'search'],
          ['[task-1] read_file test.js', 'read'],
          ['edit_file calc.js', 'edit'],
          ['edit_file test.js', 'edit'],
          ['edit_file calc.js', 'edit'],
          ['edit_file calc.js', 'edit'],
        ],
      );
      assert.deepEqual(calls[1]!.locations, [{ path: path.join(root, 'calc.js') }]);
      assert.match(String(calls[4]!.toolCallId), /^task-1\//);
      // Three questions: the fourth edit came after "always".
      assert.deepEqual(
        questions.map((q) => [q.toolCall.toolCallId, q.toolCall.kind]),
        [5, 6, 7].map((i) => [calls[i]!.toolCallId, 'edit']),
      );
      assert.deepEqual(questions[0]!.toolCall.content, [
        { type: 'diff', path: path.join(root, 'calc.js'), oldText: CALC, newText: CALC.replace('a - b', 'a + b') },
      ]);
      const finished = (i: number) =>
        updates.find(
          (u) =>
            u.toolCallId === calls[i]!.toolCallId &&
            u.sessionUpdate === 'tool_call_update' &&
            u.status !== 'in_progress',
        );
      assert.equal(finished(5)!.status, 'completed');
      assert.deepEqual((finished(5)!.content as object[])[0], {
        type: 'diff',
        path: path.join(root, 'calc.js'),
        oldText: CALC,
        newText: CALC.replace('a - b', 'a + b'),
      });
      assert.ok(
        updates.some((u) => u.sessionUpdate === 'current_mode_update' && u.currentModeId === 'accept-edits'),
        '"always" did not switch the mode',
      );
      assert.equal(finished(6)!.status, 'failed');
      assert.match(JSON.stringify(finished(6)!.content), /the user declined this edit_file call/);
      assert.ok(
        updates.some(
          (u) =>
            u.sessionUpdate === 'tool_call_update' &&
            u.toolCallId === calls[5]!.toolCallId &&
            u.status === 'in_progress',
        ),
      );
      assert.equal(finished(8)!.status, 'completed');
      const said = agentTextOf(updates);
      assert.match(said, /^Let me look\./);
      assert.match(
        said,
        /gate: `node test\.js`.* exited with code 1: not done[^\n]*\n\n```\nsub\(5, 3\) should be 2, got 8\n```/,
      );
      assert.match(said, /gate: `node test\.js`.* exited with code 0: pass/);
      // The turn's end is an update, not a chat line.
      assert.doesNotMatch(said, /halt:/);
      assert.deepEqual(haltsIn(updates), ['halt: accepted (verified by `node test.js`) after 6 turn(s)']);
      assert.ok(updates.some((u) => u.sessionUpdate === 'usage_update' && u.size === 200_000));

      // A second session: its question is withdrawn by a cancel, and then a model call is.
      const second = await editor.request(acp.methods.agent.session.new, { cwd: root, mcpServers: [] });
      answers.push(async () => {
        await editor.notify(acp.methods.agent.session.cancel, { sessionId: second.sessionId });
        return { outcome: { outcome: 'cancelled' } };
      });
      from = agent.messages.length;
      const cancelled = await within(
        editor.request(acp.methods.agent.session.prompt, {
          sessionId: second.sessionId,
          prompt: [{ type: 'text', text: 'add a note' }],
        }),
        'the cancelled question',
        10_000,
      );
      assert.equal(cancelled.stopReason, 'cancelled');
      const edit = updatesIn(agent.messages, from)
        .filter((u) => u.sessionUpdate === 'tool_call_update')
        .at(-1)!;
      assert.equal(edit.status, 'failed');
      assert.equal(await readFile(path.join(root, 'calc.js'), 'utf8'), fixedCalc, 'the cancelled edit ran');

      const slow = editor.request(acp.methods.agent.session.prompt, {
        sessionId: second.sessionId,
        prompt: [{ type: 'text', text: 'try again' }],
      });
      await sleep(300); // the model is "thinking" for 30 s
      await assert.rejects(
        editor.request(acp.methods.agent.session.prompt, {
          sessionId: second.sessionId,
          prompt: [{ type: 'text', text: 'and this too' }],
        }),
        /a prompt is already running in this session/,
      );
      const asked = Date.now();
      await editor.notify(acp.methods.agent.session.cancel, { sessionId: second.sessionId });
      assert.equal((await within(slow, 'the cancelled model call', 10_000)).stopReason, 'cancelled');
      assert.ok(Date.now() - asked < 5_000, 'the cancel waited for the model');
      assert.deepEqual(haltsIn(updatesIn(agent.messages, from)).at(-1), 'halt: interrupted after 0 turn(s)');
      assert.equal(answers.length, 0, 'a question was never asked');

      const loaded = await within(
        loadAfterRestart(t, root, first.sessionId),
        'the session loaded after a restart',
        20_000,
      );
      assert.deepEqual(loaded.replayed.slice(0, 2), [
        {
          sessionUpdate: 'user_message_chunk',
          messageId: 'replay-0',
          content: { type: 'text', text: 'make the tests pass' },
        },
        {
          sessionUpdate: 'agent_message_chunk',
          messageId: 'replay-1',
          content: { type: 'text', text: 'Let me look.' },
        },
      ]);
      const replayedCalls = loaded.replayed.filter((u) => u.sessionUpdate === 'tool_call');
      assert.deepEqual(
        replayedCalls.map((u) => u.title),
        calls.filter((u) => !String(u.toolCallId).startsWith('task-1/')).map((u) => u.title),
      );
      assert.match(
        agentTextOf(loaded.replayed),
        /The task is not done yet: the check `node test\.js` exited with code 1/,
      );
      assert.equal(loaded.stopReason, 'end_turn');
      assert.match(loaded.said, /Picking up where we left off\./);
    });
    assert.deepEqual(agent.problems, []);
    assert.equal(received.length, updatesIn(agent.messages).length, 'the library refused a notification');
    assert.equal(agent.stderr().includes('Invalid message'), false, agent.stderr());
  },
);

/** The halts the session_info_updates among updates carry, in words. */
const haltsIn = (updates: ReturnType<typeof updatesIn>) =>
  updates
    .filter((u) => u.sessionUpdate === 'session_info_update')
    .map((u) => (u._meta as Record<string, { said: string }>)[HALT_META]!.said);

/** A second run of the program in the same project, as after an editor restart: it loads the session (the editor
 *  is shown the conversation again), then takes a prompt that continues it. */
async function loadAfterRestart(t: Parameters<typeof startAcp>[0], root: string, sessionId: string) {
  const file = path.join(root, '.agent', 'sessions', `${sessionId}.jsonl`);
  const before = (await readFile(file, 'utf8')).split('\n');
  const next = path.join(root, 'next.json');
  await writeFile(next, script(reply(text('Picking up where we left off.'))));
  const agent = startAcp(t, root, ['--script', next, ...VERIFY]);
  const client = acp.client({ name: 'test editor, restarted' });
  const result = await client.connectWith(
    acp.ndJsonStream(Writable.toWeb(agent.child.stdin), agent.output),
    async (editor) => {
      await editor.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION });
      await editor.request(acp.methods.agent.session.load, { sessionId, cwd: root, mcpServers: [] });
      const replayed = updatesIn(agent.messages);
      const from = agent.messages.length;
      const { stopReason } = await editor.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: 'anything left?' }],
      });
      return { replayed, stopReason, said: agentTextOf(updatesIn(agent.messages, from)) };
    },
  );
  assert.deepEqual(agent.problems, []);
  const after = (await readFile(file, 'utf8')).split('\n');
  assert.deepEqual(after.slice(0, before.length - 1), before.slice(0, -1), 'the session file was rewritten');
  assert.equal(after.filter((line) => line.includes('"type":"session"')).length, 1, 'a second header');
  assert.ok(
    after.some((line) => line.includes('"text":"anything left?"')),
    'the new task was not recorded',
  );
  return result;
}

const BIG = Array.from({ length: 3000 }, (_, i) => `exports.n${i} = ${i}; // a long line of padding, to be large`);

test(
  'a client in raw JSON-RPC initialises, opens a session in a project, prompts, approves the edits, and gets ' +
    "end_turn with the files changed and the gate's verdict reported; a one-line edit to a 100 KB file is sent as its " +
    'hunk at its line, in no message over 16 KB',
  async (t) => {
    const root = await tempProject(t, {
      'calc.js': CALC,
      'big.js': `${BIG.join('\n')}\n`,
      'test.js': TEST.replace(SUB_CHECK, ''),
      'script.json': script(
        reply(text('Reading.'), toolUse('read_file', { path: 'calc.js' }), toolUse('read_file', { path: 'big.js' })),
        reply(toolUse('edit_file', { path: 'calc.js', old_str: 'a - b', new_str: 'a + b' })),
        reply(toolUse('edit_file', { path: 'big.js', old_str: 'n1500 = 1500;', new_str: 'n1500 = 15;' })),
        reply(text('Fixed.')),
      ),
    });
    const agent = startAcp(t, root, ['--script', 'script.json', ...VERIFY]);
    const raw = rawClient(agent);
    const init = await raw.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
    assert.equal(protocolSchema('InitializeResponse').safeParse(init.result).success, true, JSON.stringify(init));
    const opened = await raw.request('session/new', { cwd: root, mcpServers: [] });
    assert.equal(protocolSchema('NewSessionResponse').safeParse(opened.result).success, true, JSON.stringify(opened));
    const { sessionId } = opened.result as { sessionId: string };
    raw.onRequest('session/request_permission', () => ({ outcome: { outcome: 'selected', optionId: 'allow' } }));
    const done = await within(
      raw.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'fix add' }] }),
      'the prompt',
      20_000,
    );
    assert.deepEqual(done.result, { stopReason: 'end_turn' });
    assert.equal(await readFile(path.join(root, 'calc.js'), 'utf8'), CALC.replace('a - b', 'a + b'));
    assert.match(agentTextOf(updatesIn(agent.messages)), /gate: `node test\.js`.* exited with code 0: pass/);
    assert.deepEqual(raw.asked, ['session/request_permission', 'session/request_permission']);
    assert.ok((await readFile(path.join(root, 'big.js'), 'utf8')).length > 100_000);
    const lines = agent.messages.map((message) => JSON.stringify(message));
    assert.deepEqual(
      lines.filter((line) => line.length > 16_000).map((line) => line.slice(0, 200)),
      [],
    );
    const big = path.join(root, 'big.js');
    const asked = agent.messages.filter((m) => m.method === 'session/request_permission').at(-1)!;
    const { toolCall } = asked.params as acp.RequestPermissionRequest;
    assert.deepEqual(toolCall.locations, [{ path: big, line: 1501 }]);
    const hunk = `${BIG.slice(1497, 1504).join('\n')}\n`;
    const diff = { type: 'diff', path: big, oldText: hunk, newText: hunk.replace('n1500 = 1500;', 'n1500 = 15;') };
    assert.deepEqual(toolCall.content, [diff]);
    const result = updatesIn(agent.messages).find(
      (u) => u.toolCallId === toolCall.toolCallId && u.status === 'completed',
    )!;
    assert.deepEqual(result.locations, [{ path: big, line: 1501 }]);
    assert.deepEqual((result.content as object[])[0], diff);
    // Mistakes are JSON-RPC errors with the protocol's codes.
    const lost = await raw.request('session/prompt', { sessionId: 'nope', prompt: [{ type: 'text', text: 'hi' }] });
    assert.equal(lost.error?.code, -32002);
    const outside = await raw.request('session/load', { sessionId: '../../etc/x', cwd: root, mcpServers: [] });
    assert.equal(outside.error?.code, -32602);
    assert.match(outside.error!.message, /not a session id/);
    const relative = await raw.request('session/new', { cwd: 'project', mcpServers: [] });
    assert.match(relative.error!.message, /cwd project: not an absolute path/);
    assert.deepEqual(agent.problems, []);
  },
);

test('an editor that closes the connection mid-run leaves the session file ending in the halt, not cut off', async (t) => {
  const root = await tempProject(t, {
    'script.json': script({ content: [text('Too late.')], delay_ms: 30_000 }),
  });
  const agent = startAcp(t, root, ['--script', 'script.json']);
  const raw = rawClient(agent);
  await raw.request('initialize', { protocolVersion: 1 });
  const opened = await raw.request('session/new', { cwd: root, mcpServers: [] });
  const { sessionId } = opened.result as { sessionId: string };
  void raw.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'take your time' }] });
  await sleep(300); // the model is "thinking" for 30 s
  agent.child.stdin.end();
  assert.equal(await within(agent.exited, 'the exit after stdin closed', 5_000), 0);
  const file = path.join(root, '.agent', 'sessions', `${sessionId}.jsonl`);
  const entries = (await readFile(file, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; halt?: { kind: string } });
  assert.deepEqual(
    entries.slice(-2).map((entry) => entry.type),
    ['interrupt', 'halt'],
  );
  assert.equal(entries.at(-1)!.halt!.kind, 'interrupted');
});

test('an edit written to the disk (an editor that does not take writes) is said in the session file before it is made, by its call', async (t) => {
  const root = await tempProject(t, {
    'a.txt': 'old\n',
    'script.json': script(
      reply(toolUse('read_file', { path: 'a.txt' })),
      reply(toolUse('edit_file', { path: 'a.txt', old_str: 'old', new_str: 'new' })),
      reply(text('Done.')),
    ),
  });
  const agent = startAcp(t, root, ['--script', 'script.json', '--yes']);
  const raw = rawClient(agent);
  await raw.request('initialize', { protocolVersion: 1 });
  const opened = await raw.request('session/new', { cwd: root, mcpServers: [] });
  const { sessionId } = opened.result as { sessionId: string };
  await raw.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'edit a.txt' }] });
  assert.equal(await readFile(path.join(root, 'a.txt'), 'utf8'), 'new\n');
  const entries = (await readFile(path.join(root, '.agent', 'sessions', `${sessionId}.jsonl`), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; callId?: string; path?: string; message?: unknown });
  const intent = entries.findIndex((entry) => entry.type === 'intent');
  assert.deepEqual([entries[intent]?.callId, entries[intent]?.path], ['toolu_s2_0', 'a.txt']);
  assert.match(JSON.stringify(entries[intent + 1]?.message), /"tool_use_id":"toolu_s2_0".*edited a\.txt/);
});

test('a reply the model ends as a refusal ends the prompt turn as refusal, not end_turn', async (t) => {
  const root = await tempProject(t, {
    'script.json': script({ content: [text('I cannot help with that.')], stop_reason: 'refusal' }),
  });
  const agent = startAcp(t, root, ['--script', 'script.json']);
  const raw = rawClient(agent);
  await raw.request('initialize', { protocolVersion: 1 });
  const opened = await raw.request('session/new', { cwd: root, mcpServers: [] });
  const { sessionId } = opened.result as { sessionId: string };
  const done = await raw.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'do it' }] });
  assert.deepEqual(done.result, { stopReason: 'refusal' });
  assert.doesNotMatch(agentTextOf(updatesIn(agent.messages)), /halt:/);
  assert.match(haltsIn(updatesIn(agent.messages)).join(''), /^halt: error: the model refused/);
  assert.deepEqual(agent.problems, []);
});

test(
  'a session offers the commands compact and context, and answers them; its modes map onto approval (read-only ' +
    'refuses a change unasked, accept-edits allows one unasked); session/list lists it with its first task',
  async (t) => {
    const root = await tempProject(t, {
      'calc.js': CALC,
      'script.json': script(
        reply(toolUse('read_file', { path: 'calc.js' })),
        reply(toolUse('edit_file', { path: 'calc.js', old_str: 'a - b', new_str: 'a + b' })), // read-only: refused
        reply(text('Refused, then.')),
        reply(toolUse('edit_file', { path: 'calc.js', old_str: 'a - b', new_str: 'a + b' })), // accept-edits
        reply(text('Fixed.')),
      ),
    });
    const agent = startAcp(t, root, ['--script', 'script.json']);
    const raw = rawClient(agent);
    const init = await raw.request('initialize', { protocolVersion: 1 });
    assert.deepEqual((init.result as acp.InitializeResponse).agentCapabilities?.sessionCapabilities, { list: {} });
    const opened = await raw.request('session/new', { cwd: root, mcpServers: [] });
    assert.equal(protocolSchema('NewSessionResponse').safeParse(opened.result).success, true);
    const { sessionId, modes } = opened.result as acp.NewSessionResponse;
    assert.equal(modes?.currentModeId, 'ask');
    assert.deepEqual(
      modes?.availableModes.map((mode) => mode.id),
      ['ask', 'accept-edits', 'read-only'],
    );
    const prompt = async (said: string) => {
      const from = agent.messages.length;
      const done = await within(
        raw.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: said }] }),
        said,
        20_000,
      );
      return { stopReason: (done.result as acp.PromptResponse).stopReason, updates: updatesIn(agent.messages, from) };
    };
    const context = await prompt('/context');
    const offered = updatesIn(agent.messages).find((u) => u.sessionUpdate === 'available_commands_update');
    assert.deepEqual(
      (offered?.availableCommands as acp.AvailableCommand[]).map((command) => command.name),
      ['compact', 'context'],
    );
    assert.equal(context.stopReason, 'end_turn');
    assert.match(agentTextOf(context.updates), /context window 200000 tokens \(estimated\): system \d+/);
    const compact = await prompt('/compact');
    assert.match(agentTextOf(compact.updates), /\/compact: nothing old enough to summarise yet/);

    assert.equal((await raw.request('session/set_mode', { sessionId, modeId: 'nope' })).error?.code, -32602);
    assert.deepEqual((await raw.request('session/set_mode', { sessionId, modeId: 'read-only' })).result, {});
    const refused = await prompt('fix add');
    assert.match(JSON.stringify(refused.updates), /the session is read-only/);
    assert.equal(await readFile(path.join(root, 'calc.js'), 'utf8'), CALC);
    await raw.request('session/set_mode', { sessionId, modeId: 'accept-edits' });
    await prompt('fix add, now');
    assert.equal(await readFile(path.join(root, 'calc.js'), 'utf8'), CALC.replace('a - b', 'a + b'));
    assert.deepEqual(raw.asked, [], 'a mode asked the editor');

    for (const params of [{ cwd: root }, {}]) {
      const listed = await raw.request('session/list', params);
      assert.equal(protocolSchema('ListSessionsResponse').safeParse(listed.result).success, true);
      const { sessions } = listed.result as acp.ListSessionsResponse;
      assert.deepEqual(
        sessions.map(({ sessionId, cwd, title }) => ({ sessionId, cwd, title })),
        [{ sessionId, cwd: root, title: 'fix add' }],
      );
    }
    assert.deepEqual(agent.problems, []);
  },
);

// The check prints a line, waits, prints another and passes; with a file named `slow`, it prints forever. Its
// writes do not survive it (the sandbox's overlay), so whether it still runs is read off the process table.
const CHECK = [
  "const { existsSync } = require('node:fs');",
  "console.log('checking 1');",
  "if (existsSync('slow')) setInterval(() => console.log('tick'), 50);",
  "else setTimeout(() => console.log('checking 2'), 600);",
  '',
].join('\n');

test(
  'the check is a tool call of kind execute titled with its command, its output streamed while it runs, ending ' +
    'with the verdict; a cancel during it stops it, its process with it',
  async (t) => {
    const root = await tempProject(t, {
      'check.js': CHECK,
      'script.json': script(reply(text('Done.')), reply(text('Done again.'))),
    });
    const verify = `node check.js ${path.basename(root)}`;
    const agent = startAcp(t, root, ['--script', 'script.json', '--verify', verify]);
    const raw = rawClient(agent);
    await raw.request('initialize', { protocolVersion: 1 });
    const opened = await raw.request('session/new', { cwd: root, mcpServers: [] });
    const { sessionId } = opened.result as { sessionId: string };
    const done = await within(
      raw.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'check it' }] }),
      'the prompt',
      20_000,
    );
    assert.deepEqual(done.result, { stopReason: 'end_turn' });
    const check = (from: number) => {
      const updates = updatesIn(agent.messages, from);
      const opening = updates.find((u) => u.kind === 'execute');
      return { opening, later: updates.filter((u) => opening && u.toolCallId === opening.toolCallId).slice(1) };
    };
    const first = check(0);
    assert.deepEqual(
      [first.opening?.sessionUpdate, first.opening?.title, first.opening?.status],
      ['tool_call', verify, 'in_progress'],
    );
    const texts = first.later.map((u) => JSON.stringify(u.content));
    assert.ok(
      texts.some((said) => said.includes('checking 1') && !said.includes('checking 2')),
      `no update while it ran: ${texts.join(' | ')}`,
    );
    assert.equal(first.later.at(-1)!.status, 'completed');
    assert.match(texts.at(-1)!, /checking 1\\nchecking 2\\n\\nexited with code 0: pass/);

    await writeFile(path.join(root, 'slow'), '');
    const from = agent.messages.length;
    const slow = raw.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'again' }] });
    await within(
      (async () => {
        while (!check(from).later.some((u) => JSON.stringify(u.content).includes('tick'))) await sleep(50);
      })(),
      'the ticks shown',
      20_000,
    );
    assert.equal(checkRunning(root), true, 'the check runs: the assertion after the cancel can fail');
    await raw.notify('session/cancel', { sessionId });
    assert.deepEqual((await within(slow, 'the cancelled check', 5_000)).result, { stopReason: 'cancelled' });
    const last = check(from).later.at(-1)!;
    assert.equal(last.status, 'failed');
    assert.match(JSON.stringify(last.content), /stopped: interrupted/);
    await sleep(400);
    assert.equal(checkRunning(root), false, 'the check still runs after the cancel');
    assert.deepEqual(agent.problems, []);
  },
);

/** Whether a check started for `root` (its command names the root's folder) is still a process on this machine. */
function checkRunning(root: string): boolean {
  const processes = execFileSync('ps', ['-Ao', 'args='], { encoding: 'utf8' }).split('\n');
  return processes.some((args) => args.startsWith('node check.js') && args.includes(path.basename(root)));
}

/** A session whose prompt's check runs until stopped: returned once its process runs. */
async function withTheCheckTicking(t: Parameters<typeof startAcp>[0], env: NodeJS.ProcessEnv = {}) {
  const root = await tempProject(t, { 'check.js': CHECK, slow: '', 'script.json': script(reply(text('Done.'))) });
  const verify = `node check.js ${path.basename(root)}`;
  const agent = startAcp(t, root, ['--script', 'script.json', '--verify', verify], env);
  const raw = rawClient(agent);
  await raw.request('initialize', { protocolVersion: 1 });
  const opened = await raw.request('session/new', { cwd: root, mcpServers: [] });
  const { sessionId } = opened.result as { sessionId: string };
  void raw.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'check it' }] });
  await within(
    (async () => {
      while (!checkRunning(root)) await sleep(50);
    })(),
    'the check running',
    20_000,
  );
  assert.equal(checkRunning(root), true, 'the check runs: the assertions below can fail');
  return { root, agent, sessionId };
}

for (const [signal, code] of [
  ['SIGTERM', 143],
  ['SIGHUP', 129],
] as const) {
  test(`${signal} during the check leaves the halt in the session file, no process and no temporary folder`, async (t) => {
    const tmp = await mkdtemp(path.join(tmpdir(), 'acp-tmp-'));
    t.after(() => rm(tmp, { recursive: true, force: true }));
    const { root, agent, sessionId } = await withTheCheckTicking(t, { TMPDIR: tmp });
    const made = async () => (await readdir(tmp)).filter((name) => !name.startsWith('tsx-')); // tsx's own cache
    // On macOS the check's private folder is made here; on Linux its /tmp is a tmpfs inside the sandbox, and nothing
    // of it may reach this folder at all (the last assertion below).
    if (process.platform === 'darwin')
      assert.notDeepEqual(await made(), [], 'the check made no temporary folder: this test cannot fail');
    agent.child.kill(signal);
    assert.equal(await within(agent.exited, `the exit after ${signal}`, 10_000), code);
    const entries = (await readFile(path.join(root, '.agent', 'sessions', `${sessionId}.jsonl`), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; signal?: string; halt?: { kind: string } });
    assert.deepEqual(
      entries.slice(-2).map((entry) => [entry.type, entry.signal ?? entry.halt?.kind]),
      [
        ['interrupt', signal],
        ['halt', 'interrupted'],
      ],
    );
    assert.deepEqual(await made(), [], 'a temporary folder was left behind');
    await sleep(300);
    assert.equal(checkRunning(root), false, 'the check still runs');
  });
}

test('SIGKILL during the check (an editor killing the tree) leaves no check running, and loading the session after a restart says its last run ended without a halt', async (t) => {
  const { root, agent, sessionId } = await withTheCheckTicking(t);
  agent.child.kill('SIGKILL');
  await within(agent.exited, 'the exit after SIGKILL', 10_000);
  await sleep(600); // bubblewrap's --die-with-parent takes the check with it
  assert.equal(checkRunning(root), false, 'the check outlived the program');
  const restarted = startAcp(t, root, ['--script', 'script.json']);
  const again = rawClient(restarted);
  await again.request('initialize', { protocolVersion: 1 });
  const loaded = await again.request('session/load', { sessionId, cwd: root, mcpServers: [] });
  assert.equal(loaded.error, undefined, JSON.stringify(loaded));
  assert.ok(restarted.stderr().replace(/\s+/g, ' ').includes(RUN_WITHOUT_HALT), restarted.stderr());
  assert.deepEqual(restarted.problems, []);
});

for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
  test(`\`npx harness --acp\` stopped at npm by ${signal} leaves no process of the program`, async (t) => {
    const root = await tempProject(t, { 'script.json': script() });
    const marker = path.join(root, 'script.json'); // in the command line of every process of this run
    const checkout = path.join(import.meta.dirname, '..', '..');
    const npx = spawn('npx', ['harness', '--acp', '--script', marker], { cwd: checkout, stdio: 'pipe' });
    t.after(() => npx.kill('SIGKILL'));
    const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } });
    npx.stdin.write(`${init}\n`);
    const answered = new Promise((resolve) => npx.stdout.once('data', resolve));
    await within(answered, 'the answer to initialize through npx', 20_000);
    const running = () => processesNaming(marker);
    assert.ok(running().length >= 2, `npm and the program run: ${running().join(', ')}`);
    npx.kill(signal); // stdin stays open, as an editor that kills only the process it started
    await within(
      (async () => {
        while (running().length > 0) await sleep(50);
      })(),
      `every process gone after ${signal}`,
      5_000,
    );
  });
}

test('a line over the size limit is said on stderr and ends the program with a non-zero exit', async (t) => {
  const root = await tempProject(t, { 'script.json': script() });
  const agent = startAcp(t, root, ['--script', 'script.json']);
  const raw = rawClient(agent);
  await raw.request('initialize', { protocolVersion: 1 });
  const chunk = 'x'.repeat(1024 * 1024);
  for (let i = 0; i < 33; i++) agent.child.stdin.write(chunk);
  assert.equal(await within(agent.exited, 'the exit after the long line', 10_000), 1);
  assert.match(agent.stderr(), /a line over 33554432 bytes/);
});

test('the bin answers initialize when started by its absolute path from another folder, with no tsx on the PATH', async (t) => {
  const elsewhere = await tempProject(t, { 'script.json': script() });
  const nodeOnly = path.dirname(process.execPath);
  assert.equal(existsSync(path.join(nodeOnly, 'tsx')), false, 'tsx is beside node: this test cannot fail');
  const bin = path.join(import.meta.dirname, '..', 'bin.mjs');
  const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } });
  const run = spawnSync(bin, ['--acp', '--script', 'script.json'], {
    cwd: elsewhere,
    env: { PATH: nodeOnly, HOME: elsewhere },
    input: `${init}\n`,
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(run.status, 0, run.stderr);
  const answer = JSON.parse(run.stdout.split('\n')[0]!) as JsonRpcMessage;
  assert.equal(protocolSchema('InitializeResponse').safeParse(answer.result).success, true, run.stdout);
});

test('a console.log in --acp mode goes to stderr, so stdout stays the protocol', () => {
  const run = spawnSync(
    process.execPath,
    [
      '--import',
      import.meta.resolve('tsx'),
      '--input-type=module',
      '-e',
      "const { consoleToStderr } = await import('./acp.ts'); consoleToStderr(); console.log('a stray line');",
    ],
    { cwd: path.join(import.meta.dirname, '..'), encoding: 'utf8' },
  );
  assert.equal(run.stdout, '');
  assert.match(run.stderr, /a stray line/);
});
