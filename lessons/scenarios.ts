// The differential check behind `npm run lesson -- pN --check FILE`, after the stories: fast-check generates
// scenarios (a script of replies and tool calls, a project, an approver, a verify command, a window), and each is
// played twice, in fresh projects: by the stage's reference (lessons/p0.ts to p4.ts) and by the learner's harness.
// What a user would call behaviour is compared, never wording: which calls ran and with what; which were answered, in
// order, as errors or not; what changed on disk inside the project and beside it; whether each request is valid by the
// API's rules; the halts; what reached the model (a secret, AGENTS.md, a summary, the check's output). A difference
// is shrunk to the smallest scenario that still shows it, and printed as a story with the seed that replays it.

import type Anthropic from '@anthropic-ai/sdk';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setImmediate as nextTick, setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import type { Model, ModelRequest } from '../agent.ts';
import { usageOf } from '../scripted-model.ts';
import { defineTool, describeArguments, type Tool, TOOLS } from '../tools.ts';
import { requestViolations } from './api-rules.ts';
import * as p0 from './p0.ts';
import * as p1 from './p1.ts';
import * as p2 from './p2.ts';
import * as p3 from './p3.ts';
import * as p4 from './p4.ts';
import {
  BUILD_SECTIONS,
  type BuildSection,
  fixFor,
  type Harness,
  mainViolation,
  type Lesson,
  LESSONS,
  writeFiles,
} from './stories.ts';

/** The harness each stage's scenarios are judged against. */
export const REFERENCES: Record<Lesson, Harness> = { p0, p1, p2, p3, p4 } as Record<Lesson, Harness>;

// --- Scenarios: what the generator makes, and what a story prints.

export type Block =
  | { type: 'text'; text: string }
  | { type: 'empty' }
  | { type: 'thinking' }
  | { type: 'call'; name: string; input: Record<string, unknown>; step: Lesson };

export interface Reply {
  blocks: Block[];
  /** Stopped at max_tokens. */
  cut: boolean;
  /** The model call fails instead (a 529, a dropped connection). */
  fails: boolean;
}

export type Approval = 'yes' | 'no' | 'throws' | 'never';
export type Verify =
  'passes' | 'fails' | 'passes-once-fixed' | 'long-output' | 'outlasts-its-time' | 'leaves-a-child-running' | 'killed';

export interface Scenario {
  stage: Lesson;
  tasks: string[];
  /** The model's replies, in order, over every task; once used up, every turn's call fails. */
  replies: Reply[];
  /** Then this reply, `times` more times, each call's arguments numbered so no two in a row are the same. */
  loop: { reply: Reply; times: number } | null;
  /** The sub-agent's replies (config.taskModel), the same way. */
  subReplies: Reply[];
  subLoop: number;
  verify: Verify | null;
  /** config.approve answers these, in order, then yes; null: no approver. */
  approvals: Approval[] | null;
  protect: boolean;
  contextWindow: number | null;
  agentsMd: 'none' | 'rule' | 'linked-out' | 'over-the-cap';
  rootThroughLink: boolean;
}

// Markers: strings whose presence in a request is behaviour (what reached the model), whatever the wording around them.
const SECRET = 'SECRET-7f3a';
const RULE = 'RULE-colour';
const RULE_PAST_CAP = 'RULE-past-the-cap';
const LINKED_RULE = 'RULE-linked';
const CHECK_SAYS = 'CHECK-FAILED-MARK';
const HEAD = 'HEAD-MARK';
const TAIL = 'TAIL-MARK';
const SUB_ANSWER = 'SUB-ANSWER';
/** What the sub-agent says before its answer: only its final text may come back. */
const SUB_ASIDE = 'SUB-ASIDE';
const INNER = 'INNER-MARK';
const SUMMARY = 'SUMMARY-';
const MARKERS = [SECRET, RULE, RULE_PAST_CAP, LINKED_RULE, CHECK_SAYS, HEAD, TAIL, SUB_ANSWER, SUB_ASIDE, INNER];

const WINDOW = 20_000;
/** The share of the window past which build.md's step 5 summarises first. */
const COMPACT_AT = 0.75;
const VERIFY_TIMEOUT_MS = 80;
/** The check's commands print their markers in two pieces, so that only their output, never the command itself (which
 *  a "not done" message may quote), carries them. */
const printed = (marker: string) => `echo ${marker.slice(0, 4)}""${marker.slice(4)}`;
/** The file whose appearance lets a check's leftover child (leaves-a-child-running) change the project. */
const LATE_GO = 'late-go';
const VERIFY: Record<Verify, string> = {
  passes: 'exit 0',
  fails: `${printed(CHECK_SAYS)}; exit 1`,
  'passes-once-fixed': `grep -q "a + b" add.js || { ${printed(CHECK_SAYS)}; exit 1; }`,
  'long-output': `${printed(HEAD)}; seq 1 9000; ${printed(TAIL)}; exit 1`,
  'outlasts-its-time': 'exec sleep 3',
  // Killing the shell alone leaves the subshell running, and it changes the project after the gate moved on: once
  // the scenario is over (LATE_GO appears beside the project), never before, however late a busy machine's timers.
  'leaves-a-child-running':
    `( for i in $(seq 1 100); do [ -e ../${LATE_GO} ] && break; sleep 0.05; done; echo late > late.txt ); ` + 'exit 1',
  killed: `${printed(CHECK_SAYS)}; kill -9 $$`,
};

const ADD_JS = 'export function add(a, b) {\n  return a - b;\n}\n';
const chunk = (name: string, chars: number) => `${name}\n${'lorem ipsum dolor sit amet\n'.repeat(chars / 27)}`;
const PROJECT: Record<string, string> = {
  'add.js': ADD_JS,
  'test.js': "import { add } from './add.js';\nif (add(2, 3) !== 5) process.exit(1);\n",
  'notes.txt': 'one\ntwo\ntwo\n',
  'caf\u00e9.txt': 'NFC name\n',
  'sub/inner.txt': `${INNER}: what the sub-agent reads\n`,
  'log.txt': '',
};
const CHUNKS: Record<string, string> = {
  'chunks/a.txt': chunk('a', 9_000),
  'chunks/b.txt': chunk('b', 12_000),
  'chunks/c.txt': chunk('c', 15_000),
};
const OUTSIDE: Record<string, string> = {
  'secret.txt': `${SECRET}\n`,
  'project-private/secret.txt': `${SECRET} (in a sibling whose name begins like the project's)\n`,
  'rules.md': `${LINKED_RULE}\n`,
};
const LINKS: Record<string, string> = {
  'link-out': '../secret.txt',
  'link-in': 'add.js',
  'dir-out': '../project-private',
  'link-to-test': 'test.js',
};

