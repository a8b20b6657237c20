// Scaffolding shared by the tools tests: a temporary project beside an "outside" folder holding a
// sentinel, so an escape shows up as a read of the sentinel or a change next to it.

import assert from 'node:assert/strict';
import { mkdir, mkdtemp, open, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { type ToolContext, ToolError } from '../../tools.ts';
import { containedRunner, guardedDisk } from '../../hardening/index.ts';

export const SECRET = 'SECRET: must never reach the model\n';

export interface Project {
  /** The project root, a real path. */
  root: string;
  /** A folder beside the root holding only secret.txt; nothing may read or change it. */
  outside: string;
  ctx: ToolContext;
}

/** A fresh project with the given files, and a sentinel folder outside it; both removed after the test. */
export async function project(t: TestContext, files: Record<string, string | Buffer> = {}): Promise<Project> {
  const base = await realpath(await mkdtemp(path.join(os.tmpdir(), 'tools-test-')));
  t.after(() => rm(base, { recursive: true, force: true }));
  const root = path.join(base, 'project');
  const outside = path.join(base, 'outside');
  await mkdir(root);
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret.txt'), SECRET);
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await writeFile(path.join(root, name), content);
  }
  return { root, outside, ctx: { root, seen: new Map(), disk: guardedDisk, runner: containedRunner } };
}

/** The tool must fail with a ToolError (the model can act on it) whose message matches. */
export async function refused(attempt: Promise<string>, message: RegExp): Promise<ToolError> {
  const error: unknown = await attempt.then(
    (output) => assert.fail(`expected a refusal, got:\n${output.slice(0, 500)}`),
    (e: unknown) => e,
  );
  assert.ok(error instanceof ToolError, `expected a ToolError, got ${String(error)}`);
  assert.match(error.message, message);
  return error;
}

export const OUTSIDE = /outside the project/;

/** The outside folder still holds exactly the sentinel, unchanged. */
export async function assertOutsideUntouched({ outside }: Project): Promise<void> {
  assert.deepEqual(await readdir(outside), ['secret.txt']);
  assert.equal(await readFile(path.join(outside, 'secret.txt'), 'utf8'), SECRET);
}

/** A line as read_file shows it: the number right-aligned in six columns, a tab, the text. */
export const numbered = (n: number, line: string) => `${String(n).padStart(6)}\t${line}`;

/** Makes `file` `size` bytes long without writing them: a hole of zeros after its content, in no time. */
export async function growSparse(file: string, size: number): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    await handle.truncate(size);
  } finally {
    await handle.close();
  }
}
