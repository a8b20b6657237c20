// The scripted story of each lesson: the same replies feed `npm run lesson -- pN` (with --trace)
// and the lesson's acceptance test (test/lessons.test.ts), so the two can never drift apart.

import type Anthropic from '@anthropic-ai/sdk';
import { execFileSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import {
  type AgentConfig,
  type AgentEvent,
  type Approver,
  approveAll,
  createAgent,
  type Halt,
  type ModelRequest,
  runTask,
  SESSION_VERSION,
  sessionRecorder,
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
import { defineTool, TOOLS } from '../tools.ts';
import { EXAMPLE_PROJECT, SEED_STORY_SCRIPT, SEED_STORY_TASK, SEED_STORY_VERIFY } from './demo.ts';

export type Lesson = 'p0' | 'p1' | 'p2' | 'p3' | 'p4';

export interface StoryRun {
  halts: Halt[];
  messages: Anthropic.MessageParam[];
  requests: ScriptedModel['requests'];
  events: AgentEvent[];
  root: string;
}

export interface Story {
  lesson: Lesson;
  name: string;
  /** The project: a copy of lessons/example, or these files. */
  project: 'example' | Record<string, string>;
  tasks: string[];
  script: () => Promise<readonly ScriptEntry[]>;
  config?: (root: string) => Partial<AgentConfig>;
  /** Null when the lesson's acceptance holds; otherwise what went wrong. */
  check: (run: StoryRun) => Promise<string | null>;
}

const blocksOf = (message: Anthropic.MessageParam | undefined) =>
  message === undefined || typeof message.content === 'string' ? [] : message.content;
const resultIds = (message: Anthropic.MessageParam | undefined) =>
  blocksOf(message).flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : []));
const toolCalls = (messages: Anthropic.MessageParam[]) =>
  messages.flatMap((m) => (m.role === 'assistant' ? blocksOf(m).filter((b) => b.type === 'tool_use') : []));
const failIf = (broken: boolean, why: string) => (broken ? why : null);

const echo = defineTool({
  name: 'echo',
  description: 'Repeats the text it is given. A dummy tool for lesson P1.',
  input: z.strictObject({ text: z.string().describe('What to repeat') }),
  readOnly: true,
  run: async ({ text: said }) => `echo: ${said}`,
});

/** Answers each approval request with the next scripted answer. */
const scriptedApprover =
  (answers: Awaited<ReturnType<Approver>>[]): Approver =>
  async () =>
    answers.shift() ?? { approved: true };

const FIZZBUZZ_15 = Array.from({ length: 15 }, (_, i) =>
  (i + 1) % 15 === 0 ? 'FizzBuzz' : (i + 1) % 3 === 0 ? 'Fizz' : (i + 1) % 5 === 0 ? 'Buzz' : String(i + 1),
);

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