/** Paths a call may name, each with the step that teaches what happens to it. */
const INSIDE = ['add.js', './add.js', 'sub/../add.js', '{ROOT}/add.js', 'link-in', 'notes.txt', 'sub/inner.txt'];
const INSIDE_ODD = ['caf\u00e9.txt', 'cafe\u0301.txt', 'sub', '.', 'missing.txt'];
const OUTSIDE_PATHS = [
  '../secret.txt',
  '../project-private/secret.txt',
  '{ROOT}/../secret.txt',
  'link-out',
  'dir-out/secret.txt',
  'sub/../../secret.txt',
  '/etc/hostname',
  'a\u0000.txt',
];
const PROTECTED_PATHS = ['test.js', './test.js', 'sub/../test.js', '{ROOT}/test.js', 'link-to-test'];

// --- The scenarios' tools: each run recorded, so what ran, and with what, is known whatever the harness says.

interface Played {
  runs: { call: string; readOnly: boolean }[];
  approvalsAsked: string[];
  /** The signal each run was handed: once its task is over, each must be aborted, as Ctrl-C would abort it. */
  signals: (AbortSignal | undefined)[];
}

/** The tools a stage's scenarios give the harness, recording every run into `played`. */
function toolsFor(stage: Lesson, played: Played, root: () => string): Tool[] {
  const recorded = (tool: Tool): Tool => ({
    ...tool,
    run: async (input, context) => {
      played.runs.push({ call: `${tool.name} ${shownInput(input, root())}`, readOnly: tool.readOnly });
      played.signals.push(context.signal);
      return await tool.run(input, context);
    },
  });
  const p1Tools = [ECHO, BROKEN, QUIET, APPEND_LINE];
  const p2Tools = [...TOOLS, COUNT, TALLY, PEEK];
  const p3Tools = [WRITE_FILE, STAMP];
  const tools = at(stage, 'p1') ? [...p1Tools, ...(at(stage, 'p2') ? p2Tools : [])] : [];
  return [...tools, ...(at(stage, 'p3') ? p3Tools : [])].map(recorded);
}

const at = (stage: Lesson, step: Lesson) => LESSONS.indexOf(stage) >= LESSONS.indexOf(step);

const ECHO = defineTool({
  name: 'echo',
  description: 'Repeats the text it is given.',
  input: z.strictObject({ text: z.string() }),
  readOnly: true,
  run: async ({ text }) => `echo: ${text}`,
});
const BROKEN = defineTool({
  name: 'broken',
  description: 'Always fails.',
  input: z.strictObject({}),
  readOnly: true,
  run: async () => {
    throw new Error('broken: this tool always fails');
  },
});
const QUIET = defineTool({
  name: 'quiet',
  description: 'Succeeds and prints nothing.',
  input: z.strictObject({}),
  readOnly: true,
  run: async () => '',
});
const APPEND_LINE = defineTool({
  name: 'append_line',
  description: 'Appends one line to log.txt.',
  input: z.strictObject({ line: z.string() }),
  readOnly: false,
  run: async ({ line }, context) => {
    const log = path.join(context.root, 'log.txt');
    const before = await readFile(log, 'utf8').catch(() => '');
    await sleep(1);
    await writeFiles(context.root, { 'log.txt': `${before}${line}\n` });
    return `appended "${line}"`;
  },
});
/** Tools that trust their input: the harness must check it against the schema, the path inside the project. */
const COUNT: Tool = {
  name: 'count',
  kind: 'other',
  describe: (input) => describeArguments('count', input),
  description: 'Counts to n.',
  input: z.strictObject({ n: z.number().int() }),
  readOnly: true,
  run: async (input) => `counted ${JSON.stringify(input)}`,
};
const TALLY: Tool = {
  name: 'tally',
  kind: 'other',
  describe: (input) => describeArguments('tally', input),
  description: 'Tallies to n; its schema is a plain z.object.',
  input: z.object({ n: z.number().int() }),
  readOnly: true,
  run: async (input) => `tallied ${JSON.stringify(input)}`,
};
const PEEK: Tool = {
  name: 'peek',
  kind: 'other',
  describe: (input) => describeArguments('peek', input),
  description: 'Shows a file, trusting the harness to keep its path inside the project.',
  input: z.strictObject({ path: z.string() }),
  readOnly: true,
  run: async (input, context) => await readFile(path.resolve(context.root, (input as { path: string }).path), 'utf8'),
};
const WRITE_FILE: Tool = {
  name: 'write_file',
  kind: 'other',
  describe: (input) => describeArguments('write_file', input),
  description: 'Replaces a whole file, with no checks of its own and no preview.',
  input: z.strictObject({ path: z.string(), content: z.string() }),
  readOnly: false,
  run: async (input, context) => {
    const { path: file, content } = input as { path: string; content: string };
    await writeFiles(path.dirname(path.resolve(context.root, file)), { [path.basename(file)]: content });
    return `wrote ${file}`;
  },
};
const STAMP: Tool = {
  name: 'stamp',
  kind: 'other',
  describe: (input) => describeArguments('stamp', input),
  description: 'Appends a stamp to a file; its preview fails.',
  input: z.strictObject({ path: z.string() }),
  readOnly: false,
  preview: async () => {
    throw new Error('stamp: no preview today');
  },
  run: async (input, context) => {
    const file = path.resolve(context.root, (input as { path: string }).path);
    await writeFiles(path.dirname(file), { [path.basename(file)]: `${await readFile(file, 'utf8')}stamped\n` });
    return 'stamped';
  },
};

