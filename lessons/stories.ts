// The acceptance stories of the lessons: scripted replies, a small project, and a check that says in
// plain words what went wrong. They decide what each harness must do. The same stories are played by
// the suite over every harness (test/acceptance.test.ts), by `npm run lesson -- pN` (agent.ts, traced)
// and by `npm run lesson -- pN --check FILE` (your own harness), so none of them can drift.

import type Anthropic from '@anthropic-ai/sdk';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setImmediate as nextTick } from 'node:timers/promises';
import { runInNewContext } from 'node:vm';
import { z } from 'zod';
import {
  type AgentConfig,
  type AgentEvent,
  type Approver,
  approveAll,
  createAgent,
  type Halt,
  type Model,
  type ModelRequest,
} from '../agent.ts';
import {
  call,
  loadScript,
  reply,
  say,
  type ScriptEntry,
  ScriptedModel,
  type ScriptedReply,
  text,
  toolUse,
} from '../scripted-model.ts';
import { defineTool, type Tool, TOOLS } from '../tools.ts';
import { EXAMPLE_FILES, SEED_STORY_SCRIPT, SEED_STORY_TASK, SEED_STORY_VERIFY } from './demo.ts';

export const LESSONS = ['p0', 'p1', 'p2', 'p3', 'p4'] as const;
export type Lesson = (typeof LESSONS)[number];

/** What createAgent is given by every story: the same for lessons/p0.ts, a learner's file and agent.ts. */
export interface HarnessConfig<E = unknown> {
  root: string;
  model: Model;
  tools: readonly Tool[];
  verify?: string;
  onEvent?: (event: E) => void;
}

/** agent.ts's further options (budgets, protect, approve, contextWindow...): P3 and P4 need them. */
export type AgentOptions = Omit<Partial<AgentConfig>, keyof HarnessConfig>;

/** What every harness exports, from lessons/p0.ts to agent.ts. Nothing it returns is trusted:
 *  the stories check the agent's `messages` and the halt themselves, so a learner's file can be played. */
export interface Harness<E = unknown> {
  createAgent(config: HarnessConfig<E> & AgentOptions): unknown;
  runTask(agent: unknown, task: string, signal?: AbortSignal): unknown;
}

export interface StoryRun {
  halts: Halt[];
  messages: Anthropic.MessageParam[];
  requests: ModelRequest[];
  events: unknown[];
  root: string;
}

export interface Story {
  lesson: Lesson;
  name: string;
  /** What the harness must do, in plain words: `--check` prints it when the story fails. */
  expected: string;
  /** The project the story starts from, written into a fresh temporary folder. */
  project: Readonly<Record<string, string>>;
  tasks: string[];
  script: () => Promise<readonly ScriptEntry[]>;
  /** Default: the three tools of tools.ts. */
  tools?: readonly Tool[];
  verify?: string;
  options?: () => AgentOptions;
  /** Null when the story's acceptance holds; otherwise what happened instead, in plain words. */
  check: (run: StoryRun) => Promise<string | null>;
}

const blocksOf = (message: Anthropic.MessageParam | undefined) =>
  message === undefined || typeof message.content === 'string' ? [] : message.content;
const resultsOf = (message: Anthropic.MessageParam | undefined) =>
  blocksOf(message).filter((b) => b.type === 'tool_result');
const toolCalls = (messages: Anthropic.MessageParam[]) =>
  messages.flatMap((m) => (m.role === 'assistant' ? blocksOf(m).filter((b) => b.type === 'tool_use') : []));
const failIf = (broken: boolean, why: string) => (broken ? why : null);
const modelCalls = (n: number) => `${n} model call${n === 1 ? '' : 's'}`;
const typeOf = (event: unknown) =>
  typeof event === 'object' && event !== null && 'type' in event ? event.type : undefined;

const echo = defineTool({
  name: 'echo',
  description: 'Repeats the text it is given. A dummy tool for lesson P1.',
  input: z.strictObject({ text: z.string().describe('What to repeat') }),
  readOnly: true,
  run: async ({ text: said }) => `echo: ${said}`,
});

