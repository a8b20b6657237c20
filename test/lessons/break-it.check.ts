// npm run test:break-it: each lesson's "break it" exercise, checked for real. The named guard is
// removed in a copy of the project, and the named test must then fail. Kept out of `npm test`
// because it starts five copies of the suite (about 6 s); .ci/run runs it too.

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { cp, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

const LESSONS = ['p0', 'p1', 'p2', 'p3', 'p4'] as const;

// --- "break it": every lesson names a guard to delete and the test that then fails.

interface BreakIt {
  lesson: string;
  file: string;
  find: string;
  replace: string;
  test: string;
  name: string;
}

/** Reads the `<!-- break-it {...} -->` comment each lesson carries next to its exercise. */
async function breakIts(): Promise<BreakIt[]> {
  const folder = path.join(import.meta.dirname, '..', '..', 'lessons');
  const found: BreakIt[] = [];
  for (const file of (await readdir(folder)).filter((f) => /^p\d.*\.md$/.test(f)).sort()) {
    const text = await readFile(path.join(folder, file), 'utf8');
    for (const match of text.matchAll(/<!-- break-it (\{[\s\S]*?\}) -->/g))
      found.push({ lesson: file, ...(JSON.parse(match[1]!) as Omit<BreakIt, 'lesson'>) });
  }
  return found;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The project's files: what git tracks plus untracked files it does not ignore; without git, every file but
 *  node_modules, .git and .agent. */
function projectFiles(project: string): string[] {
  try {
    const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], {
      cwd: project,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return listed.split('\0').filter((file) => file !== '' && existsSync(path.join(project, file)));
  } catch {
    return readdirSync(project).filter((entry) => !['node_modules', '.git', '.agent'].includes(entry));
  }
}

/** Runs one named test in a copy of the project with one guard removed; resolves to its output and exit code. */
async function runBroken(exercise: BreakIt): Promise<{ code: number | null; output: string }> {
  const project = path.join(import.meta.dirname, '..', '..');
  const copy = await realpath(await mkdtemp(path.join(os.tmpdir(), 'break-it-')));
  try {
    // The whole project as git sees it (a forker's new module included), so no import can go missing in the copy.
    for (const file of projectFiles(project)) {
      await cp(path.join(project, file), path.join(copy, file), { recursive: true });
    }
    await symlink(path.join(project, 'node_modules'), path.join(copy, 'node_modules'));
    const source = await readFile(path.join(copy, exercise.file), 'utf8');
    assert.equal(
      source.split(exercise.find).length - 1,
      1,
      `${exercise.lesson}: the guard to delete must appear exactly once in ${exercise.file}`,
    );
    await writeFile(path.join(copy, exercise.file), source.replace(exercise.find, exercise.replace));
    const pattern = `^${escapeRegExp(exercise.name)}$`;
    // Without NODE_TEST_CONTEXT, or the inner test runner would report to this one instead of printing.
    const { NODE_TEST_CONTEXT: _inherited, ...env } = process.env;
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--test', '--test-reporter=tap', `--test-name-pattern=${pattern}`, exercise.test],
      { cwd: copy, env },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    return { code, output };
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
}

test('every lesson has a "break it" exercise, and its named test really fails without the guard', async () => {
  const exercises = await breakIts();
  assert.deepEqual([...new Set(exercises.map((e) => e.lesson.slice(0, 2)))], [...LESSONS], 'one exercise per lesson');
  const runs = await Promise.all(exercises.map(runBroken));
  exercises.forEach((exercise, i) => {
    const { code, output } = runs[i]!;
    assert.notEqual(code, 0, `${exercise.lesson}: "${exercise.name}" still passes without the guard`);
    const failedLine = new RegExp(`^\\s*not ok \\d+ - ${escapeRegExp(exercise.name)}$`, 'm');
    assert.match(
      output,
      failedLine,
      `${exercise.lesson}: "${exercise.name}" did not fail as a test:\n${output.slice(-1500)}`,
    );
  });
});
