#!/usr/bin/env tsx
// The program a person runs (package.json's bin): the harness in agent.ts under a terminal, a REPL, a session file,
// --replay or --export; or under an editor (--acp). It only calls the harness's API and draws its events; the harness
// never imports it.

import { closeSync, realpathSync } from 'node:fs';
import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { isatty } from 'node:tty';
import { pathToFileURL } from 'node:url';
import { approveAll, createAgent, errorText, estimateTokens, resume } from 'reference-harness';

import {
  chooseModel,
  type CliOptions,
  configFromCli,
  helpText,
  parseCli,
  recordedOptions,
  resumedOptions,
  sandboxPolicy,
  UsageError,
} from './options.ts';
import { readMcpFile, startMcpServers } from './mcp.ts';
import { priced } from './prices.ts';
import { intentRecorded } from './edit-intents.ts';
import {
  confirmRecordedGate,
  loadSession,
  openSessionFile,
  protectedChangedSince,
  recordAnswers,
  type SessionFile,
  sessionHeader,
  sessionRecorder,
  type SessionUse,
} from './session-file.ts';
import {
  colourOn,
  type Ending,
  EXIT,
  exitCodeFor,
  grouped,
  jsonLine,
  jsonPrinter,
  MAX_COLUMNS,
  type Output,
  programError,
  repl,
  runGivenTask,
  type SessionEvent,
  StatusLine,
  terminalApprover,
  terminalPrinter,
  tracePrinter,
  visible,
} from './terminal.ts';
import { GUARDED, sandboxProblem } from 'reference-harness/hardening';
import { type Agent, type Halt, type Model } from './harness.ts';
import { contextBreakdown } from './context-breakdown.ts';

/** One run, then exit. Ctrl-C stops it like in the REPL; a second one exits at once. So does the program's ending (a
 *  signal, a session file that can no longer be written), whose exit code it then is if the run was stopped. */
async function headless(
  agent: Agent,
  task: string,
  tell: (event: SessionEvent) => void,
  ending: AbortSignal,
): Promise<number> {
  const controller = new AbortController();
  const onSigint = () => {
    if (controller.signal.aborted) process.exit(EXIT.interrupted);
    controller.abort();
    tell({ type: 'interrupt' });
  };
  const onEnding = () => {
    if (controller.signal.aborted) return;
    controller.abort();
    const { signal } = ending.reason as Ending;
    if (signal)
      tell({ type: 'notice', text: `${signal}: stopping the run; the program ends once its halt is written` });
    tell({ type: 'interrupt', ...(signal && { signal }) });
  };
  process.on('SIGINT', onSigint);
  ending.addEventListener('abort', onEnding, { once: true });
  try {
    if (ending.aborted) return (ending.reason as Ending).code; // before the run started: nothing to stop
    const halt = await runGivenTask(agent, task, controller.signal, tell);
    return ending.aborted && halt.kind === 'interrupted' ? (ending.reason as Ending).code : exitCodeFor(halt);
  } finally {
    process.off('SIGINT', onSigint);
    ending.removeEventListener('abort', onEnding);
  }
}

/** Prevents SIGTERM (a service manager, `kill`) or SIGHUP (the terminal closed) from killing the program mid-run,
 *  which left the verify command's processes running and no halt in the session file: the run stops as Ctrl-C stops
 *  it (the verify command's whole process group is killed; a running edit is let finish and answered), its halt is
 *  written, and then the program exits with 128 + the signal's number. A second signal exits at once. A terminal that
 *  hangs up may fail its reads and writes (EIO) before the SIGHUP arrives: that is the same hang-up, not a crash. */
function endOnSignals(ending: AbortController, terminal: NodeJS.EventEmitter[]): () => void {
  const hangUp = () => ending.signal.aborted || ending.abort({ code: EXIT.SIGHUP, signal: 'SIGHUP' } satisfies Ending);
  const listening = (['SIGTERM', 'SIGHUP'] as const).map((signal) => {
    let received = false;
    const handler = () => {
      if (received) leave(EXIT[signal]);
      received = true;
      if (!ending.signal.aborted) ending.abort({ code: EXIT[signal], signal } satisfies Ending);
    };
    process.on(signal, handler);
    return () => process.off(signal, handler);
  });
  const onError = (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EIO') throw error;
    hangUp();
  };
  for (const stream of terminal) stream.on('error', onError);
  const watching = watchLauncher(hangUp);
  return () => {
    listening.forEach((stop) => stop());
    for (const stream of terminal) stream.off('error', onError);
    clearInterval(watching);
  };
}

