// Part of npm run test:terminal: the real program killed (SIGKILL) in the middle of a session of edits, then resumed
// with --resume. What only a real crash shows: the edit that landed while its result was never recorded, the write
// cut off half-way, the lock and the temporary file a dead process leaves. After each resume, no file of the harness
// is left (temporary files, locks), every file is old or new, and the transcript agrees with the disk: an edit is in
// its file exactly when its result says it was made. app/test/edit-intents.test.ts pins the same rules in-process.

import type Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { call, reply, say, type ScriptEntry, toolUse } from 'reference-harness/scripted-model';
import { loadSession } from '../session-file.ts';
import { tempProject, violationsOf, within } from '../../test/helpers.ts';

const program = path.join(import.meta.dirname, '..', 'main.ts');
/** tsx by its full address, so the program can start in any folder. */
const tsx = import.meta.resolve('tsx');

/** A project, its session file, and a temporary folder of its own for the program (TMPDIR), where the harness keeps
 *  its locks: what a crash leaves there is this test's alone to see. */
async function crashProject(t: TestContext, files: Record<string, string>) {
  const root = await tempProject(t, files);
  const tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), 'harness-crash-tmp-')));
  t.after(() => rm(tmp, { recursive: true, force: true }));
  await mkdir(path.join(root, '.agent'));
  return { root, tmp, session: path.join(root, '.agent', 'session.jsonl') };
}

type Project = Awaited<ReturnType<typeof crashProject>>;

