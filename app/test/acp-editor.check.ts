// npm run test:acp: what an editor expects of --acp beyond the run itself (issue 51): a way to sign in and an answer
// it can act on when the key is refused, files it embeds in a prompt, a model it can pick, every hunk of a change in
// its question (and no "allow" for one too large to show), "reject always", and the turn's end as an update. Each
// test starts the real program and speaks raw JSON-RPC to it; every line it writes is checked against the schema.

import type * as acp from '@agentclientprotocol/sdk';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { reply, text, toolUse } from 'reference-harness/scripted-model';
import { tempProject, within } from '../../test/helpers.ts';
import { fakeMessage, messageCalls, startFakeApi, textBlock, toolUseBlock } from '../../test/model/fake-api.ts';
import { HALT_META } from '../acp.ts';
import { agentTextOf, protocolSchema, rawClient, startAcp, updatesIn } from './acp-wire.ts';
import { runCli } from './helpers.ts';

const AUTH_REQUIRED = -32000;

/** A session opened in `root` by a raw client of `agent`, and a prompt that returns its answer and its updates. */
async function openSession(agent: ReturnType<typeof startAcp>, root: string) {
  const raw = rawClient(agent);
  const init = await raw.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
  const opened = await raw.request('session/new', { cwd: root, mcpServers: [] });
  assert.equal(protocolSchema('NewSessionResponse').safeParse(opened.result).success, true, JSON.stringify(opened));
  const { sessionId } = opened.result as acp.NewSessionResponse;
  const prompt = async (prompt: acp.ContentBlock[]) => {
    const from = agent.messages.length;
    const answer = await within(raw.request('session/prompt', { sessionId, prompt }), 'the prompt', 20_000);
    return { answer, updates: updatesIn(agent.messages, from) };
  };
  return { raw, init: init.result as acp.InitializeResponse, opened: opened.result as acp.NewSessionResponse, prompt };
}

