// The lesson commands that play the stories through agent.ts on its defaults, where each gate starts the OS sandbox,
// and the offline demo, which imports a copy of the harness and starts its check as a program: `npm run lesson -- pN`
// traced, and `npm start`. In npm run test:all (test:stories); the rest of the lesson commands' tests, in-process,
// are test/lessons/lessons.test.ts's, in npm test.

import assert from 'node:assert/strict';
import { cp, mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import type * as sandbox from '../../hardening/sandbox.ts';
import type * as demo from '../../lessons/demo.ts';
import { runLesson } from '../../lessons/run.ts';
import { tempProject } from '../helpers.ts';

/** Collects what a command writes. */
function sink(): { out: PassThrough; text: () => string } {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  return { out, text: () => Buffer.concat(chunks).toString('utf8') };
}

async function lesson(args: string[]): Promise<{ code: number; output: string }> {
  const { out, text } = sink();
  const code = await runLesson(args, out);
  return { code, output: text() };
}

const ANSI = /\x1b\[/;

test('npm run lesson -- p2 traces every part of the loop through agent.ts, and ends with PASS', async () => {
  const { code, output } = await lesson(['p2']);
  assert.equal(code, 0, output.slice(-2000));
  assert.doesNotMatch(output, /verdict: FAIL/);
  for (const part of [
    'state',
    'prompt builder',
    'model',
    'readout',
    'gate',
    'environment',
    'fold back',
    'halt check',
  ]) {
    assert.match(output, new RegExp(`^\\[\\d+\\] ${part} `, 'm'), `no "${part}" line`);
  }
});

test("npm run lesson -- p4 plays the AGENTS.md stories: the project's rule is followed, a link out skipped", async () => {
  const { code, output } = await lesson(['p4']);
  assert.equal(code, 0, output.slice(-2000));
  const told = (name: string) => output.slice(output.indexOf(`=== p4: ${name}`)).split('\n=== ')[0]!;
  const followed = told("the project's AGENTS.md reaches the model");
  assert.match(followed, /^context: AGENTS\.md$/m);
  assert.match(followed, /edit_file ran: edited style\.js/);
  assert.match(followed, /verdict: PASS/);
  const linked = told('an AGENTS.md linked out of the project is skipped');
  assert.match(linked, /^context: skipped AGENTS\.md: a link out of its folder, to .*elsewhere\/AGENTS\.md$/m);
  assert.match(linked, /verdict: PASS/);
});

describe('the offline demo (npm start)', () => {
  test('piped, it fits 100 columns in plain text, without bubblewrap too, and passes where lessons/example/add.js is fixed', async (t) => {
    const repo = path.join(import.meta.dirname, '..', '..');
    const copy = await tempProject(t, { 'lessons/example/add.js': 'export const add = (a, b) => a + b;\n' });
    for (const file of [
      'agent.ts',
      'tools.ts',
      'hardening',
      'scripted-model.ts',
      'package.json',
      'lessons/demo.ts',
      'lessons/scripts',
    ])
      await cp(path.join(repo, file), path.join(copy, file), { recursive: true });
    await symlink(path.join(repo, 'node_modules'), path.join(copy, 'node_modules'));
    const copied: typeof demo = await import(path.join(copy, 'lessons', 'demo.ts'));
    const copiedSandbox: typeof sandbox = await import(path.join(copy, 'hardening', 'sandbox.ts'));
    // As on a machine without bubblewrap: PATH holds node and nothing else, and the copy's own sandbox.ts looks for the
    // sandbox afresh. With bubblewrap the output is the same but for the lines saying there is none, so this one run
    // checks the width both ways.
    const bin = path.join(copy, 'bin-without-bwrap');
    await mkdir(bin);
    await symlink(process.execPath, path.join(bin, 'node'));
    const { out, text } = sink();
    copiedSandbox.lookForProgramsIn([bin]);
    const pathBefore = process.env.PATH;
    process.env.PATH = bin;
    try {
      assert.equal(await copied.runDemo(out, {}), 0, text());
    } finally {
      process.env.PATH = pathBefore;
    }
    if (process.platform === 'linux') assert.match(text(), /^no OS sandbox: bubblewrap is not installed/m);
    const lines = text().split('\n');
    const widest = Math.max(...lines.map((line) => line.length));
    assert.ok(widest <= 100, `a line of ${widest} columns:\n${lines.find((line) => line.length === widest)}`);
    assert.doesNotMatch(text(), ANSI);
    assert.match(text(), /checked: exit 1: fail, refused/);
    assert.match(text(), /checked: exit 0: pass → ACCEPTED/);
  });
});
