// The program's test scaffolding, beside the harness's (test/helpers.ts): the command line run in-process, the SDK
// pointed at a local server, and the program and its checks found among running processes.

import { randomInt } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { cp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type { TestContext } from 'node:test';
import { alive, tempProject } from '../../test/helpers.ts';
import { main } from '../main.ts';
import type { SessionHeader } from '../session-file.ts';

/** Runs the command line in this process (no child process to start), capturing what it prints. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ status: number; stdout: string }> {
  const out = new PassThrough();
  let stdout = '';
  out.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  const status = await main(args, { NO_COLOR: '1', ...env }, out);
  return { status, stdout };
}

/** The program (app/main.ts) that started the process `pid`, up its line of parents. */
export function theProgramAbove(pid: number): number {
  for (let at = parentOf(pid); at > 1; at = parentOf(at)) if (commandLineOf(at).includes('app/main.ts')) return at;
  throw new Error(`no app/main.ts above process ${pid}`);
}

const commandLineOf = (pid: number) => procFile(pid, 'cmdline');

/** Points the SDK at a local server for one test: it reads ANTHROPIC_BASE_URL from the process's own environment. */
export function pointSdkAt(t: TestContext, baseURL: string): void {
  const saved = process.env.ANTHROPIC_BASE_URL;
  process.env.ANTHROPIC_BASE_URL = baseURL;
  t.after(() => {
    if (saved === undefined) delete process.env.ANTHROPIC_BASE_URL;
    else process.env.ANTHROPIC_BASE_URL = saved;
  });
}

/** A verify command that runs until it is killed, and finds its own processes again from outside, by a marker in
 *  their command line (inside the OS sandbox they have ids of their own, so a pid they write down is no use here). */
export function slowCheck(): { command: string; running: () => number[] } {
  const marker = `sleep 30.${randomInt(100_000, 999_999)}`;
  return { command: marker, running: () => processesWith(marker) };
}

/** The live processes whose command line is `command` (its words, one space between), from /proc. */
export const processesWith = (command: string) => processesWhere((words) => words === command);

/** The live processes whose command line names `text` anywhere, from /proc. */
export const processesNaming = (text: string) => processesWhere((words) => words.includes(text));

function processesWhere(matches: (commandLine: string) => boolean): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => matches(procFile(pid, 'cmdline').split('\0').join(' ').trim()) && alive(pid));
}

/** A process's parent, from /proc (0 once it is gone). */
export const parentOf = (pid: number) =>
  Number(
    procFile(pid, 'stat')
      .replace(/^.*\) /s, '')
      .split(' ')[1] ?? 0,
  );

function procFile(pid: number, name: string): string {
  try {
    return readFileSync(`/proc/${pid}/${name}`, 'utf8');
  } catch {
    return '';
  }
}

/** A session entry without the time it was written (`at`), which no two runs share. */
export function withoutTime<T extends { at?: string }>({ at: _written, ...entry }: T): Omit<T, 'at'> {
  return entry;
}

const RECORDINGS = path.join(import.meta.dirname, 'recordings');

/** A recording's lines with its header changed by `edit`, written into a fresh copy of its project. */
export async function editedRecording(t: TestContext, edit: (header: SessionHeader) => SessionHeader) {
  const root = await tempProject(t);
  await cp(path.join(RECORDINGS, 'projects', 'add'), root, { recursive: true });
  const [first = '', ...rest] = (await readFile(path.join(RECORDINGS, 'seed-story.jsonl'), 'utf8')).split('\n');
  const file = path.join(await tempProject(t), 'edited.jsonl');
  await writeFile(file, [JSON.stringify(edit(JSON.parse(first) as SessionHeader)), ...rest].join('\n'));
  return { root, file };
}
