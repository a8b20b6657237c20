// npm start: the offline demo, no API key needed. The same eight scripted replies go through a
// trusting harness (no --verify) and a verifying one (--verify "node test.js"), each in a fresh
// temporary project written from the constants below, and the two runs are shown side by side.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { styleText } from 'node:util';
import type Anthropic from '@anthropic-ai/sdk';
import { type AgentEvent, approveAll, createAgent, type Halt, runTask } from '../agent.ts';
import { loadScript, ScriptedModel } from '../scripted-model.ts';
import { runCommand, TOOLS } from '../tools.ts';
import { sandboxProblem } from '../hardening/index.ts';

/** The example project as the demo and the lesson stories use it: written fresh for every run, so a
 *  change to lessons/example (say, someone ran the agent on it and fixed add.js) changes nothing here. */
export const EXAMPLE_FILES: Readonly<Record<string, string>> = {
  'add.js': 'export function add(a, b) {\n  return a - b;\n}\n',
  'package.json': '{ "name": "add-example", "version": "1.0.0", "type": "module", "private": true }\n',
  'test.js':
    "import assert from 'node:assert/strict';\nimport { add } from './add.js';\n\n" +
    "assert.equal(add(2, 3), 5);\nconsole.log('ok: add(2, 3) === 5');\n",
};
/** The same project on disk, to run the agent on (a copy of it) by hand. */
export const EXAMPLE_PROJECT = path.join(import.meta.dirname, 'example');
export const SEED_STORY_SCRIPT = path.join(import.meta.dirname, 'scripts', 'seed-story.json');
export const SEED_STORY_TASK = 'make add(2, 3) == 5';
export const SEED_STORY_VERIFY = 'node test.js';

export interface StoryStep {
  reply: string;
  outcome: string;
}

export interface StoryRun {
  halt: Halt;
  turns: number;
  steps: StoryStep[];
  /** Checked after the run by plain code, whatever the harness accepted. */
  testReallyPasses: boolean;
}

/** Plays the seed story in a fresh temporary copy of the example project. */
export async function runSeedStory(verify: boolean): Promise<StoryRun> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'seed-story-'));
  try {
    for (const [name, text] of Object.entries(EXAMPLE_FILES)) await writeFile(path.join(root, name), text);
    const steps: StoryStep[] = [];
    let turns = 0;
    const agent = await createAgent({
      root,
      model: new ScriptedModel(await loadScript(SEED_STORY_SCRIPT)),
      tools: TOOLS,
      verify: verify ? SEED_STORY_VERIFY : undefined,
      verifyTimeoutMs: 30_000,
      budgets: { maxTurns: 25 },
      protect: [],
      approve: approveAll,
      onEvent: (event) => {
        record(steps, event);
        if (event.type === 'halt') turns = event.turns;
      },
    });
    const halt = await runTask(agent, SEED_STORY_TASK);
    const check = await runCommand(SEED_STORY_VERIFY, {
      cwd: root,
      timeoutMs: 30_000,
      signal: new AbortController().signal,
    });
    return { halt, turns, steps, testReallyPasses: check.exitCode === 0 };
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** Turns the event stream into one row per model reply: what it asked, what became of it. */
function record(steps: StoryStep[], event: AgentEvent): void {
  const current = steps.at(-1);
  switch (event.type) {
    case 'request':
      steps.push({ reply: '', outcome: '' });
      return;
    case 'text':
      if (current) current.reply += event.delta;
      return;
    case 'reply':
      if (current && event.stopReason === 'max_tokens' && event.calls === 0)
        current.outcome = 'cut off: asked to go on';
      return;
    case 'call':
      if (current) current.reply = describeCall(event.call.name, event.call.input);
      return;
    case 'result':
      if (current) current.outcome = describeResult(event.call.name, event.result);
      return;
    case 'gate':
      if (current) current.outcome = `checked: exit ${event.exitCode}: ${event.passed ? 'pass' : 'fail, refused'}`;
      return;
    case 'halt':
      if (current && event.halt.kind === 'accepted')
        current.outcome += `${current.outcome ? ' → ' : ''}ACCEPTED${event.halt.verifiedBy ? '' : ', unchecked'}`;
      return;
    default:
      return;
  }
}

/** "read_file add.js" rather than the call's JSON: the tool and what it points at. */
function describeCall(name: string, input: unknown): string {
  const fields = typeof input === 'object' && input !== null ? Object.values(input) : [];
  const first = fields.find((value) => typeof value === 'string');
  return first === undefined ? name : `${name} ${first}`;
}

/** "ok: 3 lines read", "refused: outside the project": what became of a call, in a few words. */
function describeResult(tool: string, result: Anthropic.ToolResultBlockParam): string {
  const text = typeof result.content === 'string' ? result.content : '';
  if (result.is_error) {
    const reason = (text.split(';')[0] ?? '').replace(/^path ".*?" is /, '').split(' (')[0];
    return `refused: ${reason}`;
  }
  if (tool === 'read_file') return `ok: ${text.split('\n').length} lines read`;
  return `ok: ${text.split(':')[0]}`;
}

/** Where the demo writes: stdout, or a test's stream. */
export type Output = NodeJS.WritableStream & { isTTY?: boolean };

/** The demo fits a 100-column terminal: # | the model's reply | trusting | verifying. */
const COLUMNS = [2, 33, 29, 32] as const;

const cell = (text: string, width: number) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > width ? `${flat.slice(0, width - 1)}…` : flat.padEnd(width);
};