/** Prevents a run from going on unseen when SIGHUP reached only its launcher: started by tsx's command line (`tsx
 *  app/main.ts`, or main.ts's own `#!/usr/bin/env tsx`), the program is the child of a tsx process that passes
 *  SIGINT and SIGTERM on but dies of SIGHUP, so its death (this process's parent changes) is that hang-up. Polled: no
 *  event tells a child of it. */
function watchLauncher(hangUp: () => void): NodeJS.Timeout | undefined {
  if (!process.execArgv.some((arg) => /[\\/]tsx[\\/].*preflight\.cjs$/.test(arg))) return undefined;
  const launcher = process.ppid;
  return setInterval(() => process.ppid !== launcher && hangUp(), LAUNCHER_POLL_MS).unref();
}

/** How often a child of tsx's command line checks that its launcher is still there. */
const LAUNCHER_POLL_MS = 250;

/** Asked at the start, as Node asks: a terminal that hung up since no longer says it is one. */
const STARTED_AT_A_TERMINAL = [0, 1, 2].some((fd) => isatty(fd));

/** Exits with `code`. After a hang-up, with a terminal for stdin, stdout or stderr, by SIGHUP itself (its default
 *  action; a shell reads 129 all the same): Node's own exit restores the terminal's mode, which fails on a terminal
 *  that is gone, and Node then aborts the process (node::ResetStdio). */
function leave(code: number): never {
  if (code === EXIT.SIGHUP && STARTED_AT_A_TERMINAL) {
    process.removeAllListeners('SIGHUP');
    process.kill(process.pid, 'SIGHUP');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_000); // another thread may take it a moment
  }
  process.exit(code);
}