/** A call's arguments as a story shows them, the project's folder written {ROOT}. */
function shownInput(input: unknown, root: string): string {
  return JSON.stringify(input)
    .split(root)
    .join('{ROOT}')
    .replace(
      /[\u0000-\u001f\u007f-\u009f\u0300-\u036f]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
}

// --- The generator, stage by stage: each stage's scenarios use its step's features and every earlier one's.

const TASKS = ['Make add(2, 3) return 5.', 'Now tidy notes.txt.', 'What is in sub/?'];

function callArb(stage: Lesson): fc.Arbitrary<Block> {
  const call = (name: string, input: fc.Arbitrary<Record<string, unknown>>, step: Lesson) =>
    input.map((given): Block => ({ type: 'call', name, input: given, step }));
  const p1 = [
    call('echo', fc.record({ text: fc.constantFrom('hi', 'again', '') }), 'p1'),
    call('broken', fc.constant({}), 'p1'),
    call('quiet', fc.constant({}), 'p1'),
    call('append_line', fc.record({ line: fc.constantFrom('a', 'b', 'c', 'd') }), 'p1'),
    call('no_such_tool', fc.constant({ text: 'hi' }), 'p1'),
  ];
  if (!at(stage, 'p2')) return fc.oneof(...p1);
  const anyPath = fc.constantFrom(...INSIDE, ...INSIDE_ODD, ...OUTSIDE_PATHS, ...PROTECTED_PATHS);
  const p2 = [
    call('read_file', fc.record({ path: anyPath }), 'p2'),
    call('peek', fc.record({ path: anyPath }), 'p2'),
    call(
      'list_files',
      fc.record({ path: fc.constantFrom('.', 'sub', '../project-private', 'dir-out', 'chunks') }),
      'p2',
    ),
    call(
      'edit_file',
      fc.record({
        path: fc.constantFrom(
          'add.js',
          './add.js',
          '{ROOT}/add.js',
          '../secret.txt',
          'link-out',
          'notes.txt',
          'new.txt',
        ),
        old_str: fc.constantFrom('return a - b;', 'two', 'one', '', 'absent'),
        new_str: fc.constantFrom('return a + b;', 'three'),
      }),
      'p2',
    ),
    call('count', fc.constantFrom({ n: 3 }, { n: '3' }, { n: 2.5 }, { n: 3, extra: true }, {}), 'p2'),
    call('tally', fc.constantFrom({ n: 4 }, { n: '4' }, { n: 4, extra: true }), 'p2'),
    call('echo', fc.constantFrom({ text: 5 }, { text: 'x', loud: true }), 'p2'),
  ];
  if (!at(stage, 'p3')) return fc.oneof(...p1, ...p2);
  const p3 = [
    call(
      'write_file',
      fc.record({
        path: fc.constantFrom(...PROTECTED_PATHS, 'add.js', 'new.txt', '../secret.txt', 'sub/test.js'),
        content: fc.constant('x\n'),
      }),
      'p3',
    ),
    call('stamp', fc.record({ path: fc.constantFrom('notes.txt', 'test.js') }), 'p3'),
    call('write_file', fc.constantFrom({ path: 'new.txt' }, { path: 'test.js', content: 5 }, { content: 'x' }), 'p3'),
    call(
      'edit_file',
      fc.record({
        path: fc.constantFrom(...PROTECTED_PATHS),
        old_str: fc.constant('!== 5'),
        new_str: fc.constant('!== -1'),
      }),
      'p3',
    ),
  ];
  if (!at(stage, 'p4')) return fc.oneof(...p1, ...p2, ...p3);
  const p4 = [
    call('read_file', fc.record({ path: fc.constantFrom(...Object.keys(CHUNKS)) }), 'p4'),
    call(
      'task',
      fc.record({ description: fc.constant('look around'), prompt: fc.constantFrom('What is in sub/?') }),
      'p4',
    ),
  ];
  return fc.oneof({ arbitrary: fc.oneof(...p1, ...p2, ...p3), weight: 1 }, { arbitrary: fc.oneof(...p4), weight: 2 });
}

const replyTexts = fc.constantFrom('Looking.', 'Done: add(2, 3) is 5.', 'I changed add.js.');

/** A read of add.js, then its fix: in one reply, in the next, or after a claim of "done" (in the next task when the
 *  first is accepted). What the tool context remembers, and the check after a real fix, need them in this order. */
function readThenEdit(stage: Lesson): { arbitrary: fc.Arbitrary<Reply[]>; weight: number }[] {
  if (!at(stage, 'p2')) return [];
  const one = (...blocks: Block[]): Reply => ({ blocks, cut: false, fails: false });
  const read: Block = { type: 'call', name: 'read_file', input: { path: 'add.js' }, step: 'p2' };
  const fix: Block = {
    type: 'call',
    name: 'edit_file',
    input: { path: 'add.js', old_str: 'return a - b;', new_str: 'return a + b;' },
    step: 'p2',
  };
  const pairs = fc.constantFrom<Reply[]>(
    [one(read, fix)],
    [one(read), one(fix)],
    [one(read), one({ type: 'text', text: 'Looking.' }), one(fix)],
  );
  return [{ arbitrary: pairs, weight: 1 }];
}

const sometimes = (weight: number) =>
  fc.oneof(CROSS, { arbitrary: fc.constant(false), weight }, { arbitrary: fc.constant(true), weight: 1 });

/** A value of a later choice may shrink to one of an earlier: a scenario shrinks to plain replies, then to text. */
const CROSS = { withCrossShrink: true };

function replyArb(stage: Lesson, calls: boolean): fc.Arbitrary<Reply> {
  const plain: fc.Arbitrary<Block>[] = [
    replyTexts.map((text): Block => ({ type: 'text', text })),
    fc.constant<Block>({ type: 'empty' }),
    fc.constant<Block>({ type: 'thinking' }),
  ];
  const block = calls
    ? fc.oneof(CROSS, { arbitrary: fc.oneof(...plain), weight: 1 }, { arbitrary: callArb(stage), weight: 2 })
    : fc.oneof(...plain);
  return fc.record({
    blocks: fc.array(block, { minLength: 1, maxLength: calls ? 4 : 3 }),
    cut: at(stage, 'p3') ? sometimes(4) : fc.constant(false),
    fails: sometimes(12),
  });
}

/** The scenarios of one stage. */
export function scenarioArb(stage: Lesson): fc.Arbitrary<Scenario> {
  const calls = at(stage, 'p1');
  const loopedCall = fc.oneof(
    callArb(stage).map((call): Reply => ({ blocks: [call], cut: false, fails: false })),
    replyArb(stage, false),
  );
  const loop = calls
    ? fc.option(fc.record({ reply: loopedCall, times: fc.integer({ min: 20, max: 28 }) }), { freq: 4 })
    : fc.constant(null);
  const scenarios: fc.Arbitrary<Scenario> = fc.record({
    stage: fc.constant(stage),
    tasks: fc.array(fc.constantFrom(...TASKS), { minLength: 1, maxLength: 3 }),
    replies: fc
      .array(
        fc.oneof(CROSS, { arbitrary: replyArb(stage, calls).map((r) => [r]), weight: 4 }, ...readThenEdit(stage)),
        {
          minLength: 1,
          maxLength: 6,
        },
      )
      .map((chunks) => chunks.flat()),
    loop,
    subReplies: at(stage, 'p4') ? fc.array(replyArb('p2', true), { maxLength: 3 }) : fc.constant([]),
    subLoop: at(stage, 'p4') ? fc.constantFrom(0, 0, 29, 30, 31) : fc.constant(0),
    verify: at(stage, 'p2')
      ? fc.option(
          fc.oneof(
            { arbitrary: fc.constantFrom<Verify>('passes', 'fails', 'passes-once-fixed', 'long-output'), weight: 4 },
            {
              // lessons/p2.ts runs its check with exec, as build.md's step 3 warns against; from P3 on, runCommand.
              arbitrary: fc.constantFrom<Verify>(
                'outlasts-its-time',
                'killed',
                ...(at(stage, 'p3') ? (['leaves-a-child-running'] as const) : []),
              ),
              weight: 1,
            },
          ),
          { freq: 4 },
        )
      : fc.constant(null),
    approvals: at(stage, 'p3')
      ? fc.option(fc.array(fc.constantFrom<Approval>('yes', 'no', 'throws', 'never'), { maxLength: 4 }), { freq: 3 })
      : fc.constant(null),
    protect: at(stage, 'p3') ? fc.boolean() : fc.constant(false),
    contextWindow: at(stage, 'p4') ? fc.option(fc.constant(WINDOW), { freq: 4 }) : fc.constant(null),
    agentsMd: at(stage, 'p4')
      ? fc.constantFrom<Scenario['agentsMd']>('none', 'rule', 'linked-out', 'over-the-cap')
      : fc.constant<Scenario['agentsMd']>('none'),
    rootThroughLink: calls ? sometimes(5) : fc.constant(false),
  });
  return scenarios.filter(withinBuildMd);
}

/** What agent.ts does beyond build.md, and the scenarios leave to its own tests, so that agent.ts can be checked too:
 *  a model that makes one call three times in a row is stuck, and its runaway guard stops it; and sub-agents of one
 *  reply run side by side, which would share out the one scripted taskModel's replies in an order of their own. */
function withinBuildMd(scenario: Scenario): boolean {
  const calls = [...scenario.replies, ...scenario.subReplies].flatMap((reply) =>
    reply.blocks.flatMap((block) => (block.type === 'call' ? [`${block.name} ${JSON.stringify(block.input)}`] : [])),
  );
  const thrice = calls.some((call, i) => i >= 2 && call === calls[i - 1] && call === calls[i - 2]);
  const tasks = (reply: Reply) => reply.blocks.filter((block) => block.type === 'call' && block.name === 'task');
  return !thrice && scenario.replies.every((reply) => tasks(reply).length <= 1);
}

// --- Playing a scenario: a fresh project, a model that answers from the script, and what a user would observe.

/** One thing a user would observe, named so that the two runs' observations line up; `see` is where build.md
 *  teaches it. */
interface Fact {
  what: string;
  value: string;
  see: BuildSection | null;
}

/** A task that takes longer than this is a hang: no reference takes a third of it, even on a busy machine. */
const TASK_TIMEOUT_MS = 10_000;

interface Seen {
  request: ModelRequest;
  turn: boolean;
  violation: string | null;
  /** How many summaries the model had given before this request. */
  summariesBefore: number;
}

/** The scripted model of a scenario: turns take the next reply; with a window, a request that does not end where
 *  the transcript does is a request on the side, answered with a summary. Each request is judged by the API's rules
 *  and one the API would refuse is answered as the API would, with an error. */
class ScenarioModel implements Model {
  readonly name = 'scenario';
  readonly seen: Seen[] = [];
  private next = 0;
  private turns = 0;
  private summaries = 0;
  private readonly signatures = new Map<string, string>();

  constructor(
    private readonly script: readonly Reply[],
    private readonly root: string,
    private readonly isTurn: (request: ModelRequest) => boolean,
  ) {}

  async complete(request: ModelRequest, { signal }: { signal: AbortSignal }): Promise<Anthropic.Message> {
    await nextTick();
    signal.throwIfAborted();
    const violation = mainViolation(
      requestViolations(
        { model: 'scenario', max_tokens: 1024, ...request },
        (thinking, signature) => this.signatures.get(signature) === thinking,
      ),
    );
    const turn = this.isTurn(request);
    this.seen.push({
      request: structuredClone(request),
      turn,
      violation: violation ?? null,
      summariesBefore: this.summaries,
    });
    if (this.seen.length > 200) throw new Error('more than 200 model calls in one scenario');
    if (violation !== undefined) throw new Error(`400 invalid_request_error: ${violation}`);
    if (!turn)
      return message(
        [{ type: 'text', text: `${SUMMARY}${++this.summaries}: the goal and the names.`, citations: null }],
        'end_turn',
        request,
      );
    const turnNo = ++this.turns;
    const scripted = this.script[this.next++];
    if (scripted === undefined) throw new Error('529 overloaded: the script is used up');
    if (scripted.fails) throw new Error('529 overloaded');
    const content = scripted.blocks.map((block, i): Anthropic.ContentBlock => {
      switch (block.type) {
        case 'text':
          return { type: 'text', text: block.text, citations: null };
        case 'empty':
          // Whitespace is as empty as nothing to the API: every other empty block is blank instead.
          return { type: 'text', text: turnNo % 2 === 0 ? ' \n' : '', citations: null };
        case 'thinking':
          this.signatures.set(`sig-${turnNo}`, `plan ${turnNo}`);
          return { type: 'thinking', thinking: `plan ${turnNo}`, signature: `sig-${turnNo}` };
        case 'call': {
          const input = JSON.parse(JSON.stringify(block.input).split('{ROOT}').join(this.root)) as unknown;
          return { type: 'tool_use', id: `toolu_${turnNo}_${i}`, name: block.name, input, caller: { type: 'direct' } };
        }
      }
    });
    const calls = content.some((block) => block.type === 'tool_use');
    return message(content, scripted.cut ? 'max_tokens' : calls ? 'tool_use' : 'end_turn', request);
  }
}

/** A reply as the API sends it, its usage the request's size as the window is measured (a harness may read it). */
function message(
  content: Anthropic.ContentBlock[],
  stop: Anthropic.StopReason,
  request: ModelRequest,
): Anthropic.Message {
  return {
    id: 'msg_scenario',
    type: 'message',
    role: 'assistant',
    model: 'scenario',
    content,
    stop_reason: stop,
    stop_sequence: null,
    stop_details: null,
    container: null,
    diagnostics: null,
    usage: usageOf({
      input_tokens: Math.ceil(JSON.stringify(request).length / 4),
      output_tokens: Math.ceil(JSON.stringify(content).length / 4),
    }),
  };
}

/** The replies a model gives over a scenario: the script, the loop (its reply every other turn, an echo between, so
 *  that no call comes twice in a row), then a claim of "done"; after that, every call fails. */
function expand(replies: readonly Reply[], loop: Scenario['loop'], last: string): Reply[] {
  const tick = (n: number): Reply => ({
    blocks: [{ type: 'call', name: 'echo', input: { text: `tick ${n}` }, step: 'p1' }],
    cut: false,
    fails: false,
  });
  const looped =
    loop === null ? [] : Array.from({ length: loop.times }, (_, n) => (n % 2 === 0 ? varied(loop.reply, n) : tick(n)));
  return [...replies, ...looped, { blocks: [{ type: 'text', text: last }], cut: false, fails: false }];
}

function varied(reply: Reply, n: number): Reply {
  const vary = (key: string, value: unknown) => {
    if (typeof value !== 'string') return value;
    if (key === 'path' && n % 4 === 2) return value.startsWith('/') || value.startsWith('{') ? value : `./${value}`;
    return key === 'text' || key === 'line' ? `${value} ${n}` : value;
  };
  const blocks = reply.blocks.map((block) =>
    block.type === 'call'
      ? { ...block, input: Object.fromEntries(Object.entries(block.input).map(([k, v]) => [k, vary(k, v)])) }
      : block,
  );
  return { ...reply, blocks };
}

const DONE = 'Done: add(2, 3) is 5.';
const SUB_DONE = `${SUB_ANSWER}: sub/ holds inner.txt.`;
const SUB_LOOP: Reply = {
  blocks: [{ type: 'call', name: 'read_file', input: { path: 'sub/inner.txt' }, step: 'p4' }],
  cut: false,
  fails: false,
};

/** A sub-agent's reply, its texts marked as said on the way: the call's result is the last text it said. */
const aside = (reply: Reply): Reply => ({
  ...reply,
  blocks: reply.blocks.map((block) =>
    block.type === 'text' ? { ...block, text: `${SUB_ASIDE}: ${block.text}` } : block,
  ),
});

/** What a user would observe of `harness` playing `scenario`, in a fresh project. */
export async function observe(harness: Harness, scenario: Scenario): Promise<Fact[]> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), `scenario-${scenario.stage}-`)));
  try {
    return await observeIn(dir, harness, scenario);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function observeIn(dir: string, harness: Harness, scenario: Scenario): Promise<Fact[]> {
  const root = path.join(dir, 'project');
  await mkdir(root);
  await writeFiles(dir, OUTSIDE);
  await writeFiles(root, { ...PROJECT, ...(at(scenario.stage, 'p4') ? CHUNKS : {}), ...agentsMd(scenario) });
  for (const [name, target] of Object.entries(LINKS)) await symlink(target, path.join(root, name));
  if (scenario.agentsMd === 'linked-out') await symlink('../rules.md', path.join(root, 'AGENTS.md'));
  const given = scenario.rootThroughLink ? path.join(dir, 'link-to-project') : root;
  if (scenario.rootThroughLink) await symlink('project', given);
  const before = await diskOf(dir);
  const played: Played = { runs: [], approvalsAsked: [], signals: [] };
  const facts: Fact[] = [];
  const fact = (what: string, value: string, see: BuildSection | null = null) => facts.push({ what, value, see });
  let agent: unknown = null;
  const transcript = () => messagesOf(agent);
  const windowed = scenario.contextWindow !== null;
  const endsTheTranscript = (request: ModelRequest) =>
    !windowed || isDeepStrictEqual(request.messages.at(-1), transcript()?.at(-1));
  const model = new ScenarioModel(expand(scenario.replies, scenario.loop, DONE), root, endsTheTranscript);
  const subModel = new ScenarioModel(
    expand(
      scenario.subReplies.map(aside),
      scenario.subLoop === 0 ? null : { reply: SUB_LOOP, times: scenario.subLoop },
      SUB_DONE,
    ),
    root,
    () => true,
  );
  let task = new AbortController();
  const answers = [...(scenario.approvals ?? [])];
  const approve = async ({ tool, signal: handed }: { tool: unknown; signal?: unknown }) => {
    played.approvalsAsked.push(typeof tool === 'string' ? tool : `(a ${typeof tool}, not a name)`);
    switch (answers.shift() ?? 'yes') {
      case 'yes':
        return { approved: true as const };
      case 'no':
        return { approved: false as const, reason: 'not now' };
      case 'throws':
        throw new Error('the approver crashed');
      case 'never': {
        // Nobody answers; the person presses Ctrl-C a moment later, which aborts the task's signal. The question
        // ends when the signal it was handed aborts: one not linked to the task's keeps it waiting, and the run hangs.
        const ctrlC = task;
        setTimeout(() => ctrlC.abort(), 10);
        return await new Promise<never>((_, reject) => {
          if (handed instanceof AbortSignal)
            handed.addEventListener('abort', () => reject(new Error('nobody answered')), { once: true });
        });
      }
    }
  };
  const tools = toolsFor(scenario.stage, played, () => root);
  const config = {
    root: given,
    model,
    tools,
    ...(scenario.verify !== null && {
      verify: VERIFY[scenario.verify],
      verifyTimeoutMs: ['outlasts-its-time', 'leaves-a-child-running'].includes(scenario.verify)
        ? VERIFY_TIMEOUT_MS
        : 10_000,
    }),
    ...(scenario.protect && { protect: ['test.js'] }),
    ...(scenario.approvals !== null && { approve }),
    ...(scenario.contextWindow !== null && { contextWindow: scenario.contextWindow }),
    ...(at(scenario.stage, 'p4') && { taskModel: subModel }),
  };
  const created = await settled(async () => harness.createAgent(config), TASK_TIMEOUT_MS);
  if ('threw' in created) {
    fact('createAgent', created.threw, 'contract');
    return facts;
  }
  agent = created.value;
  let disk = before;
  for (const [t, text] of scenario.tasks.entries()) {
    const name = `task ${t + 1}`;
    const from = { requests: model.seen.length, runs: played.runs.length, asked: played.approvalsAsked.length };
    task = new AbortController();
    const { signal } = task;
    const returned = await settled(async () => harness.runTask(agent, text, signal), TASK_TIMEOUT_MS);
    task.abort();
    // What a harness left running (a call it did not await, a check's child it did not kill) does its damage now.
    const last = t === scenario.tasks.length - 1;
    const leftover = last && scenario.verify === 'leaves-a-child-running';
    if (leftover) await writeFiles(dir, { [LATE_GO]: '' });
    await sleep(leftover ? 400 : 2);
    // First what a user sees happen (a request refused, the calls run, the files, the halt), then what the model was
    // sent. With a window, when a summary is asked for is the harness's own estimate: only the turns are compared one
    // by one, and the summary requests by whether the API would take them.
    const sent = model.seen.slice(from.requests);
    const turns = sent.filter((r) => r.turn);
    const refused = turns.findIndex((r) => r.violation !== null);
    const first = turns[refused];
    // A request that breaks a rule after a summary was made breaks it through the compaction.
    const see = first?.violation == null ? null : first.summariesBefore > 0 ? 'p4' : fixFor(first.violation).see;
    fact(
      `${name}: the first request the API would refuse`,
      first ? `request ${refused + 1}, ${validity(first)}` : 'none',
      see,
    );
    fact(`${name}: the calls that ran`, runsShown(played.runs.slice(from.runs), at(scenario.stage, 'p3')) || 'none');
    const deaf = played.signals.slice(from.runs).filter((given) => given?.aborted !== true).length;
    fact(`${name}: calls that Ctrl-C would not reach (no signal, or not the task's)`, String(deaf), 'p1');
    const now = await diskOf(dir);
    fact(`${name}: the files changed`, changes(disk, now));
    disk = now;
    if (scenario.approvals !== null)
      fact(
        `${name}: config.approve was asked about`,
        played.approvalsAsked.slice(from.asked).join(', ') || 'nothing',
        'p3',
      );
    fact(`${name}: the halt`, 'threw' in returned ? returned.threw : haltOf(returned.value, config));
    const summaryRefused = sent.find((r) => !r.turn && r.violation !== null);
    if (summaryRefused !== undefined)
      fact(`${name}: a summary request by the API's rules`, validity(summaryRefused), 'p4');
    const forgot = sent.find((r) => !r.turn && r.summariesBefore > 0 && !carriesSummary(r, r.summariesBefore));
    if (forgot !== undefined) fact(`${name}: a summary request without the summary before it`, 'sent', 'p4');
    // The question comes last, after the older messages: a request that ends with one of the transcript's asks the
    // model to go on from there, not to summarise it.
    const inTranscript = (m: Anthropic.MessageParam | undefined) => transcript()?.some((t) => isDeepStrictEqual(t, m));
    if (sent.some((r) => !r.turn && inTranscript(r.request.messages.at(-1))))
      fact(`${name}: a summary request that does not end with its question`, 'sent', 'p4');
    const older = (r: Seen) => r.request.messages.slice(0, -1).filter((m) => !JSON.stringify(m).includes(SUMMARY));
    if (sent.some((r) => !r.turn && older(r).length === 0))
      fact(`${name}: a summary request with nothing new to summarise`, 'sent', 'p4');
    for (const [i, seen] of turns.entries()) {
      const before = sent[sent.indexOf(seen) - 1];
      requestFacts(
        fact,
        `${name}, request ${i + 1}${windowed ? ' (not counting summary requests)' : ''}`,
        seen,
        scenario,
        config.tools,
        root,
        dir,
        before !== undefined && !before.turn,
      );
    }
    if ('threw' in returned && returned.threw.startsWith('did not return')) break;
  }
  const messages = transcript();
  fact('the transcript', messages === null ? 'no messages array' : normalized(messages, root, dir));
  for (const [i, seen] of subModel.seen.entries()) {
    const parentSystem = model.seen[0]?.request.system;
    const own = isDeepStrictEqual(seen.request.system, parentSystem) ? "the parent's" : 'its own';
    const offered = (seen.request.tools ?? []).map((t) => ('name' in t ? t.name : '?')).sort();
    fact(
      `the sub-agent's request ${i + 1}`,
      `${validity(seen)}; ${own} system prompt; tools ${offered.join(', ')}; ` +
        `sends ${normalized(seen.request.messages, root, dir)}`,
      'p4',
    );
  }
  return facts;
}

/** The calls that ran, in order; from P3 on, where read-only calls may run side by side (agent.ts runs them so, and
 *  a sub-agent's calls with them), each run of consecutive read-only calls in an order of its own. */
function runsShown(runs: readonly { call: string; readOnly: boolean }[], readsTogether: boolean): string {
  const groups: string[][] = [];
  for (const [i, run] of runs.entries()) {
    const joins = readsTogether && run.readOnly && runs[i - 1]?.readOnly === true;
    if (joins) groups.at(-1)!.push(run.call);
    else groups.push([run.call]);
  }
  return groups.map((group) => (group.length > 1 ? `{${group.sort().join(', ')}}` : group[0])).join('; ');
}

function agentsMd(scenario: Scenario): Record<string, string> {
  switch (scenario.agentsMd) {
    case 'rule':
      return { 'AGENTS.md': `# House rules\n\n${RULE}\n` };
    case 'over-the-cap':
      return { 'AGENTS.md': `# House rules\n\n${RULE}\n${'Keep lines short.\n'.repeat(2_000)}${RULE_PAST_CAP}\n` };
    default:
      return {};
  }
}

function messagesOf(agent: unknown): Anthropic.MessageParam[] | null {
  const messages: unknown = typeof agent === 'object' && agent !== null && 'messages' in agent && agent.messages;
  return Array.isArray(messages) ? (messages as Anthropic.MessageParam[]) : null;
}

async function settled<T>(fn: () => Promise<T>, ms: number): Promise<{ value: T } | { threw: string }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ threw: string }>((resolve) => {
    timer = setTimeout(() => resolve({ threw: `did not return within ${ms / 1000} s` }), ms);
  });
  const work = fn().then(
    (value) => ({ value }),
    (error: unknown) => ({ threw: `threw ${error instanceof Error ? error.message.split('\n')[0] : String(error)}` }),
  );
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

