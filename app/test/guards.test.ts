// The program's half of test/loop/guards.test.ts: absurd inputs that the harness refuses must not break what the program
// hangs on its events (the session file, the printers) or its command line.

import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { runTask } from 'reference-harness';
import { call, say } from 'reference-harness/scripted-model';
import { startDeepReplyApi } from '../../test/model/fake-api.ts';
import { nested, scriptedAgent, tempProject, toolResults, unmarked, violationsOf } from '../../test/helpers.ts';
import { loadSession, SESSION_VERSION, sessionRecorder } from '../session-file.ts';
import { jsonPrinter, terminalPrinter, tracePrinter } from '../terminal.ts';
import { runCli, pointSdkAt } from './helpers.ts';

describe('absurd inputs', () => {
  const quiet = { input_tokens: 10, output_tokens: 10 }; // given, so the scripted model need not measure the reply

  test('a tool input nested 20,000 deep is refused by validation with a clear reason, and the session, its file and its printers go on', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const file = path.join(root, '.agent', 'session.jsonl');
    const record = sessionRecorder(
      file,
      { type: 'session', version: SESSION_VERSION, model: 'scripted', root, startedAt: 'now' },
      [],
    );
    const sink = { write: () => true } as unknown as NodeJS.WritableStream;
    const printers = [terminalPrinter(sink), tracePrinter(sink), jsonPrinter(sink)];
    const script = [
      { ...call('read_file', { path: nested(20_000) }), usage: quiet },
      { ...say('ok'), usage: quiet },
    ];
    const { agent, model } = await scriptedAgent(root, script, {
      onEvent: (event) => (record(event), printers.forEach((print) => print(event))),
    });
    assert.deepEqual(await runTask(agent, 'read'), { kind: 'accepted', verifiedBy: null });
    const [result] = toolResults(agent.messages);
    assert.equal(result?.is_error, true);
    assert.equal(result?.content, 'invalid arguments for read_file: nested deeper than 64 levels');
    assert.deepEqual(violationsOf(model.requests[1]!), [], 'the next request can be sent');
    assert.deepEqual((await loadSession(file)).messages, unmarked(agent.messages), 'and the file reads back whole');
  });

  test('through the real SDK and the command line, a reply with a 20,000-deep input is refused, not "model call failed"', async (t) => {
    const root = await tempProject(t);
    const { baseURL, bodies } = await startDeepReplyApi(t);
    pointSdkAt(t, baseURL);
    const run = await runCli(['--root', root, '--yes', 'read'], {
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: baseURL,
    });
    assert.equal(run.status, 0, run.stdout);
    assert.match(run.stdout, /✗ invalid arguments for read_file: nested deeper than 64 levels/);
    assert.equal(bodies.length, 2, 'the second request was sent, and accepted');
  });
});
