// From start to the first model request (issue 51): how long an editor, which starts the agent for every thread,
// or a person waits before the model is even asked. The program (`node app/bin.mjs`, as the `harness` command
// starts) runs against a local fake Messages API that notes when each request arrives. Two rows: against bare
// `node -e` sending one request to the same server, so the ratio is what the program adds to Node's own start; and
// against Claude Code's `claude -p` (whatever `claude` is on the PATH, or $CLAUDE_BIN, as in help.ts; skipped
// without one), pointed at the same server with an API key and a throwaway HOME, its non-essential traffic,
// telemetry, error reports and updater off, so it reaches nothing but the fake API.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { median, type Measurement, spreadOf } from '../../../test/bench/loop.ts';
import { fakeMessage, streamEvents, textBlock } from '../../../test/model/fake-api.ts';
import { claudeCode } from './help.ts';

const PAIRS = 10;
const BIN = path.join(import.meta.dirname, '..', '..', 'bin.mjs');
/** How long a side may take before the row gives up on it. */
const GIVE_UP_MS = 30_000;

/** A fake API that answers every request at once and tells whoever waits when the next Messages request arrived. */
async function arrivalServer() {
  let arrived: ((at: number) => void) | undefined;
  /** Where the run waited on notes each request that comes before its first Messages request, as "METHOD /path". */
  let before: Set<string> | undefined;
  const reply = streamEvents(fakeMessage([textBlock('ok')]))
    .map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)
    .join('');
  const answer = (res: ServerResponse, type: string, body: string) => {
    res.writeHead(200, { 'content-type': type });
    res.end(body);
  };
  const server = createServer((req, res) => {
    const at = performance.now();
    req.resume().on('end', () => {
      const { pathname } = new URL(req.url ?? '/', 'http://fake');
      const first = req.method === 'POST' && pathname === '/v1/messages'; // not /v1/messages/count_tokens
      if (!first) before?.add(`${req.method} ${pathname}`);
      else {
        arrived?.(at);
        [arrived, before] = [undefined, undefined];
      }
      if (req.method === 'GET') return answer(res, 'application/json', JSON.stringify({ max_input_tokens: 200_000 }));
      answer(res, 'text/event-stream', reply);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** The milliseconds from `start()` to the first Messages request after it; `seen` gets the requests before it. */
    async firstRequestAfter(start: () => ChildProcess, seen?: Set<string>): Promise<number> {
      const request = new Promise<number>((resolve) => (arrived = resolve));
      before = seen;
      const started = performance.now();
      const child = start();
      const exited = new Promise((resolve) => child.on('close', resolve));
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no model request within ${GIVE_UP_MS} ms`)), GIVE_UP_MS);
      });
      try {
        return (await Promise.race([request, late])) - started;
      } finally {
        clearTimeout(timer);
        [arrived, before] = [undefined, undefined];
        child.kill('SIGKILL');
        await exited;
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The editor's way in, each request as soon as the answer before it came: initialize, session/new, the prompt. */
function editorStart(root: string, env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, [BIN, '--acp'], { cwd: root, env, stdio: ['pipe', 'pipe', 'ignore'] });
  const send = (id: number, method: string, params: unknown) =>
    child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
  send(1, 'initialize', { protocolVersion: 1, clientCapabilities: {} });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const message = JSON.parse(line) as { id?: number; result?: { sessionId?: string } };
    if (message.id === 1) send(2, 'session/new', { cwd: root, mcpServers: [] });
    const sessionId = message.id === 2 ? message.result?.sessionId : undefined;
    if (sessionId) send(3, 'session/prompt', { sessionId, prompt: [{ type: 'text', text: 'say ok' }] });
  });
  return child;
}

/** Each way of starting against bare `node -e`, paired and alternated; the row's figure is the editor's. */
export async function firstRequestAgainstNode(): Promise<Measurement> {
  const api = await arrivalServer();
  const root = await mkdtemp(path.join(os.tmpdir(), 'bench-first-request-'));
  const env = { ...process.env, ANTHROPIC_BASE_URL: api.baseURL, ANTHROPIC_API_KEY: 'sk-bench', NO_COLOR: '1' };
  const quiet = { cwd: root, env, stdio: 'ignore' } as const;
  const node = () =>
    spawn(process.execPath, ['-e', `fetch('${api.baseURL}/v1/messages', { method: 'POST', body: '{}' })`], quiet);
  const headless = () => spawn(process.execPath, [BIN, 'say ok'], quiet);
  const editor = () => editorStart(root, env);
  try {
    const sides = { node: [] as number[], editor: [] as number[], headless: [] as number[] };
    for (const warm of [node, editor, headless]) await api.firstRequestAfter(warm); // the page cache, for each
    for (let i = 0; i < PAIRS; i++) {
      // Alternated, the reference first in half the pairs, so a drift in the machine's load favours no side.
      const order = i % 2 === 0 ? (['node', 'editor', 'headless'] as const) : (['headless', 'editor', 'node'] as const);
      for (const side of order) sides[side].push(await api.firstRequestAfter({ node, editor, headless }[side]));
    }
    const ratios = (side: number[]) => side.map((ms, i) => ms / sides.node[i]!);
    const [editorMs, headlessMs, nodeMs] = [median(sides.editor), median(sides.headless), median(sides.node)];
    return {
      ...spreadOf(ratios(sides.editor)),
      note:
        `${PAIRS} pairs, alternated; medians: --acp (initialize, session/new, session/prompt) ${editorMs.toFixed(0)} ` +
        `ms, a headless task ${headlessMs.toFixed(0)} ms (${median(ratios(sides.headless)).toFixed(2)}× node), ` +
        `\`node -e "fetch(…)"\` ${nodeMs.toFixed(0)} ms`,
    };
  } finally {
    await api.close();
    await rm(root, { recursive: true, force: true });
  }
}

/** Both sides of the Claude Code pair run in it: the fake API, a key, a throwaway HOME, no other traffic. */
function offlineEnv(baseURL: string, home: string): NodeJS.ProcessEnv {
  // The caller's own Anthropic or Claude Code settings (a token, a proxy, another base URL) would steer either side.
  const own = Object.keys(process.env).filter((name) => /^(ANTHROPIC_|CLAUDE_)/.test(name));
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !own.includes(name)));
  return {
    ...env,
    HOME: home,
    ANTHROPIC_BASE_URL: baseURL,
    ANTHROPIC_API_KEY: 'test',
    NO_COLOR: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
  };
}