const broken = defineTool({
  name: 'broken',
  description: 'Always fails. A dummy tool for lesson P1.',
  input: z.strictObject({}),
  readOnly: true,
  run: async () => {
    throw new Error('broken: this tool always fails');
  },
});

/** Answers each approval request with the next scripted answer. */
const scriptedApprover =
  (answers: Awaited<ReturnType<Approver>>[]): Approver =>
  async () =>
    answers.shift() ?? { approved: true };

const FIZZBUZZ_15 = Array.from({ length: 15 }, (_, i) =>
  (i + 1) % 15 === 0 ? 'FizzBuzz' : (i + 1) % 3 === 0 ? 'Fizz' : (i + 1) % 5 === 0 ? 'Buzz' : String(i + 1),
);

/** What a script prints, run in a sandbox of its own: no second node process to start. */
function printedBy(code: string): string[] {
  const printed: string[] = [];
  runInNewContext(
    code,
    { console: { log: (...values: unknown[]) => printed.push(values.join(' ')) } },
    { timeout: 1_000 },
  );
  return printed;
}

const NOTES = Object.fromEntries(
  Array.from({ length: 15 }, (_, i) => [
    `notes/n${String(i + 1).padStart(2, '0')}.md`,
    `# Note ${i + 1}\n${`Line of note ${i + 1}, kept long on purpose. `.repeat(60)}\n`,
  ]),
);
const isSummaryRequest = (request: ModelRequest) => {
  const last = request.messages.at(-1);
  return typeof last?.content === 'string' && last.content.includes('Write a summary');
};

const thinking = { type: 'thinking', thinking: 'The user gave a name; remember it.', signature: 'sig-p0' } as const;

