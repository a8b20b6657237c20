// The verify gate on a 100,000-file project with --protect "test/**": what fingerprinting the protected files adds
// to a "done", paired with the same "done" without --protect. The tree is made once and always deleted.

import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createAgent, runTask } from '../../agent.ts';
import { say, ScriptedModel } from '../../scripted-model.ts';
import { TOOLS } from '../../tools.ts';
import { type Measurement, spreadOf } from './loop.ts';

const DIRS = 100;
const FILES_PER_DIR = 1000;
const TEST_FILES = 20;
const PAIRS = 7;
const PROTECT = ['test/**'];

async function withProjectTree<T>(use: (root: string) => Promise<T>): Promise<T> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'bench-gate-')));
  try {
    for (let d = 0; d < DIRS; d++) {
      const dir = path.join(root, 'src', `dir${String(d).padStart(3, '0')}`);
      await mkdir(dir, { recursive: true });
      await Promise.all(
        Array.from({ length: FILES_PER_DIR }, (_, f) => writeFile(path.join(dir, `file${f}.ts`), `// ${d}/${f}\n`)),
      );
    }
    await mkdir(path.join(root, 'test'));
    for (let t = 0; t < TEST_FILES; t++) {
      await writeFile(path.join(root, 'test', `case${t}.test.js`), `assert.equal(${t}, ${t});\n`);
    }
    return await use(root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** One "done" through the gate, without a verify command (all it does is the protect check, if any): wall and CPU
 *  milliseconds. The CPU figure shows what the wall time owes to other processes on a shared machine. */
async function done(root: string, protect: string[]): Promise<{ ms: number; cpuMs: number }> {
  const agent = await createAgent({ root, model: new ScriptedModel([say('done')]), tools: TOOLS, protect });
  const cpu = process.cpuUsage();
  const started = performance.now();
  const halt = await runTask(agent, 'say done');
  if (halt.kind !== 'accepted') throw new Error(`the run halted with ${JSON.stringify(halt)}`);
  const { user, system } = process.cpuUsage(cpu);
  return { ms: performance.now() - started, cpuMs: (user + system) / 1000 };
}

export async function gateOnLargeTree(): Promise<Measurement> {
  return withProjectTree(async (root) => {
    await done(root, PROTECT); // warm-up: the directory cache and the JIT
    const added: number[] = [];
    const addedCpu: number[] = [];
    const plain: number[] = [];
    for (let i = 0; i < PAIRS; i++) {
      const withProtect = await done(root, PROTECT);
      const without = await done(root, []);
      added.push(withProtect.ms - without.ms);
      addedCpu.push(withProtect.cpuMs - without.cpuMs);
      plain.push(without.ms);
    }
    const files = DIRS * FILES_PER_DIR + TEST_FILES;
    return {
      ...spreadOf(added),
      note:
        `${files} files, --protect "${PROTECT[0]}" (${TEST_FILES} files fingerprinted); ${PAIRS} pairs, each the ` +
        `same "done" with and without --protect, alternated; CPU time added: median ` +
        `${spreadOf(addedCpu).value.toFixed(0)} ms; the "done" alone took ${spreadOf(plain).value.toFixed(1)} ms`,
    };
  });
}
