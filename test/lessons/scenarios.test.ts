// The differential check on a few scenarios written by hand (the generated runs, and over 80 mistakes, are in
// generated-mistakes.check.ts): what it compares, what it blames, and how a failure reads.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as p1 from '../../lessons/p1.ts';
import * as p2 from '../../lessons/p2.ts';
import { difference, type Reply, type Scenario, SEED, stepOf, story } from '../../lessons/scenarios.ts';
import type { Harness } from '../../lessons/stories.ts';
import type { ToolContext } from '../../tools.ts';

const say = (text: string): Reply => ({ blocks: [{ type: 'text', text }], cut: false, fails: false });
const peek = (file: string): Reply => ({
  blocks: [{ type: 'call', name: 'peek', input: { path: file }, step: 'p2' }],
  cut: false,
  fails: false,
});
const scenario = (replies: Reply[], more: Partial<Scenario> = {}): Scenario => ({
  stage: 'p2',
  tasks: ['Make add(2, 3) return 5.'],
  replies,
  loop: null,
  subReplies: [],
  subLoop: 0,
  verify: null,
  approvals: null,
  protect: false,
  contextWindow: null,
  agentsMd: 'none',
  rootThroughLink: false,
  ...more,
});

test("a stage's reference played twice does not differ from itself", async () => {
  assert.equal(await difference(p2, scenario([peek('add.js'), say('Looking.')], { verify: 'fails' })), null);
});

test("a P1 harness on a P2 scenario runs the call into the project's sibling: blamed on step 3, P2", async () => {
  const found = await difference(p1 as Harness, scenario([peek('../project-private/secret.txt')]));
  assert.deepEqual(found, {
    what: 'task 1: the calls that ran',
    reference: 'none',
    learner: 'peek {"path":"../project-private/secret.txt"}',
    see: 'p2',
  });
});

test('a harness without a gate differs first in the halt: accepted where the check fails', async () => {
  const found = await difference(p1 as Harness, scenario([say('Looking.')], { verify: 'fails' }));
  assert.deepEqual(found, {
    what: 'task 1: the halt',
    reference: 'stopped (error or interrupted)',
    learner: 'accepted, unverified',
    see: 'p2',
  });
});

test('a request the API would refuse is blamed on the step that teaches its rule', async () => {
  // A harness that sends the transcript without its results: its model sees calls nobody answered.
  const withoutResults: Harness = {
    createAgent: (config) =>
      p2.createAgent({
        ...config,
        model: {
          name: config.model.name,
          complete: (request, options) =>
            config.model.complete(
              {
                ...request,
                messages: request.messages.filter((m) => m.role === 'assistant' || m === request.messages[0]),
              },
              options,
            ),
        },
      }),
    runTask: (agent, task, signal) => p2.runTask(agent as p2.Agent, task, signal),
  };
  const echo: Reply = {
    blocks: [{ type: 'call', name: 'echo', input: { text: 'hi' }, step: 'p1' }],
    cut: false,
    fails: false,
  };
  const found = await difference(withoutResults, scenario([echo, peek('../secret.txt')]));
  assert.equal(found?.what, 'task 1: the first request the API would refuse');
  assert.match(found?.learner ?? '', /^request 2, refused by the API: tool_use ids were found without tool_result/);
  assert.equal(found?.see, 'p1');
});

test("a harness that runs its tools without the task's signal differs: Ctrl-C would not reach them", async () => {
  const deaf: Harness = {
    createAgent: (config) =>
      p2.createAgent({
        ...config,
        tools: config.tools.map((tool) => ({
          ...tool,
          run: (input: unknown, { signal: _ignored, ...context }: ToolContext) => tool.run(input, context),
        })),
      }),
    runTask: (agent, task, signal) => p2.runTask(agent as p2.Agent, task, signal),
  };
  assert.deepEqual(await difference(deaf, scenario([peek('add.js')])), {
    what: "task 1: calls that Ctrl-C would not reach (no signal, or not the task's)",
    reference: '0',
    learner: '1',
    see: 'p1',
  });
});

test('the step a scenario belongs to is the latest whose feature it uses', () => {
  assert.equal(stepOf(scenario([say('Done.')])), 'p0');
  assert.equal(stepOf(scenario([peek('add.js')])), 'p2');
  assert.equal(stepOf(scenario([{ ...say('Done.'), cut: true }])), 'p3');
  assert.equal(stepOf(scenario([say('Done.')], { contextWindow: 20_000 })), 'p4');
});

test('a failure reads as a story: the scenario, both behaviours, the step of build.md and the seed', () => {
  const told = story(
    {
      stage: 'p2',
      scenarios: 7,
      seed: SEED,
      failure: {
        scenario: scenario([peek('link-out')], { verify: 'long-output' }),
        difference: { what: 'task 1: the calls that ran', reference: 'none', learner: 'peek', see: 'p2' },
        path: '6:0',
        shrinks: 3,
      },
    },
    'mine.ts',
  );
  assert.equal(
    told,
    [
      'FAIL  p2  generated scenario (seed 49; shrunk in 3 steps to the smallest that shows it)',
      '        task 1: "Make add(2, 3) return 5."',
      '        reply 1: peek {"path":"link-out"}',
      '        then: "Done: add(2, 3) is 5."; after that every model call fails',
      '        verify: echo HEAD""-MARK; seq 1 9000; echo TAIL""-MARK; exit 1 (long-output)',
      '        differs:  task 1: the calls that ran',
      '        reference (lessons/p2.ts): none',
      '        yours:    peek',
      '        see:      lessons/build.md, "Step 3: P2, three tools and the gate"',
      '        replay:   npm run lesson -- p2 --check mine.ts --seed 49',
    ].join('\n'),
  );
});
