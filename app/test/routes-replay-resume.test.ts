// Route 2 of issue 28: nothing loosens safety from a file. A recording's header may have been edited (it sits in the
// project), so --replay and --resume take the sandbox and the approval mode from their own command line only, the
// recorded check runs sandboxed unless this command line says --no-sandbox, and --resume refuses protected files
// that no longer hash as the header says, rather than trusting the header's hashes; a session file the model could edit
// (in the project, outside .agent/) sets --verify and --protect only with a person's yes. Run for real: bubblewrap runs
// the replayed check, and the edited recordings are replayed and resumed through the program.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { confirmRecordedGate, type SessionHeader } from '../session-file.ts';
import { EXIT } from '../terminal.ts';
import { call, say } from 'reference-harness/scripted-model';
import { tempProject } from '../../test/helpers.ts';
import { editedRecording, runCli } from './helpers.ts';
import { PROGRAM_TOOLS } from '../program-tools.ts';
import { sandboxProblem } from 'reference-harness/hardening';

const noSandbox = await sandboxProblem();
const skip = noSandbox === null ? false : `no OS sandbox here (${noSandbox}); CI installs bubblewrap`;

/** The program's tools that change files, as the start-up notice names them. */
const CHANGING = PROGRAM_TOOLS.filter((tool) => !tool.readOnly)
  .map((tool) => tool.name)
  .join(', ');

/** A header that asks for everything: no sandbox, every change approved, and (given `escaped`) a check that writes
 *  outside the root. */
const loosened = (escaped?: string) => (header: SessionHeader) => ({
  ...header,
  options: {
    ...header.options!,
    noSandbox: true,
    approval: 'yes' as const,
    ...(escaped !== undefined && { verify: `touch '${escaped}'; node test.js` }),
  },
});

/** What the program printed, a line wrapped at 100 columns joined again. */
const unwrapped = (printed: string) => printed.replace(/\n {2}/g, ' ');