export async function main(argv: string[], env: NodeJS.ProcessEnv, out: Output = process.stdout): Promise<number> {
  try {
    let options = parseCli(argv, env);
    if (options.help) {
      out.write(`${helpText()}\n`);
      return EXIT.accepted;
    }
    if (options.version) {
      out.write(`harness ${await version()}\n`);
      return EXIT.accepted;
    }
    if (options.export !== undefined) return await exportPage(options, out);
    const root = await realpath(options.root).catch(() => {
      throw new UsageError(`--root ${options.root}: no such folder`);
    });
    if (options.replay !== undefined) {
      const { replaySession } = await import('./replay.ts'); // loaded only for a replay: every start waits for a load
      return await replaySession(options.replay, { ...options, root }, out);
    }
    const newSession = path.join(root, '.agent', 'sessions', `${new Date().toISOString().replace(/[:.]/g, '-')}.jsonl`);
    let sessionFile = path.resolve(options.resume ?? options.session ?? newSession);
    const flag = options.resume !== undefined ? '--resume' : options.session !== undefined ? '--session' : 'session';
    // A session named by the harness is new; --session appends to what is there; --resume continues what must be.
    const use: SessionUse = options.resume !== undefined ? 'resume' : options.session !== undefined ? 'append' : 'new';
    const opening = () => {
      try {
        return openSessionFile(sessionFile, use, root);
      } catch (error) {
        throw new UsageError(`${flag}: ${errorText(error)}`);
      }
    };
    let loaded: Awaited<ReturnType<typeof loadSession>> | undefined;
    let optionsSaid: string | undefined;
    let opened: SessionFile | undefined;
    if (options.resume !== undefined) {
      opened = opening();
      loaded = await loadSession(sessionFile, root).catch((error: unknown) => {
        throw new UsageError(`--resume: ${errorText(error)}`);
      });
      let gate: string[];
      ({ options, said: optionsSaid, gate } = resumedOptions(options, loaded.header));
      await confirmRecordedGate(sessionFile, root, gate, process.stdin.isTTY ? askAtStart(out) : null).catch(
        (error: unknown) => {
          throw new UsageError(`--resume: ${errorText(error)}`);
        },
      );
    }
    // Markdown is drawn only where colour is: piped, or with NO_COLOR, the model's text stays as it wrote it. Its
    // renderer takes a moment to load, so it loads while the model is set up.
    const plainText = options.acp || options.json || options.trace || !colourOn(out);
    const loadingMarkdown = plainText ? undefined : terminalMarkdown(out);
    const chosen = await chooseModel(options, env, options.model);
    const model = priced(chosen, options.price);
    const taskModel =
      options.taskModel === undefined || options.script !== undefined
        ? undefined
        : priced(await chooseModel(options, env, options.taskModel));
    const secrets = [env.ANTHROPIC_API_KEY ?? ''];
    const mcpServers = options.mcp === undefined ? [] : await mcpFile(options.mcp);
    if (options.acp) {
      // An editor is the interface (app/acp.ts); its library is loaded only then.
      const { serveAcp } = await import('./acp.ts');
      const log = (text: string) => void process.stderr.write(`harness --acp: ${visible(text)}\n`);
      await tellSafety(options, log);
      const ending = new AbortController();
      const stopListening = endOnSignals(ending, []);
      try {
        const keyMissing = options.script === undefined && !env.ANTHROPIC_API_KEY && !env.ANTHROPIC_BASE_URL;
        // A scripted model picked under another name is the same script: the name only prices it.
        const modelNamed = async (name: string, thinking: number | undefined) =>
          priced(
            options.script === undefined
              ? await chooseModel({ ...options, thinking }, env, name)
              : renamed(chosen, name),
          );
        const setup = { options, model, taskModel, secrets, log, keyMissing, modelNamed, mcpServers };
        return await serveAcp(setup, ending.signal);
      } finally {
        stopListening();
      }
    }
    opened ??= opening();
    const interactive = process.stdin.isTTY === true;
    // The REPL's; paused until it listens, so no piped line is read before it is ready for it. A headless run in a
    // terminal leaves the terminal as it is (Ctrl-C a signal) until an approval asks, with a readline of its own.
    const rl =
      options.task === undefined
        ? createInterface({
            input: process.stdin,
            terminal: interactive,
            ...(interactive && { output: process.stdout }),
          })
        : undefined;
    rl?.pause();
    const screen = new StatusLine(out, interactive && rl ? { rl, input: process.stdin } : undefined);
    const markdown = await loadingMarkdown;
    const session = () => agent.usage;
    const tools = () => agent.config.tools;
    const printer = options.json
      ? jsonPrinter(out)
      : options.trace
        ? tracePrinter(out)
        : terminalPrinter(out, {
            screen,
            verify: statusOfVerify(options),
            price: model.price,
            session,
            markdown,
            tools,
          });
    const approval = options.yes ? 'yes' : interactive ? 'ask' : 'deny';
    // Aborted, with an Ending, when the program must stop before its work is done.
    const ending = new AbortController();
    const unwritable = (problem: string) =>
      ending.signal.aborted || ending.abort({ code: EXIT.notAccepted, problem } satisfies Ending);
    const startSession = (file: SessionFile, fresh: boolean, agent: Agent) => {
      const header = sessionHeader(agent, recordedOptions(options, approval, agent));
      try {
        return sessionRecorder(file, fresh ? header : null, secrets, unwritable);
      } catch (error) {
        throw new UsageError(`${flag}: ${errorText(error)}`);
      }
    };
    const approve = options.yes
      ? approveAll
      : interactive
        ? recordAnswers(terminalApprover(screen, out), (event) => tell(event))
        : null;
    const runs = { tasks: 0, turns: 0, last: null as Halt | null };
    // The harness's events and the person's actions, told to the session file and the printer alike.
    const tell = (event: SessionEvent) => {
      if (event.type === 'halt')
        [runs.tasks, runs.turns, runs.last] = [runs.tasks + 1, runs.turns + event.turns, event.halt];
      record(event);
      printer(event);
    };
    // Only the servers the command line names start: none that the project's own files list.
    const mcp = mcpServers.length === 0 ? undefined : await startMcpServers(mcpServers, root);
    // Each edit is said in the session file before it is made, so a resume after a crash knows whether it landed.
    const disk = intentRecorded(GUARDED.disk, (intent) => record.intend(intent));
    const config = configFromCli(options, { root, model, taskModel, approve, mcp }, tell);
    const agent = await createAgent({ ...config, hardening: { ...GUARDED, disk } });
    if (loaded) {
      const changed = await protectedChangedSince(loaded, root, agent.config.protect);
      if (changed !== null) throw new UsageError(`--resume: ${changed}`);
    }
    // Started once the agent knows its window (from the model's metadata), which the header records.
    let record = startSession(opened, loaded === undefined, agent);
    if (loaded) resume(agent, loaded);
    const notice = (text: string) => tell({ type: 'notice', text });
    const showSession = () =>
      notice(`session: ${path.relative(process.cwd(), sessionFile) || sessionFile} (continue it with --resume)`);
    notice(`model: ${describeModel(model)} · root: ${root}`);
    showSession();
    if (optionsSaid !== undefined) notice(optionsSaid);
    for (const file of agent.contextFiles) {
      const [shown, tokens] = [
        path.relative(process.cwd(), file.path) || file.path,
        grouped(estimateTokens(file.text)),
      ];
      notice(file.skipped ? `context: skipped ${shown}: ${file.skipped}` : `context: ${shown} (~${tokens} tokens)`);
    }
    for (const { text } of mcp?.said ?? []) notice(text);
    tell({ type: 'context', breakdown: contextBreakdown(agent) });
    await tellSafety(options, notice);
    const changing = agent.config.tools.filter((tool) => !tool.readOnly).map((tool) => tool.name);
    if (!options.yes && !interactive)
      notice(`no terminal and no --yes: every change (${changing.join(', ')}) will be denied`);
    const switchSession = async (file: string) => {
      const next = openSessionFile(path.resolve(file), 'resume', root);
      const read = await loadSession(file, root).catch((error: unknown) => {
        closeSync(next.fd);
        throw error;
      });
      const changed = await protectedChangedSince(read, root, agent.config.protect);
      if (changed !== null) {
        closeSync(next.fd);
        throw new Error(changed);
      }
      record.close();
      sessionFile = next.path;
      record = startSession(next, false, agent);
      resume(agent, read);
      notice(`resumed ${file}: ${grouped(read.messages.length)} messages`);
      showSession();
    };
    const started = Date.now();
    const stopListening = endOnSignals(ending, [process.stdin, process.stdout, process.stderr, ...(rl ? [rl] : [])]);
    let code: number;
    try {
      code =
        options.task !== undefined
          ? await headless(agent, options.task, tell, ending.signal)
          : await repl(agent, rl!, { interactive, switchSession, screen, tell, ending: ending.signal });
    } finally {
      stopListening();
      await mcp?.close();
    }
    const { problem } = (ending.signal.reason ?? {}) as Ending;
    if (problem !== undefined)
      console.error(programError(`${problem}; the run was stopped, so that nothing goes unrecorded`));
    if (options.json) out.write(`${jsonLine(resultEvent(agent, runs, code, Date.now() - started))}\n`);
    return code;
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(programError(`${error.message} (see --help)`));
    return EXIT.usage;
  }
}

