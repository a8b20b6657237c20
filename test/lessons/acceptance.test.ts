// One acceptance suite over every harness, the way a learner's is checked: `npm run lesson -- pN --check
// FILE` plays the stories of P0 to PN (lessons/stories.ts) against lessons/p0.ts, p1.ts and p2.ts, and agent.ts
// plays them all on the plain reading path (agent.ts on its defaults: acceptance.check.ts, in test:all).
// Each stage is checked one lesson further than it reaches, and the stories it does not pass yet are
// listed: they must fail, since a story that passes without the feature it is about accepts nothing.

import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { before, describe, test } from 'node:test';
import * as agentTs from '../../agent.ts';
import * as p0 from '../../lessons/p0.ts';
import * as p1 from '../../lessons/p1.ts';
import * as p2 from '../../lessons/p2.ts';
import { runLesson } from '../../lessons/run.ts';
import {
  type Harness,
  type HarnessConfig,
  type Lesson,
  LESSONS,
  MAX_STORY_REQUESTS,
  playStory,
  STORIES,
  type Story,
  storiesUpTo,
} from '../../lessons/stories.ts';

interface Implementation {
  file: string;
  harness: Harness;
  /** The last lesson whose stories it must pass. */
  reaches: Lesson;
  /** Stories of the next lesson it must fail, named after what it does not have yet. */
  notYet: string[];
}

const IMPLEMENTATIONS: Implementation[] = [
  {
    file: 'lessons/p0.ts',
    harness: p0,
    reaches: 'p0',
    notYet: ['every call answered', 'errors are results', 'a turn limit', 'calls run one at a time, in order'],
  },
  {
    file: 'lessons/p1.ts',
    harness: p1,
    reaches: 'p1',
    notYet: [
      'arguments are checked, never coerced',
      'paths stay inside the project',
      'the gate',
      'a long failure is cut',
      'a check that did not finish is a failure',
    ],
  },
  {
    file: 'lessons/p2.ts',
    harness: p2,
    reaches: 'p2',
    notYet: ['a protected file stays as it is', 'a declined change is not made', 'a cut-off reply is not run'],
  },
  // agent.ts on its defaults (the hardening, the OS sandbox at every gate) is test/lessons/acceptance.check.ts's, in
  // npm run test:all; here it passes every story on the plain reading path, below.
];

function story(name: string): Story {
  const found = STORIES.find((s) => s.name === name);
  if (found === undefined) throw new Error(`no story is named "${name}"`);
  return found;
}
const typeOf = (event: unknown) =>
  typeof event === 'object' && event !== null && 'type' in event ? event.type : undefined;
const hasVerdict = (output: string, verdict: 'PASS' | 'FAIL', { lesson, name }: Story) =>
  output.split('\n').includes(`${verdict}  ${lesson}  ${name}`);

/** The lesson each harness is checked for: one further than it reaches, when it does not reach the last. */
const checkedFor = ({ reaches, notYet }: Implementation) =>
  notYet.length > 0 ? LESSONS[LESSONS.indexOf(reaches) + 1]! : reaches;

describe('every harness against the lessons it reaches, and the next one', () => {
  const checks = new Map<string, { code: number; output: string }>();
  // Most of a check is waiting (for the verify commands, for a check's time limit): the four wait side by side.
  before(async () => {
    await Promise.all(
      IMPLEMENTATIONS.map(async (implementation) => {
        const { file } = implementation;
        const out = new PassThrough();
        let output = '';
        out.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
        const code = await runLesson([checkedFor(implementation), '--check', file, '--stories-only'], out);
        checks.set(file, { code, output });
      }),
    );
  });

  for (const implementation of IMPLEMENTATIONS) {
    const { file, harness, reaches, notYet } = implementation;
    const lesson = checkedFor(implementation);
    const checked = () => checks.get(file) ?? { code: -1, output: `${file} was not checked` };
    describe(`${file} reaches ${reaches}: npm run lesson -- ${lesson} --check ${file}`, () => {
      for (const accepted of storiesUpTo(reaches)) {
        test(`${accepted.lesson} acceptance: ${accepted.name}`, () => {
          assert.ok(hasVerdict(checked().output, 'PASS', accepted), checked().output);
        });
      }
      for (const name of notYet) {
        test(`not yet: ${name}`, () => {
          assert.ok(hasVerdict(checked().output, 'FAIL', story(name)), `${file} passes "${name}" without the feature`);
        });
      }
      test(notYet.length > 0 ? `exits 1: it does not reach ${lesson} yet` : 'exits 0: every story passes', () => {
        assert.equal(checked().code, notYet.length > 0 ? 1 : 0, checked().output);
      });

      test('it never prints: a halt event ends every task, and a result event answers every call', async () => {
        const events: unknown[] = [];
        const played = reaches === 'p0' ? story('the transcript is resent') : story('every call answered');
        assert.equal(await playStory(harness, played, { listen: () => (event) => events.push(event) }), null);
        const types = events.map(typeOf);
        assert.equal(types.filter((type) => type === 'halt').length, played.tasks.length);
        assert.equal(types.at(-1), 'halt');
        assert.equal(types.filter((type) => type === 'result').length, reaches === 'p0' ? 0 : 2);
      });
    });
  }
});

