// The sessions test/sandbox/routes-unreadable.test.ts judges: a check that locks a folder (chmod 000), or a folder locked
// before the session. chmod 000 does not stop root, so where the tests run as root this file runs in a child process
// as root without the capabilities that pass permission checks: `node --import tsx test/sandbox/unreadable-scenarios.ts BASE`
// plays every session in a new folder under BASE and prints their outcomes as one JSON object.

import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type AgentConfig, type AgentEvent, createAgent, runTask } from '../../agent.ts';
import { writeFiles } from '../../lessons/stories.ts';
import { call, say, ScriptedModel } from '../../scripted-model.ts';
import { sandboxProblem, TOOLS } from '../../tools.ts';

interface Scenario {
  readonly files: Readonly<Record<string, string>>;
  /** Folders locked before the session starts. */
  readonly lockedBefore?: readonly string[];
  readonly verify: string;
  /** The model's one call before it says "Done." (none: it says so at once). */
  readonly call?: { readonly name: string; readonly input: unknown };
  readonly config: Partial<AgentConfig>;
  /** Folders a check may lock: unlocked again after the session, so they can be looked at and removed. */
  readonly unlock: readonly string[];
  /** Files whose text is read afterwards (null: not there). */
  readonly read: readonly string[];
}

export interface Outcome {
  readonly rejected: string | null;
  readonly halt: string | null;
  readonly gates: readonly { readonly passed: boolean; readonly reason: string }[];
  readonly read: Readonly<Record<string, string | null>>;
  /** What the model's call was answered. */
  readonly results: readonly string[];
}

export const SCENARIOS = {
  lockedProtected: {
    files: { 'test/a.test.js': 'assert(true);\n', 'src/a.js': '\n' },
    verify: 'chmod 000 test',
    config: { protect: ['test/**'], defaultProtection: false, sandbox: false },
    unlock: ['test'],
    read: ['test/a.test.js'],
  },
  lockedByCheck: {
    files: { 'src/index.js': 'mine\n', 'src/pkg/.git/HEAD': 'ref: refs/heads/main\n' },
    verify: 'mkdir locked && chmod 000 locked src',
    config: { sandbox: false },
    unlock: ['locked', 'src'],
    read: ['src/index.js', 'src/pkg/.git/HEAD'],
  },
  lockedBefore: {
    files: { 'locked/.git/HEAD': 'ref: refs/heads/main\n', 'src/a.test.js': '\n' },
    lockedBefore: ['locked'],
    verify: 'true',
    config: { protect: ['**/*.test.js'], sandbox: false },
    unlock: ['locked'],
    read: ['locked/.git/HEAD'],
  },
  lockedListed: {
    files: { 'a/x.txt': '', 'locked/secret.txt': '', 'z.txt': '' },
    lockedBefore: ['locked'],
    call: { name: 'list_files', input: {} },
    verify: 'true',
    config: { sandbox: false },
    unlock: ['locked'],
    read: [],
  },
  lockedRoot: {
    files: { '.git/HEAD': 'ref: refs/heads/main\n', 'a.js': '\n' },
    verify: 'chmod 000 .',
    config: { sandbox: false },
    unlock: ['.'],
    read: ['.git/HEAD'],
  },
  plantedBesideLocked: {
    files: { 'locked/a.js': '\n', 'src/a.js': '\n' },
    lockedBefore: ['locked'],
    verify: 'mkdir -p src/.git',
    config: { sandbox: false },
    unlock: ['locked'],
    read: ['src/.git'],
  },
  unlockedByCheck: {
    files: { 'locked/.git/HEAD': 'ref: refs/heads/main\n' },
    lockedBefore: ['locked'],
    verify: 'chmod 755 locked',
    config: { sandbox: false },
    unlock: ['locked'],
    read: ['locked/.git/HEAD'],
  },
} satisfies Record<string, Scenario>;

export type ScenarioName = keyof typeof SCENARIOS;

/** Sessions played again with the check in the OS sandbox, which must not bind a locked folder read-only. */
export const SANDBOXED: readonly ScenarioName[] = ['lockedByCheck', 'unlockedByCheck'];

/** One "done" through the gate, in a new project under `base`: whether runTask rejected, the halt, the gates. */
async function play(base: string, scenario: Scenario, sandbox: boolean): Promise<Outcome> {
  const root = await mkdtemp(path.join(base, 'project-'));
  await writeFiles(root, scenario.files);
  for (const folder of scenario.lockedBefore ?? []) await chmod(path.join(root, folder), 0o000);
  const gates: { passed: boolean; reason: string }[] = [];
  const results: string[] = [];
  const onEvent = (event: AgentEvent) => {
    if (event.type === 'gate') gates.push(event);
    if (event.type === 'result') results.push(JSON.stringify(event.result.content));
  };
  const script = scenario.call === undefined ? [] : [call(scenario.call.name, scenario.call.input)];
  let rejected: string | null = null;
  let halt: string | null = null;
  try {
    const agent = await createAgent({
      root,
      model: new ScriptedModel([...script, say('Done.')]),
      tools: TOOLS,
      verify: scenario.verify,
      contextFiles: false,
      budgets: { maxTurns: 1 + script.length },
      onEvent,
      ...scenario.config,
      ...(sandbox ? { sandbox: true } : {}),
    });
    halt = (await runTask(agent, 'finish')).kind;
  } catch (error) {
    rejected = String(error);
  }
  for (const folder of scenario.unlock) await chmod(path.join(root, folder), 0o755).catch(() => undefined);
  const read: Record<string, string | null> = {};
  for (const file of scenario.read) {
    const where = path.join(root, file);
    read[file] = existsSync(where) ? await readFile(where, 'utf8') : null;
  }
  return { rejected, halt, gates: gates.map(({ passed, reason }) => ({ passed, reason })), read, results };
}

/** Every scenario, and each of SANDBOXED again as `sandboxed:NAME` where this machine has a sandbox; `noSandbox`
 *  says why it has none. */
export async function playAll(base: string): Promise<{ noSandbox: string | null; outcomes: Record<string, Outcome> }> {
  const noSandbox = await sandboxProblem();
  const outcomes: Record<string, Outcome> = {};
  for (const [name, scenario] of Object.entries(SCENARIOS)) outcomes[name] = await play(base, scenario, false);
  if (noSandbox === null) {
    for (const name of SANDBOXED) outcomes[`sandboxed:${name}`] = await play(base, SCENARIOS[name], true);
  }
  return { noSandbox, outcomes };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(JSON.stringify(await playAll(process.argv[2] ?? '.')));
}