test(
  'initialize says how to sign in; a file the editor embeds reaches the model as its copy; the model the editor ' +
    "picks is the next request's; a 401 answers the prompt auth_required (-32000) with no chat line",
  async (t) => {
    const api = await startFakeApi([
      { kind: 'reply', message: fakeMessage([textBlock('Seen.')]) },
      { kind: 'reply', message: fakeMessage([textBlock('Seen again.')]) },
      { kind: 'status', status: 401, message: 'invalid x-api-key' },
    ]);
    t.after(() => api.close());
    const root = await tempProject(t, { 'add.js': 'exports.add = (a, b) => a - b;\n' });
    const agent = startAcp(t, root, [], { ANTHROPIC_BASE_URL: api.baseURL, ANTHROPIC_API_KEY: 'sk-test' });
    const { raw, init, opened, prompt } = await openSession(agent, root);
    assert.deepEqual(
      init.authMethods?.map((method) => method.id),
      ['anthropic-api-key'],
    );
    assert.match(String(init.authMethods?.[0]?.description), /ANTHROPIC_API_KEY/);
    assert.equal(init.agentCapabilities?.promptCapabilities?.embeddedContext, true);
    assert.deepEqual((await raw.request('authenticate', { methodId: 'anthropic-api-key' })).result, {});

    const unsaved = 'exports.add = (a, b) => a + b; // typed, not saved\n';
    const uri = `file://${path.join(root, 'add.js')}`;
    const first = await prompt([
      { type: 'text', text: 'Look at' },
      { type: 'resource', resource: { uri, text: unsaved, mimeType: 'text/javascript' } },
    ]);
    assert.deepEqual(first.answer.result, { stopReason: 'end_turn' });
    const sent = JSON.stringify((messageCalls(api)[0]!.body as { messages: unknown[] }).messages);
    assert.ok(sent.includes(JSON.stringify(unsaved.trimEnd()).slice(1, -1)), sent);
    assert.match(sent, /Look at @add\.js \(the editor's copy, perhaps unsaved: the file on disk may differ\)/);

    // The model: offered as a config option, picked by the editor, used by the next request.
    const [option] = opened.configOptions ?? [];
    assert.equal(option?.id, 'model');
    assert.equal(option?.type === 'select' && option.currentValue, 'claude-sonnet-5-5');
    const { sessionId } = opened;
    const bad = await raw.request('session/set_config_option', { sessionId, configId: 'model', value: 'gpt-1' });
    assert.equal(bad.error?.code, -32602);
    const picked = await raw.request('session/set_config_option', {
      sessionId,
      configId: 'model',
      value: 'claude-haiku-4-5',
    });
    assert.equal(protocolSchema('SetSessionConfigOptionResponse').safeParse(picked.result).success, true);
    const [now] = (picked.result as acp.SetSessionConfigOptionResponse).configOptions;
    assert.equal(now?.type === 'select' && now.currentValue, 'claude-haiku-4-5');
    await prompt([{ type: 'text', text: 'again' }]);
    assert.deepEqual(
      messageCalls(api).map((call) => (call.body as { model: string }).model),
      ['claude-sonnet-5-5', 'claude-haiku-4-5'],
    );

    const refused = await prompt([{ type: 'text', text: 'once more' }]);
    assert.equal(refused.answer.error?.code, AUTH_REQUIRED, JSON.stringify(refused.answer));
    assert.match(refused.answer.error!.message + JSON.stringify(refused.answer.error!.data), /401/);
    assert.match(JSON.stringify(refused.answer.error), /ANTHROPIC_API_KEY/);
    assert.equal(agentTextOf(refused.updates), '', 'a chat line about the refused key');
    assert.deepEqual(agent.problems, []);
  },
);

test('with no API key, initialize still answers and a prompt is answered auth_required before any model call', async (t) => {
  const root = await tempProject(t, {});
  const agent = startAcp(t, root, [], { ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: '' });
  const { raw, prompt } = await openSession(agent, root);
  assert.equal((await raw.request('authenticate', { methodId: 'anthropic-api-key' })).error?.code, AUTH_REQUIRED);
  const { answer, updates } = await prompt([{ type: 'text', text: 'hi' }]);
  assert.equal(answer.error?.code, AUTH_REQUIRED);
  assert.match(answer.error!.message + JSON.stringify(answer.error!.data), /ANTHROPIC_API_KEY/);
  assert.deepEqual(updates, []);
  assert.deepEqual(agent.problems, []);
});

/** A 1×1 red PNG, as an editor sends a pasted screenshot: base64 bytes and their type. */
const RED_DOT = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

test("an image the editor pastes reaches the model as an image block; the session file replays it, and session/load shows it as the person's", async (t) => {
  const api = await startFakeApi([{ kind: 'reply', message: fakeMessage([textBlock('A red dot.')]) }]);
  t.after(() => api.close());
  const root = await tempProject(t, {});
  const agent = startAcp(t, root, ['--no-sandbox'], { ANTHROPIC_BASE_URL: api.baseURL, ANTHROPIC_API_KEY: 'sk-test' });
  const { init, opened, prompt } = await openSession(agent, root);
  assert.equal(init.agentCapabilities?.promptCapabilities?.image, true);
  const { answer } = await prompt([
    { type: 'text', text: 'What is in' },
    { type: 'image', data: RED_DOT, mimeType: 'image/png' },
    { type: 'text', text: '?' },
  ]);
  assert.deepEqual(answer.result, { stopReason: 'end_turn' });
  const [first] = (messageCalls(api)[0]!.body as { messages: { content: unknown }[] }).messages;
  assert.deepEqual(first?.content, [
    { type: 'text', text: 'What is in' },
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: RED_DOT } },
    { type: 'text', text: '?' },
  ]);
  assert.deepEqual(agent.problems, []);

  const sessions = path.join(root, '.agent', 'sessions');
  const [file = ''] = await readdir(sessions);
  const replayed = await runCli(['--replay', path.join(sessions, file), '--root', root, '--yes', '--no-sandbox']);
  assert.match(replayed.stdout, /identical: 2 messages, 1 task\(s\), 1 model replies/);

  const later = startAcp(t, root, ['--no-sandbox'], { ANTHROPIC_BASE_URL: api.baseURL, ANTHROPIC_API_KEY: 'sk-test' });
  const again = rawClient(later);
  await again.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
  const loaded = await again.request('session/load', { sessionId: opened.sessionId, cwd: root, mcpServers: [] });
  assert.equal(loaded.error, undefined, JSON.stringify(loaded));
  const persons = updatesIn(later.messages).filter((update) => update.sessionUpdate === 'user_message_chunk');
  assert.deepEqual(
    persons.map((update) => update.content),
    [
      { type: 'text', text: 'What is in' },
      { type: 'image', data: RED_DOT, mimeType: 'image/png' },
      { type: 'text', text: '?' },
    ],
  );
  assert.deepEqual(later.problems, []);
});

