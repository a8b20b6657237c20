// npm run lesson -- pN              plays lesson N's stories through agent.ts, each step traced (--trace)
// npm run lesson -- pN --check FILE  plays the stories of P0 to PN against your own harness, FILE, and says
//                                    story by story whether it passes, and if not, what happened instead; once
//                                    they all pass, generated scenarios compare FILE with each step's reference
//   --seed N        other generated scenarios (a failure prints the seed that replays it)
//   --stories-only  the stories alone

import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import * as agentTs from '../agent.ts';
import { checkStage, SEED, story } from './scenarios.ts';
import { tracePrinter } from './trace.ts';
import {
  BUILD_SECTIONS,
  type Harness,
  type Lesson,
  LESSONS,
  oneLine,
  playStory,
  STORIES,
  STORY_TIMEOUT_MS,
  storiesUpTo,
} from './stories.ts';

const USAGE = `usage: npm run lesson -- <${LESSONS.join('|')}> [--check FILE [--seed N] [--stories-only]]`;

export async function runLesson(
  args: string[],
  out: NodeJS.WritableStream = process.stdout,
  timeoutMs = STORY_TIMEOUT_MS,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: { check: { type: 'string' }, seed: { type: 'string' }, 'stories-only': { type: 'boolean' } },
    });
  } catch (error) {
    out.write(`${oneLine(error)}\n${USAGE}\n`);
    return 2;
  }
  const [lesson, ...extra] = parsed.positionals;
  if (!isLesson(lesson) || extra.length > 0) {
    out.write(`${USAGE}\n`);
    return 2;
  }
  const { check: file, seed = String(SEED), 'stories-only': storiesOnly = false } = parsed.values;
  if (!/^\d+$/.test(seed) || (file === undefined && (parsed.values.seed !== undefined || storiesOnly))) {
    out.write(`${USAGE}\n`);
    return 2;
  }
  if (file === undefined) return await play(lesson, out);
  return await check(lesson, file, out, { timeoutMs, seed: storiesOnly ? null : Number(seed) });
}

const isLesson = (name: string | undefined): name is Lesson => LESSONS.some((lesson) => lesson === name);

/** Plays the lesson's own stories through agent.ts, with every step tagged by the part of the loop doing it. */
async function play(lesson: Lesson, out: NodeJS.WritableStream): Promise<number> {
  let failed = 0;
  for (const story of STORIES.filter((s) => s.lesson === lesson)) {
    out.write(`\n=== ${lesson}: ${story.name}: ${story.expected}\n\n`);
    const problem = await playStory(startupTold(out), story, { listen: () => tracePrinter(out) });
    out.write(
      problem === null ? `\nverdict: PASS, the acceptance of ${lesson} holds\n` : `\nverdict: FAIL, ${problem}\n`,
    );
    if (problem !== null) failed++;
  }
  return failed === 0 ? 0 : 1;
}

/** agent.ts, telling at creation what the program's start-up tells of each AGENTS.md: read, or skipped and why. */
function startupTold(out: NodeJS.WritableStream): Harness<agentTs.AgentEvent> {
  return {
    async createAgent(config) {
      const agent = await agentTs.createAgent(config);
      for (const file of agent.contextFiles) {
        const shown = path.relative(agent.config.root, file.path) || file.path;
        out.write(file.skipped ? `context: skipped ${shown}: ${file.skipped}\n` : `context: ${shown}\n`);
      }
      return agent;
    },
    runTask: agentTs.runTask,
  };
}

/** Plays every story up to `lesson` against the harness in `file`, then (with a seed) each step's generated scenarios.
 *  Exit code 0: all pass; 1: some fail; 2: the file cannot be used at all. */