function validity(seen: Seen): string {
  return seen.violation === null
    ? 'valid'
    : `refused by the API: ${seen.violation.replace(/messages\.\d+[^:]*: /, '')}`;
}

function requestFacts(
  fact: (what: string, value: string, see?: BuildSection | null) => void,
  name: string,
  seen: Seen,
  scenario: Scenario,
  tools: readonly Tool[],
  root: string,
  dir: string,
  summarisedJustBefore: boolean,
): void {
  const { request } = seen;
  const system =
    typeof request.system === 'string' ? request.system : (request.system ?? []).map((b) => b.text).join('');
  fact(`${name}: a system prompt`, system.trim() === '' ? 'none' : 'one', 'p0');
  fact(`${name}: what its system prompt carries`, markersIn(system) || 'nothing of the project');
  if (at(scenario.stage, 'p1')) {
    const defined = tools.filter((tool) => request.tools?.some((sent) => definesTool(sent, tool)));
    fact(
      `${name}: the tools it defines`,
      defined.length === tools.length ? 'all' : defined.map((t) => t.name).join(', ') || 'none',
      'p1',
    );
  }
  if (scenario.contextWindow === null) {
    fact(`${name}: what it sends`, normalized(request.messages, root, dir));
    return;
  }
  fact(`${name}: what it ends with`, normalized(request.messages, root, dir, true));
  const tokens = Math.ceil(JSON.stringify(request).length / 4);
  // A request that holds only a summary and the latest exchange cannot be cut further: what it sends is what it must.
  const messages = request.messages;
  const from = messages[0] !== undefined && JSON.stringify(messages[0]).includes(SUMMARY) ? 1 : 0;
  const uncuttable = messages.slice(from + 1).every((m) => m.role !== 'assistant');
  const within = tokens <= scenario.contextWindow || uncuttable;
  fact(`${name}: within the window, or cut as far as it goes`, within ? 'yes' : 'no', 'p4');
  // Past 75% of the window, a request that could be cut comes right after a summary request.
  const late = tokens > COMPACT_AT * scenario.contextWindow && !uncuttable && !summarisedJustBefore;
  fact(`${name}: past 75% of the window, summarised first`, late ? 'no' : 'yes', 'p4');
  const sent = JSON.stringify(request.messages);
  const latest = seen.summariesBefore === 0 || carriesSummary(seen, seen.summariesBefore);
  fact(`${name}: the latest summary in it, if there is one`, latest ? 'yes' : 'no', 'p4');
  const secret = sent.includes(SECRET);
  fact(`${name}: the secret in it`, secret ? 'yes' : 'no', 'p2');
}