describe('--replay takes the sandbox and the approval mode from its own command line, never from the recording', () => {
  test(
    'a recording edited to say noSandbox and approval "yes" runs its check in the sandbox: it cannot write outside the root',
    { skip },
    async (t) => {
      const escaped = path.join(await tempProject(t), 'escaped');
      const { root, file } = await editedRecording(t, loosened(escaped));
      const stdout = unwrapped((await runCli(['--replay', file, '--root', root, '--yes'])).stdout);
      assert.match(stdout, /^replay: the verify command `touch .*; node test\.js` runs in the OS sandbox\n/);
      assert.match(stdout, /\+ +The task is not done yet: the check `touch /, 'the replay ran to the check');
      assert.equal(existsSync(escaped), false, 'the recorded check did not run outside the sandbox');
    },
  );

  test('the same recording with --no-sandbox on this command line escapes, said first: so the test above proves the sandbox', async (t) => {
    const escaped = path.join(await tempProject(t), 'escaped');
    const { root, file } = await editedRecording(t, loosened(escaped));
    const stdout = unwrapped((await runCli(['--replay', file, '--root', root, '--yes', '--no-sandbox'])).stdout);
    assert.match(
      stdout,
      /^replay: the verify command .* runs outside the OS sandbox \(--no-sandbox\), with your full rights\n/,
    );
    assert.equal(existsSync(escaped), true);
  });

  test('without --yes on this command line, the recorded edits are refused though the header says "yes": the files are unchanged', async (t) => {
    const { root, file } = await editedRecording(t, loosened());
    const before = await readFile(path.join(root, 'add.js'), 'utf8');
    // --no-sandbox: this test is about approval (the first one tries the sandbox), and on a machine without a sandbox
    // a replay that asks for one ends at its check, an error, before the refused edit is shown.
    const { status, stdout } = await runCli(['--replay', file, '--root', root, '--no-sandbox']);
    assert.match(stdout, /\nreplay: changes are refused: only --yes on this command line applies them\n/);
    assert.match(stdout, /not run: changes need approval/, 'the edit was refused, so the replay differs there');
    assert.equal(status, EXIT.notAccepted);
    assert.equal(await readFile(path.join(root, 'add.js'), 'utf8'), before);
  });
});

describe('--resume takes the sandbox and the approval mode from its own command line, and checks the header', () => {
  /** A first run recorded with --protect test.txt, a check that fails, and one turn: a session to resume. */
  async function firstRun(t: TestContext, extra: string[] = []) {
    const scripts = {
      'first.json': [say('Done.')],
      'second.json': [
        call('read_file', { path: 'a.txt' }),
        call('edit_file', { path: 'a.txt', old_str: 'alpha', new_str: 'beta' }),
        say('Done.'),
      ],
    };
    const files = Object.fromEntries(Object.entries(scripts).map(([name, replies]) => [name, JSON.stringify(replies)]));
    const root = await tempProject(t, { 'a.txt': 'alpha\n', 'test.txt': 'the test\n', ...files });
    const file = path.join(root, 'session.jsonl');
    const args = [
      '--root',
      root,
      '--session',
      file,
      '--script',
      path.join(root, 'first.json'),
      '--protect',
      'test.txt',
    ];
    const first = await runCli([...args, '--yes', '--verify', 'exit 3', '--max-turns', '1', ...extra, 'fix']);
    assert.equal(first.status, EXIT.notAccepted, first.stdout);
    const resume = ['--root', root, '--resume', file, '--script', path.join(root, 'second.json')];
    // The gate as the first run had it: a session file in the project sets none of it (see the test below).
    return { root, file, resume, gate: ['--verify', 'exit 3', '--protect', 'test.txt'] };
  }

  /** Rewrites the session's header in place, as a check that can write the project could. */
  async function rewriteHeader(file: string, edit: (header: SessionHeader) => SessionHeader) {
    const [first = '', ...rest] = (await readFile(file, 'utf8')).split('\n');
    await writeFile(file, [JSON.stringify(edit(JSON.parse(first) as SessionHeader)), ...rest].join('\n'));
  }

  test(
    'a header edited to say noSandbox and approval "yes" resumes sandboxed, and with no terminal and no --yes every change is refused',
    { skip },
    async (t) => {
      const { root, file, resume, gate } = await firstRun(t);
      await rewriteHeader(file, (header) => ({
        ...header,
        options: { ...header.options!, noSandbox: true, approval: 'yes', verify: 'exit 0' },
      }));
      const { stdout } = await runCli([...resume, ...gate, '--json', '--max-turns', '3', 'keep going']);
      const events = stdout
        .split('\n')
        .flatMap((line) => (line.startsWith('{') ? [JSON.parse(line) as Record<string, unknown>] : []));
      const gates = events.filter((event) => event.type === 'gate');
      assert.ok(gates.length > 0, 'the check ran');
      assert.ok(
        gates.every((gate) => gate.sandboxed === true),
        JSON.stringify(gates),
      );
      assert.ok(
        events.some(
          (event) =>
            event.type === 'notice' && String(event.text).includes(`every change (${CHANGING}) will be denied`),
        ),
      );
      assert.equal(await readFile(path.join(root, 'a.txt'), 'utf8'), 'alpha\n', 'the edit was refused');
    },
  );

  test('a session file inside the project (outside .agent/) can be edited by the model, and --resume takes --verify and --protect from it: with nobody to ask it is refused, naming them', async (t) => {
    const { root, file, resume } = await firstRun(t);
    await rewriteHeader(file, (header) => ({
      ...header,
      options: { ...header.options!, verify: 'exit 0', protect: [] },
    }));
    const said = t.mock.method(console, 'error', () => {});
    assert.equal((await runCli([...resume, '--yes', '--max-turns', '3', 'keep going'])).status, EXIT.usage);
    assert.match(
      unwrapped(String(said.mock.calls[0]?.arguments[0])),
      /^harness: --resume: \S+session\.jsonl is inside the project, where the model can edit it, and sets --verify "exit 0": give them on the command line/,
    );
    assert.equal(await readFile(path.join(root, 'a.txt'), 'utf8'), 'alpha\n', 'nothing ran');
    // The command line's own flags resume it, and its gate is theirs.
    const flagged = await runCli([...resume, '--yes', '--verify', 'exit 3', '--max-turns', '3', 'keep going']);
    assert.equal(flagged.status, EXIT.notAccepted, flagged.stdout);
    // In .agent/, which the model cannot write unasked, the recording's flags are taken as before.
    const kept = path.join(root, '.agent', 'sessions', 'kept.jsonl');
    await mkdir(path.dirname(kept), { recursive: true });
    await rename(file, kept);
    const inAgent = await runCli([
      ...resume.map((arg) => (arg === file ? kept : arg)),
      '--yes',
      '--max-turns',
      '3',
      'go',
    ]);
    assert.match(unwrapped(inAgent.stdout), /options: from the session --verify "exit 0"/);
    assert.equal(inAgent.status, EXIT.accepted, inAgent.stdout);
  });

  test('a person at a terminal is asked before a session file the model could edit sets the gate: yes takes it, anything else refuses', async (t) => {
    const root = await tempProject(t, { 's.jsonl': '', '.agent/sessions/t.jsonl': '' });
    const file = path.join(root, 's.jsonl');
    const gate = ['--verify "exit 0"'];
    const questions: string[] = [];
    const answer = (text: string) => async (question: string) => (questions.push(question), text);
    await confirmRecordedGate(file, root, gate, answer('y'));
    await assert.rejects(confirmRecordedGate(file, root, gate, answer('')), /give them on the command line/);
    await assert.rejects(confirmRecordedGate(file, root, gate, null), /sets --verify "exit 0": give them/);
    assert.match(
      questions[0] ?? '',
      /s\.jsonl is inside the project, where the model can edit it, and sets --verify "exit 0"\. Take them\? \[y\/N\] $/,
    );
    await confirmRecordedGate(path.join(root, '.agent', 'sessions', 't.jsonl'), root, gate, null);
    await confirmRecordedGate(file, root, [], null);
    assert.equal(questions.length, 2, 'only a gate from within reach is asked about');
  });

  test('rewritten protected-file hashes in the header are refused at --resume, naming the file, before anything runs', async (t) => {
    const { root, file, resume, gate } = await firstRun(t);
    await rewriteHeader(file, (header) => ({ ...header, protected: { 'test.txt': '0'.repeat(64) } }));
    const said = t.mock.method(console, 'error', () => {});
    const { status } = await runCli([...resume, ...gate, '--yes', 'keep going']);
    assert.equal(status, EXIT.usage);
    assert.match(
      String(said.mock.calls[0]?.arguments[0]).replace(/\n {2}/g, ' '),
      /^harness: --resume: protected files changed since the session started: test\.txt \(changed\); restore them, or start a new session/,
    );
    assert.equal(await readFile(path.join(root, 'a.txt'), 'utf8'), 'alpha\n');
  });

  test('a protected file deleted between runs is refused the same way: the header can refuse a resume, never vouch for one', async (t) => {
    const { root, resume, gate } = await firstRun(t);
    await rm(path.join(root, 'test.txt'));
    const said = t.mock.method(console, 'error', () => {});
    assert.equal((await runCli([...resume, ...gate, '--yes', 'keep going'])).status, EXIT.usage);
    assert.match(String(said.mock.calls[0]?.arguments[0]), /test\.txt \(deleted\)/);
  });

  test('with the header and the protected files as they were, the resume goes on: the refusals above are the check', async (t) => {
    const { root, resume } = await firstRun(t);
    const { status, stdout } = await runCli([
      ...resume,
      '--protect',
      'test.txt',
      '--yes',
      '--verify',
      'exit 0',
      '--max-turns',
      '5',
      'keep going',
    ]);
    assert.match(stdout, /halt: accepted/, stdout);
    assert.equal(status, EXIT.accepted);
    assert.equal(await readFile(path.join(root, 'a.txt'), 'utf8'), 'beta\n');
  });
});
