// The program's half of test/loop/endurance.test.ts: what the session file keeps of a long run (a resume after
// compaction, sub-agents' files), /context's breakdown, and the command line under a shared token budget.

import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { type AgentEvent, estimateTokens, resume, runTask } from 'reference-harness';
import { call, reply, say, ScriptedModel } from 'reference-harness/scripted-model';
import {
  childScript,
  countedMessage,
  FINAL,
  generatedProject,
  parentScript,
  project,
  readingScript,
  TASKS,
} from '../../test/loop/endurance-fixtures.ts';
import { scriptedAgent, tempProject, textOf, tokensSpent, unmarked } from '../../test/helpers.ts';
import { loadSession, SESSION_VERSION, type SessionEntry, sessionRecorder } from '../session-file.ts';
import { grouped, terminalPrinter } from '../terminal.ts';
import { runCli } from './helpers.ts';
import { compactNow } from '../compact-now.ts';
import { contextBreakdown } from '../context-breakdown.ts';

/** The session file's entries, one per line. */
const entriesOf = async (file: string) =>
  (await readFile(file, 'utf8'))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as SessionEntry);

/** The header of a session recorded in `root` by the scripted model. */
const scriptedHeader = (root: string) =>
  ({
    type: 'session',
    version: SESSION_VERSION,
    model: 'scripted',
    root,
    startedAt: new Date(0).toISOString(),
  }) as const;

describe('resume after compaction', () => {
  test('a resumed session shows the model the same summary and recent messages, not the whole transcript', async (t) => {
    const files = generatedProject(30);
    const root = await tempProject(t, files);
    const file = path.join(root, '.agent', 'sessions', 'run.jsonl');
    const record = sessionRecorder(file, scriptedHeader(root), []);
    // Read until the first compaction, then one more file, then finish.
    const reading = readingScript(Object.keys(files), {
      stopReadingWhen: (s) => s.readsAtSummary.length > 0 && s.reads > s.readsAtSummary[0]!,
    });
    const original = await scriptedAgent(root, reading.script, {
      contextWindow: 20_000,
      budgets: { maxTurns: 100 },
      onEvent: record,
    });
    assert.equal((await runTask(original.agent, 'Read the files under src/ one by one.')).kind, 'accepted');
    assert.equal(reading.state.summaries.size, 1, 'the first run compacted once');
    const [compacted] = (await entriesOf(file)).filter((e) => e.type === 'compaction');
    assert.ok(compacted && !('promptTooLong' in compacted), 'compacted before a request: no request was refused');

    const loaded = await loadSession(file);
    assert.deepEqual(loaded.compaction, original.agent.compaction);
    const resumed = await scriptedAgent(root, [say('Nothing else to do.')], { contextWindow: 20_000 });
    resume(resumed.agent, loaded);

    const nextIndex = original.model.requests.length;
    await runTask(original.agent, 'Anything left?');
    await runTask(resumed.agent, 'Anything left?');
    const originalNext = unmarked(original.model.requests[nextIndex]!.messages);
    const resumedNext = unmarked(resumed.model.requests[0]!.messages);
    assert.ok(textOf(originalNext[0]).includes('SUMMARY #1'), 'the original shows the summary first');
    assert.ok(originalNext.length < original.agent.messages.length - 1, 'and not the whole transcript');
    assert.deepEqual(resumedNext, originalNext);
  });
});

describe('AGENTS.md', () => {
  const NEAR = 'NEAR-GUIDANCE-9c1';

  test('/context adds up: system prompt, tools, AGENTS.md, messages and free space make the window, and free is never negative', async (t) => {
    const root = await tempProject(t, {
      '.git/HEAD': 'ref: refs/heads/main\n',
      'AGENTS.md': `${NEAR}\n${'guidance\n'.repeat(200)}`,
      'a.txt': 'hello\n'.repeat(300),
    });
    const { agent } = await scriptedAgent(root, [call('read_file', { path: 'a.txt' }), say('read it')], {
      contextWindow: 20_000,
    });
    await runTask(agent, 'read a.txt');
    const b = contextBreakdown(agent);
    assert.ok(b.systemPrompt > 0 && b.toolDefinitions > 0 && b.messages > 0 && b.free > 0);
    assert.equal(
      b.projectFiles,
      agent.contextFiles.reduce((sum, f) => sum + estimateTokens(f.text), 0),
    );
    assert.ok(b.projectFiles > 0);
    assert.equal(b.systemPrompt + b.toolDefinitions + b.projectFiles + b.messages + b.free, b.window);
    assert.equal(b.window, 20_000);

    const { agent: small } = await scriptedAgent(root, [], { contextWindow: 100 });
    assert.equal(contextBreakdown(small).free, 0);
  });

  test('a summary /compact declines is reported with what it cost, as an empty one is', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const long = say('a summary that says far more than the task it would replace. '.repeat(20));
    const script = [call('read_file', { path: 'a.txt' }), say('done'), long];
    const { agent, events } = await scriptedAgent(root, script);
    await runTask(agent, 'read a.txt');
    const declined = await compactNow(agent, new AbortController().signal);
    assert.match(declined ?? '', /^declined: the summary .* smaller; nothing changed$/);
    const failed = events.flatMap((e) => (e.type === 'compaction-failed' ? [e] : []));
    assert.deepEqual(
      failed.map((e) => [e.reason, e.usage.output_tokens > 0]),
      [[declined, true]],
    );
    assert.equal(agent.compaction, null, 'and nothing was cut');
  });

  test('/context measures each message once: a breakdown after two requests does not stringify it again', async (t) => {
    const root = await tempProject(t);
    const { message: earlier, measured } = countedMessage();
    const { agent } = await scriptedAgent(root, [say('ok'), say('ok')]);
    const messages = [earlier, { role: 'assistant' as const, content: 'done before' }];
    resume(agent, { messages, compaction: null, subAgents: 0, repair: null, protectedAtStart: null, warnings: [] });
    await runTask(agent, 'go on');
    await runTask(agent, 'and again');
    contextBreakdown(agent);
    contextBreakdown(agent);
    assert.equal(measured(), 1);
  });
});

