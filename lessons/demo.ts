// The offline demo that `npm start` shows without an API key: the same eight scripted replies go
// through a trusting harness (no --verify) and a verifying one (--verify "node test.js"), each in a
// temporary copy of lessons/example, and the two runs are printed side by side, step by step.

import { cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type AgentEvent, approveAll, createAgent, describeHalt, type Halt, runCommand, runTask } from '../agent.ts';
import { loadScript, ScriptedModel } from '../scripted-model.ts';
import { TOOLS } from '../tools.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
export const EXAMPLE_PROJECT = path.join(here, 'example');
export const SEED_STORY_SCRIPT = path.join(here, 'scripts', 'seed-story.json');
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
    await cp(EXAMPLE_PROJECT, root, { recursive: true });
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
    const check = await runCommand(SEED_STORY_VERIFY, root, 30_000, new AbortController().signal);
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
      if (current) current.reply = `${event.call.name} ${JSON.stringify(event.call.input)}`;
      return;
    case 'result':
      if (current) {
        const text = typeof event.result.content === 'string' ? event.result.content : '';
        const firstLine = (text.split('\n')[0] ?? '').replace(/\s+/g, ' ').trim();
        current.outcome = event.result.is_error ? `refused: ${text.split(';')[0]}` : `ok: ${firstLine}`;
      }
      return;
    case 'gate':
      if (current)
        current.outcome = `\`${event.command}\` exit ${event.exitCode}: ${event.passed ? 'pass' : 'fail, refused'}`;
      return;
    case 'halt':
      if (current && event.halt.kind === 'accepted') current.outcome += `${current.outcome ? ' → ' : ''}ACCEPTED`;
      return;
    default:
      return;
  }
}

const cell = (text: string, width: number) =>
  text.length > width ? `${text.slice(0, width - 1)}…` : text.padEnd(width);

export async function runDemo(): Promise<number> {
  console.log('No ANTHROPIC_API_KEY: showing the offline demo (set a key, or run with --help, for the real agent).\n');
  console.log(`Task: "${SEED_STORY_TASK}" in a tiny project whose add(2, 3) returns -1.`);
  console.log('The same eight scripted replies go through two harnesses; only the second checks "done".\n');
  const [trusting, verifying] = [await runSeedStory(false), await runSeedStory(true)];
  const widths = [3, 44, 34, 40];
  console.log(
    [
      cell('#', widths[0]!),
      cell("model's reply", widths[1]!),
      cell('trusting harness', widths[2]!),
      `verifying harness (${SEED_STORY_VERIFY})`,
    ].join(' '),
  );
  for (let i = 0; i < verifying.steps.length; i++) {
    const step = verifying.steps[i]!;
    const trusted = trusting.steps[i]?.outcome ?? '(run over)';
    console.log(
      [
        cell(String(i + 1), widths[0]!),
        cell(step.reply.trim(), widths[1]!),
        cell(trusted, widths[2]!),
        step.outcome,
      ].join(' '),
    );
  }
  for (const [name, run] of [
    ['trusting', trusting],
    ['verifying', verifying],
  ] as const) {
    const verdict = run.testReallyPasses ? 'the test really passes' : 'the test still FAILS';
    console.log(`\n${name}: ${describeHalt(run.halt)} at step ${run.turns}; ${verdict}`);
  }
  const ok = !trusting.testReallyPasses && verifying.testReallyPasses && verifying.halt.kind === 'accepted';
  console.log(
    ok ? '\nSame model, same replies: only checking "done" made it true.' : '\nThe demo did not go as scripted.',
  );
  return ok ? 0 : 1;
}