test("with --thinking the model's thinking streams as agent_thought_chunk, and goes back to the API as received across a tool turn", async (t) => {
  const thought = (thinking: string) => ({ type: 'thinking' as const, thinking, signature: 'the-fake-signs' });
  const api = await startFakeApi([
    {
      kind: 'reply',
      message: fakeMessage(
        [thought('Read it first.'), toolUseBlock('toolu_1', 'read_file', { path: 'a.txt' })],
        'tool_use',
      ),
    },
    { kind: 'reply', message: fakeMessage([thought('It says a.'), textBlock('It says a.')]) },
    { kind: 'reply', message: fakeMessage([textBlock('Still a.')]) },
  ]);
  t.after(() => api.close());
  const root = await tempProject(t, { 'a.txt': 'a\n' });
  const env = { ANTHROPIC_BASE_URL: api.baseURL, ANTHROPIC_API_KEY: 'sk-test' };
  const agent = startAcp(t, root, ['--thinking', '2048', '--no-sandbox'], env);
  const { raw, opened, prompt } = await openSession(agent, root);
  const thinkingOf = (options: acp.SessionConfigOption[] | null | undefined) =>
    options?.find((option) => option.id === 'thinking');
  const offered = thinkingOf(opened.configOptions);
  assert.equal(offered?.type === 'select' && offered.currentValue, '2048');
  const { answer, updates } = await prompt([{ type: 'text', text: 'What does a.txt say?' }]);
  assert.deepEqual(answer.result, { stopReason: 'end_turn' }, 'the fake API accepted the thinking sent back');
  const thoughts = updates
    .filter((update) => update.sessionUpdate === 'agent_thought_chunk')
    .map((update) => (update.content as { text: string }).text);
  assert.equal(thoughts.join(''), 'Read it first.It says a.');
  const [first, second] = messageCalls(api).map((call) => call.body as { thinking: unknown; messages: unknown[] });
  assert.deepEqual(first?.thinking, { type: 'enabled', budget_tokens: 2048 });
  const kept = (second?.messages[1] as { content: { type: string; thinking?: string }[] }).content[0];
  assert.equal(kept?.type === 'thinking' && kept.thinking, 'Read it first.');

  // The editor turns thinking off: the status says so, and the next request asks for none.
  const { sessionId } = opened;
  const bad = await raw.request('session/set_config_option', { sessionId, configId: 'thinking', value: '7' });
  assert.equal(bad.error?.code, -32602);
  const off = await raw.request('session/set_config_option', { sessionId, configId: 'thinking', value: 'off' });
  assert.equal(protocolSchema('SetSessionConfigOptionResponse').safeParse(off.result).success, true);
  const now = thinkingOf((off.result as acp.SetSessionConfigOptionResponse).configOptions);
  assert.equal(now?.type === 'select' && now.currentValue, 'off');
  assert.deepEqual((await prompt([{ type: 'text', text: 'And now?' }])).answer.result, { stopReason: 'end_turn' });
  const third = messageCalls(api)[2]?.body as { thinking?: unknown; max_tokens: number };
  assert.equal(third.thinking, undefined);
  assert.deepEqual(agent.problems, []);
});

const LINES = Array.from({ length: 80 }, (_, i) => `exports.n${i} = ${i};`);
const NUMBERS = `${LINES.join('\n')}\n`;
/** A change on every tenth line of NUMBERS: seven hunks. */
const EVERY_TENTH = NUMBERS.replace(/= (\d)0;/g, '= $10 + 1;');