describe('the sub-agent (task tool)', () => {
  // The events a sub-agent sends its parent are the harness's (test/loop/endurance.test.ts); these are its files.
  test("the session file links a child file holding the child's transcript", async (t) => {
    const root = await project(t);
    const file = path.join(root, '.agent', 'sessions', 'parent.jsonl');
    const childModel = new ScriptedModel(childScript());
    const { agent } = await scriptedAgent(root, parentScript(), {
      taskModel: childModel,
      onEvent: sessionRecorder(file, scriptedHeader(root), []),
    });
    await runTask(agent, 'What is the answer?');

    const link = (await entriesOf(file)).find((e) => e.type === 'subagent');
    assert.deepEqual(link, {
      type: 'subagent',
      id: 'task-1',
      description: 'find the answer',
      file: 'parent.task-1.jsonl',
      at: link?.at,
    });
    const child = await loadSession(path.join(path.dirname(file), link.file));
    assert.deepEqual(
      child.messages.slice(0, -1),
      unmarked(childModel.requests.at(-1)!.messages),
      "the child file holds the child's messages",
    );
    assert.equal(textOf(child.messages.at(-1)), FINAL);
    assert.equal((await loadSession(file)).messages.length, 4, "and the parent file only the parent's");
  });

  test("a sub-agent started after resume gets a session file of its own, not the earlier child's", async (t) => {
    const root = await project(t);
    const file = path.join(root, '.agent', 'sessions', 'parent.jsonl');
    const first = await scriptedAgent(root, parentScript(), {
      taskModel: new ScriptedModel(childScript()),
      onEvent: sessionRecorder(file, scriptedHeader(root), []),
    });
    await runTask(first.agent, 'What is the answer?');

    const second = await scriptedAgent(root, parentScript(), {
      taskModel: new ScriptedModel(childScript()),
      onEvent: sessionRecorder(file, null, []),
    });
    resume(second.agent, await loadSession(file));
    await runTask(second.agent, 'Ask again.');

    const links = (await entriesOf(file)).flatMap((e) => (e.type === 'subagent' ? [e.file] : []));
    assert.equal(links.length, 2);
    assert.notEqual(links[0], links[1], `both children were written to ${links[0]}`);
    for (const link of links) {
      const child = await loadSession(path.join(path.dirname(file), link));
      assert.equal(child.messages.length, 4, `${link} holds one child's transcript`);
    }
  });
});

describe('budgets shared with sub-agents', () => {
  test('on the command line, one reply starting four never-ending sub-agents under --max-tokens 20000 halts on tokens, exit 1, within one model call per loop', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    // --script plays one script for the parent and its sub-agents alike: four tasks, then file listings forever.
    const script = path.join(root, 'script.json');
    await writeFile(
      script,
      JSON.stringify([
        reply(...TASKS),
        ...Array.from({ length: 300 }, (_, i) => call('list_files', i % 2 ? { path: '.' } : {})),
      ]),
    );
    const session = path.join(root, 'session.jsonl');
    const args = ['--script', script, '--root', root, '--max-tokens', '20000', '--json', '--session', session];
    const run = await runCli([...args, 'Search everything.']);

    assert.equal(run.status, 1);
    const events = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as AgentEvent);
    // Walk the run as it happened: no model call (the parent's or a child's) starts once 20,000 tokens are spent.
    let spent = 0;
    let largestCall = 0;
    for (const event of events) {
      const inner = event.type === 'subagent' ? event.event : event;
      if (inner.type === 'request') assert.ok(spent < 20_000, `a model call started with ${spent} tokens spent`);
      const tokens = tokensSpent([event]);
      spent += tokens;
      largestCall = Math.max(largestCall, tokens);
    }
    assert.ok(spent >= 20_000 && spent <= 20_000 + TASKS.length * largestCall, `${spent} tokens spent`);
    const halt = { kind: 'budget', budget: 'tokens', limit: 20_000, spent: { tokens: spent, costUsd: null } } as const;
    assert.deepEqual(events.at(-2), { type: 'halt', halt, turns: 1 }, 'the --json halt event says what was spent');
    assert.equal(events.at(-1)?.type, 'result', '--json ends with the totals');
    const entries = await entriesOf(session);
    assert.deepEqual(
      { ...entries.at(-1), at: undefined },
      { type: 'halt', halt, at: undefined },
      'and the session file',
    );
    assert.equal((await loadSession(session)).repair, null, 'every call in the session file is answered');

    let printed = '';
    terminalPrinter(Object.assign(new PassThrough(), { write: (chunk: string) => ((printed += chunk), true) }))({
      type: 'halt',
      halt,
      turns: 1,
    });
    assert.equal(
      printed,
      `halt: budget (tokens: the limit of 20,000 tokens was reached; spent ${grouped(spent)} tokens) after 1 turn(s)\n`,
    );
  });
});
