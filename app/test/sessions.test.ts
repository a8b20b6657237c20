// The session file, offline: it survives crashes and resumes into a valid transcript, keeps no API key, and keeps
// everything before a stream cut mid-reply. Each test is named after the failure it prevents. The harness's half
// (parallel reads, byte-stable requests, API faults) is test/loop/sessions.test.ts.

import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { AnthropicModel, resume, runTask } from 'reference-harness';
import { main } from '../main.ts';
import { loadSession, SESSION_VERSION, type SessionEntry, sessionRecorder } from '../session-file.ts';
import { call, say } from 'reference-harness/scripted-model';
import { edit_file } from 'reference-harness/tools';
import { requestViolations } from '../../lessons/api-rules.ts';
import { fakeApiClient, fakeMessage, messageCalls, textBlock, toolUseBlock } from '../../test/model/fake-api.ts';
import { scriptedAgent, tempProject, unmarked, violationsOf } from '../../test/helpers.ts';

const API_KEY = 'sk-ant-test-SECRET-1234567890';

const header = (root: string): Extract<SessionEntry, { type: 'session' }> => ({
  type: 'session',
  version: SESSION_VERSION,
  model: 'scripted',
  root,
  startedAt: new Date().toISOString(),
});

/** Where the CLI keeps sessions by default; list_files skips .agent, so the tools never see it. */
const sessionIn = (root: string) => path.join(root, '.agent', 'sessions', 'session.jsonl');

// =============================================================================================
// 1. The session file