const carriesSummary = (seen: Seen, n: number) => JSON.stringify(seen.request.messages).includes(`${SUMMARY}${n}:`);

function definesTool(sent: Anthropic.ToolUnion, tool: Tool): boolean {
  if (!('input_schema' in sent) || sent.name !== tool.name || sent.description !== tool.description) return false;
  const schema = z.toJSONSchema(tool.input, { io: 'input' });
  return (
    sent.input_schema.type === 'object' &&
    isDeepStrictEqual(sent.input_schema.properties ?? {}, schema.properties ?? {}) &&
    isDeepStrictEqual([...(sent.input_schema.required ?? [])].sort(), [...(schema.required ?? [])].sort())
  );
}

const markersIn = (text: string) => {
  const found = MARKERS.filter((marker) => text.includes(marker));
  if (text.includes(SUMMARY)) found.push('a summary');
  if (text.length > 20_000) found.push('over 20,000 characters');
  return found.length === 0 ? '' : ` [${found.join(', ')}]`;
};

/** Messages as behaviour: the script's own texts as they are, the harness's texts as the markers they carry (never
 *  their wording), each result as ok with its tool's output or as an error. */
function normalized(messages: readonly Anthropic.MessageParam[], root: string, dir: string, lastOnly = false): string {
  const local = (text: string) => text.split(root).join('{ROOT}').split(dir).join('{DIR}');
  const authored = new Set<string>([...TASKS, DONE, SUB_DONE, 'Looking.', 'I changed add.js.', 'What is in sub/?']);
  const textItem = (text: string) => (authored.has(text) ? JSON.stringify(text) : `note${markersIn(text)}`);
  // A sub-agent's answer is the harness's own text: only what it carries counts.
  const byTask = new Set<string>();
  const item = (block: Anthropic.ContentBlockParam): string => {
    switch (block.type) {
      case 'text':
        return textItem(block.text);
      case 'thinking':
        return /^plan \d+$/.test(block.thinking) && block.signature === `sig-${block.thinking.slice(5)}`
          ? 'thinking'
          : 'thinking (altered)';
      case 'tool_use':
        if (block.name === 'task') byTask.add(block.id);
        return `call ${block.id} ${block.name} ${local(JSON.stringify(block.input))}`;
      case 'tool_result': {
        const content =
          typeof block.content === 'string'
            ? block.content
            : (block.content ?? []).map((b) => (b.type === 'text' ? b.text : b.type)).join('');
        if (block.is_error === true) return `error for ${block.tool_use_id}${markersIn(content)}`;
        return byTask.has(block.tool_use_id)
          ? `result for ${block.tool_use_id}${markersIn(content)}`
          : `result for ${block.tool_use_id}: ${JSON.stringify(local(content).slice(0, 200))}${markersIn(content)}`;
      }
      default:
        return block.type;
    }
  };
  // Beside results, the harness's own words that carry nothing (a "go on" after a cut-off reply's) are left out.
  const items = (content: readonly Anthropic.ContentBlockParam[]) => {
    const shown = content.map(item);
    const beside = content.some((block) => block.type === 'tool_result');
    return (beside ? shown.filter((text) => text !== 'note') : shown).join(' | ');
  };
  const shown = messages.map(
    (m) => `${m.role}(${typeof m.content === 'string' ? textItem(m.content) : items(m.content)})`,
  );
  return (lastOnly ? shown.slice(-1) : shown).join(' / ');
}

