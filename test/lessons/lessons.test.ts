// The lesson commands: `--check FILE` (the stories against a learner's harness), the offline demo's (`npm start`)
// parts, the example project, and the scripted delay that lets lesson P3's Ctrl-C and steering be practised
// offline. `npm run lesson -- pN` (the stories through agent.ts on its defaults, traced) and a whole demo run start
// the OS sandbox or a program: test/lessons/lesson-commands.check.ts, in test:all. The acceptance of every harness
// is test/lessons/acceptance.test.ts; the "break it" exercises are checked by test/lessons/break-it.check.ts.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import * as demo from '../../lessons/demo.ts';
import { runLesson } from '../../lessons/run.ts';
import { playStory, STORIES } from '../../lessons/stories.ts';
import * as agentTs from '../../agent.ts';
import { type Halt, runTask } from '../../agent.ts';
import { loadScript, say, ScriptedModel, type ScriptedReply } from '../../scripted-model.ts';
import { scriptedAgent, tempProject, within } from '../helpers.ts';

/** Collects what a command writes; `isTTY` makes the stream look like a terminal. */
function sink(isTTY = false): { out: PassThrough & { isTTY?: boolean }; text: () => string } {
  const out: PassThrough & { isTTY?: boolean } = new PassThrough();
  if (isTTY) out.isTTY = true;
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  return { out, text: () => Buffer.concat(chunks).toString('utf8') };
}

async function lesson(args: string[], timeoutMs?: number): Promise<{ code: number; output: string }> {
  const { out, text } = sink();
  const code = await runLesson(args, out, timeoutMs);
  return { code, output: text() };
}

const STACK_TRACE = /^\s+at .*:\d+:\d+\)?$/m;