/** --json's last line: what the whole invocation did and spent, for a script or CI to read without adding up. */
function resultEvent(
  agent: Agent,
  runs: { tasks: number; turns: number; last: Halt | null },
  code: number,
  ms: number,
) {
  const { input, cacheWrite, cacheRead, output, costUsd } = agent.usage;
  const tokens = { input, cacheWrite, cacheRead, output, total: input + cacheWrite + cacheRead + output };
  const { tasks, turns, last } = runs;
  return { type: 'result', exitCode: code, halt: last, tasks, turns, tokens, costUsd, durationMs: ms };
}

/** The servers an --mcp file lists, or a usage error saying what is wrong with it. */
async function mcpFile(file: string) {
  try {
    return await readMcpFile(file);
  } catch (error) {
    throw new UsageError(`--mcp ${errorText(error)}`);
  }
}

/** The same model under another name. */
const renamed = (model: Model, name: string): Model => ({
  name,
  complete: (request, callOptions) => model.complete(request, callOptions),
});

/** The model by name, and what it costs when that is known. */
/** A question at the terminal before the run starts (no status line yet), its bytes shown, never obeyed. */
function askAtStart(out: Output): (question: string) => Promise<string> {
  return async (question) => {
    const rl = createInterface({ input: process.stdin, output: out });
    try {
      return await rl.question(visible(question));
    } finally {
      rl.close();
    }
  };
}

function describeModel(model: Model): string {
  if (model.price === undefined) return `${model.name} (no price known: costs are not counted)`;
  return `${model.name} ($${model.price.input} in, $${model.price.output} out per million tokens)`;
}

/** The program's version, from app/package.json: the one place it is written. */
async function version(): Promise<string> {
  const manifest = await readFile(new URL('package.json', import.meta.url), 'utf8');
  return (JSON.parse(manifest) as { version: string }).version;
}