export const STORIES: Story[] = [
  {
    lesson: 'p0',
    name: 'two turns: the second request carries the first exchange',
    project: {},
    tasks: ['My name is Ada.', 'What is my name?'],
    script: async () => [say('Nice to meet you, Ada.'), say('Your name is Ada.')],
    check: async ({ requests }) => {
      const second = JSON.stringify(requests[1]?.messages ?? []);
      return failIf(
        !second.includes('My name is Ada.') || !second.includes('Nice to meet you, Ada.'),
        'the second request lacks the first exchange',
      );
    },
  },
  {
    lesson: 'p1',
    name: 'a dummy tool is called; two calls in one reply are both answered, in order, in one user message',
    project: {},
    tasks: ['Echo a, then b.'],
    script: async () => [
      reply(text('I will echo both.'), toolUse('echo', { text: 'a' }), toolUse('echo', { text: 'b' })),
      say('Echoed a and b.'),
    ],
    config: () => ({ tools: [...TOOLS, echo] }),
    check: async ({ messages, halts }) => {
      const answered = resultIds(messages[2]);
      const asked = toolCalls(messages).map((c) => c.id);
      return failIf(
        JSON.stringify(answered) !== JSON.stringify(asked) || halts[0]?.kind !== 'accepted',
        `calls ${asked} answered as ${answered}`,
      );
    },
  },
  {
    lesson: 'p2',
    name: '"write fizzbuzz.js up to 15": the file is created, read and changed, and node prints the right 15 lines',
    project: {},
    tasks: ['write fizzbuzz.js up to 15'],
    script: () => loadScript(path.join(import.meta.dirname, 'scripts', 'fizzbuzz.json')),
    check: async ({ root }) => {
      const printed = execFileSync(process.execPath, ['fizzbuzz.js'], { cwd: root, encoding: 'utf8' })
        .trim()
        .split('\n');
      return failIf(
        JSON.stringify(printed) !== JSON.stringify(FIZZBUZZ_15),
        `node fizzbuzz.js printed ${printed.length} lines: ${printed.join(' ')}`,
      );
    },
  },
  {
    lesson: 'p2',
    name: '"which version is in package.json": found through list_files, then read',
    project: 'example',
    tasks: ['which version is in package.json?'],
    script: () => loadScript(path.join(import.meta.dirname, 'scripts', 'package-version.json')),
    check: async ({ messages }) => {
      const names = toolCalls(messages)
        .map((c) => c.name)
        .join(',');
      const answer = JSON.stringify(messages.at(-1));
      return failIf(names !== 'list_files,read_file' || !answer.includes('1.0.0'), `calls ${names}; answer ${answer}`);
    },
  },
  {
    lesson: 'p2',
    name: 'the seed story: "done" is refused while `node test.js` fails, and accepted once it passes',
    project: 'example',
    tasks: [SEED_STORY_TASK],
    script: () => loadScript(SEED_STORY_SCRIPT),
    config: () => ({ verify: SEED_STORY_VERIFY }),
    check: async ({ halts, requests }) =>
      failIf(
        halts[0]?.kind !== 'accepted' || requests.length !== 8,
        `halted ${JSON.stringify(halts[0])} after ${requests.length} turns`,
      ),
  },
  {
    lesson: 'p3',
    name: 'frozen tests, a declined approval, a cut-off call: "done" only when the real code is fixed',
    project: 'example',
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
    config: () => ({
      verify: SEED_STORY_VERIFY,
      protect: ['test.js'],
      approve: scriptedApprover([{ approved: false, reason: 'keep the change minimal' }, { approved: true }]),
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
        `halt ${JSON.stringify(halts[0])}; missing: ${missing}`,
      );
    },
  },
  {
    lesson: 'p4',
    name: 'a sub-agent searches, then 45 reads in a 20,000-token window survive a compaction',
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
    config: () => ({
      contextWindow: 20_000,
      taskModel: new ScriptedModel([call('list_files', { path: 'notes' }), say('notes/ holds n01.md to n15.md.')]),
    }),
    check: async ({ halts, events, messages, requests }) => {
      const compactions = events.filter((e) => e.type === 'compaction').length;
      const largest = Math.max(...requests.map((r) => Math.ceil(JSON.stringify(r).length / 4)));
      const calls = toolCalls(messages).length;
      return failIf(
        halts[0]?.kind !== 'accepted' || compactions < 1 || largest > 20_000 || calls < 45,
        `halt ${halts[0]?.kind}, ${compactions} compactions, largest request ~${largest} tokens, ${calls} calls kept`,
      );
    },
  },
];

/** Writes files (and their folders) into a project. */
export async function writeFiles(root: string, files: Record<string, string>): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await writeFile(path.join(root, name), content);
  }
}

/** An agent on a scripted model with the settings every offline story and test starts from;
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

/** Plays a story in a fresh temporary project; `onEvent` sees everything (for --trace). With `sessionFile`,
 *  the run is also recorded there, as the CLI's --session records one. */
export async function playStory(
  story: Story,
  onEvent: (event: AgentEvent) => void = () => {},
  sessionFile?: string,
): Promise<string | null> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), `lesson-${story.lesson}-`)));
  try {
    if (story.project === 'example') await cp(EXAMPLE_PROJECT, root, { recursive: true });
    else await writeFiles(root, story.project);
    const events: AgentEvent[] = [];
    let record: (event: AgentEvent) => void = () => {};
    const { agent, model } = await scriptedAgent(root, await story.script(), {
      budgets: { maxTurns: 60 },
      contextFiles: false,
      ...story.config?.(root),
      onEvent: (event) => {
        events.push(event);
        onEvent(event);
        record(event);
      },
    });
    if (sessionFile !== undefined) {
      const startedAt = new Date().toISOString();
      record = sessionRecorder(
        sessionFile,
        { type: 'session', version: SESSION_VERSION, model: model.name, root, startedAt },
        [],
      );
    }
    const halts: Halt[] = [];
    for (const task of story.tasks) halts.push(await runTask(agent, task));
    return await story.check({ halts, messages: agent.messages, requests: model.requests, events, root });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