export const STORIES: Story[] = [
  {
    lesson: 'p0',
    name: 'the transcript is resent',
    expected: 'the second request carries the first exchange: the first task and the reply to it',
    project: {},
    tasks: ['My name is Ada.', 'What is my name?'],
    script: async () => [say('Nice to meet you, Ada.'), say('Your name is Ada.')],
    check: async ({ requests }) => {
      const second = JSON.stringify(requests[1]?.messages ?? []);
      if (requests.length !== 2) return `two tasks made ${modelCalls(requests.length)}, not 2`;
      return failIf(
        !second.includes('My name is Ada.') || !second.includes('Nice to meet you, Ada.'),
        `the second request sent only ${second}: the model cannot know the name`,
      );
    },
  },
  {
    lesson: 'p0',
    name: 'the reply goes back as received',
    expected: 'the next request carries the thinking block unchanged, and no empty text block (the API refuses both)',
    project: {},
    tasks: ['My name is Ada.', 'What is my name?'],
    script: async () => [reply(thinking, text(''), text('Nice to meet you, Ada.')), say('Your name is Ada.')],
    check: async ({ requests }) => {
      const sent = (requests[1]?.messages ?? []).flatMap(blocksOf);
      if (!sent.some((b) => JSON.stringify(b) === JSON.stringify(thinking))) {
        const reply = requests[1]?.messages.find((m) => m.role === 'assistant');
        return `the thinking block did not go back unchanged: the reply went back as ${shown(reply?.content)}`;
      }
      return failIf(
        sent.some((b) => b.type === 'text' && b.text.trim() === ''),
        'an empty text block was sent back: drop empty text blocks from the reply before appending it',
      );
    },
  },
  {
    lesson: 'p1',
    name: 'every call answered',
    expected: 'two calls in one reply are both answered, with their ids, in call order, in the next user message',
    project: {},
    tasks: ['Echo a, then b.'],
    script: async () => [
      reply(text('I will echo both.'), toolUse('echo', { text: 'a' }), toolUse('echo', { text: 'b' })),
      say('Echoed a and b.'),
    ],
    tools: [echo, broken],
    check: async ({ messages, halts }) => {
      const asked = toolCalls(messages).map((c) => c.id);
      const at = messages.findIndex((m) => blocksOf(m).some((b) => b.type === 'tool_use'));
      const answered = resultsOf(messages[at + 1]).map((r) => r.tool_use_id);
      if (answered.length === 0)
        return `the calls ${asked.join(', ')} were not answered: each needs a tool_result in the next user message`;
      if (JSON.stringify(answered) !== JSON.stringify(asked))
        return `the calls ${asked.join(', ')} were answered as ${answered.join(', ')}`;
      return failIf(halts[0]?.kind !== 'accepted', `then halted ${haltText(halts[0])}, not accepted`);
    },
  },
  {
    lesson: 'p1',
    name: 'errors are results',
    expected: 'a call to an unknown tool and a tool that throws become is_error results, and the loop goes on',
    project: {},
    tasks: ['List the files, then break something.'],
    script: async () => [
      reply(toolUse('shell', { command: 'ls' }), toolUse('broken', {})),
      say('Neither worked; I stop here.'),
    ],
    tools: [echo, broken],
    check: async ({ messages, requests, halts }) => {
      const at = messages.findIndex((m) => blocksOf(m).some((b) => b.type === 'tool_use'));
      const results = resultsOf(messages[at + 1]);
      if (results.length !== 2) return `the two failing calls got ${results.length} results`;
      const notErrors = results.filter((r) => r.is_error !== true).map((r) => r.tool_use_id);
      if (notErrors.length > 0) return `the results of ${notErrors.join(', ')} are not marked is_error: true`;
      return failIf(
        requests.length !== 2 || halts[0]?.kind !== 'accepted',
        `after the errors: ${modelCalls(requests.length)}, halted ${haltText(halts[0])}; ` +
          'the model should have been asked again',
      );
    },
  },
  {
    lesson: 'p1',
    name: 'a turn limit',
    expected: 'a model that never stops calling tools is halted with kind budget (turns), its last calls answered',
    project: {},
    tasks: ['Echo forever.'],
    script: async () => Array.from({ length: MAX_STORY_REQUESTS + 1 }, (_, i) => call('echo', { text: `turn ${i}` })),
    tools: [echo, broken],
    check: async ({ messages, requests, halts }) => {
      const halt = halts[0];
      if (halt?.kind !== 'budget' || halt.budget !== 'turns')
        return `halted ${haltText(halt)} after ${modelCalls(requests.length)}, not with kind budget (turns)`;
      if (requests.length !== halt.limit)
        return `the limit was ${halt.limit}, but the model was called ${requests.length} times`;
      return failIf(
        resultsOf(messages.at(-1)).length !== 1,
        'the transcript ends without the results of the last calls, so it cannot be continued',
      );
    },
  },
  {
    lesson: 'p2',
    name: 'fizzbuzz',
    expected: '"write fizzbuzz.js up to 15": the file is created, read, then changed, and prints the right 15 lines',
    project: {},
    tasks: ['write fizzbuzz.js up to 15'],
    script: () => loadScript(path.join(import.meta.dirname, 'scripts', 'fizzbuzz.json')),
    check: async ({ root, messages }) => {
      const refusedEdit = messages
        .flatMap(resultsOf)
        .some((r) => r.is_error === true && String(r.content).includes('before editing'));
      if (refusedEdit)
        return 'the edit after read_file was refused as unread: keep one ToolContext for the whole life of the agent';
      const code = await readFile(path.join(root, 'fizzbuzz.js'), 'utf8').catch(() => null);
      if (code === null) return 'fizzbuzz.js was not created';
      const printed = printedBy(code);
      return failIf(
        JSON.stringify(printed) !== JSON.stringify(FIZZBUZZ_15),
        `fizzbuzz.js printed ${printed.length} lines: ${printed.join(' ')}`,
      );
    },
  },
  {
    lesson: 'p2',
    name: 'find, then read',
    expected: '"which version is in package.json": found with list_files, read with read_file, answered 1.0.0',
    project: EXAMPLE_FILES,
    tasks: ['which version is in package.json?'],
    script: () => loadScript(path.join(import.meta.dirname, 'scripts', 'package-version.json')),
    check: async ({ messages }) => {
      const results = messages.flatMap(resultsOf);
      const failed = results.filter((r) => r.is_error === true).map((r) => String(r.content));
      if (failed.length > 0) return `a call failed: ${failed[0]}`;
      return failIf(!JSON.stringify(results).includes('1.0.0'), 'package.json was never read');
    },
  },
  {
    lesson: 'p2',
    name: 'the gate',
    expected: `"done" is refused while \`${SEED_STORY_VERIFY}\` fails, and accepted, verified by it, once it passes`,
    project: EXAMPLE_FILES,
    tasks: [SEED_STORY_TASK],
    script: () => loadScript(SEED_STORY_SCRIPT),
    verify: SEED_STORY_VERIFY,
    check: async ({ halts, requests, root }) => {
      const halt = halts[0];
      const fixed = (await readFile(path.join(root, 'add.js'), 'utf8')).includes('a + b');
      if (halt?.kind === 'accepted' && !fixed)
        return (
          'claimed done while the test fails: no gate ' +
          `(accepted after ${modelCalls(requests.length)}, add(2, 3) still -1)`
        );
      if (halt?.kind !== 'accepted') return `halted ${haltText(halt)} after ${modelCalls(requests.length)}`;
      if (halt.verifiedBy !== SEED_STORY_VERIFY)
        return `accepted with verifiedBy ${JSON.stringify(halt.verifiedBy)}: it should name the command that passed`;
      return failIf(
        requests.length !== 8,
        `accepted after ${modelCalls(requests.length)}; the script's fix passes the test at call 8`,
      );
    },
  },
  {
    lesson: 'p3',
    name: 'guards that fail closed',
    expected: 'a protected test, a declined edit and a cut-off call are refused; "done" once the real code is fixed',
    project: EXAMPLE_FILES,
    tasks: [SEED_STORY_TASK],
    script: async () => [
      reply(toolUse('read_file', { path: 'add.js' }), toolUse('read_file', { path: 'test.js' })),
      call('edit_file', {
        path: 'test.js',
        old_str: 'assert.equal(add(2, 3), 5);',
        new_str: 'assert.equal(add(2, 3), -1);',
      }),
      call('edit_file', { path: 'add.js', old_str: '  return a - b;\n', new_str: '  // fixed\n  return b + a;\n' }),
      {
        ...reply(
          text('Now the minimal fix:'),
          toolUse('edit_file', { path: 'add.js', old_str: 'return a - b;', new_str: 'retu' }),
        ),
        stop_reason: 'max_tokens',
      },
      call('edit_file', { path: 'add.js', old_str: 'return a - b;', new_str: 'return a + b;' }),
      say('Done: add.js returns a + b; test.js is unchanged.'),
    ],
    verify: SEED_STORY_VERIFY,
    options: () => ({
      protect: ['test.js'],
      approve: scriptedApprover([{ approved: false, reason: 'keep the change minimal' }, { approved: true }]),
      contextFiles: false,
    }),
    check: async ({ halts, root, messages }) => {
      const testFile = await readFile(path.join(root, 'test.js'), 'utf8');
      const all = JSON.stringify(messages);
      const refusals = [
        'is protected',
        'the user declined this edit_file call: keep the change minimal',
        'not executed: your reply was cut off',
      ];
      const missing = refusals.filter((r) => !all.includes(r));
      return failIf(
        halts[0]?.kind !== 'accepted' || !testFile.includes('5);') || missing.length > 0,
        `halted ${haltText(halts[0])}; refusals missing: ${missing.join(', ') || 'none'}`,
      );
    },
  },
  {
    lesson: 'p4',
    name: 'endurance',
    expected: 'a sub-agent searches, then 45 reads in a 20,000-token window survive a compaction',
    project: NOTES,
    tasks: ['Read every note and add a table of contents to notes/README.md.'],
    script: async () => {
      const steps: ScriptedReply[] = [
        call('task', { description: 'list the notes', prompt: 'Which files are in notes/?' }),
      ];
      for (let i = 0; i < 45; i++)
        steps.push(
          call('read_file', { path: `notes/n${String((i % 15) + 1).padStart(2, '0')}.md`, limit: 1 + (i % 3) }),
        );
      steps.push(
        call('edit_file', {
          path: 'notes/README.md',
          old_str: '',
          new_str: Object.keys(NOTES)
            .map((f) => `- ${f}`)
            .join('\n'),
        }),
      );
      steps.push(say('Added notes/README.md with all 15 notes.'));
      let next = 0;
      // A summary request can come before any step: answer it, and keep the step for the next request.
      const summary = say(
        'Goal: a table of contents in notes/README.md. Done: read notes n01-n15. Next: write notes/README.md.',
      );
      return Array.from(
        { length: steps.length + 10 },
        () => (request: ModelRequest) => (isSummaryRequest(request) ? summary : steps[next++]!),
      );
    },
    options: () => ({
      budgets: { maxTurns: 60 },
      contextWindow: 20_000,
      contextFiles: false,
      taskModel: new ScriptedModel([call('list_files', { path: 'notes' }), say('notes/ holds n01.md to n15.md.')]),
    }),
    check: async ({ halts, events, messages, requests }) => {
      const compactions = events.filter((e) => typeOf(e) === 'compaction').length;
      const largest = Math.max(...requests.map((r) => Math.ceil(JSON.stringify(r).length / 4)));
      const made = toolCalls(messages).length;
      return failIf(
        halts[0]?.kind !== 'accepted' || compactions < 1 || largest > 20_000 || made < 45,
        `halted ${haltText(halts[0])}, ${compactions} compactions, ` +
          `largest request ~${largest} tokens, ${made} calls kept`,
      );
    },
  },
];