describe('the session file', () => {
  test('a saved session resumes into the same transcript, and the continued run sends a request the API accepts', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const file = sessionIn(root);
    const first = await scriptedAgent(root, [call('read_file', { path: 'a.txt' }), say('a.txt says alpha.')], {
      onEvent: sessionRecorder(file, header(root), [API_KEY]),
    });
    assert.equal((await runTask(first.agent, 'what does a.txt say?')).kind, 'accepted');

    const loaded = await loadSession(file);
    assert.deepEqual(loaded.warnings, []);
    assert.equal(loaded.repair, null);
    const second = await scriptedAgent(root, [say('Still alpha.')], {
      onEvent: sessionRecorder(file, null, [API_KEY]),
    });
    resume(second.agent, loaded);
    assert.deepEqual(second.agent.messages, first.agent.messages);

    assert.equal((await runTask(second.agent, 'keep going')).kind, 'accepted');
    const sent = second.model.requests[0]!;
    assert.deepEqual(violationsOf(sent), []);
    assert.deepEqual(
      unmarked(sent.messages).slice(0, first.agent.messages.length),
      first.agent.messages,
      'the model was sent the old transcript',
    );
    assert.deepEqual(
      (await loadSession(file)).messages,
      second.agent.messages,
      'the continued run was appended to the same file',
    );
  });

  test('a resumed session (also by /resume) asks for a fresh read before an edit: the file may have changed meanwhile', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const file = sessionIn(root);
    const first = await scriptedAgent(root, [call('read_file', { path: 'a.txt' }), say('read')], {
      onEvent: sessionRecorder(file, header(root), []),
    });
    await runTask(first.agent, 'read a.txt');
    resume(first.agent, await loadSession(file));
    await assert.rejects(
      edit_file.run({ path: 'a.txt', old_str: 'alpha', new_str: 'beta' }, first.agent.toolContext),
      /read a\.txt with read_file before editing it/,
    );
  });

  test('a last line torn by a crash mid-write is dropped with a warning instead of making the session unloadable', async (t) => {
    const root = await tempProject(t);
    const file = sessionIn(root);
    const { agent } = await scriptedAgent(root, [say('Hello.')], { onEvent: sessionRecorder(file, header(root), []) });
    await runTask(agent, 'hi');
    const line = JSON.stringify({
      type: 'message',
      message: { role: 'user', content: 'this line was being written when the power went' },
    });
    appendFileSync(file, line.slice(0, line.length / 2));

    const loaded = await loadSession(file);
    assert.deepEqual(loaded.messages, agent.messages);
    assert.equal(loaded.warnings.length, 1);
    assert.match(loaded.warnings[0]!, /cut off/);
  });

  test('a torn last line does not swallow the first entry written after a resume', async (t) => {
    const root = await tempProject(t);
    const file = sessionIn(root);
    const first = await scriptedAgent(root, [say('Hello.')], { onEvent: sessionRecorder(file, header(root), []) });
    await runTask(first.agent, 'hi');
    appendFileSync(file, '{"type":"message","message":{"role":"us');

    const second = await scriptedAgent(root, [say('Going on.')], { onEvent: sessionRecorder(file, null, []) });
    resume(second.agent, await loadSession(file));
    await runTask(second.agent, 'keep going');
    const reloaded = await loadSession(file);
    assert.deepEqual(reloaded.messages, second.agent.messages);
  });

  test('a call left without a result by a crash is answered "not run" at load, appended to the file, and the transcript stays valid', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const file = sessionIn(root);
    const dying: Anthropic.MessageParam = {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Reading both.' },
        { type: 'tool_use', id: 'toolu_dead_1', name: 'read_file', input: { path: 'a.txt' } },
        { type: 'tool_use', id: 'toolu_dead_2', name: 'list_files', input: {} },
      ],
    };
    const entries: SessionEntry[] = [
      header(root),
      { type: 'message', message: { role: 'user', content: 'read a.txt' } },
      { type: 'message', message: dying },
    ];
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, entries.map((e) => `${JSON.stringify(e)}\n`).join(''));
    const before = await readFile(file);

    const loaded = await loadSession(file);
    const notRun = 'not run: the session ended before this call finished';
    assert.deepEqual(loaded.repair, {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_dead_1', content: notRun, is_error: true },
        { type: 'tool_result', tool_use_id: 'toolu_dead_2', content: notRun, is_error: true },
      ],
    });
    assert.match(loaded.warnings.join('\n'), /2 call\(s\) had no result/);

    const { agent, model } = await scriptedAgent(root, [say('I will read it again.')], {
      onEvent: sessionRecorder(file, null, []),
    });
    resume(agent, loaded);
    const after = await readFile(file);
    assert.ok(
      after.subarray(0, before.length).equals(before),
      'append-only: the bytes already in the file are unchanged',
    );
    const appended = after.subarray(before.length).toString('utf8');
    assert.equal(appended.indexOf('\n'), appended.length - 1, 'one line');
    const { at, ...entry } = JSON.parse(appended) as { at: string };
    assert.deepEqual(entry, { type: 'message', message: loaded.repair });
    assert.ok(Date.parse(at) > 0, 'with the time it was written');
    assert.equal(agent.toolContext.seen.size, 0, 'the dead call was answered, not run');

    await runTask(agent, 'keep going');
    assert.deepEqual(violationsOf(model.requests[0]!), []);
  });

  test('the API key never reaches the session file, even when a tool result or a reply contains it', async (t) => {
    const root = await tempProject(t, { '.env': `ANTHROPIC_API_KEY=${API_KEY}\n` });
    const file = sessionIn(root);
    const script = [call('read_file', { path: '.env' }), say(`The key is ${API_KEY}.`)];
    const { agent, model } = await scriptedAgent(root, script, {
      onEvent: sessionRecorder(file, header(root), [API_KEY]),
    });
    await runTask(agent, `is ${API_KEY} in .env?`);
    assert.ok(JSON.stringify(model.requests[1]).includes(API_KEY), 'the tool result really held the key');

    const written = await readFile(file, 'utf8');
    assert.equal(written.includes(API_KEY), false);
    assert.equal(
      written.split('[redacted]').length - 1,
      4,
      'task, tool result, reply (as message and as reply) redacted',
    );
    assert.equal(
      (await loadSession(file)).messages.length,
      agent.messages.length,
      'redaction keeps every line valid JSON',
    );
  });

  test('the header written by the CLI names the format version, model, root and start time, so a resume knows what it continues', async (t) => {
    const root = await tempProject(t);
    const script = path.join(root, 'script.json');
    await writeFile(script, JSON.stringify([say('Hello.')]));
    const file = sessionIn(root);
    t.mock.timers.enable({ apis: ['Date'], now: Date.parse('2030-01-02T03:04:05.678Z') });
    const printed = t.mock.method(process.stdout, 'write', () => true);
    const code = await main(
      ['--script', script, '--root', root, '--session', file, '--yes', '--model', 'claude-header-test', 'hi'],
      {},
    ).finally(() => printed.mock.restore());
    assert.equal(code, 0);

    const first = JSON.parse((await readFile(file, 'utf8')).split('\n')[0]!);
    assert.deepEqual(Object.keys(first).sort(), [
      'contextWindow',
      'model',
      'options',
      'protected',
      'root',
      'startedAt',
      'type',
      'version',
    ]);
    assert.equal(first.type, 'session');
    assert.equal(first.version, SESSION_VERSION);
    assert.equal(first.model, 'claude-header-test');
    assert.equal(first.root, root);
    assert.equal(first.startedAt, '2030-01-02T03:04:05.678Z', "the start time is the clock's, as ISO 8601");
  });

  test('a session written in another format version is refused instead of misread', async (t) => {
    const root = await tempProject(t);
    const file = path.join(root, 'old.jsonl');
    await writeFile(file, `${JSON.stringify({ ...header(root), version: SESSION_VERSION + 1 })}\n`);
    await assert.rejects(loadSession(file), {
      message: `${file}: session format ${SESSION_VERSION + 1}, this harness reads 1 and ${SESSION_VERSION}`,
    });
  });
});