test("the AGENTS.md story fails a harness whose requests do not carry the project's rule", async () => {
  const story = STORIES.find((s) => s.name === "the project's AGENTS.md reaches the model")!;
  const failure = await playStory(agentTs, { ...story, options: () => ({ contextFiles: false }) });
  assert.match(String(failure), /^the system prompt of request 1 did not carry the rule of the project's AGENTS\.md/);
});

test('an unknown lesson or a stray argument is a usage error, not a crash', async () => {
  for (const args of [['p9'], [], ['p1', 'p2'], ['p1', '--check'], ['p1', '--verbose']]) {
    const { code, output } = await lesson(args);
    assert.equal(code, 2, args.join(' '));
    assert.match(
      output,
      /usage: npm run lesson -- <p0\|p1\|p2\|p3\|p4> \[--check FILE \[--seed N\] \[--stories-only\]\]/,
    );
  }
});

describe('--check FILE: what a learner sees (the acceptance of our own harnesses is test/lessons/acceptance.test.ts)', () => {
  test('a P1 harness checked for P2 fails the gate story: no gate, and no stack trace', async () => {
    const { code, output } = await lesson(['p2', '--check', 'lessons/p1.ts']);
    assert.equal(code, 1);
    assert.match(
      output,
      /^FAIL {2}p2 {2}the gate\n {8}expected: .+\n {8}happened: claimed done while the test fails: no gate/m,
    );
    assert.match(output, /13 of 19 stories pass: lessons\/p1\.ts does not reach p2 yet/);
    assert.doesNotMatch(output, STACK_TRACE);
  });

  test('a file missing, not loading where it is, or without its entry points: one line, exit code 2', async (t) => {
    const root = await tempProject(t, {
      'broken.ts': 'export function createAgent( {\n',
      'empty.ts': 'export const createAgent = () => ({ messages: [] });\n',
      'zod.ts': "import { z } from 'zod';\nexport const createAgent = () => z;\n",
      'needs-tools.ts': "import { TOOLS } from './tools.ts';\nexport const createAgent = () => TOOLS;\n",
    });
    const atTheRoot = `put it at the root of this repository, next to agent\\.ts \\(e\\.g\\. .*mine\\.ts\\)`;
    for (const [file, reason] of [
      [path.join(root, 'missing.ts'), /: no such file$/],
      [path.join(root, 'broken.ts'), /: the file does not load: .*broken\.ts:\d+:\d+: ERROR: /],
      [path.join(root, 'empty.ts'), /: it does not export runTask as a function \(see lessons\/build\.md\)$/],
      [
        path.join(root, 'zod.ts'),
        new RegExp(`'zod'\\. zod is installed in this repository's node_modules.*${atTheRoot}$`),
      ],
      [
        path.join(root, 'needs-tools.ts'),
        new RegExp(`It imports \\./tools\\.ts, looked for in .*: ${atTheRoot}, where`),
      ],
    ] as const) {
      const { code, output } = await lesson(['p0', '--check', file], 100);
      assert.equal(code, 2, output);
      assert.equal(output.trim().split('\n').length, 1, output);
      assert.match(output.trim(), reason);
    }
  });

  test("the learner's exceptions and hangs are one line per story", async (t) => {
    const root = await tempProject(t);
    const file = path.join(root, 'harness.ts');
    await writeFile(
      file,
      [
        'export const createAgent = () => ({ messages: [] });',
        'let calls = 0;',
        'export async function runTask() {',
        '  if (calls++ === 0) throw new TypeError(\'Cannot read properties of undefined (reading "content")\');',
        '  return new Promise(() => {});',
        '}',
      ].join('\n'),
    );
    const { code, output } = await lesson(['p0', '--check', file], 100);
    assert.equal(code, 1);
    assert.match(output, /happened: runTask threw: Cannot read properties of undefined \(reading "content"\): /);
    assert.match(output, /happened: runTask did not return within 0.1 s/);
    assert.doesNotMatch(output, STACK_TRACE);
  });
});

describe('the offline demo (npm start)', () => {
  test('a line too long for the demo is wrapped at spaces, and a word too long for a line is cut', () => {
    assert.deepEqual(demo.wrapped('aaa bbb ccc', 7), ['aaa bbb', 'ccc']);
    assert.deepEqual(demo.wrapped('a bbbbbbbbbb', 4), ['a', 'bbbb', 'bbbb', 'bb']);
    assert.deepEqual(demo.wrapped(''), []);
  });

  test('a demo that did not go as scripted says why', () => {
    const run = (halt: Halt, testReallyPasses: boolean): demo.StoryRun => ({
      halt,
      turns: 5,
      steps: [],
      testReallyPasses,
    });
    const accepted: Halt = { kind: 'accepted', verifiedBy: null };
    assert.deepEqual(demo.demoProblems(run(accepted, false), run(accepted, true)), []);
    assert.deepEqual(demo.demoProblems(run(accepted, true), run({ kind: 'interrupted' }, false)), [
      'the test passed in the trusting run, so the project was not pristine',
      'the verifying harness halted interrupted',
      'the test still fails after the verifying run',
    ]);
  });

  test('colour only on a terminal without NO_COLOR', () => {
    assert.match(demo.painter({ isTTY: true }, {})('green', 'ACCEPTED'), /^\x1b\[32mACCEPTED/);
    assert.equal(demo.painter({ isTTY: true }, { NO_COLOR: '1' })('green', 'ACCEPTED'), 'ACCEPTED');
    assert.equal(demo.painter({}, {})('green', 'ACCEPTED'), 'ACCEPTED');
  });
});

test('lessons/example, as committed, is the pristine project the demo and the stories write', () => {
  const repo = path.join(import.meta.dirname, '..', '..');
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' });
  const committed = git('ls-tree', '--name-only', 'HEAD', 'lessons/example/').trim().split('\n');
  assert.deepEqual(
    committed,
    Object.keys(demo.EXAMPLE_FILES)
      .map((name) => `lessons/example/${name}`)
      .sort(),
  );
  for (const [name, content] of Object.entries(demo.EXAMPLE_FILES))
    assert.equal(git('show', `HEAD:lessons/example/${name}`), content, name);
});

const noop = () => {};
const request = { messages: [{ role: 'user' as const, content: 'hi' }] };

/** A reply that takes a minute the first time it is asked for, and no time after that. */
function slowOnce(said: string): () => ScriptedReply {
  let asked = 0;
  return () => ({ ...say(said), delayMs: asked++ === 0 ? 60_000 : 0 });
}

describe('scripted replies that take their time: Ctrl-C and steering, practised offline (P3)', () => {
  test('a scripted delay waits before the reply arrives', async () => {
    const model = new ScriptedModel([{ ...say('thought about it'), delayMs: 30 }]);
    const started = performance.now();
    const reply = await model.complete(request, { signal: new AbortController().signal, onText: noop, onNotice: noop });
    assert.ok(performance.now() - started >= 25, 'answered before the delay was over');
    assert.deepEqual(reply.content, [{ type: 'text', text: 'thought about it', citations: null }]);
  });

  test('an abort ends a scripted delay at once, like a real call; the next request gets the reply', async () => {
    const model = new ScriptedModel([slowOnce('the answer')]);
    const controller = new AbortController();
    const pending = model.complete(request, { signal: controller.signal, onText: noop, onNotice: noop });
    controller.abort();
    await within(assert.rejects(pending, { name: 'AbortError' }), 'the aborted call', 1_000);
    const next = await model.complete(request, { signal: new AbortController().signal, onText: noop, onNotice: noop });
    assert.deepEqual(next.content, [{ type: 'text', text: 'the answer', citations: null }]);
  });

  test('Ctrl-C during a slow scripted reply halts interrupted, and "keep going" gets that reply', async (t) => {
    const root = await tempProject(t);
    const { agent, model } = await scriptedAgent(root, [slowOnce('Done thinking.')]);
    const controller = new AbortController();
    const running = runTask(agent, 'think hard', controller.signal);
    setImmediate(() => controller.abort());
    assert.deepEqual(await within(running, 'the interrupted run', 1_000), { kind: 'interrupted' });
    assert.deepEqual(await runTask(agent, 'keep going'), { kind: 'accepted', verifiedBy: null });
    assert.equal(model.requests.length, 2);
    assert.deepEqual(agent.messages.at(-1), {
      role: 'assistant',
      content: [{ type: 'text', text: 'Done thinking.', citations: null }],
    });
  });

  test('delay_ms in a script file becomes delayMs: lessons/scripts/slow-story.json takes its time', async () => {
    const script = await loadScript(
      path.join(import.meta.dirname, '..', '..', 'lessons', 'scripts', 'slow-story.json'),
    );
    assert.ok(script.length > 0);
    for (const reply of script) assert.ok((reply.delayMs ?? 0) >= 1_000, JSON.stringify(reply));
  });
});