/** The stories a harness must pass to reach `lesson`: that lesson's and every earlier one's. */
export const storiesUpTo = (lesson: Lesson) =>
  STORIES.filter((s) => LESSONS.indexOf(s.lesson) <= LESSONS.indexOf(lesson));

/** A story that runs longer than this is reported as a hang. */
export const STORY_TIMEOUT_MS = 10_000;
/** More model calls than any story needs: a loop without a turn limit is stopped here. */
export const MAX_STORY_REQUESTS = 100;

/** Plays a story against a harness in a fresh temporary project. Resolves to null when its
 *  acceptance holds, else to what happened instead, in one line: it never throws, whatever the harness does.
 *  `listen` makes a listener for the run's events, given the project folder (a session file records it). */
export async function playStory<E>(
  harness: Harness<E>,
  story: Story,
  { listen, timeoutMs = STORY_TIMEOUT_MS }: { listen?: (root: string) => (event: E) => void; timeoutMs?: number } = {},
): Promise<string | null> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), `story-${story.lesson}-`)));
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), timeoutMs);
  try {
    await writeFiles(root, story.project);
    const model = new ScriptedModel(await story.script());
    const events: unknown[] = [];
    const listener = listen?.(root);
    const run = async (): Promise<StoryRun | string> => {
      const created = await attempt('createAgent', async () =>
        harness.createAgent({
          root,
          model: storyModel(model, stop.signal),
          tools: story.tools ?? TOOLS,
          verify: story.verify,
          onEvent: (event: E) => {
            events.push(event);
            listener?.(event);
          },
          ...story.options?.(),
        }),
      );
      if ('threw' in created) return created.threw;
      const agent = created.value;
      const halts: Halt[] = [];
      for (const task of story.tasks) {
        const returned = await attempt('runTask', async () => harness.runTask(agent, task, stop.signal));
        if ('threw' in returned) return returned.threw;
        if (!isHalt(returned.value))
          return `runTask returned ${shown(returned.value)}, not a halt such as { kind: 'accepted', verifiedBy: null }`;
        halts.push(returned.value);
      }
      const messages: unknown = typeof agent === 'object' && agent !== null && 'messages' in agent && agent.messages;
      if (!Array.isArray(messages)) return 'the agent has no messages array: createAgent must return { messages, ... }';
      // Read defensively by the checks: a malformed transcript fails its story, it does not crash the run.
      return { halts, messages: messages as Anthropic.MessageParam[], requests: model.requests, events, root };
    };
    const timedOut = new Promise<string>((resolve) =>
      stop.signal.addEventListener('abort', () =>
        resolve(`runTask did not return within ${timeoutMs / 1000} s: does every path through the loop end?`),
      ),
    );
    const played = await Promise.race([run(), timedOut]);
    if (typeof played === 'string') return played;
    return await story.check(played).catch((error: unknown) => `the transcript could not be read: ${oneLine(error)}`);
  } finally {
    clearTimeout(timer);
    stop.abort();
    await rm(root, { recursive: true, force: true });
  }
}