// The reading path is a whole harness: agent.ts and tools.ts with the plain disk and runner and none of the
// hardening's hooks (PLAIN) pass every story of every lesson, as the defaults do in acceptance.check.ts.
describe('the plain reading path (hardening: PLAIN) passes every P0-P4 story', () => {
  const plain: Harness<agentTs.AgentEvent> = {
    createAgent: (config) => agentTs.createAgent({ ...config, hardening: agentTs.PLAIN }),
    runTask: (agent, task, signal) => agentTs.runTask(agent as agentTs.Agent, task, signal),
  };
  const failures = new Map<string, Awaited<ReturnType<typeof playStory>>>();
  // The stories are played side by side, as above; each test reads its own story's outcome.
  before(async () => {
    await Promise.all(STORIES.map(async (played) => failures.set(played.name, await playStory(plain, played))));
  });
  for (const played of STORIES) {
    test(`${played.lesson} acceptance: ${played.name}`, () => {
      assert.equal(failures.get(played.name), null, `${played.name} was not played, or failed`);
    });
  }
});

test('every lesson has acceptance stories', () => {
  assert.deepEqual([...new Set(STORIES.map((s) => s.lesson))], LESSONS);
});

// --- What a learner's harness may do wrong: each becomes one line in its story's verdict, never a crash.

/** A harness whose createAgent works and whose runTask is `runTask`, given the config. */
function harnessWith(runTask: (config: HarnessConfig) => unknown): Harness {
  let given: HarnessConfig | undefined;
  return {
    createAgent: (config) => {
      given = config;
      return { messages: [] };
    },
    runTask: () => runTask(given!),
  };
}
const first = story('the transcript is resent');
/** A request the API would take: the broken harnesses below are broken in other ways. */
const hello = { messages: [{ role: 'user' as const, content: 'Hello.' }] };

describe('a broken harness fails its story with one line saying why', () => {
  test('a runTask that throws is reported as "runTask threw", not a crash', async () => {
    const problem = await playStory(
      harnessWith(() => {
        throw new Error('boom\n    at someFunction (file.ts:1:1)');
      }),
      first,
    );
    assert.match(problem?.happened ?? '', /^runTask threw: boom: nothing may escape runTask/);
  });

  test('a runTask that never returns times out with a clear message', async () => {
    const problem = await playStory(
      harnessWith(() => new Promise(() => {})),
      first,
      { timeoutMs: 50 },
    );
    assert.match(problem?.happened ?? '', /^runTask did not return within 0.05 s/);
  });

  test('a loop that never waits for anything still lets the story time out (the model yields first)', async () => {
    const spinning = harnessWith(async (config) => {
      for (let i = 0; i < 100_000; i++) {
        const signal = new AbortController().signal;
        const asked = config.model.complete(hello, { signal, onText: () => {}, onNotice: () => {} });
        const failure = await asked.then(() => '', String);
        if (failure.includes('the story is over')) break;
      }
      return { kind: 'accepted', verifiedBy: null };
    });
    assert.match((await playStory(spinning, first, { timeoutMs: 50 }))?.happened ?? '', /did not return within/);
  });

  test('a loop without a turn limit is stopped after a bounded number of model calls', async () => {
    const unlimited = harnessWith(async (config) => {
      for (;;) {
        const signal = new AbortController().signal;
        const failure = await config.model
          .complete(hello, { signal, onText: () => {}, onNotice: () => {} })
          .then(() => null, String);
        if (failure !== null) return { kind: 'error', message: failure };
      }
    });
    const problem = await playStory(unlimited, story('a turn limit'));
    assert.match(problem?.happened ?? '', new RegExp(`more than ${MAX_STORY_REQUESTS} model calls in one story`));
  });

  test('a runTask that returns something else than a halt is told what a halt looks like', async () => {
    assert.match(
      (
        await playStory(
          harnessWith(async () => 'done'),
          first,
        )
      )?.happened ?? '',
      /^runTask returned "done", not a halt/,
    );
  });

  test('a transcript that is not made of messages fails its story instead of crashing the check', async () => {
    const garbled: Harness = {
      createAgent: () => ({ messages: [42] }),
      runTask: async () => ({ kind: 'accepted', verifiedBy: null }),
    };
    assert.match(
      (await playStory(garbled, story('every call answered')))?.happened ?? '',
      /^the transcript could not be read: /,
    );
  });

  test('an agent without a messages array is told where the transcript must be', async () => {
    const noTranscript: Harness = {
      createAgent: () => ({}),
      runTask: async () => ({ kind: 'accepted', verifiedBy: null }),
    };
    assert.match((await playStory(noTranscript, first))?.happened ?? '', /the agent has no messages array/);
  });
});
