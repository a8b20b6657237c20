// An edit said before it is made: the session file records each edit's intent (its call, the file, the content's
// hash before and after) before the file changes, and a resume after a crash answers an edit left without a result
// with what the disk shows of it. The crash itself, with real processes: app/test/crash.check.ts.

import type Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { GUARDED } from 'reference-harness/hardening';
import { call, reply, say, toolUse } from 'reference-harness/scripted-model';
import { type EditIntent, intentRecorded } from '../edit-intents.ts';
import {
  loadSession,
  SESSION_VERSION,
  type SessionEntry,
  type SessionHeader,
  sessionRecorder,
} from '../session-file.ts';
import { scriptedAgent, tempProject, violationsOf } from '../../test/helpers.ts';
import { type AgentEvent, runTask } from 'reference-harness';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A session killed while the calls of its last reply ran: the reply, then an intent per edit (as [id, path,
 *  before, after] in plain text), and no result. */
async function killedSession(
  t: TestContext,
  files: Record<string, string>,
  calls: Anthropic.ToolUseBlockParam[],
  intents: [id: string, file: string, before: string | null, after: string][],
) {
  const root = await tempProject(t, files);
  const header: SessionEntry = { type: 'session', version: SESSION_VERSION, model: 'scripted', root, startedAt: '' };
  const entries: SessionEntry[] = [
    header,
    { type: 'task', text: 'edit' },
    { type: 'message', message: { role: 'user', content: 'edit' } },
    { type: 'message', message: { role: 'assistant', content: calls } },
    ...intents.map(([callId, file, before, after]): SessionEntry => {
      const hashes = { before: before === null ? null : sha256(before), after: sha256(after) };
      return { type: 'intent', callId, path: file, ...hashes };
    }),
  ];
  const file = path.join(root, '.agent', 'session.jsonl');
  await mkdir(path.dirname(file));
  await writeFile(file, entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
  return { root, file };
}

const edit = (id: string, file: string): Anthropic.ToolUseBlockParam => ({
  type: 'tool_use',
  id,
  name: 'edit_file',
  input: { path: file, old_str: 'old', new_str: 'new' },
});

/** The repair's results, as [id, content, is_error]. */
const answers = (repair: Anthropic.MessageParam | null) =>
  (repair?.content as Anthropic.ToolResultBlockParam[]).map((r) => [r.tool_use_id, r.content, r.is_error === true]);

describe('a resume after a crash tells the model an edit that landed did not run', () => {
  test('each edit recorded before it was made is answered with what the disk shows: applied, not applied, changed since; a call with no intent "not run"', async (t) => {
    const { file } = await killedSession(
      t,
      { 'a.txt': 'new\n', 'b.txt': 'old\n', 'c.txt': 'someone else\n' },
      [edit('e1', 'a.txt'), edit('e2', 'b.txt'), edit('e3', 'c.txt'), edit('e4', 'd.txt'), edit('e5', 'gone.txt')],
      [
        ['e1', 'a.txt', 'old\n', 'new\n'],
        ['e2', 'b.txt', 'old\n', 'new\n'],
        ['e3', 'c.txt', 'old\n', 'new\n'],
        ['e4', 'd.txt', null, 'new\n'],
      ],
    );
    const loaded = await loadSession(file);
    assert.deepEqual(answers(loaded.repair), [
      [
        'e1',
        'applied: the edit of a.txt landed before the session ended (the file has the new content); do not make it again',
        false,
      ],
      ['e2', 'not applied: the session ended before the edit of b.txt was written; the file is as it was', true],
      [
        'e3',
        'unknown: c.txt changed since the session ended (it holds neither the content it had nor the edit); read it again',
        true,
      ],
      ['e4', 'not applied: the session ended before the edit of d.txt was written; the file is as it was', true],
      ['e5', 'not run: the session ended before this call finished', true],
    ]);
    assert.match(loaded.warnings.at(-1)!, /5 call\(s\) had no result .*; 4 answered with what is known of them/);
    assert.deepEqual(violationsOf({ messages: [...loaded.messages, loaded.repair!] }), []);
  });

  test('a session file that names a file outside the project gets no answer about it: the resume is no oracle for what lies beside the project', async (t) => {
    const { root, file } = await killedSession(t, {}, [edit('e1', '../beside.txt'), edit('e2', '/etc/hostname')], []);
    const beside = path.join(root, '..', 'beside.txt');
    await writeFile(beside, 'new\n');
    t.after(() => writeFile(beside, '').catch(() => {}));
    const forged = (callId: string, edited: string, content: string) =>
      JSON.stringify({ type: 'intent', callId, path: edited, before: sha256('guess'), after: sha256(content) });
    const hostname = readFileSync('/etc/hostname', 'utf8');
    writeFileSync(
      file,
      `${readFileSync(file, 'utf8')}${forged('e1', '../beside.txt', 'new\n')}\n${forged('e2', '/etc/hostname', hostname)}\n`,
    );
    const said = answers((await loadSession(file, root)).repair);
    assert.deepEqual(
      said.map(([, content]) => content),
      ['not run: the session ended before this call finished', 'not run: the session ended before this call finished'],
    );
  });

  test('a new file that landed, and one removed since: applied, and changed since (it is gone)', async (t) => {
    const { file } = await killedSession(
      t,
      { 'made.txt': 'new\n' },
      [edit('e1', 'made.txt'), edit('e2', 'gone.txt')],
      [
        ['e1', 'made.txt', null, 'new\n'],
        ['e2', 'gone.txt', 'old\n', 'new\n'],
      ],
    );
    const [made, gone] = answers((await loadSession(file)).repair);
    assert.match(String(made![1]), /^applied: the edit of made\.txt landed/);
    assert.equal(gone![1], 'unknown: gone.txt changed since the session ended (it is gone); read it again');
  });

  test('two edits of one file in one reply, both landed: the first is answered applied too, not "changed since"', async (t) => {
    const { file } = await killedSession(
      t,
      { 'a.txt': 'two\n' },
      [edit('e1', 'a.txt'), edit('e2', 'a.txt')],
      [
        ['e1', 'a.txt', 'zero\n', 'one\n'],
        ['e2', 'a.txt', 'one\n', 'two\n'],
      ],
    );
    const outcomes = answers((await loadSession(file)).repair).map(([, content]) => String(content).split(':')[0]);
    assert.deepEqual(outcomes, ['applied', 'applied']);
  });

  test('the resuming root is where the files are checked, not the one the header names (a project moved)', async (t) => {
    const { file } = await killedSession(
      t,
      { 'a.txt': 'old\n' },
      [edit('e1', 'a.txt')],
      [['e1', 'a.txt', 'old\n', 'new\n']],
    );
    const moved = await tempProject(t, { 'a.txt': 'new\n' });
    assert.match(String(answers((await loadSession(file, moved)).repair)[0]![1]), /^applied/);
  });
});

describe('each edit is said in the session file before its file changes', () => {
  /** An agent whose disk records intents in `file`, as the program's does; `seen` is told of each intent after it is
   *  recorded and before the write. */
  async function recordingAgent(t: TestContext, seen: (intent: EditIntent) => void, then = (_: AgentEvent) => {}) {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const file = path.join(root, 'session.jsonl');
    const header: SessionHeader = { type: 'session', version: SESSION_VERSION, model: 'scripted', root, startedAt: '' };
    const problems: string[] = [];
    const record = sessionRecorder(file, header, [], (problem) => problems.push(problem));
    t.after(() => record.close());
    const disk = intentRecorded(GUARDED.disk, (intent) => {
      record.intend(intent);
      seen(intent);
    });
    const script = [
      call('read_file', { path: 'a.txt' }),
      reply(toolUse('edit_file', { path: 'a.txt', old_str: 'alpha', new_str: 'beta' })),
      say('Done.'),
    ];
    const onEvent = (event: AgentEvent) => {
      record(event);
      then(event);
    };
    const { agent } = await scriptedAgent(root, script, { hardening: { ...GUARDED, disk }, onEvent });
    return { root, file, agent, problems };
  }

  test('the intent names the edit call by its id, with the hashes before and after, and is in the file while the file still holds the old content', async (t) => {
    const atIntent: { sessionFile: string; content: string }[] = [];
    const { root, file, agent } = await recordingAgent(t, () =>
      atIntent.push({
        sessionFile: readFileSync(file, 'utf8'),
        content: readFileSync(path.join(root, 'a.txt'), 'utf8'),
      }),
    );
    assert.equal((await runTask(agent, 'edit a.txt')).kind, 'accepted');
    const entries = (await readFile(file, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as SessionEntry);
    const intents = entries.filter((entry) => entry.type === 'intent');
    const editCall = agent.messages
      .flatMap((m) => (typeof m.content === 'string' ? [] : m.content))
      .find((block) => block.type === 'tool_use' && block.name === 'edit_file') as Anthropic.ToolUseBlockParam;
    assert.deepEqual(
      intents.map(({ at: _at, ...intent }) => intent),
      [{ type: 'intent', callId: editCall.id, path: 'a.txt', before: sha256('alpha\n'), after: sha256('beta\n') }],
    );
    assert.equal(atIntent.length, 1);
    assert.match(atIntent[0]!.sessionFile, /"type":"intent"/, 'recorded before the write was made');
    assert.equal(atIntent[0]!.content, 'alpha\n', 'the file had not changed yet');
    assert.equal(readFileSync(path.join(root, 'a.txt'), 'utf8'), 'beta\n');
  });

  test('an edit the session file can no longer record (replaced under the program) is not made, and says why', async (t) => {
    // Replaced once the file was read, so the edit comes next.
    const replace = (event: AgentEvent) => {
      if (event.type !== 'result' || event.call.name !== 'read_file') return;
      renameSync(file, `${file}.moved`);
      writeFileSync(file, '');
    };
    const { root, file, agent, problems } = await recordingAgent(t, () => {}, replace);
    await runTask(agent, 'edit a.txt');
    assert.equal(readFileSync(path.join(root, 'a.txt'), 'utf8'), 'alpha\n', 'the edit was not made');
    const result = agent.messages
      .flatMap((m) => (typeof m.content === 'string' ? [] : m.content))
      .filter((block) => block.type === 'tool_result')
      .at(-1) as Anthropic.ToolResultBlockParam;
    assert.equal(result.is_error, true);
    assert.match(String(result.content), /can no longer be written; nothing was edited/);
    assert.equal(problems.length, 1);
  });
});