// =============================================================================================
// 2. A stream cut mid-reply, through the real SDK against the local fake API

describe('API faults through the real SDK', () => {
  test('a stream cut mid-reply halts with an error, the session file keeps everything before it, and a resume carries on', async (t) => {
    const root = await tempProject(t, { 'note.txt': 'hello\n' });
    const file = sessionIn(root);
    const cut = fakeMessage(
      [
        textBlock('Now I will write the answer into a file called'),
        toolUseBlock('toolu_2', 'edit_file', { path: 'x.txt', old_str: '', new_str: 'x' }),
      ],
      'tool_use',
    );
    const first = await fakeApiClient(
      t,
      [
        {
          kind: 'reply',
          message: fakeMessage(
            [textBlock('Reading.'), toolUseBlock('toolu_1', 'read_file', { path: 'note.txt' })],
            'tool_use',
          ),
        },
        { kind: 'cut', message: cut, afterEvents: 4 },
      ],
      { apiKey: API_KEY },
    );
    const { agent } = await scriptedAgent(root, [], {
      model: new AnthropicModel('claude-test', first.client),
      onEvent: sessionRecorder(file, header(root), [API_KEY]),
    });
    const halt = await runTask(agent, 'what does note.txt say?');
    assert.equal(halt.kind, 'error');
    assert.equal(agent.messages.length, 3, 'task, the first reply, its result; nothing of the cut reply');

    const loaded = await loadSession(file);
    assert.deepEqual(loaded.messages, agent.messages);
    assert.equal(loaded.repair, null);
    assert.match(readFileSync(file, 'utf8').trimEnd().split('\n').at(-1)!, /"type":"halt".*"kind":"error"/);

    const second = await fakeApiClient(t, [{ kind: 'reply', message: fakeMessage([textBlock('It says hello.')]) }], {
      apiKey: API_KEY,
    });
    const resumed = await scriptedAgent(root, [], {
      model: new AnthropicModel('claude-test', second.client),
      onEvent: sessionRecorder(file, null, [API_KEY]),
    });
    resume(resumed.agent, loaded);
    assert.deepEqual(await runTask(resumed.agent, 'keep going'), { kind: 'accepted', verifiedBy: null });
    const [sent] = messageCalls(second.api);
    assert.ok(sent, 'the resumed run reached the API');
    assert.deepEqual(requestViolations(sent.body), []);
    assert.deepEqual((await loadSession(file)).messages, resumed.agent.messages);
    assert.equal(readFileSync(file, 'utf8').includes(API_KEY), false);
  });
});

// =============================================================================================
// 5. SIGKILL mid-call, then --resume: one real child process