/** --export: the page has its own module (app/session-page/); the command line hands the file over and reports in
 *  its own words. Exit 2 when there is no session to show. */
async function exportPage(options: CliOptions, out: Output): Promise<number> {
  const { exportSession } = await import('./session-page/export.ts');
  const page = options.contextWindow === undefined ? {} : { contextWindow: options.contextWindow };
  const written = await exportSession(options.export!, options.out, page).catch((error: unknown) => {
    throw new UsageError(`--export: ${errorText(error)}`);
  });
  for (const warning of written.warnings) console.error(programError(`warning: ${warning}`));
  out.write(`${written.out}\n`);
  return EXIT.accepted;
}

/** The renderer for the model's markdown, loaded only for a terminal that shows colour (it is not small). */
async function terminalMarkdown(out: Output): Promise<(block: string) => string> {
  const { markdownRenderer } = await import('./markdown.ts');
  return markdownRenderer(Math.min(out.columns ?? MAX_COLUMNS, MAX_COLUMNS));
}

/** The verify command as the status line names it while it runs: marked when it runs outside the sandbox. */
const statusOfVerify = ({ verify, noSandbox }: CliOptions) =>
  verify !== undefined && noSandbox ? `${verify} (outside the sandbox)` : verify;

/** Says once, at start, what this command line loosened and whether "done" will be checked, and where. */
async function tellSafety(options: CliOptions, notice: (text: string) => void): Promise<void> {
  if (options.noDefaultProtection)
    notice('--no-default-protection: --yes covers writes that could run later, and the tools read .git');
  if (options.verify === undefined) notice('no --verify command: "done" will be accepted unverified');
  else await tellSandbox(options, notice);
}

/** Says once, at start, where the verify command will run: outside the sandbox (--no-sandbox), nowhere (no sandbox on
 *  this machine, and the policy asks for one), or with the user's rights (no sandbox, and the policy allows that). */
async function tellSandbox(options: CliOptions, notice: (text: string) => void): Promise<void> {
  const problem = await sandboxProblem();
  if (options.sandboxRead.length > 0)
    notice(`--sandbox-read: the check may also read ${options.sandboxRead.join(', ')}`);
  if (options.noSandbox) notice('--no-sandbox: the verify command runs outside the OS sandbox, with your full rights');
  else if (problem !== null && sandboxPolicy(options))
    notice(`${problem}: with --yes the check will not run; install it, or give --no-sandbox`);
  else if (problem !== null) notice(`${problem}: the verify command will run with your full rights`);
}

// Run as a program (npx harness goes through a link in node_modules/.bin), not imported by a test.
if (import.meta.url === pathToFileURL(realpathSync(process.argv[1] ?? '.')).href) {
  let decided: number | undefined;
  // Prevents a Ctrl-C after the run's halt from turning its exit code into 130: once main has the code, Ctrl-C only
  // hurries the exit. Before that, the run's own handler has the Ctrl-C, or with none (starting up) it ends the
  // program as Ctrl-C always does.
  process.on('SIGINT', () => {
    if (decided !== undefined) process.exit(decided);
    if (process.listenerCount('SIGINT') === 1) process.exit(EXIT.interrupted);
  });
  // The same for SIGTERM and SIGHUP: before a run listens for them they end the program at once, as they would have.
  for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      // Prevents a closed terminal from crashing the program while it starts or winds down (a run has endOnSignals):
      // once the terminal hangs up, reading and writing it fail (EIO), and an unheard stream error ends the process.
      if (signal === 'SIGHUP')
        for (const stream of [process.stdin, process.stdout, process.stderr]) stream.on('error', () => {});
      if (decided !== undefined) leave(decided);
      if (process.listenerCount(signal) === 1) leave(EXIT[signal]);
    });
  }
  void main(process.argv.slice(2), process.env).then(
    (code) => {
      decided = code;
      // Out as soon as the output is: Node's own wind-down (sockets, the loader's thread) can take a few hundred ms,
      // during which it no longer listens for Ctrl-C, and one would kill the process with 130.
      process.stdout.write('', () => leave(code));
    },
    // Prevents a stack trace as the program's last word: whatever failed is said in one error, like the others.
    (error: unknown) => {
      console.error(programError(errorText(error)));
      process.exit(EXIT.notAccepted);
    },
  );
}