function haltOf(halt: unknown, config: { verify?: string }): string {
  if (typeof halt !== 'object' || halt === null || !('kind' in halt)) return `not a halt: ${JSON.stringify(halt)}`;
  switch (halt.kind) {
    case 'accepted': {
      const by = 'verifiedBy' in halt ? halt.verifiedBy : undefined;
      if (by === null) return 'accepted, unverified';
      return by === config.verify
        ? 'accepted, verified by config.verify'
        : `accepted, verifiedBy ${JSON.stringify(by)}`;
    }
    case 'budget': {
      const { budget, limit } = halt as { budget?: unknown; limit?: unknown };
      return `budget: ${String(budget)}, limit ${String(limit)}`;
    }
    case 'error':
    case 'interrupted':
      return 'stopped (error or interrupted)';
    default:
      return `not a halt: ${JSON.stringify(halt)}`;
  }
}

/** Every file and link under `dir`, as a short fingerprint. */
async function diskOf(dir: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const walk = async (folder: string): Promise<void> => {
    for (const name of (await readdir(folder)).sort()) {
      if (folder === dir && name === LATE_GO) continue;
      const file = path.join(folder, name);
      const relative = path.relative(dir, file);
      const stats = await lstat(file);
      if (stats.isSymbolicLink()) found.set(relative, `a link to ${await readlink(file)}`);
      else if (stats.isDirectory()) await walk(file);
      else {
        const content = await readFile(file, 'utf8');
        const hash = createHash('sha256').update(content).digest('hex').slice(0, 8);
        found.set(relative, `${JSON.stringify(content.slice(0, 40))} (${content.length} chars, ${hash})`);
      }
    }
  };
  await walk(dir);
  return found;
}

