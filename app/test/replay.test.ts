// Record, replay: a session file holds what a replay needs (the options, every reply as received, what the person
// did), and --replay runs it again offline, stopping at the first message that differs. The recorded sessions in
// app/test/recordings are regression tests of this harness: each must replay identically on a fresh copy of its
// project.

import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { cp, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { AnthropicModel, type Approver, type Model, createAgent, runTask, steer } from 'reference-harness';
import type { SessionEvent } from '../terminal.ts';
import { PROGRAM_TOOLS } from '../program-tools.ts';
import { firstDifference, recordedTools } from '../replay.ts';
import { recordAnswers, type RecordedOptions, SESSION_VERSION, sessionRecorder } from '../session-file.ts';
import { EXIT } from '../terminal.ts';
import { call, reply, say, ScriptedModel, toolUse, usageOf } from 'reference-harness/scripted-model';
import { TOOLS } from 'reference-harness/tools';
import { FORKED_TOOLS, SHIPPED_TOOLS } from '../../test/tools/fork-tools.ts';
import { fakeMessage, startFakeApi } from '../../test/model/fake-api.ts';
import { tempProject } from '../../test/helpers.ts';
import { runCli } from './helpers.ts';
import { sandboxProblem } from 'reference-harness/hardening';

const RECORDINGS = path.join(import.meta.dirname, 'recordings');

/** A fresh copy of the project the recordings were made in. */
async function project(t: TestContext): Promise<string> {
  const root = await tempProject(t);
  await cp(path.join(RECORDINGS, 'projects', 'add'), root, { recursive: true });
  return root;
}

/** The options a session file's header records, as the CLI would for these choices. */
function recordedOptions(chosen: Partial<RecordedOptions>): RecordedOptions {
  const tools = TOOLS.map((tool) => tool.name);
  const defaults = { verify: undefined, verifyTimeoutMs: 30_000, protect: [], budgets: { maxTurns: 25 } };
  return {
    ...defaults,
    approval: 'yes',
    tools,
    contextWindow: undefined,
    contextFiles: false,
    taskModel: undefined,
    ...chosen,
  };
}

/** A replay runs its recorded check only in the OS sandbox. Where this machine has none, these replays say
 *  --no-sandbox, as a person there would (the checks are this folder's own fixtures); the sandboxed replay is
 *  routes-replay-resume.test.ts's. */
const OUTSIDE_IF_NO_SANDBOX = (await sandboxProblem()) === null ? [] : ['--no-sandbox'];

/** A replay applies the recorded changes only with --yes on its own command line (the recording cannot allow them). */
const replay = (file: string, root: string, ...args: string[]) =>
  runCli(['--replay', file, '--root', root, '--yes', ...OUTSIDE_IF_NO_SANDBOX, ...args]);

/** Runs `task` in `root` with these models, recording the session as the CLI would (--yes); checks that the run was
 *  accepted and returns the session file. */
async function recordRun(root: string, task: string, models: { model: Model; taskModel?: Model }): Promise<string> {
  const file = path.join(root, '.agent', 'parent.jsonl');
  let recorder: (event: SessionEvent) => void = () => {};
  const options = recordedOptions({ approval: 'yes' });
  const header = {
    type: 'session' as const,
    version: SESSION_VERSION,
    model: models.model.name,
    root,
    startedAt: '',
    options,
  };
  const agent = await createAgent({
    root,
    ...models,
    tools: TOOLS,
    contextFiles: false,
    onEvent: (recorder = sessionRecorder(file, header, [])),
  });
  recorder({ type: 'task', text: task });
  assert.equal((await runTask(agent, task)).kind, 'accepted');
  return file;
}

describe('recorded sessions replay as regression tests', async () => {
  const recordings = (await readdir(RECORDINGS)).filter((file) => file.endsWith('.jsonl'));

  test('the folder holds a scripted recording and one made through the real SDK path', () => {
    assert.ok(recordings.includes('seed-story.jsonl') && recordings.includes('local-endpoint.jsonl'), `${recordings}`);
  });

  for (const file of recordings) {
    test(`${file} replays identically on a fresh copy of its project, offline`, async (t) => {
      const { status, stdout } = await replay(path.join(RECORDINGS, file), await project(t));
      assert.equal(status, EXIT.accepted, stdout);
      assert.match(stdout, /replay: identical: \d+ messages/);
    });
  }

  test('a project whose source differs is caught: exit 1, naming the first message that differs', async (t) => {
    const root = await project(t);
    await writeFile(path.join(root, 'add.js'), 'export function add(a, b) {\n  return a * b;\n}\n');
    const { status, stdout } = await replay(path.join(RECORDINGS, 'local-endpoint.jsonl'), root);
    assert.equal(status, EXIT.notAccepted);
    // The read of add.js is the first message that changed, shown as the lines of the file that differ.
    assert.match(stdout, /\nreplay: differs at message #2 \(user\), block 0 \(tool_result\):\n/);
    assert.match(stdout, /\n {2}- +2\t {2}return a - b;\n {2}\+ +2\t {2}return a \* b;\n/);
    assert.ok(!stdout.includes('\\n') && !stdout.includes('\\"'), `no escaped JSON: ${stdout}`);
    for (const line of stdout.split('\n')) assert.ok(line.length <= 100, `${line.length} columns: ${line}`);
  });

  test('an option given on the command line replaces the recorded one, and the replay says so', async (t) => {
    const file = path.join(RECORDINGS, 'seed-story.jsonl');
    const { status, stdout } = await replay(file, await project(t), '--verify', 'exit 3');
    assert.match(stdout, /--verify from the command line replaces the recorded value/);
    assert.equal(status, EXIT.notAccepted, 'the gate now answers differently, so the transcript differs');
  });
});

describe('a replay compares what the API says, not how it spells it', () => {
  test('a session recorded through the real SDK path, whose API leaves out null and default fields, replays identically; server tool blocks and a kind of block this version does not know are played back as they came', async (t) => {
    const server = (block: object) => block as unknown as Anthropic.ContentBlock; // kinds the SDK's types cannot build
    const api = await startFakeApi([
      {
        kind: 'reply',
        message: fakeMessage(
          [
            { type: 'text', text: 'Let me look it up, then read the code.', citations: null },
            server({ type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'js add' } }),
            server({
              type: 'web_search_tool_result',
              tool_use_id: 'srvtoolu_1',
              content: [{ type: 'web_search_result', url: 'https://x.test', title: 'Add', encrypted_content: 'e1' }],
            }),
            server({ type: 'a_later_kind', data: { note: 'from an API newer than this harness' } }),
            {
              type: 'tool_use',
              id: 'toolu_1',
              name: 'read_file',
              input: { path: 'add.js' },
              caller: { type: 'direct' },
            },
          ],
          'tool_use',
        ),
      },
      { kind: 'reply', message: fakeMessage([{ type: 'text', text: 'It subtracts.', citations: null }]) },
    ]);
    t.after(() => api.close());
    const model = new AnthropicModel(
      'claude-test',
      new Anthropic({ apiKey: 'k', baseURL: api.baseURL, maxRetries: 0 }),
    );
    const file = await recordRun(await project(t), 'What does add do?', { model });
    const recorded = await readFile(file, 'utf8');
    assert.ok(!recorded.includes('"citations"') && !recorded.includes('"caller"'), 'recorded as the API sent it');
    assert.ok(recorded.includes('"a_later_kind"') && recorded.includes('"web_search_tool_result"'));
    const { status, stdout } = await replay(file, await project(t));
    assert.equal(status, EXIT.accepted, stdout);
    assert.match(stdout, /replay: identical: 4 messages/);
  });

  test("a block's field that is null or at its default equals the field left out; inside a tool's input, null is a value", () => {
    const said = (block: object) => ({ role: 'assistant' as const, content: [block as Anthropic.ContentBlockParam] });
    const call = (extra: object) => said({ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: {}, ...extra });
    assert.equal(
      firstDifference(1, said({ type: 'text', text: 'hi' }), said({ type: 'text', text: 'hi', citations: null })),
      null,
    );
    assert.equal(firstDifference(1, call({}), call({ caller: { type: 'direct' } })), null);
    assert.equal(firstDifference(1, call({ caller: null }), call({})), null);
    const otherCaller = firstDifference(
      1,
      call({}),
      call({ caller: { type: 'code_execution_20250825', tool_id: 'x' } }),
    );
    assert.match(otherCaller ?? '', /^message #1 \(assistant\), block 0 \(tool_use\):\n(.*\n)* {2}\+ +"caller": \{/);
    const nullInInput = firstDifference(1, call({ input: { path: null } }), call({ input: {} }));
    assert.match(nullInInput ?? '', /\n {2}- +"input": \{\n {2}- +"path": null\n/);
  });
});

describe('a session that cannot be replayed is one clear line and exit 2', () => {
  const header = { type: 'session', version: 1, model: 'scripted', root: '/x', startedAt: '2026-01-01T00:00:00Z' };

  /** What the program said on stderr, as one line (it wraps long errors at 100 columns). */
  const errorOf = (t: TestContext) => {
    const printed = t.mock.method(console, 'error', () => {});
    return () => printed.mock.calls.map((call) => String(call.arguments[0]).replace(/\n  /g, ' ')).join('\n');
  };

  test('a version 1 session (no replies recorded) is refused as unreplayable, not replayed wrongly', async (t) => {
    const root = await project(t);
    await writeFile(path.join(root, 'old.jsonl'), `${JSON.stringify(header)}\n`);
    const said = errorOf(t);
    const { status, stdout } = await replay(path.join(root, 'old.jsonl'), root);
    assert.equal(status, EXIT.usage);
    assert.equal(stdout, '');
    assert.match(
      said(),
      /^harness: --replay: .*old\.jsonl: session format 1 records no replies; it can be resumed, not replayed/,
    );
  });

  test('a missing file is "no such file", with the one error prefix, not a system error code', async (t) => {
    const root = await project(t);
    const said = errorOf(t);
    assert.equal((await replay(path.join(root, 'gone.jsonl'), root)).status, EXIT.usage);
    assert.match(said(), /^harness: --replay: .*gone\.jsonl: no such file \(see --help\)$/);
  });

  test('a torn line is refused with its line number, not played as if the session were shorter', async (t) => {
    const root = await project(t);
    const recorded = await readFile(path.join(RECORDINGS, 'seed-story.jsonl'), 'utf8');
    const lines = recorded.split('\n');
    lines[3] = lines[3]!.slice(0, 20);
    await writeFile(path.join(root, 'torn.jsonl'), lines.join('\n'));
    const said = errorOf(t);
    const { status } = await replay(path.join(root, 'torn.jsonl'), root);
    assert.equal(status, EXIT.usage);
    assert.match(said(), /torn\.jsonl:4 is not a whole JSON line/);
  });

  test("a missing sub-agent file is refused, naming it, so a child's replies are never guessed", async (t) => {
    const root = await project(t);
    const v2 = { ...header, version: SESSION_VERSION, options: {} };
    const link = { type: 'subagent', id: 'task-1', description: 'look', file: 'gone.task-1.jsonl' };
    await writeFile(
      path.join(root, 's.jsonl'),
      [v2, { type: 'task', text: 'x' }, link].map((e) => JSON.stringify(e)).join('\n'),
    );
    const said = errorOf(t);
    const { status } = await replay(path.join(root, 's.jsonl'), root);
    assert.equal(status, EXIT.usage);
    assert.match(said(), /gone\.task-1\.jsonl: no such file/);
  });
});

describe('what the person did is played back at the same point', () => {
  /** Records two tasks in-process the way the REPL would: a message typed while a call runs, two approval
   *  answers (one no, with a reason), and a Ctrl-C during the second task. */
  async function recordPersonSession(t: TestContext): Promise<{ file: string; halts: string[] }> {
    const root = await project(t);
    const file = path.join(root, '.agent', 'person.jsonl');
    const options = recordedOptions({ verify: 'node test.js', approval: 'ask' });
    const startedAt = new Date().toISOString();
    const header = { type: 'session' as const, version: SESSION_VERSION, model: 'scripted', root, startedAt, options };
    const record = sessionRecorder(file, header, []);
    const answers = [{ approved: false as const, reason: 'keep it minimal' }, { approved: true as const }];
    const person: Approver = async () => answers.shift() ?? { approved: true };
    let controller = new AbortController();
    let running = 0;
    const agent = await createAgent({
      root,
      model: new ScriptedModel([
        reply(toolUse('read_file', { path: 'add.js' }), toolUse('read_file', { path: 'test.js' })),
        call('read_file', { path: 'add.js' }),
        call('edit_file', { path: 'add.js', old_str: 'return a - b;', new_str: '// TODO\n  return b + a;' }),
        call('edit_file', { path: 'add.js', old_str: 'a - b', new_str: 'a + b' }),
        say('Done.'),
        call('read_file', { path: 'test.js' }),
      ]),
      tools: TOOLS,
      verify: options.verify,
      contextFiles: false,
      approve: recordAnswers(person, (event) => record(event)),
      onEvent: (event) => {
        record(event);
        if (event.type !== 'running') return;
        running++;
        if (running === 1) {
          // The person types while the first read runs: the second read is skipped for it.
          steer(agent, 'check test.js last');
          record({ type: 'steer', text: 'check test.js last' });
        }
        if (running === 4) {
          controller.abort();
          record({ type: 'interrupt' });
        }
      },
    });
    const halts: string[] = [];
    for (const task of ['make add(2, 3) == 5', 'read the test again']) {
      controller = new AbortController();
      record({ type: 'task', text: task });
      halts.push((await runTask(agent, task, controller.signal)).kind);
    }
    return { file, halts };
  }

  test('a recorded "yes" never approves a write that could run later: replayed, the .envrc edit is refused and the file is not made', async (t) => {
    const root = await project(t);
    const file = path.join(root, '.agent', 'envrc.jsonl');
    const options = recordedOptions({ approval: 'ask' });
    const header = {
      type: 'session' as const,
      version: SESSION_VERSION,
      model: 'scripted',
      root,
      startedAt: new Date().toISOString(),
      options,
    };
    const record = sessionRecorder(file, header, []);
    const person: Approver = async () => ({ approved: true });
    const agent = await createAgent({
      root,
      model: new ScriptedModel([
        call('edit_file', { path: '.envrc', old_str: '', new_str: 'export X=1\n' }),
        say('Done.'),
      ]),
      tools: TOOLS,
      contextFiles: false,
      approve: recordAnswers(person, (event) => record(event)),
      onEvent: (event) => record(event),
    });
    record({ type: 'task', text: 'add an .envrc' });
    await runTask(agent, 'add an .envrc', new AbortController().signal);
    assert.ok((await readFile(path.join(root, '.envrc'), 'utf8')).includes('X=1'), 'the person said yes when recorded');
    const fresh = await project(t);
    const { stdout } = await replay(file, fresh);
    assert.match(stdout, /differs/);
    await assert.rejects(readFile(path.join(fresh, '.envrc')), /ENOENT/);
  });

  test('steering, approval answers and Ctrl-C replay identically, so a session with a person in it is a test too', async (t) => {
    const { file, halts } = await recordPersonSession(t);
    assert.deepEqual(halts, ['accepted', 'interrupted']);
    const recorded = await readFile(file, 'utf8');
    for (const kind of ['"steer"', '"approval"', '"interrupt"']) assert.ok(recorded.includes(kind), `no ${kind} entry`);
    assert.ok(recorded.includes('skipped: the user sent a message'), 'the steering skipped a call when recorded');
    const { status, stdout } = await replay(file, await project(t));
    assert.equal(status, EXIT.accepted, stdout);
    assert.match(stdout, /identical: \d+ messages, 2 task\(s\)/);
  });
});

test("a sub-agent's replies are replayed from its own linked file, matched to the child by its id", async (t) => {
  const root = await project(t);
  const file = await recordRun(root, 'What is in this project?', {
    model: new ScriptedModel([
      reply(
        toolUse('task', { description: 'a', prompt: 'What does add.js export?' }),
        toolUse('task', { description: 'b', prompt: 'What does test.js check?' }),
      ),
      say('add is exported and checked for 2 + 3.'),
    ]),
    taskModel: new ScriptedModel([
      call('read_file', { path: 'add.js' }),
      call('read_file', { path: 'test.js' }),
      say('It exports add.'),
      say('It checks add(2, 3) === 5.'),
    ]),
  });
  const linked = (await readdir(path.dirname(file))).filter((f) => f.includes('.task-'));
  assert.equal(linked.length, 2, `linked files: ${linked}`);
  const { status, stdout } = await replay(file, await project(t));
  assert.equal(status, EXIT.accepted, stdout);
});

test('two sub-agents asked the same question replay with their own replies, not both with the first one', async (t) => {
  const question = 'Which file matters most?';
  const file = await recordRun(await project(t), 'Ask twice.', {
    model: new ScriptedModel([
      reply(
        toolUse('task', { description: 'one', prompt: question }),
        toolUse('task', { description: 'two', prompt: question }),
      ),
      say('They disagree.'),
    ]),
    // The two children ask in turn, so each gets every other reply: different files, different answers.
    taskModel: new ScriptedModel([
      call('read_file', { path: 'add.js' }),
      call('read_file', { path: 'test.js' }),
      say('add.js, it holds the code.'),
      say('test.js, it holds the check.'),
    ]),
  });
  const { status, stdout } = await replay(file, await project(t));
  assert.equal(status, EXIT.accepted, stdout);
});

test('a request the API refused as too long is refused again in the replay, which compacts and retries as the run did', async (t) => {
  // 40 KB files: two read results are over the fake API's limit, the latest one with a summary is under it.
  const files = Object.fromEntries(['a', 'b'].map((name) => [`${name}.txt`, `${`${name} `.repeat(40)}\n`.repeat(500)]));
  const read = (id: string, file: string) => ({
    kind: 'reply' as const,
    message: fakeMessage([
      { type: 'tool_use', id, name: 'read_file', input: { path: file }, caller: { type: 'direct' } },
    ]),
  });
  const said = (text: string) => ({
    kind: 'reply' as const,
    message: fakeMessage([{ type: 'text', text, citations: null }]),
  });
  const api = await startFakeApi(
    [read('toolu_1', 'a.txt'), read('toolu_2', 'b.txt'), said('SUMMARY: read a and b.'), said('Both read.')],
    { promptTooLongAbove: 18_000 },
  );
  t.after(() => api.close());
  const client = new Anthropic({ apiKey: 'test-key', baseURL: api.baseURL, maxRetries: 0 });
  const model = new AnthropicModel('claude-test', client);
  const file = await recordRun(await tempProject(t, files), 'Read a.txt and b.txt.', { model });
  assert.match(await readFile(file, 'utf8'), /"type":"compaction".*"promptTooLong":true/, 'the refusal is recorded');
  const { status, stdout } = await replay(file, await tempProject(t, files));
  assert.equal(status, EXIT.accepted, stdout);
});

test('a sub-agent whose reply was cut off (no calls in it) replays its continuation too', async (t) => {
  const file = await recordRun(await project(t), 'Ask once.', {
    model: new ScriptedModel([call('task', { description: 'look', prompt: 'What does add.js export?' }), say('add.')]),
    taskModel: new ScriptedModel([
      { content: [{ type: 'text', text: 'It exports' }], stop_reason: 'max_tokens' },
      say('It exports add.'),
    ]),
  });
  const { status, stdout } = await replay(file, await project(t));
  assert.equal(status, EXIT.accepted, stdout);
});

test('only the summary right after a refused request is marked as answering it, not a second one before the retry', async (t) => {
  const root = await tempProject(t);
  const file = path.join(root, 'session.jsonl');
  const record = sessionRecorder(file, null, []);
  const usage = usageOf({ input_tokens: 10, output_tokens: 5 });
  const compaction = (keptFrom: number) =>
    ({ type: 'compaction', summary: 'S', keptFrom, tokensBefore: 100, tokensAfter: 50, usage }) as const;
  record({ type: 'request', turn: 3, messages: 5, estimatedTokens: 100 }); // refused: no reply follows
  record(compaction(3));
  record(compaction(4)); // compacted again before the retry went out
  record({ type: 'request', turn: 3, messages: 3, estimatedTokens: 40 });
  const entries = (await readFile(file, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as object);
  assert.deepEqual(
    entries.map((entry) => 'promptTooLong' in entry),
    [true, false],
  );
});

describe("a replay offers the model the tools the recording's header names, no others", () => {
  test('a tool added since the recording is left out; one the header names is kept', () => {
    const shipped = SHIPPED_TOOLS.map((tool) => tool.name);
    assert.deepEqual(
      recordedTools({ tools: [...shipped, 'task'] }, FORKED_TOOLS).map((tool) => tool.name),
      shipped,
    );
    assert.deepEqual(
      recordedTools({ tools: ['read_file', 'task'] }, PROGRAM_TOOLS).map((tool) => tool.name),
      ['read_file'],
    );
  });

  test('a recording whose header lacks a tool its replies call is not replayed with that tool', async (t) => {
    const root = await project(t);
    const lines = (await readFile(path.join(RECORDINGS, 'seed-story.jsonl'), 'utf8')).split('\n');
    const header = JSON.parse(lines[0]!) as { options: RecordedOptions };
    header.options.tools = header.options.tools.filter(
      (name) => !TOOLS.some((tool) => !tool.readOnly && tool.name === name),
    );
    const file = path.join(root, '.agent', 'no-changes.jsonl');
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, [JSON.stringify(header), ...lines.slice(1)].join('\n'));
    const { status, stdout } = await replay(file, root);
    assert.equal(status, EXIT.notAccepted, stdout);
    assert.match(stdout, /replay: differs at message #\d+ \(user\)/);
    assert.match(stdout, /unknown tool/);
  });
});
