// test/lessons/mistake-runner.ts — what the checks of the checker share (generated-mistakes.check.ts and
// independent-mistakes.check.ts): a harness with a mistake's patches applied, written to a temporary folder with its
// imports pointed back here, and how a stage's check (its stories, then its generated scenarios) judges it.

import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkStage, type StageVerdict } from '../../lessons/scenarios.ts';
import { type Harness, type Lesson, playStory, STORIES, storiesUpTo } from '../../lessons/stories.ts';

export const REPOSITORY = path.join(import.meta.dirname, '..', '..');

/** A repository file with `patches` applied (each `find` must occur exactly once), its imports pointed back into the
 *  repository, so that it loads from a temporary folder. */
export async function patchedCode(file: string, patches: readonly (readonly [string, string])[]): Promise<string> {
  let code = await readFile(path.join(REPOSITORY, file), 'utf8');
  for (const [find, replace] of patches) {
    assert.equal(code.split(find).length, 2, `the patch's text must occur once in ${file}: ${find}`);
    code = code.replace(find, () => replace);
  }
  const inRepository = (name: string) => pathToFileURL(path.join(REPOSITORY, name)).href;
  return code
    .replace(/from '(?:\.\.\/)+(tools|agent)\.ts'/g, (_, module: string) => `from '${inRepository(`${module}.ts`)}'`)
    .replace(/from '(zod|minimatch)'/g, (_, dependency: string) => `from '${import.meta.resolve(dependency)}'`);
}

/** Writes `code` as `name` in `dir` (a folder with a package.json of type module) and imports it. */
export async function loadHarness(dir: string, name: string, code: string): Promise<Harness> {
  const file = path.join(dir, name);
  await writeFile(file, code);
  return (await import(pathToFileURL(file).href)) as Harness;
}

/** How a mistake was caught: by a story (the first that fails, if any), and by the stage's generated scenarios. */
export interface Caught {
  story: string | null;
  verdict: StageVerdict;
}

/** Plays the stories of `stage` (with `upTo`, of every stage up to it, as `--check` does), then its generated
 *  scenarios, which run whatever the stories said, to measure the generator on its own. */
export async function caught(harness: Harness, stage: Lesson, { upTo = false } = {}): Promise<Caught> {
  let failed: string | null = null;
  const stories = upTo ? storiesUpTo(stage) : STORIES.filter((s) => s.lesson === stage);
  for (const told of stories)
    if (failed === null && (await playStory(harness, told, { timeoutMs: 30_000 })) !== null) failed = told.name;
  return { story: failed, verdict: await checkStage(harness, stage) };
}

/** Runs the jobs `atOnce` at a time: the machine is shared. */
export async function inTurn<T>(jobs: (() => Promise<T>)[], atOnce = 3): Promise<void> {
  const queue = [...jobs];
  const worker = async () => {
    for (let job = queue.shift(); job !== undefined; job = queue.shift()) await job();
  };
  await Promise.all(Array.from({ length: atOnce }, worker));
}