function changes(before: Map<string, string>, after: Map<string, string>): string {
  const names = [...new Set([...before.keys(), ...after.keys()])].sort();
  const changed = names.flatMap((name) => {
    const was = before.get(name);
    const is = after.get(name);
    if (was === is) return [];
    return [is === undefined ? `${name} deleted` : was === undefined ? `${name} created: ${is}` : `${name} now ${is}`];
  });
  return changed.join('; ') || 'none';
}

// --- Comparing, shrinking and telling.

/** Where two runs first part: what was observed, by the reference and by the learner's harness. */
export interface Difference {
  what: string;
  reference: string;
  learner: string;
  see: BuildSection;
}

/** The first observation on which the learner's harness differs from the stage's reference; null when none does. */
export async function difference(learner: Harness, scenario: Scenario): Promise<Difference | null> {
  const [expected, actual] = await Promise.all([
    observe(REFERENCES[scenario.stage], scenario),
    observe(learner, scenario),
  ]);
  const theirs = new Map(actual.map((fact) => [fact.what, fact]));
  const ours = new Map(expected.map((fact) => [fact.what, fact]));
  const order = [...expected, ...actual.filter((fact) => !ours.has(fact.what))];
  for (const { what } of order) {
    const reference = ours.get(what);
    const learnt = theirs.get(what);
    if (reference?.value === learnt?.value) continue;
    // The learner's side says where build.md teaches it (the rule its request broke), else the reference's.
    const see = learnt?.see ?? reference?.see ?? stepOf(scenario);
    const [referenceShown, learnerShown] = firstDifferingMessage(
      reference?.value ?? '(nothing)',
      learnt?.value ?? '(nothing)',
    );
    return { what, reference: referenceShown, learner: learnerShown, see };
  }
  return null;
}