test(
  'a change in seven places is asked with all seven hunks; one too large to show offers no "allow"; "reject always" ' +
    'refuses the rest of the session unasked, as read-only mode; the turn ends as an update, not a chat line',
  async (t) => {
    const root = await tempProject(t, {
      'numbers.js': NUMBERS,
      'script.json': JSON.stringify([
        reply(toolUse('read_file', { path: 'numbers.js' })),
        reply(toolUse('edit_file', { path: 'numbers.js', old_str: NUMBERS, new_str: EVERY_TENTH })), // allowed
        reply(toolUse('edit_file', { path: 'huge.txt', old_str: '', new_str: 'x'.repeat(30_000) })), // unseen
        reply(toolUse('edit_file', { path: 'numbers.js', old_str: 'n1 = 1;', new_str: 'n1 = 2;' })), // always
        reply(toolUse('edit_file', { path: 'numbers.js', old_str: 'n2 = 2;', new_str: 'n2 = 3;' })), // unasked
        reply(text('Stopping.')),
      ]),
    });
    const agent = startAcp(t, root, ['--script', 'script.json']);
    const { raw, prompt } = await openSession(agent, root);
    const questions: acp.RequestPermissionRequest[] = [];
    const answers = ['allow', 'reject', 'reject-always'];
    raw.onRequest('session/request_permission', (params) => {
      questions.push(params as acp.RequestPermissionRequest);
      return { outcome: { outcome: 'selected', optionId: answers.shift() } };
    });
    const { answer, updates } = await prompt([{ type: 'text', text: 'bump them' }]);
    assert.deepEqual(answer.result, { stopReason: 'end_turn' });
    assert.equal(await readFile(path.join(root, 'numbers.js'), 'utf8'), EVERY_TENTH);
    assert.equal(questions.length, 3, 'the edit after "reject always" was asked');
    assert.equal(existsSync(path.join(root, 'huge.txt')), false, 'the change nobody saw was made');

    const [whole, unseen, rejecting] = questions as [acp.RequestPermissionRequest, ...acp.RequestPermissionRequest[]];
    const diffs = (whole.toolCall.content ?? []).filter((part) => part.type === 'diff');
    assert.equal(diffs.length, 7);
    assert.equal(JSON.stringify(whole.toolCall.content).includes('not shown'), false);
    for (const [i, diff] of diffs.entries())
      assert.match(diff.newText, new RegExp(`n${(i + 1) * 10} = ${i + 1}0 \\+ 1;`));
    const kinds = (question: acp.RequestPermissionRequest) => question.options.map((option) => option.kind);
    assert.deepEqual(kinds(whole), ['allow_once', 'allow_always', 'reject_once', 'reject_always']);
    assert.deepEqual(kinds(unseen!), ['reject_once', 'reject_always']);
    assert.match(JSON.stringify(unseen!.toolCall.content), /too large to show here \(30000 characters in 1 hunk/);
    assert.match(JSON.stringify(unseen!.toolCall.content), /cannot be allowed unseen/);
    assert.deepEqual(kinds(rejecting!), kinds(whole));

    assert.ok(updates.some((u) => u.sessionUpdate === 'current_mode_update' && u.currentModeId === 'read-only'));
    const failed = updates.filter((u) => u.sessionUpdate === 'tool_call_update' && u.status === 'failed');
    assert.match(JSON.stringify(failed.at(-1)!.content), /the session is read-only/);
    assert.doesNotMatch(agentTextOf(updates), /halt:/);
    const ends = updates.filter((u) => u.sessionUpdate === 'session_info_update');
    assert.deepEqual(
      ends.map((u) => (u._meta as Record<string, { kind: string; said: string }>)[HALT_META]),
      [
        {
          kind: 'accepted',
          verifiedBy: null,
          turns: 6,
          said: 'halt: accepted (unverified: no verify command was given) after 6 turn(s)',
        },
      ],
    );
    assert.deepEqual(agent.problems, []);
  },
);

test("the editor's buffers: a file is read from the editor's copy, unsaved changes too, and an edit goes to it through fs/write_text_file", async (t) => {
  const onDisk = 'exports.add = (a, b) => a - b;\n';
  const inBuffer = 'exports.add = (a, b) => a + b; // typed, not saved\n';
  const api = await startFakeApi([
    { kind: 'reply', message: fakeMessage([toolUseBlock('toolu_read', 'read_file', { path: 'add.js' })], 'tool_use') },
    {
      kind: 'reply',
      message: fakeMessage(
        [toolUseBlock('toolu_edit', 'edit_file', { path: 'add.js', old_str: ' // typed, not saved', new_str: '' })],
        'tool_use',
      ),
    },
    { kind: 'reply', message: fakeMessage([textBlock('Done.')]) },
  ]);
  t.after(() => api.close());
  const root = await tempProject(t, { 'add.js': onDisk });
  const agent = startAcp(t, root, ['--yes'], { ANTHROPIC_BASE_URL: api.baseURL, ANTHROPIC_API_KEY: 'sk-test' });
  const raw = rawClient(agent);
  const file = path.join(root, 'add.js');
  const buffers = new Map([[file, inBuffer]]);
  const written: { path: string; content: string }[] = [];
  raw.onRequest('fs/read_text_file', (params) => ({ content: buffers.get((params as { path: string }).path) }));
  raw.onRequest('fs/write_text_file', (params) => {
    const { path: target, content } = params as { path: string; content: string };
    written.push({ path: target, content });
    buffers.set(target, content);
    return {};
  });
  const fs = { readTextFile: true, writeTextFile: true };
  await raw.request('initialize', { protocolVersion: 1, clientCapabilities: { fs } });
  const opened = await raw.request('session/new', { cwd: root, mcpServers: [] });
  const { sessionId } = opened.result as acp.NewSessionResponse;
  const prompt = [{ type: 'text', text: 'Tidy add.js' }];
  const answer = await within(raw.request('session/prompt', { sessionId, prompt }), 'the prompt', 20_000);
  assert.deepEqual(answer.result, { stopReason: 'end_turn' });
  const second = JSON.stringify((messageCalls(api)[1]!.body as { messages: unknown[] }).messages);
  assert.ok(second.includes('typed, not saved'), "the model's request holds the buffer's text");
  assert.deepEqual(written, [{ path: file, content: 'exports.add = (a, b) => a + b;\n' }]);
  assert.equal(await readFile(file, 'utf8'), onDisk, "the disk is the editor's to save");
});