/** Starts the program in `project` with `script`; `exited` has its exit code or signal and everything it printed. */
async function start(t: TestContext, project: Project, script: ScriptEntry[], args: string[]) {
  const scriptFile = path.join(project.root, '.agent', `script-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(scriptFile, JSON.stringify(script));
  const command = [program, '--root', project.root, '--yes', '--max-turns', '100', '--script', scriptFile, ...args];
  const child = spawn(process.execPath, ['--import', tsx, ...command], {
    env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', TMPDIR: project.tmp },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, output })),
  );
  return { kill: () => child.kill('SIGKILL'), exited };
}

/** Runs the program on `script` and kills it once `now` holds (looked at every millisecond or so). */
async function killedWhen(t: TestContext, project: Project, script: ScriptEntry[], now: () => boolean) {
  const run = await start(t, project, script, ['--session', project.session, 'edit']);
  let ended = false;
  void run.exited.then(() => (ended = true));
  const waiting = (async () => {
    while (!now()) {
      if (ended) throw new Error(`the program ended before the moment to kill it: ${(await run.exited).output}`);
      await sleep(1);
    }
  })();
  await within(waiting, 'the moment to kill the program', 20_000);
  run.kill();
  assert.equal((await run.exited).signal, 'SIGKILL');
}

/** Resumes the killed session with a model that only says it is done; exit 0. */
async function resumed(t: TestContext, project: Project) {
  const run = await start(t, project, [say('Done.')], ['--resume', project.session, 'keep going']);
  const { code, output } = await within(run.exited, 'the resume', 20_000);
  assert.equal(code, 0, output);
  const loaded = await loadSession(project.session, project.root);
  assert.deepEqual(loaded.warnings, [], 'the resume wrote its repair to the file');
  assert.deepEqual(violationsOf({ messages: loaded.messages }), []);
  return loaded.messages;
}

/** The whole lines of a session file, intents not counted: a harness that writes none gets as far in as many. */
const linesIn = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .slice(0, -1)
        .filter((line) => !line.includes('"type":"intent"')).length
    : 0;
const has = (file: string, text: string) => existsSync(file) && readFileSync(file, 'utf8').includes(text);

/** Each call's result in a transcript, by call id. */
function resultsOf(messages: Anthropic.MessageParam[]): Map<string, Anthropic.ToolResultBlockParam> {
  const results = new Map<string, Anthropic.ToolResultBlockParam>();
  for (const message of messages)
    if (typeof message.content !== 'string')
      for (const block of message.content) if (block.type === 'tool_result') results.set(block.tool_use_id, block);
  return results;
}

/** What the harness left behind: any file in the project but the person's (`files`), the session and the scripts
 *  (a temporary file of a write cut off), and any lock in its temporary folder. */
function harnessLeftovers(project: Project, files: string[]): string[] {
  const expected = (name: string) =>
    files.includes(name) || name === '.agent' || /^\.agent\/(session\.jsonl|script-\w+\.json)$/.test(name);
  const temps = readdirSync(project.root, { recursive: true, encoding: 'utf8' }).filter((name) => !expected(name));
  const lockFolders = readdirSync(project.tmp).filter((name) => name.startsWith('reference-harness-locks-'));
  const locks = lockFolders.flatMap((folder) => readdirSync(path.join(project.tmp, folder)));
  return [...temps, ...locks];
}

/** A project's huge sparse file, read far in: a tool call that is still running minutes later, after an edit of the
 *  same reply has landed, so the reply's results (written together, once every call is done) are not recorded yet. */
const slowRead = toolUse('read_file', { path: 'huge.log', offset: 1e9 });
async function withHugeFile(root: string) {
  await writeFile(path.join(root, 'huge.log'), 'x\n'.repeat(5000));
  await truncate(path.join(root, 'huge.log'), 2 ** 40);
}

const editA = toolUse('edit_file', { path: 'a.txt', old_str: 'old', new_str: 'new' });

describe('a resume after a crash tells the model an edit that landed did not run', () => {
  test('killed after an edit landed and before its result was recorded: the resume answers "applied", the other call "not run"', async (t) => {
    const project = await crashProject(t, { 'a.txt': 'old\n' });
    await withHugeFile(project.root);
    const script = [call('read_file', { path: 'a.txt' }), reply(editA, slowRead), say('Done.')];
    await killedWhen(t, project, script, () => has(path.join(project.root, 'a.txt'), 'new'));
    assert.ok(!has(project.session, '"tool_use_id":"toolu_s2_0"'), 'the edit result was not recorded: the case');
    const results = resultsOf(await resumed(t, project));
    assert.deepEqual(results.get('toolu_s2_0'), {
      type: 'tool_result',
      tool_use_id: 'toolu_s2_0',
      content:
        'applied: the edit of a.txt landed before the session ended (the file has the new content); do not make it again',
    });
    assert.equal(results.get('toolu_s2_1')?.content, 'not run: the session ended before this call finished');
    assert.equal(readFileSync(path.join(project.root, 'a.txt'), 'utf8'), 'new\n');
    assert.deepEqual(harnessLeftovers(project, ['a.txt', 'huge.log']), []);
  });

  test('killed after the edit was said and before it was written (another harness held the lock): "not applied"; the file changed before the resume: "read it again"', async (t) => {
    const trial = async (changedMeanwhile: boolean) => {
      const project = await crashProject(t, { 'a.txt': 'old\n' });
      // The lock another harness holds while it writes a.txt (hardening/atomic-write.ts): this process, alive.
      const locks = path.join(project.tmp, `reference-harness-locks-${process.getuid?.() ?? 0}`);
      await mkdir(locks, { mode: 0o700 });
      const lockName = createHash('sha256').update(path.join(project.root, 'a.txt')).digest('hex');
      const lock = path.join(locks, `${lockName}.lock`);
      await writeFile(lock, JSON.stringify({ pid: process.pid }));
      const script = [call('read_file', { path: 'a.txt' }), reply(editA), say('Done.')];
      await killedWhen(t, project, script, () => has(project.session, '"type":"intent"'));
      await rm(lock);
      if (changedMeanwhile) await writeFile(path.join(project.root, 'a.txt'), 'another\n');
      else assert.equal(readFileSync(path.join(project.root, 'a.txt'), 'utf8'), 'old\n', 'the edit was not written');
      const result = resultsOf(await resumed(t, project)).get('toolu_s2_0');
      assert.deepEqual(harnessLeftovers(project, ['a.txt']), []);
      return result;
    };
    const [notApplied, changed] = await Promise.all([trial(false), trial(true)]);
    assert.deepEqual(notApplied, {
      type: 'tool_result',
      tool_use_id: 'toolu_s2_0',
      content: 'not applied: the session ended before the edit of a.txt was written; the file is as it was',
      is_error: true,
    });
    assert.equal(
      changed?.content,
      'unknown: a.txt changed since the session ended (it holds neither the content it had nor the edit); read it again',
    );
  });

  test('SIGKILL at many moments of a session of edits, then --resume: no file of the harness left, every file old or new, and each edit is in its file exactly when its result says it was made', async (t) => {
    const original = Array.from({ length: 8 }, (_, i) => `line ${i}\n`).join('');
    const lineEdit = (i: number, from = `line ${i}\n`, to = `line ${i} done\n`) =>
      toolUse('edit_file', { path: 'f.txt', old_str: from, new_str: to });
    const script = [
      call('read_file', { path: 'f.txt' }),
      ...[0, 1, 2, 3].map((i) => reply(lineEdit(i))),
      reply(lineEdit(4), lineEdit(4, 'line 4 done\n', 'line 4 twice\n')), // the second made on top of the first
      reply(toolUse('edit_file', { path: 'new.txt', old_str: '', new_str: 'made\n' })),
      reply(lineEdit(5), toolUse('edit_file', { path: 'other.txt', old_str: '', new_str: 'other\n' })),
      ...[6, 7].map((i) => reply(lineEdit(i))),
      { ...say('Done.'), delay_ms: 200 }, // alive a while after the last result, so every moment comes before the end
    ];
    /** What each edit puts in the disk, by call id (the scripted model's ids: toolu_s{turn}_{index}). */
    const effects: Record<string, [file: string, text: string]> = {
      toolu_s2_0: ['f.txt', 'line 0 done'],
      toolu_s3_0: ['f.txt', 'line 1 done'],
      toolu_s4_0: ['f.txt', 'line 2 done'],
      toolu_s5_0: ['f.txt', 'line 3 done'],
      toolu_s6_0: ['f.txt', 'line 4 '], // done, or twice: either has it
      toolu_s6_1: ['f.txt', 'line 4 twice'],
      toolu_s7_0: ['new.txt', 'made'],
      toolu_s8_0: ['f.txt', 'line 5 done'],
      toolu_s8_1: ['other.txt', 'other'],
      toolu_s9_0: ['f.txt', 'line 6 done'],
      toolu_s10_0: ['f.txt', 'line 7 done'],
    };
    // The states f.txt may be in, in order: it is one of them, never a part of one.
    const states = [original];
    for (const [from, to] of [0, 1, 2, 3, 4, 'twice', 5, 6, 7].map((i) =>
      i === 'twice' ? ['line 4 done\n', 'line 4 twice\n'] : [`line ${i}\n`, `line ${i} done\n`],
    ))
      states.push(states.at(-1)!.replace(from!, to!));
    type Moment = { what: string; n: number; lines: boolean };
    // The moments: once the session file holds N lines (intents not counted, so a harness that writes none is
    // killed at the same points), from the first call to the last result (line 43); and as soon as the Nth edit of
    // f.txt is on disk, which is before its result is recorded only if the kill is quick enough.
    const afterLines = [4, 9, 14, 19, 24, 29, 34, 39, 43].map((n): Moment => ({ what: `line ${n}`, n, lines: true }));
    const afterEdits = [1, 2, 3, 4, 5, 6, 7].map((n): Moment => ({ what: `edit ${n} on disk`, n, lines: false }));
    const moments = [...afterLines, ...afterEdits];
    const seen = { applied: 0, notApplied: 0, notRun: 0, madeBefore: 0 };
    const trial = async ({ what: moment, n, lines }: Moment) => {
      const project = await crashProject(t, { 'f.txt': original });
      const f = path.join(project.root, 'f.txt');
      const reached = lines ? () => linesIn(project.session) >= n : () => states.indexOf(readFileSync(f, 'utf8')) >= n;
      await killedWhen(t, project, script, reached);
      const messages = await resumed(t, project);
      const files = ['f.txt', 'new.txt', 'other.txt'];
      assert.deepEqual(harnessLeftovers(project, files), [], `killed at ${moment}: nothing of the harness is left`);
      const content = (file: string) => {
        const at = path.join(project.root, file);
        return existsSync(at) ? readFileSync(at, 'utf8') : null;
      };
      assert.ok(states.includes(content('f.txt')!), `killed at ${moment}: f.txt is old or new: ${content('f.txt')}`);
      assert.ok([null, 'made\n'].includes(content('new.txt')), `killed at ${moment}: new.txt`);
      assert.ok([null, 'other\n'].includes(content('other.txt')), `killed at ${moment}: other.txt`);
      for (const [id, result] of resultsOf(messages)) {
        const effect = effects[id];
        if (effect === undefined) continue; // a read
        const said = String(result.content);
        const made = /^(edited|created|applied)\b/.test(said);
        const [file, text] = effect;
        assert.equal(has(path.join(project.root, file), text), made, `killed at ${moment}: ${id} says "${said}"`);
        assert.doesNotMatch(said, /^unknown/, 'nothing else wrote the files');
        if (said.startsWith('applied')) seen.applied++;
        else if (said.startsWith('not applied')) seen.notApplied++;
        else if (said.startsWith('not run')) seen.notRun++;
        else seen.madeBefore++;
      }
    };
    for (let i = 0; i < moments.length; i += 4) await Promise.all(moments.slice(i, i + 4).map(trial));
    t.diagnostic(`edits answered over ${moments.length} crashes: ${JSON.stringify(seen)}`);
  });
});
