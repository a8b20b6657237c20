// The command line in a real pseudo-terminal, for what only a terminal shows: raw-mode keys (Ctrl-C is a key, not
// a signal, once readline has the terminal), echo, the prompt, the status line. It uses script(1) from util-linux,
// which every Debian and Ubuntu machine has: no native npm module to build, and the same binary on CI.

import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import path from 'node:path';

/** Whether script(1) from util-linux is here (macOS ships a BSD script with other options). */
export const hasScript = (() => {
  try {
    return execFileSync('script', ['--version'], { encoding: 'utf8' }).includes('util-linux');
  } catch {
    return false;
  }
})();

export interface Terminal {
  /** Types keys, e.g. "fix it\r" (Enter is a carriage return) or "\x03" (Ctrl-C). */
  type(keys: string): void;
  /** Everything written to the terminal so far, as it arrived (escape codes included). */
  output(): string;
  /** When each piece of output arrived, in ms since the start. */
  arrivals(): number[];
  /** Resolves once the output matches, or rejects after `ms`. */
  waitFor(pattern: RegExp, ms?: number): Promise<void>;
  /** The exit code, once the program ends (or null if it was killed). */
  exited: Promise<number | null>;
  kill(): void;
}

const program = path.join(import.meta.dirname, '..', 'main.ts');
/** tsx by its full address, so the program can start in any folder. */
const tsx = import.meta.resolve('tsx');

/** Starts `node --import tsx app/main.ts ...args` in a 100×30 pseudo-terminal. */
export function startInTerminal(args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Terminal {
  const quoted = [process.execPath, '--import', tsx, program, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`);
  const command = `stty cols 100 rows 30; exec ${quoted.join(' ')}`;
  const child: ChildProcessWithoutNullStreams = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: options.cwd,
    // As a person's terminal: CI's own variable would make Node judge the terminal colourless (tty.getColorDepth).
    env: { ...process.env, CI: undefined, NO_COLOR: '1', TERM: 'xterm', ...options.env },
  });
  const started = Date.now();
  let text = '';
  const times: number[] = [];
  const waiting = new Set<() => void>();
  const collect = (chunk: Buffer) => {
    text += chunk.toString('utf8');
    times.push(Date.now() - started);
    for (const check of waiting) check();
  };
  child.stdin.on('error', () => {}); // keys typed after the program ended go nowhere
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    type: (keys) => void child.stdin.write(keys),
    output: () => text,
    arrivals: () => [...times],
    waitFor: (pattern, ms = 10_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!pattern.test(text)) return;
          waiting.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiting.delete(check);
          reject(new Error(`no ${pattern} on the terminal after ${ms / 1000} s; it shows:\n${text}`));
        }, ms);
        waiting.add(check);
        check();
      }),
    exited,
    kill: () => child.kill('SIGKILL'),
  };
}