/** Two transcripts as the first message on which they part, numbered; anything else as it is. */
function firstDifferingMessage(reference: string, learner: string): [string, string] {
  const ours = reference.split(' / ');
  const theirs = learner.split(' / ');
  if (ours.length === 1 && theirs.length === 1) return [reference, learner];
  const at = ours.findIndex((message, i) => message !== theirs[i]);
  const i = at < 0 ? ours.length : at;
  const shown = (messages: string[]) =>
    `message ${i + 1} of ${messages.length}: ${messages[i] ?? '(none: the messages end before it)'}`;
  return [shown(ours), shown(theirs)];
}

/** The latest step whose feature the scenario uses: after shrinking, the step the difference belongs to. */
export function stepOf(scenario: Scenario): Lesson {
  const steps: Lesson[] = ['p0'];
  const replies = [...scenario.replies, ...(scenario.loop === null ? [] : [scenario.loop.reply])];
  for (const reply of replies) {
    if (reply.cut) steps.push('p3');
    for (const block of reply.blocks) if (block.type === 'call') steps.push(block.step);
  }
  if (scenario.loop !== null || scenario.rootThroughLink) steps.push('p1');
  if (scenario.verify !== null) steps.push('p2');
  if (scenario.approvals !== null || scenario.protect) steps.push('p3');
  if (scenario.contextWindow !== null || scenario.agentsMd !== 'none') steps.push('p4');
  return steps.reduce((latest, step) => (at(step, latest) ? step : latest));
}

export const SEED = 49;
/** Scenarios per stage: enough to find every mistake of the checker's own test within a few seconds each. */
export const RUNS: Record<Lesson, number> = { p0: 150, p1: 200, p2: 200, p3: 160, p4: 110 };
/** A stage's check stops looking (and shrinking) after this long, well under a minute on two busy cores. */
const STAGE_TIME_LIMIT_MS = 50_000;

export interface StageVerdict {
  stage: Lesson;
  scenarios: number;
  seed: number;
  failure: { scenario: Scenario; difference: Difference; path: string; shrinks: number } | null;
}

/** Generated scenarios of one stage against the learner's harness: the first difference, shrunk, or none. */
export async function checkStage(
  learner: Harness,
  stage: Lesson,
  { seed = SEED, runs = RUNS[stage] }: { seed?: number; runs?: number } = {},
): Promise<StageVerdict> {
  const property = fc.asyncProperty(
    scenarioArb(stage),
    async (scenario) => (await difference(learner, scenario)) === null,
  );
  const result = await fc.check(property, {
    seed,
    numRuns: runs,
    interruptAfterTimeLimit: STAGE_TIME_LIMIT_MS,
    markInterruptAsFailure: false,
  });
  const [scenario] = result.counterexample ?? [];
  if (!result.failed || scenario === undefined) return { stage, scenarios: result.numRuns, seed, failure: null };
  const found = await difference(learner, scenario);
  const shown = found ?? {
    what: 'the run',
    reference: 'the same',
    learner: 'different once, then the same',
    see: stage,
  };
  return {
    stage,
    scenarios: result.numRuns,
    seed,
    failure: { scenario, difference: shown, path: result.counterexamplePath ?? '', shrinks: result.numShrinks },
  };
}

/** A failure as a story: the smallest scenario, what the reference did, what the learner's harness did, where
 *  build.md teaches it, and how to replay it. */
export function story(verdict: StageVerdict, file: string): string {
  const { failure, stage, seed } = verdict;
  if (failure === null) return '';
  const { scenario, difference: d, shrinks } = failure;
  return [
    `FAIL  ${stage}  generated scenario (seed ${seed}; shrunk in ${shrinks} steps to the smallest that shows it)`,
    ...scenarioLines(scenario).map((line) => `        ${line}`),
    `        differs:  ${d.what}`,
    `        reference (lessons/${stage}.ts): ${d.reference}`,
    `        yours:    ${d.learner}`,
    `        see:      lessons/build.md, "${BUILD_SECTIONS[d.see]}"`,
    `        replay:   npm run lesson -- ${stage} --check ${file} --seed ${seed}`,
  ].join('\n');
}

export function scenarioLines(scenario: Scenario): string[] {
  const lines = scenario.tasks.map((task, i) => `task ${i + 1}: ${JSON.stringify(task)}`);
  const replyText = (reply: Reply) => {
    if (reply.fails) return 'the model call fails';
    const blocks = reply.blocks.map((block) => {
      switch (block.type) {
        case 'text':
          return JSON.stringify(block.text);
        case 'empty':
          return 'an empty (or blank) text block';
        case 'thinking':
          return 'a thinking block';
        case 'call':
          return `${block.name} ${shownInput(block.input, '{ROOT}')}`;
      }
    });
    return `${blocks.join(', ')}${reply.cut ? ' (cut off: max_tokens)' : ''}`;
  };
  scenario.replies.forEach((reply, i) => lines.push(`reply ${i + 1}: ${replyText(reply)}`));
  if (scenario.loop !== null)
    lines.push(
      `then ${scenario.loop.times} times: ${replyText(scenario.loop.reply)} (every other turn, an echo between)`,
    );
  lines.push(`then: ${JSON.stringify(DONE)}; after that every model call fails`);
  if (scenario.verify !== null) lines.push(`verify: ${VERIFY[scenario.verify]} (${scenario.verify})`);
  if (scenario.approvals !== null) lines.push(`config.approve answers: ${[...scenario.approvals, 'yes…'].join(', ')}`);
  if (scenario.protect) lines.push("config.protect: ['test.js']");
  if (scenario.contextWindow !== null) lines.push(`config.contextWindow: ${scenario.contextWindow}`);
  if (scenario.agentsMd !== 'none') lines.push(`AGENTS.md: ${scenario.agentsMd}`);
  if (scenario.rootThroughLink) lines.push('config.root: a symlink to the project');
  scenario.subReplies.forEach((reply, i) => lines.push(`sub-agent reply ${i + 1}: ${replyText(reply)}`));
  if (scenario.subLoop > 0) lines.push(`sub-agent: then ${scenario.subLoop} reads of sub/inner.txt`);
  if (at(scenario.stage, 'p4')) lines.push(`sub-agent: then ${JSON.stringify(SUB_DONE)}`);
  return lines;
}