/** A headless task against Claude Code's `claude -p`, paired and alternated; the --acp start is in the note. */
export async function firstRequestAgainstClaudeCode(): Promise<Measurement> {
  const claude = claudeCode();
  const loadBefore = os.loadavg()[0]!;
  const api = await arrivalServer();
  const root = await mkdtemp(path.join(os.tmpdir(), 'bench-first-request-'));
  const home = await mkdtemp(path.join(os.tmpdir(), 'bench-first-request-home-'));
  const env = offlineEnv(api.baseURL, home);
  const quiet = { cwd: root, env, stdio: 'ignore' } as const;
  const headless = () => spawn(process.execPath, [BIN, 'say ok'], quiet);
  const editor = () => editorStart(root, env);
  const theirs = () => spawn(claude, ['-p', 'say ok', '--max-turns', '1'], quiet);
  const seen = { headless: new Set<string>(), editor: new Set<string>(), theirs: new Set<string>() };
  try {
    const sides = { headless: [] as number[], editor: [] as number[], theirs: [] as number[] };
    for (const warm of [headless, editor, theirs]) await api.firstRequestAfter(warm); // the page cache, and the HOME
    for (let i = 0; i < PAIRS; i++) {
      // Alternated, Claude Code first in half the pairs, so a drift in the machine's load favours no side.
      const order =
        i % 2 === 0 ? (['theirs', 'headless', 'editor'] as const) : (['editor', 'headless', 'theirs'] as const);
      for (const side of order) {
        sides[side].push(await api.firstRequestAfter({ headless, editor, theirs }[side], seen[side]));
      }
    }
    const ratios = (side: number[]) => side.map((ms, i) => ms / sides.theirs[i]!);
    const before = (side: Set<string>) => (side.size === 0 ? 'nothing' : [...side].join(', '));
    const version = spawnSync(claude, ['--version'], { env, encoding: 'utf8' }).stdout.trim();
    return {
      ...spreadOf(ratios(sides.headless)),
      note:
        `${PAIRS} pairs, alternated, load average ${loadBefore.toFixed(1)} before, ${os.loadavg()[0]!.toFixed(1)} ` +
        `after; medians: \`node app/bin.mjs "say ok"\` ${median(sides.headless).toFixed(0)} ms, --acp ` +
        `(initialize, session/new, session/prompt) ${median(sides.editor).toFixed(0)} ms ` +
        `(${median(ratios(sides.editor)).toFixed(2)}× Claude Code), \`claude -p "say ok" --max-turns 1\` ` +
        `${median(sides.theirs).toFixed(0)} ms (${version}). ` +
        `Before the first POST /v1/messages: the harness sends ${before(seen.headless)} (--acp: ` +
        `${before(seen.editor)}), Claude Code ${before(seen.theirs)}`,
    };
  } finally {
    await api.close();
    await rm(root, { recursive: true, force: true });
    await rm(home, { recursive: true, force: true });
  }
}
