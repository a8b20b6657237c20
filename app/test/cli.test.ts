// The command line around the loop: the REPL's one-task-at-a-time rule, piped input, commands,
// the terminal printer's ticker, and the usage errors. One test per failure it prevents.

import type Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline/promises';
import { PassThrough, Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { styleText } from 'node:util';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  type Agent,
  type AgentEvent,
  createAgent,
  DEFAULT_MODEL,
  type ModelRequest,
  runTask,
  steer,
} from 'reference-harness';
import type { SessionEvent } from '../terminal.ts';
import { main } from '../main.ts';
import { configFromCli, helpText, nearestOption, OPTIONS, parseCli, UsageError } from '../options.ts';
import { PRICES_CHECKED, priceOf } from '../prices.ts';
import { colourOn, compactDiff, EXIT, MarkdownBlocks, repl, terminalPrinter, tracePrinter, wrap } from '../terminal.ts';
import { call, say, type ScriptedReply, ScriptedModel } from 'reference-harness/scripted-model';
import { describeCall } from 'reference-harness/tools';
import { fakeMessage, startFakeApi } from '../../test/model/fake-api.ts';
import { scriptedAgent, tempProject, textOf, violationsOf } from '../../test/helpers.ts';
import { runCli } from './helpers.ts';

/** A REPL fed by piped lines, as `main` sets it up: paused until the REPL listens. */
async function pipedRepl(
  lines: string[],
  script: Parameters<typeof scriptedAgent>[1],
  root: string,
  { tell: printer, ...config }: Parameters<typeof scriptedAgent>[2] & { tell?: (event: SessionEvent) => void } = {},
  setUp: (agent: Agent) => void = () => {},
) {
  const input = new PassThrough();
  const rl = createInterface({ input, terminal: false });
  rl.pause();
  input.end(lines.map((line) => `${line}\n`).join(''));
  await new Promise((resolve) => setImmediate(resolve));
  const { agent, model, events } = await scriptedAgent(root, script, config);
  setUp(agent);
  const tell = (event: SessionEvent) => {
    (events as SessionEvent[]).push(event);
    printer?.(event);
  };
  const code = await repl(agent, rl, { interactive: false, switchSession: async () => {}, tell });
  return { agent, model, events, code };
}

describe('the REPL', () => {
  test('lines piped in before the REPL listens are not lost: every task runs', async (t) => {
    const root = await tempProject(t);
    const { events, code } = await pipedRepl(['first task', 'second task'], [say('one'), say('two')], root);
    assert.equal(code, EXIT.accepted);
    assert.equal(events.filter((e) => e.type === 'halt').length, 2);
  });

  test('tasks run one at a time, even behind a command: two runs never share the transcript at once', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'a\n' });
    const script = [call('read_file', { path: 'a.txt' }), say('read A'), call('list_files', {}), say('listed B')];
    const { agent, model } = await pipedRepl(['/compact', 'task A', 'task B'], script, root);
    assert.deepEqual(
      agent.messages.map((m) => m.role),
      ['user', 'assistant', 'user', 'assistant', 'user', 'assistant', 'user', 'assistant'],
    );
    assert.equal(textOf(agent.messages[4]), 'task B');
    for (const request of model.requests) assert.deepEqual(violationsOf(request), []);
  });

  test('an unknown command is refused with the list of commands, not sent to the model as a task', async (t) => {
    const root = await tempProject(t);
    const { model, events } = await pipedRepl(['/frobnicate'], [], root);
    assert.equal(model.requests.length, 0);
    const notices = events.flatMap((e) => (e.type === 'notice' ? [e.text] : []));
    assert.deepEqual(notices, [
      'unknown command "/frobnicate"; the commands are /help, /context, /compact, /resume FILE, /exit',
    ]);
  });

  test('/resume without a file asks for one, naming the latest session, instead of calling itself unknown', async (t) => {
    const root = await tempProject(t, {
      '.agent/sessions/2026-11-30T10-00-00-000Z.jsonl': '',
      '.agent/sessions/2026-12-01T09-00-00-000Z.jsonl': '',
    });
    const { events } = await pipedRepl(['/resume'], [], root);
    const notices = events.flatMap((e) => (e.type === 'notice' ? [e.text] : []));
    const latest = path.relative(process.cwd(), path.join(root, '.agent/sessions/2026-12-01T09-00-00-000Z.jsonl'));
    assert.deepEqual(notices, [`/resume needs a session file: /resume FILE, e.g. /resume ${latest}`]);
  });

  test('text typed during a run that the agent never read is shown back, not sent as the next task by itself', async (t) => {
    const root = await tempProject(t);
    let live: Agent | undefined;
    // The user types while the model writes its final answer: no tool call is left to pick the message up.
    const typeWhileAnswering = () => {
      steer(live!, 'also update the README');
      return say('Done.');
    };
    const script = [typeWhileAnswering, say('never')];
    const { model, events } = await pipedRepl(['fix it'], script, root, {}, (agent) => (live = agent));
    assert.equal(model.requests.length, 1, 'no second run started');
    const notices = events.flatMap((e) => (e.type === 'notice' ? [e.text] : []));
    assert.ok(
      notices.includes(
        'not sent (the run ended before the agent read it): "also update the README"; type it again to send it',
      ),
    );
  });

  test('/compact that would make the view bigger declines and says why, and the model keeps seeing the messages', async (t) => {
    const root = await tempProject(t);
    const long = 'a long summary that says more than the conversation it replaces. '.repeat(40);
    const script = [say('one'), say('two'), say('three'), say(long)];
    const { agent, events } = await pipedRepl(['first', 'second', 'third', '/compact'], script, root, {
      contextWindow: 2_000,
    });
    assert.equal(agent.compaction, null, 'nothing was replaced');
    assert.ok(
      events.every((e) => e.type !== 'compaction'),
      'and the session file records no compaction',
    );
    const notices = events.flatMap((e) => (e.type === 'notice' ? [e.text] : []));
    assert.match(
      notices.at(-1) ?? '',
      /^\/compact: declined: the summary \(~\d+ tokens, against ~\d+ now\) would not make what the model sees smaller; nothing changed$/,
    );
    assert.ok(agent.usage.output > 0);
  });
});