async function check(
  lesson: Lesson,
  file: string,
  out: NodeJS.WritableStream,
  { timeoutMs, seed }: { timeoutMs: number; seed: number | null },
): Promise<number> {
  const harness = await loadHarness(file);
  if (typeof harness === 'string') {
    out.write(`${harness}\n`);
    return 2;
  }
  const stories = storiesUpTo(lesson);
  const reached = LESSONS.slice(0, LESSONS.indexOf(lesson) + 1);
  out.write(`Checking ${file} against the stories of ${reached.join(', ')}.\n\n`);
  const failing: Lesson[] = [];
  for (const story of stories) {
    const failure = await playStory(harness, story, { timeoutMs });
    if (failure === null) {
      out.write(`PASS  ${story.lesson}  ${story.name}\n`);
    } else {
      out.write(`FAIL  ${story.lesson}  ${story.name}\n`);
      out.write(`        expected: ${story.expected}\n        happened: ${failure.happened}\n`);
      out.write(`        see:      lessons/build.md, "${BUILD_SECTIONS[failure.see]}"\n`);
      failing.push(story.lesson);
    }
  }
  const passed = stories.length - failing.length;
  const first = failing[0];
  if (first !== undefined) {
    out.write(
      `\n${passed} of ${stories.length} stories pass: ${file} does not reach ${first} yet ` +
        `(lessons/build.md, "${BUILD_SECTIONS[first]}").\n`,
    );
    return 1;
  }
  if (seed === null) {
    out.write(`\nAll ${stories.length} stories pass: ${file} reaches ${lesson}.\n`);
    return 0;
  }
  out.write(`\nAll ${stories.length} stories pass. Generated scenarios, each step's reference beside ${file}:\n\n`);
  for (const stage of reached) {
    const started = Date.now();
    const verdict = await checkStage(harness, stage, { seed });
    const took = `${((Date.now() - started) / 1000).toFixed(1)} s`;
    if (verdict.failure !== null) {
      out.write(
        `${story(verdict, file)}\n\n${file} does not reach ${stage} yet: it differs from lessons/${stage}.ts.\n`,
      );
      return 1;
    }
    out.write(
      `PASS  ${stage}  ${verdict.scenarios} generated scenarios as lessons/${stage}.ts (seed ${seed}, ${took})\n`,
    );
  }
  out.write(`\nAll ${stories.length} stories and every generated scenario pass: ${file} reaches ${lesson}.\n`);
  return 0;
}

/** Imports a harness file; a file that cannot be used is one line saying why, never a stack trace. */
async function loadHarness(file: string): Promise<Harness | string> {
  const resolved = path.resolve(file);
  if (!existsSync(resolved)) return `--check ${file}: no such file`;
  let loaded: unknown;
  try {
    loaded = await import(pathToFileURL(resolved).href);
  } catch (error) {
    return `--check ${file}: the file does not load: ${loadError(error)}${whereToPut(error, resolved)}`;
  }
  if (!isHarness(loaded)) {
    const missing = ENTRY_POINTS.filter((name) => !exportsFunction(loaded, name));
    return `--check ${file}: it does not export ${missing.join(' and ')} as a function (see lessons/build.md)`;
  }
  return loaded;
}

const ENTRY_POINTS = ['createAgent', 'runTask'] as const;
const exportsFunction = (module: unknown, name: string) =>
  typeof module === 'object' && module !== null && typeof Reflect.get(module, name) === 'function';
const isHarness = (module: unknown): module is Harness => ENTRY_POINTS.every((name) => exportsFunction(module, name));

const REPOSITORY = path.join(import.meta.dirname, '..');

/** Why an import the file makes was not found, and where the file must be for it to be: Node looks for a package in
 *  the node_modules folders beside the file and above it, and for './tools.ts' beside the file. */
function whereToPut(error: unknown, file: string): string {
  const missing = /Cannot find (?:module|package) '([^']+)'/.exec(oneLine(error))?.[1];
  if (missing === undefined) return '';
  const where = `put it at the root of this repository, next to agent.ts (e.g. ${path.join(REPOSITORY, 'mine.ts')})`;
  if (/^[./]/.test(missing))
    return `. It imports ${missing}, looked for in ${path.dirname(file)}: ${where}, where the project's files are`;
  const installed = `${missing} is installed in this repository's node_modules, which Node finds only from inside it`;
  return `. ${installed}: ${where}`;
}

/** A compile error's message starts with "Transform failed"; the line that says what and where comes after. */
function loadError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n').find((line) => line.includes('ERROR:')) ?? oneLine(error);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  // A promise the checked harness forgot to await may fail later: one line, not a crash with a stack trace.
  process.on('unhandledRejection', (reason) => {
    process.stdout.write(`(a promise the harness did not await was rejected: ${oneLine(reason)})\n`);
  });
  // Exit without waiting: a checked harness whose loop never ended may still be running.
  void runLesson(process.argv.slice(2)).then((code) => process.exit(code));
}
