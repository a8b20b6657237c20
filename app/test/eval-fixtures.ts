// What the eval tests share: a folder of small tasks, and the runner's main with its output caught.

import path from 'node:path';
import { PassThrough } from 'node:stream';
import { type EvalControl, main } from '../evals/run.ts';
import { tempProject } from '../../test/helpers.ts';

export const FAILING_TEST = "const { add } = require('./add.js');\nif (add(2, 3) !== 5) process.exit(1);\n";
export const PASSING_TEST = 'process.exit(0);\n';
export const TASK_JSON = {
  prompt: 'make add(2, 3) == 5',
  verify: 'node test.js',
  protect: ['test.js'],
  budgets: { maxTurns: 5 },
};

/** A folder of tasks: each entry is a task's files, relative to its own folder. */
export async function taskFolder(t: Parameters<typeof tempProject>[0], tasks: Record<string, Record<string, string>>) {
  const files: Record<string, string> = {};
  for (const [name, taskFiles] of Object.entries(tasks))
    for (const [file, content] of Object.entries(taskFiles)) files[`tasks/${name}/${file}`] = content;
  const root = await tempProject(t, files);
  return { root, tasksDir: path.join(root, 'tasks') };
}

/** A task whose add.js subtracts, with `test` as its test. */
export const sumTask = (test: string) => ({
  'task.json': JSON.stringify(TASK_JSON),
  'trajectory.json': '[]',
  'project/package.json': '{ "type": "commonjs" }',
  'project/add.js': 'exports.add = (a, b) => a - b;\n',
  'project/test.js': test,
});

export async function runMain(args: string[], env: NodeJS.ProcessEnv = {}, control: EvalControl = {}) {
  const [out, err] = [new PassThrough(), new PassThrough()];
  let [stdout, stderr] = ['', ''];
  out.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  err.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const status = await main(args, env, out, err, control);
  return { status, stdout, stderr };
}