/** The story's scripted model as a harness sees it. Each call first yields to the event loop, so even a
 *  loop that never waits lets the story's timer fire; calls after the story ended or past the limit fail. */
function storyModel(model: ScriptedModel, storyOver: AbortSignal): Model {
  return {
    name: model.name,
    async complete(request, options) {
      await nextTick();
      if (storyOver.aborted) throw new Error('the story is over');
      if (model.requests.length >= MAX_STORY_REQUESTS)
        throw new Error(`more than ${MAX_STORY_REQUESTS} model calls in one story: is there a turn limit?`);
      return await model.complete(request, options);
    },
  };
}

/** Runs a harness function; what it throws becomes one line, never a stack trace. */
async function attempt<T>(what: string, fn: () => Promise<T>): Promise<{ value: T } | { threw: string }> {
  try {
    return { value: await fn() };
  } catch (error) {
    return { threw: `${what} threw: ${oneLine(error)}` };
  }
}

const HALT_KINDS = new Set(['accepted', 'budget', 'interrupted', 'error']);
const isHalt = (value: unknown): value is Halt =>
  typeof value === 'object' && value !== null && 'kind' in value && HALT_KINDS.has(String(value.kind));

/** A halt as the harness returned it: `accepted (verifiedBy null)`, `budget (turns, limit 25)`, `error: …`. */
function haltText(halt: Halt | undefined): string {
  switch (halt?.kind) {
    case undefined:
      return 'not at all';
    case 'accepted':
      return `accepted (verifiedBy ${JSON.stringify(halt.verifiedBy)})`;
    case 'budget':
      return `budget (${halt.budget}, limit ${halt.limit})`;
    case 'interrupted':
      return 'interrupted';
    case 'error':
      return `error: ${halt.message}`;
  }
}
const shown = (value: unknown) => (value === undefined ? 'undefined' : JSON.stringify(value)?.slice(0, 120));

/** The first line of an error's message. */
export const oneLine = (error: unknown) =>
  (error instanceof Error ? error.message : String(error)).split('\n').find((line) => line.trim() !== '') ?? '';

/** Writes files (and their folders) into a project. */
export async function writeFiles(root: string, files: Readonly<Record<string, string>>): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await writeFile(path.join(root, name), content);
  }
}

/** An agent on a scripted model with the settings every offline test starts from;
 *  `events` collects everything the loop emitted (a config's own `onEvent` replaces that). */
export async function scriptedAgent(root: string, script: readonly ScriptEntry[], config: Partial<AgentConfig> = {}) {
  const model = new ScriptedModel(script);
  const events: AgentEvent[] = [];
  const agent = await createAgent({
    root,
    model,
    tools: TOOLS,
    verify: undefined,
    verifyTimeoutMs: 30_000,
    budgets: { maxTurns: 25 },
    protect: [],
    approve: approveAll,
    onEvent: (event) => events.push(event),
    ...config,
  });
  return { agent, model, events };
}
