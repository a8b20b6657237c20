// The gate's OS sandbox (issues 21, 47): what running the check contained adds to a "done" whose check is
// `node test.js` in a tiny project with a 10,000-file node_modules (the overlay must not cost by the file), paired with
// the same "done" uncontained. The project is made once and always deleted.

import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { type AgentEvent, createAgent, runTask } from '../../agent.ts';
import { say, ScriptedModel } from '../../scripted-model.ts';
import { TOOLS } from '../../tools.ts';
import { median, type Measurement, RowSkipped, spreadOf } from './loop.ts';
import { sandboxProblem } from '../../hardening/index.ts';

const PAIRS = 20;
const CHECK = 'node test.js';

const PROJECT: Record<string, string> = {
  'package.json': `${JSON.stringify({ name: 'tiny', version: '1.0.0', private: true, scripts: { test: CHECK } })}\n`,
  'add.js': 'exports.add = (a, b) => a + b;\n',
  'test.js': "const assert = require('node:assert');\nassert.equal(require('./add.js').add(2, 3), 5);\n",
};

async function withTinyProject<T>(use: (root: string) => Promise<T>): Promise<T> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'bench-sandbox-')));
  try {
    for (const [name, content] of Object.entries(PROJECT)) await writeFile(path.join(root, name), content);
    for (let d = 0; d < 100; d++) {
      const dir = path.join(root, 'node_modules', `pkg${d}`);
      await mkdir(dir, { recursive: true });
      await Promise.all(Array.from({ length: 100 }, (_, f) => writeFile(path.join(dir, `f${f}.js`), `// ${f}\n`)));
    }
    return await use(root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** One "done" through the gate, its check run contained or not: the run's wall milliseconds. It must pass, and the
 *  gate must say it ran the check the way it was asked to. (No CPU figure: the processes in bubblewrap's own process
 *  namespace are not reaped by it, so their CPU time never reaches this process's children's count.) */
async function done(root: string, sandbox: boolean): Promise<number> {
  const gates: AgentEvent[] = [];
  const model = new ScriptedModel([say('done')]);
  const onEvent = (event: AgentEvent) => void (event.type === 'gate' && gates.push(event));
  const agent = await createAgent({ root, model, tools: TOOLS, verify: CHECK, sandbox, contextFiles: false, onEvent });
  const started = performance.now();
  const halt = await runTask(agent, 'say done');
  const ms = performance.now() - started;
  if (halt.kind !== 'accepted') throw new Error(`the run halted with ${JSON.stringify(halt)}`);
  const gate = gates[0];
  if (gates.length !== 1 || gate?.type !== 'gate' || !gate.passed || gate.sandboxed !== sandbox)
    throw new Error(`expected one passed gate, sandboxed: ${sandbox}; saw ${JSON.stringify(gates)}`);
  return ms;
}

export async function sandboxOverhead(): Promise<Measurement> {
  const problem = await sandboxProblem();
  if (problem !== null) throw new RowSkipped(problem);
  return withTinyProject(async (root) => {
    await done(root, true); // warm-up: the page cache for node and bwrap, and the JIT
    await done(root, false);
    const contained: number[] = [];
    const plain: number[] = [];
    for (let i = 0; i < PAIRS; i++) {
      // Alternated, and each side first in half the pairs, so a drift in the machine's load favours neither.
      if (i % 2 === 0) [contained[i], plain[i]] = [await done(root, true), await done(root, false)];
      else [plain[i], contained[i]] = [await done(root, false), await done(root, true)];
    }
    const ratios = spreadOf(contained.map((ms, i) => ms / plain[i]!));
    return {
      ...spreadOf(contained.map((ms, i) => ms - plain[i]!)),
      note:
        `${PAIRS} pairs, each the same "done" whose gate runs \`${CHECK}\` (add.js, test.js, package.json) ` +
        `through ${process.platform === 'darwin' ? 'sandbox-exec' : 'bubblewrap'} and without, alternated; ` +
        `medians: contained ${median(contained).toFixed(0)} ms, plain ${median(plain).toFixed(0)} ms; ` +
        `contained / plain ${ratios.value.toFixed(2)}× (${ratios.spread!.min.toFixed(2)}-${ratios.spread!.max.toFixed(2)})`,
    };
  });
}