/** Prevents a line wider than the demo's 100 columns: `text` cut at spaces, a word too long cut too. */
export function wrapped(text: string, width = 100): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = '';
    }
    line = line === '' ? word : `${line} ${word}`;
    while (line.length > width) {
      lines.push(line.slice(0, width));
      line = line.slice(width);
    }
  }
  return line === '' ? lines : [...lines, line];
}

/** Colour only on a terminal, and never with NO_COLOR: piped output stays plain text. */
export function painter(out: { isTTY?: boolean }, env: NodeJS.ProcessEnv) {
  const inColour = out.isTTY === true && !env.NO_COLOR;
  return (format: 'green' | 'yellow' | 'red' | 'dim' | 'bold', text: string) =>
    inColour ? styleText(format, text, { validateStream: false }) : text;
}

/** Green for a checked "done", yellow for an unchecked one, red for refused and failing, dim for the rest. */
const toneOf = (outcome: string) =>
  /unchecked/.test(outcome)
    ? 'yellow'
    : /ACCEPTED|: pass/.test(outcome)
      ? 'green'
      : /refused|fail/.test(outcome)
        ? 'red'
        : 'dim';

export async function runDemo(out: Output = process.stdout, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const paint = painter(out, env);
  const say = (line = '') => out.write(`${line.trimEnd()}\n`);
  say(paint('bold', 'The verify-before-done gate, offline: no API key needed.'));
  say(`Task: "${SEED_STORY_TASK}" in a tiny project whose add(2, 3) returns -1.`);
  say('The same eight scripted replies go through two harnesses. The trusting one believes the');
  say(`model's "done"; the verifying one first runs \`${SEED_STORY_VERIFY}\`, and only exit code 0 counts.`);
  const noSandbox = await sandboxProblem();
  if (noSandbox !== null) {
    for (const line of wrapped(`${noSandbox}.`)) say(paint('yellow', line));
    say(paint('yellow', 'So the check runs uncontained, with your full rights.'));
  }
  say();
  let trusting: StoryRun;
  let verifying: StoryRun;
  try {
    [trusting, verifying] = [await runSeedStory(false), await runSeedStory(true)];
  } catch (error) {
    say(paint('red', `The demo could not run: ${error instanceof Error ? error.message : String(error)}`));
    return 1;
  }
  const headings = ['#', "the model's reply", 'trusting harness', `verifying (${SEED_STORY_VERIFY})`];
  say(paint('bold', headings.map((heading, i) => cell(heading, COLUMNS[i]!)).join(' ')));
  for (const [i, step] of verifying.steps.entries()) {
    const trusted = trusting.steps[i]?.outcome ?? '(already stopped)';
    say(
      [
        cell(String(i + 1), COLUMNS[0]),
        paint('dim', cell(step.reply, COLUMNS[1])),
        paint(toneOf(trusted), cell(trusted, COLUMNS[2])),
        paint(toneOf(step.outcome), cell(step.outcome, COLUMNS[3])),
      ].join(' '),
    );
  }
  say();
  for (const [name, run] of [
    ['trusting ', trusting],
    ['verifying', verifying],
  ] as const) {
    const ended = run.halt.kind === 'accepted' ? `said "done" at step ${run.turns}` : `halted: ${run.halt.kind}`;
    const truth = run.testReallyPasses
      ? paint('green', 'and the test really passes')
      : paint('red', 'but the test still FAILS');
    say(`${name} harness: ${ended}, ${truth}.`);
  }
  const problems = demoProblems(trusting, verifying);
  say();
  if (problems.length > 0) {
    say(paint('red', `The demo did not go as scripted: ${problems.join('; ')}.`));
    return 1;
  }
  say('Same model, same replies: only checking "done" made it true.');
  say(paint('dim', 'Next: npm run lesson -- p0 (the lessons), or npx harness --help (the real agent).'));
  return 0;
}

/** What went differently from the script, in words: empty when the demo showed what it should. */
export function demoProblems(trusting: StoryRun, verifying: StoryRun): string[] {
  const problems: string[] = [];
  if (trusting.halt.kind !== 'accepted') problems.push(`the trusting harness halted ${trusting.halt.kind}`);
  if (trusting.testReallyPasses) problems.push('the test passed in the trusting run, so the project was not pristine');
  if (verifying.halt.kind !== 'accepted') problems.push(`the verifying harness halted ${verifying.halt.kind}`);
  if (!verifying.testReallyPasses) problems.push('the test still fails after the verifying run');
  return problems;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  void runDemo().then((code) => {
    process.exitCode = code;
  });
}
