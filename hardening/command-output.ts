// Defends against: a command's output that outgrows memory or the model's context (a test runner
// can print megabytes: the head and the tail are kept, and the characters left out counted
// exactly), and a run that never ends because a child that left the process group still holds the
// output pipes open after the kill (they are closed a second later). It starts what the default
// runner runs (sandbox.ts), contained or not, with the descriptors sandbox.ts passes on.
// Tests: test/sandbox/command-output.test.ts.

import { spawn } from 'node:child_process';
import type { CommandOptions, CommandRun } from '../tools.ts';

const OUTPUT_HEAD = 8 * 1024;
const OUTPUT_TAIL = 8 * 1024;

/** Runs `argv` in `options.cwd` with `env`; keeps the start and the end of its output. At the
 *  timeout or on a stop its whole process group is killed, so a test runner's children cannot
 *  outlive it. `more` is what it gets past stderr, by number (see sandbox.ts). */
export function spawnCommand(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  { cwd, timeoutMs, signal, onOutput }: CommandOptions,
  more: readonly (number | 'ignore')[] = [],
): Promise<CommandRun> {
  return new Promise((resolve) => {
    const [file, ...args] = argv;
    const child = spawn(file!, args, {
      cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', ...more],
    });
    let head = '';
    let tail = '';
    let dropped = 0;
    const collect = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      onOutput?.(text);
      const room = Math.max(OUTPUT_HEAD - head.length, 0);
      head += text.slice(0, room);
      tail += text.slice(room);
      dropped += Math.max(tail.length - OUTPUT_TAIL, 0);
      tail = tail.slice(-OUTPUT_TAIL);
    };
    const pipes = [child.stdout!, child.stderr!]; // made by stdio's 'pipe', whatever `more` adds
    pipes.forEach((pipe) => pipe.on('data', collect));
    // A child that left its group may still hold the pipes open: they are closed with the kill.
    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      setTimeout(() => pipes.forEach((pipe) => pipe.destroy()), 1_000).unref();
    };
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, timeoutMs);
    if (signal.aborted) kill();
    else signal.addEventListener('abort', kill);
    const done = (exitCode: number | null) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', kill);
      const cut = dropped > 0 ? `\n[... ${dropped} characters of output left out ...]\n` : '';
      resolve({ exitCode, timedOut, output: head + cut + tail || '(no output)', contained: false });
    };
    child.on('error', (error) => {
      collect(Buffer.from(error.message));
      done(null);
    });
    child.on('close', done);
  });
}