const text = (said: string) => ({ type: 'text' as const, text: said, citations: null });

/** An error message as one line again: the program wraps long ones at 100 columns. */
const unwrapped = (text: string) => text.replace(/\n  /g, ' ');

/** A stream that keeps what is written to it, synchronously. */
function screen(isTTY = false) {
  let written = '';
  const out = Object.assign(
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        written += chunk.toString('utf8');
        done();
      },
    }),
    { isTTY },
  );
  return { out, text: () => written, lines: () => written.split('\n').filter((line) => line !== '') };
}

describe('--trace', () => {
  test('--trace shows the context breakdown, at startup and for /context, instead of dropping it', async (t) => {
    const root = await tempProject(t, { 'AGENTS.md': 'Use tabs.\n' });
    const { out, lines } = screen();
    const printer = tracePrinter(out);
    await pipedRepl(['/context'], [], root, { onEvent: printer, tell: printer });
    assert.match(
      lines()[0] ?? '',
      /^\[0\] prompt builder +context window 200000 tokens \(estimated\): system \d+ · tools \d+ · AGENTS\.md \d+ · messages \d+ · free \d+$/,
    );
    const started = await runCli([
      '--trace',
      '--script',
      path.join(import.meta.dirname, '..', '..', 'lessons', 'scripts', 'fizzbuzz.json'),
      '--root',
      root,
      '--yes',
      'fizzbuzz',
    ]);
    assert.match(started.stdout, /^\[0\] prompt builder +context window/m);
  });

  test('a second task gets its own heading and starts at turn 0, not as a "fold back" under the last task\'s turn', async (t) => {
    const root = await tempProject(t);
    const { out, lines } = screen();
    const { agent } = await scriptedAgent(root, [say('Hello, Ada.'), say('Ada.')], { onEvent: tracePrinter(out) });
    await runTask(agent, 'My name is Ada.');
    await runTask(agent, 'What is my name?');
    const second = lines().findIndex((line) => line.includes('"What is my name?"'));
    assert.equal(lines()[second - 1], '--- task 2: the transcript carries on, and turns count from 1');
    assert.equal(lines()[second], '[0] state          appended a user message: "What is my name?"');
    assert.ok(lines().every((line) => !/fold back +appended a user message/.test(line)));
  });

  test('a compaction is traced in the turn it opens, after the previous turn passed its halt check', async (t) => {
    const root = await tempProject(t, { 'a.txt': 'a\n'.repeat(400), 'b.txt': 'b\n'.repeat(400) });
    const { out, lines } = screen();
    const summariseOr = (then: ScriptedReply) => (request: ModelRequest) =>
      JSON.stringify(request.messages).includes('Write a summary') ? say('SUMMARY: read a and b.') : then;
    const script = [call('read_file', { path: 'a.txt' }), call('read_file', { path: 'b.txt' }), say('done')];
    const { agent } = await scriptedAgent(
      root,
      script.map(summariseOr).flatMap((e) => [e, e]),
      {
        onEvent: tracePrinter(out),
        contextWindow: 4_000,
      },
    );
    await runTask(agent, 'read a and b');
    const at = lines().findIndex((line) => line.includes('compacted the messages'));
    assert.ok(at > 0, lines().join('\n'));
    const turnOf = (line: string | undefined) => Number(/^\[(\d+)\]/.exec(line ?? '')?.[1]);
    assert.match(lines()[at - 1]!, /halt check +no halt: go round again/);
    assert.equal(turnOf(lines()[at]), turnOf(lines()[at - 1]) + 1, 'the compaction opens the next turn');
    assert.equal(turnOf(lines()[at + 2]), turnOf(lines()[at]), "that turn's request follows it");
    assert.match(lines()[at]!, /~\d+ → ~\d+ tokens by characters/);
  });

  test("the prompt's size shows the counted part, which never goes down as the transcript grows, and user messages as text", async (t) => {
    const root = await tempProject(t, { 'a.txt': 'alpha\n' });
    const { out, lines } = screen();
    let live: Agent | undefined;
    const steerThen = (reply: ScriptedReply) => () => {
      steer(live!, 'Use tabs, please.');
      return reply;
    };
    const script = [
      call('read_file', { path: 'a.txt' }),
      steerThen(call('list_files', {})),
      call('list_files', {}),
      say('ok'),
    ];
    const { agent } = await scriptedAgent(root, script, { onEvent: tracePrinter(out) });
    live = agent;
    await runTask(agent, 'look around');
    const counted = lines()
      .flatMap((line) => /\((\d+) counted last turn/.exec(line)?.[1] ?? [])
      .map(Number);
    assert.equal(counted.length, 3);
    assert.deepEqual(
      counted,
      [...counted].sort((a, b) => a - b),
    );
    assert.ok(
      lines().some((line) => line.endsWith('appended 1 tool result(s) in call order, then "Use tabs, please."')),
    );
    assert.ok(lines().every((line) => !line.includes('{"type"')));
  });
});

describe('the terminal printer', () => {
  test('several calls running at once leave no ticker behind that would keep the process alive', () => {
    const out = Object.assign(new PassThrough(), { isTTY: true });
    const print = terminalPrinter(out);
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const call = (id: string) =>
      ({ type: 'tool_use', id, name: 'read_file', input: {}, caller: { type: 'direct' } }) as const;
    const events: AgentEvent[] = [
      { type: 'running', call: call('a') },
      { type: 'running', call: call('b') },
      { type: 'result', call: call('a'), result: { type: 'tool_result', tool_use_id: 'a', content: 'x' } },
      { type: 'result', call: call('b'), result: { type: 'tool_result', tool_use_id: 'b', content: 'y' } },
    ];
    for (const event of events) print(event);
    assert.equal(timers(), before);
  });

  const usage = { input_tokens: 10, output_tokens: 5 } as Anthropic.Usage;
  const totals = { input: 10, cacheWrite: 0, cacheRead: 0, output: 5, costUsd: null };
  const finalReply: AgentEvent = {
    type: 'reply',
    turn: 1,
    stopReason: 'end_turn',
    calls: 0,
    content: [],
    usage,
    totals,
  };

  test('on a terminal, a long wait shows what it waits for and for how long, changing at least once a second', (t) => {
    t.mock.timers.enable({ apis: ['setInterval', 'Date'] });
    const { out, text } = screen(true);
    const print = terminalPrinter(out, { verify: 'sleep 20' });
    print({ type: 'request', turn: 1, messages: 1, estimatedTokens: 900 });
    t.mock.timers.tick(250);
    assert.equal(text(), '', 'a short wait shows nothing, so a fast answer does not flicker');
    t.mock.timers.tick(250);
    assert.match(text(), /waiting for the model · 0 s$/);
    print({ type: 'text', delta: 'Done.\n' });
    print(finalReply);
    // What the status line shows now: the text after its last redraw.
    const shown = () => text().split('\r\x1b[K').at(-1);
    let seen = shown();
    for (let ms = 0; ms < 20_000; ms += 250) {
      t.mock.timers.tick(250);
      if (ms >= 500) assert.notEqual(shown(), seen, `the screen did not change at ${ms} ms`);
      seen = shown();
    }
    assert.match(text(), /checking "done": sleep 20 · 20 s$/);
    print({ type: 'halt', halt: { kind: 'interrupted' }, turns: 1 });
    assert.match(text(), /\r\x1b\[Khalt: interrupted after 1 turn\(s\)\n$/, 'the status line is gone before the halt');
    const after = text();
    t.mock.timers.tick(5_000);
    assert.equal(text(), after, 'and it stays gone');
  });

  test('piped output gets no status line: only whole lines, as a log should be', (t) => {
    t.mock.timers.enable({ apis: ['setInterval', 'Date'] });
    const { out, text } = screen(false);
    const print = terminalPrinter(out, { verify: 'sleep 20' });
    print({ type: 'request', turn: 1, messages: 1, estimatedTokens: 900 });
    print(finalReply);
    t.mock.timers.tick(5_000);
    print({ type: 'halt', halt: { kind: 'interrupted' }, turns: 1 });
    assert.equal(text(), '  [turn 1 · in 10 (0% cached) · out 5 · cost unknown]\nhalt: interrupted after 1 turn(s)\n');
  });

  test("the model's thinking is shown dimmed as it streams, on lines of its own before the reply's text", () => {
    const { out, text } = screen(true);
    const print = terminalPrinter(out);
    print({ type: 'thinking', delta: 'The sum is ' });
    print({ type: 'thinking', delta: 'wrong.' });
    print({ type: 'text', delta: 'Fixed.' });
    const dim = (thought: string) => (colourOn(out) ? styleText('dim', thought) : thought);
    assert.ok(text().includes(`${dim('The sum is ')}${dim('wrong.')}\nFixed.`), JSON.stringify(text()));
  });

  test('the view says what happened: a reply cut off at max_tokens, and what an edit changed (not its size)', () => {
    const { out, lines } = screen(false);
    const print = terminalPrinter(out);
    const edit = { type: 'tool_use', id: 'e', name: 'edit_file', input: {}, caller: { type: 'direct' } } as const;
    const summary = 'edited add.js: replaced 1 line(s) at line 2 with 1 line(s)';
    print({ ...finalReply, stopReason: 'max_tokens', calls: 2 } as AgentEvent);
    print({ type: 'result', call: edit, result: { type: 'tool_result', tool_use_id: 'e', content: summary } });
    print({ type: 'result', call: edit, result: { type: 'tool_result', tool_use_id: 'e', content: '1 a\n2 b\n3 c' } });
    assert.deepEqual(lines(), [
      '  (cut off at the output limit; its 2 call(s) will not run: the model is asked to go on)',
      '  [turn 1 · in 10 (0% cached) · out 5 · cost unknown]',
      `  ✓ ${summary}`,
      '  ✓ 3 lines: 1 a',
    ]);
  });
});

describe('usage errors', () => {
  test('an empty task is a usage error, not a request the API would refuse', async (t) => {
    const printed = t.mock.method(console, 'error', () => {});
    assert.equal(await main(['   '], { ANTHROPIC_API_KEY: 'k' }), EXIT.usage);
    assert.match(String(printed.mock.calls[0]!.arguments[0]), /the task is empty/);
  });

  test('--max-cost refuses a sub-agent model without a price, which would make the cost unknown mid-run', async (t) => {
    const printed = t.mock.method(console, 'error', () => {});
    const args = ['--max-cost', '1', '--model', 'claude-sonnet-4-5', '--task-model', 'some-local-model', 'task'];
    assert.equal(await main(args, { ANTHROPIC_API_KEY: 'k' }), EXIT.usage);
    assert.match(String(printed.mock.calls[0]!.arguments[0]), /some-local-model has none: add it to the price table/);
  });
});

describe('a malformed --script', () => {
  test('is one usage line naming the file and where it is wrong, not a JSON parser or validator report', async (t) => {
    const root = await tempProject(t, {
      'typo.json': '[{"content": [{"type": "txt", "text": "hi"}]}]',
      'broken.json': '[\n  {"content": []},\n  {"content": [] x\n]',
      'object.json': '{"content": []}',
    });
    const printed = t.mock.method(console, 'error', () => {});
    const said = async (file: string) => {
      assert.equal(await main(['--script', path.join(root, file), 'task'], {}), EXIT.usage);
      return unwrapped(String(printed.mock.calls.at(-1)!.arguments[0])).replace(`${root}/`, '');
    };
    assert.equal(
      await said('typo.json'),
      'harness: --script typo.json is not a script of replies: at [0].content[0].type: Invalid discriminator value. ' +
        "Expected 'text' | 'tool_use' | 'thinking' (see --help)",
    );
    assert.equal(
      await said('broken.json'),
      "harness: --script broken.json is not valid JSON: Expected ',' or '}' after property value (line 3, column 18) " +
        '(see --help)',
    );
    assert.match(
      await said('object.json'),
      /^harness: --script object\.json is not a script of replies: the file: .*array/,
    );
    assert.equal(await said('missing.json'), 'harness: --script missing.json: no such file (see --help)');
  });
});

describe('--price', () => {
  test('--max-cost works on a model the price table does not know once --price gives its price: a cost halt after turn 1', async (t) => {
    const root = await tempProject(t);
    const listFiles = {
      type: 'tool_use',
      id: 'toolu_1',
      name: 'list_files',
      input: {},
      caller: { type: 'direct' },
    } as const;
    const api = await startFakeApi([{ kind: 'reply', message: fakeMessage([listFiles], 'tool_use') }]);
    t.after(() => api.close());
    const env = { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: api.baseURL };
    // The default model: 100 tokens in and 20 out at $3 and $15 a million is $0.0006, over the $0.0001 budget.
    const { status, stdout } = await runCli(['--root', root, '--max-cost', '0.0001', '--price', '3,15', 'list'], env);
    assert.match(
      stdout,
      /halt: budget \(cost: the limit of \$0\.0001 was reached; spent \d+ tokens, \$0\.\d+\) after 1 turn/,
    );
    assert.match(stdout, /\[turn 1 · in 100 \(0% cached\) · out 20 · \$0\.0006\]/);
    assert.equal(status, EXIT.notAccepted);
    assert.equal(api.requests.filter((r) => r.path === '/v1/messages').length, 1);
  });

  test('--max-cost without a known price is refused and names --price, rather than a budget that can never trip', async (t) => {
    const printed = t.mock.method(console, 'error', () => {});
    const args = ['--max-cost', '1', '--model', 'my-local-model', 'task'];
    assert.equal(await main(args, { ANTHROPIC_API_KEY: 'k' }), EXIT.usage);
    assert.match(String(printed.mock.calls[0]!.arguments[0]), /my-local-model has none: give one with --price IN,OUT/);
  });

  test('--max-cost 1 works with the default model and no --price: it is in the price table, so the run goes ahead', async (t) => {
    const root = await tempProject(t);
    const api = await startFakeApi([{ kind: 'reply', message: fakeMessage([text('Done.')]) }]);
    t.after(() => api.close());
    const env = { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: api.baseURL };
    const { status, stdout } = await runCli(['--root', root, '--max-cost', '1', 'say done'], env);
    assert.equal(status, EXIT.accepted, stdout);
    assert.equal((api.requests.find((r) => r.path === '/v1/messages')?.body as { model: string }).model, DEFAULT_MODEL);
    // 100 tokens in and 20 out at the table's $2 and $10 a million.
    assert.match(stdout, /\[turn 1 · in 100 \(0% cached\) · out 20 · \$0\.0004\]/);
    assert.match(stdout, /^model: claude-sonnet-5-5 \(\$2 in, \$10 out per million tokens\)/m);
  });

  test('a malformed --price is one usage line, not a price of NaN', async (t) => {
    const printed = t.mock.method(console, 'error', () => {});
    for (const bad of ['3', '3,x', '-1,2', '3,15,1', ',']) {
      assert.equal(await main([`--price=${bad}`, 'task'], { ANTHROPIC_API_KEY: 'k' }), EXIT.usage);
      assert.match(String(printed.mock.calls.at(-1)!.arguments[0]), /--price needs IN,OUT/);
    }
  });
});

describe('one options table', () => {
  test('--help lists every option of the table, so help and parser cannot drift apart', async () => {
    const { status, stdout } = await runCli(['--help']);
    assert.equal(status, EXIT.accepted);
    for (const name of Object.keys(OPTIONS))
      assert.match(stdout, new RegExp(`--${name}\\b`), `--${name} is not in --help`);
  });

  test("the bin's quick --help (help.txt, no TypeScript loaded) is what helpText() prints, so it cannot go stale", async () => {
    const helpFile = path.join(import.meta.dirname, '..', 'help.txt');
    const fix = 'app/help.txt is stale: `npm run --workspace app help.txt` writes it again';
    assert.equal(await readFile(helpFile, 'utf8'), `${helpText()}\n`, fix);
    const bin = path.join(import.meta.dirname, '..', 'bin.mjs');
    for (const flag of ['--help', '-h']) {
      const run = spawnSync(process.execPath, [bin, flag], { encoding: 'utf8' });
      assert.equal(run.status, 0, run.stderr);
      assert.equal(run.stdout, `${helpText()}\n`);
    }
  });

  test("a tsconfig.json the project plants does not steer the program's own imports: started from inside it, the bin loads its own code", async (t) => {
    const root = await tempProject(t, {
      // What a model could write: "paths" that send the program's own `import 'diff'` and `import 'zod'` here.
      'tsconfig.json': JSON.stringify({
        compilerOptions: { baseUrl: '.', paths: { diff: ['./evil.ts'], zod: ['./evil.ts'] } },
      }),
      'evil.ts': "import { writeFileSync } from 'node:fs';\nwriteFileSync('RAN', 'x');\nexport const z = {};\n",
    });
    const bin = path.join(import.meta.dirname, '..', 'bin.mjs');
    const run = spawnSync(process.execPath, [bin, '--no-such-flag'], { cwd: root, encoding: 'utf8' });
    assert.deepEqual(
      [run.status, run.stderr.split('\n')[0]],
      [EXIT.usage, 'harness: unknown option --no-such-flag (a task starting with "-" goes after --) (see --help)'],
    );
    assert.equal(existsSync(path.join(root, 'RAN')), false);
  });

  test("app/README.md's options table names exactly the parser's options, so the docs cannot promise a missing flag", async () => {
    const readme = await readFile(path.join(import.meta.dirname, '..', 'README.md'), 'utf8');
    const documented = [...readme.matchAll(/^\| `--([a-z-]+)[^`]*` \|/gm)].map((match) => match[1]);
    const parsed = Object.keys(OPTIONS).filter((name) => name !== 'help');
    assert.deepEqual([...documented].sort(), [...parsed].sort());
  });

  test('an unknown flag is one usage line, not a stack trace', async () => {
    const { status } = await runCli(['--no-such-flag']);
    assert.equal(status, EXIT.usage);
  });

  test("a mistake on the command line is one line in --help's terms, with balanced quotes, not parseArgs' three", async (t) => {
    const printed = t.mock.method(console, 'error', () => {});
    const said = async (args: string[]) => {
      assert.equal(await main(args, { ANTHROPIC_API_KEY: 'k' }), EXIT.usage);
      return String(printed.mock.calls.at(-1)!.arguments[0]);
    };
    const unknown = await said(['--no-such-flag']);
    assert.equal(
      unknown,
      'harness: unknown option --no-such-flag (a task starting with "-" goes after --) (see --help)',
    );
    assert.equal(await said(['--root']), 'harness: --root needs a value: --root DIR (see --help)');
    assert.equal(
      await said(['--max-turns', '-3']),
      'harness: --max-turns needs a value; one that starts with "-" is written --max-turns=N (see --help)',
    );
    assert.equal(await said(['--yes=no']), 'harness: --yes takes no value (see --help)');
    for (const line of printed.mock.calls.map((c) => String(c.arguments[0]))) {
      assert.doesNotMatch(line, /\n/);
      assert.equal((line.match(/"/g) ?? []).length % 2, 0, `unbalanced quotes: ${line}`);
      assert.equal((line.match(/'/g) ?? []).length % 2, 0, `unbalanced quotes: ${line}`);
    }
  });
});

describe('what the terminal shows', () => {
  const usage = (input: number, output: number) => ({ input_tokens: input, output_tokens: output }) as Anthropic.Usage;
  const edit = (input: unknown) =>
    ({ type: 'tool_use', id: 'e', name: 'edit_file', input, caller: { type: 'direct' } }) as const;
  const edited = {
    type: 'tool_result',
    tool_use_id: 'e',
    content: 'edited add.js: replaced 1 line(s) at line 2',
  } as const;

  test('a tool call reads as a person would say it, not as its JSON cut at 80 characters', async (t) => {
    const { agent } = await scriptedAgent(await tempProject(t), []);
    assert.equal(describeCall('read_file', { path: 'add.js', offset: 1, limit: 40 }), 'read_file add.js (lines 1–40)');
    assert.equal(describeCall('read_file', { path: 'add.js', offset: 120 }), 'read_file add.js (from line 120)');
    assert.equal(describeCall('read_file', { path: 'add.js' }), 'read_file add.js');
    assert.equal(describeCall('edit_file', { path: 'add.js', old_str: 'a', new_str: 'b' }), 'edit_file add.js');
    assert.equal(describeCall('edit_file', { path: 'new.js', old_str: '', new_str: 'b' }), 'edit_file new.js (new)');
    assert.equal(describeCall('list_files', { path: 'src' }), 'list_files src/');
    assert.equal(describeCall('list_files', {}), 'list_files .');
    const task = { description: 'find the loader', prompt: '…' };
    assert.equal(describeCall('task', task, agent.config.tools), 'task "find the loader"');
    assert.equal(describeCall('read_file', { offset: 'x' }), 'read_file offset=x', 'arguments it cannot take');
  });

  test('an edit that was not asked about (--yes) shows as a compact diff of what it replaced; one asked about is not shown twice', () => {
    const { out, lines } = screen(false);
    const print = terminalPrinter(out);
    const input = { path: 'add.js', old_str: '  // adds\n  return a - b;', new_str: '  // adds\n  return a + b;' };
    print({ type: 'call', call: edit(input) });
    print({ type: 'result', call: edit(input), result: edited });
    assert.deepEqual(lines().slice(1), [
      '       // adds',
      '    -  return a - b;',
      '    +  return a + b;',
      '  ✓ edited add.js: replaced 1 line(s) at line 2',
    ]);
    const asked = screen(false);
    const printAsked = terminalPrinter(asked.out);
    printAsked({ type: 'call', call: edit(input) });
    printAsked({ type: 'approval', tool: 'edit_file', preview: '(the diff)', answer: { approved: true }, callId: 'e' });
    printAsked({ type: 'result', call: edit(input), result: edited });
    assert.deepEqual(asked.lines(), ['→ edit_file add.js', '  ✓ edited add.js: replaced 1 line(s) at line 2']);
  });

  test('a big edit is cut to a few lines, with a count of the rest, so it never floods the screen', () => {
    const before = Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n');
    const diff = compactDiff(before, before.replaceAll('line', 'LINE'));
    assert.equal(diff.length, 16);
    assert.equal(diff.at(-1), '… 65 more lines');
    assert.deepEqual(compactDiff('', 'new file\n'), ['+new file'], 'a new file is all added lines');
  });

  test("a failing check's last lines show under the verdict, without its colours or redraws; a passing one's do not", () => {
    const { out, lines } = screen(false);
    const print = terminalPrinter(out);
    const output = `${Array.from({ length: 30 }, (_, i) => `ok ${i}`).join('\n')}\n\x1b[31mFAIL\x1b[39m add\r\n50%\r100%\n\n`;
    const check = { type: 'gate', command: 'npm test', sandboxed: true } as const;
    print({ ...check, exitCode: 1, passed: false, reason: 'exited with code 1', output });
    print({ ...check, exitCode: 0, passed: true, reason: 'exited with code 0', output: 'ok' });
    assert.deepEqual(lines(), [
      'gate: `npm test` exited with code 1: not done',
      ...Array.from({ length: 8 }, (_, i) => `  │ ok ${i + 22}`),
      '  │ FAIL add',
      '  │ 100%',
      'gate: `npm test` exited with code 0: pass',
    ]);
  });

  test("the footer shows this turn's tokens and cost, not the session's running total; numbers have separators", () => {
    const { out, lines } = screen(false);
    const price = { input: 2, output: 10 };
    const print = terminalPrinter(out, { price });
    const reply = (turn: number, used: Anthropic.Usage, total: number): AgentEvent => ({
      type: 'reply',
      turn,
      stopReason: 'tool_use',
      calls: 1,
      content: [],
      usage: used,
      totals: { input: total, cacheWrite: 0, cacheRead: 0, output: 0, costUsd: 1 },
    });
    print(reply(1, usage(120_000, 2_000), 122_000));
    print(reply(2, usage(1_000, 10), 123_010));
    assert.deepEqual(lines(), [
      '  [turn 1 · in 120,000 (0% cached) · out 2,000 · $0.2600]',
      '  [turn 2 · in 1,000 (0% cached) · out 10 · $0.0021]',
    ]);
  });

  test('streamed markdown is drawn in whole blocks: a block ends at a blank line, but not inside a code fence', () => {
    const blocks = new MarkdownBlocks();
    const deltas = ['## Do', 'ne\n\nFixed **la', 'yout**.\n\n```js\nconst a = 1;\n\nconst b', ' = 2;\n```\n\n', 'Bye'];
    const got = deltas.flatMap((delta) => blocks.add(delta));
    const code = '```js\nconst a = 1;\n\nconst b = 2;\n```';
    assert.deepEqual(got, ['## Done', '', 'Fixed **layout**.', '', code, '']);
    assert.deepEqual(blocks.end(), ['Bye']);
    assert.deepEqual(blocks.end(), [], 'and nothing twice');
  });

  test("piped, the model's markdown is printed as it wrote it: no colour codes in a log", async (t) => {
    const root = await tempProject(t, { 'script.json': JSON.stringify([say('## Done\n\nFixed **layout**.')]) });
    const { stdout } = await runCli(['--root', root, '--script', path.join(root, 'script.json'), 'fix']);
    assert.match(stdout, /^## Done\n\nFixed \*\*layout\*\*\.\n/m);
    assert.doesNotMatch(stdout, /\x1b/);
  });

  test('a long line is wrapped at spaces within the width, its continuations indented', () => {
    assert.deepEqual(wrap('  ✓ one two three four', 12, '  '), ['  ✓ one two', '    three', '    four']);
    assert.ok(
      wrap('x'.repeat(250), 100).every((line) => line.length <= 100),
      'a word longer than a line is cut',
    );
  });
});

describe('the command line a person meets', () => {
  test('every line of --help and of the missing-key error fits 100 columns', async (t) => {
    const { stdout } = await runCli(['--help']);
    for (const line of stdout.split('\n')) assert.ok(line.length <= 100, `${line.length}: ${line}`);
    const printed = t.mock.method(console, 'error', () => {});
    assert.equal(await main(['fix it'], {}), EXIT.usage);
    const said = String(printed.mock.calls[0]!.arguments[0]);
    assert.match(said, /^harness: ANTHROPIC_API_KEY is not set; to run offline: --script FILE, or `npm start`/);
    for (const line of said.split('\n')) assert.ok(line.length <= 100, `${line.length}: ${line}`);
  });

  test("--version prints package.json's version and exits 0", async () => {
    const { version } = JSON.parse(await readFile(path.join(import.meta.dirname, '..', 'package.json'), 'utf8'));
    assert.deepEqual(await runCli(['--version']), { status: EXIT.accepted, stdout: `harness ${version}\n` });
  });

  test('a mistyped flag is answered with the flag it most likely meant, and a wild one with none', async (t) => {
    assert.equal(nearestOption('--verfy'), 'verify');
    assert.equal(nearestOption('--max_cost'), 'max-cost');
    assert.equal(nearestOption('--jsn'), 'json');
    assert.equal(nearestOption('--x'), undefined);
    assert.equal(nearestOption('--frobnicate'), undefined);
    const printed = t.mock.method(console, 'error', () => {});
    assert.equal(await main(['--verfy', 'npm test', 'fix'], {}), EXIT.usage);
    assert.equal(
      String(printed.mock.calls[0]!.arguments[0]),
      'harness: unknown option --verfy; did you mean --verify? (see --help)',
    );
  });

  test('every error the program reports has one prefix, "harness:": an export or a resume of a missing file too', async (t) => {
    const root = await tempProject(t);
    const printed = t.mock.method(console, 'error', () => {});
    const missing = path.join(root, 'gone.jsonl');
    assert.equal(await main(['--export', missing], {}), EXIT.usage);
    assert.equal(await main(['--root', root, '--script', missing, '--resume', missing, 'x'], {}), EXIT.usage);
    const said = printed.mock.calls.map((call) => String(call.arguments[0]).replace(/\n  /g, ' '));
    assert.equal(said.length, 2);
    assert.match(said[0]!, /^harness: --export: cannot read .*gone\.jsonl: no such file/);
    assert.match(said[1]!, /^harness: --resume: .*gone\.jsonl cannot be resumed: no such file/); // before the model
  });
});

describe('prices', () => {
  test('the default model has a price, so --max-cost works out of the box; the table says when it was checked', () => {
    assert.ok(priceOf({ name: DEFAULT_MODEL }), `${DEFAULT_MODEL} is not in the price table`);
    assert.deepEqual(
      priceOf({ name: `${DEFAULT_MODEL}-20261001` }),
      priceOf({ name: DEFAULT_MODEL }),
      'dated names too',
    );
    assert.equal(priceOf({ name: 'my-local-model' }), undefined);
    assert.match(PRICES_CHECKED, /^\d{4}-\d{2}-\d{2}$/);
  });
});

test('--system-prompt FILE replaces the harness system prompt, AGENTS.md still after it; a missing file is a one-line error', async (t) => {
  const root = await tempProject(t, { 'prompt.md': 'You are a careful reviewer.\n', 'AGENTS.md': 'Use tabs.\n' });
  const file = path.join(root, 'prompt.md');
  const options = parseCli(['--root', root, '--system-prompt', file, '--script', 'x.json', 'go'], {});
  assert.equal(options.systemPrompt, 'You are a careful reviewer.\n');
  const model = new ScriptedModel([]);
  const agent = await createAgent(
    configFromCli(options, { root, model, taskModel: undefined, approve: null }, () => {}),
  );
  assert.match(agent.system[0]!.text, /^You are a careful reviewer\.\n[\s\S]*Use tabs\./);
  assert.throws(
    () => parseCli(['--system-prompt', path.join(root, 'none.md'), 'go'], {}),
    (error: unknown) => error instanceof Error && /^--system-prompt \S+: ENOENT/.test(error.message),
  );
});

test('--thinking N gives the real model a thinking budget; under the API minimum of 1024 it is a usage error, not a 400 every turn', async () => {
  assert.equal(parseCli(['--thinking', '4096', 'go'], {}).thinking, 4096);
  assert.equal(parseCli(['go'], {}).thinking, undefined);
  for (const bad of ['1000', '0', 'lots', '2048.5'])
    assert.throws(
      () => parseCli(['--thinking', bad, 'go'], {}),
      (error: unknown) => error instanceof UsageError && /^--thinking needs/.test(error.message),
      bad,
    );
});
