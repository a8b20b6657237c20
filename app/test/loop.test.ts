// The loop seen from the command line (the program's half of test/loop/loop.test.ts): exit codes, usage errors and a
// scripted session run headless.

import assert from 'node:assert/strict';
import { cp } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { Halt } from 'reference-harness';
import { EXAMPLE_PROJECT } from '../../lessons/demo.ts';
import { tempProject } from '../../test/helpers.ts';
import { main } from '../main.ts';
import { EXIT, exitCodeFor } from '../terminal.ts';
import { runCli } from './helpers.ts';

const SEED_SCRIPT = path.join(import.meta.dirname, '..', '..', 'lessons', 'scripts', 'seed-story.json');

describe('command line', () => {
  test('each halt kind maps to its exit code', () => {
    const cases: [Halt, number][] = [
      [{ kind: 'accepted', verifiedBy: 'npm test' }, 0],
      [{ kind: 'accepted', verifiedBy: null }, 0],
      [{ kind: 'budget', budget: 'turns', limit: 3 }, 1],
      [{ kind: 'error', message: 'x' }, 1],
      [{ kind: 'interrupted' }, 130],
    ];
    for (const [h, code] of cases) assert.equal(exitCodeFor(h), code);
    assert.equal(EXIT.usage, 2);
  });

  test('a bad flag is a one-line error and exit code 2, not a stack trace', async (t) => {
    for (const args of [['--max-turns', 'many', 'task'], ['--no-such-flag'], ['--script', 'missing.json', 'task']]) {
      const printed = t.mock.method(console, 'error', () => {});
      assert.equal(await main(args, {}), EXIT.usage, args.join(' '));
      assert.equal(printed.mock.callCount(), 1);
      assert.match(String(printed.mock.calls[0]!.arguments[0]), /^harness: [^\n]+$/);
      printed.mock.restore();
    }
  });

  test('--script runs a scripted session headless and reports a verified halt', async (t) => {
    const root = await tempProject(t);
    await cp(EXAMPLE_PROJECT, root, { recursive: true });
    const run = await runCli([
      '--script',
      SEED_SCRIPT,
      '--root',
      root,
      '--verify',
      'node test.js',
      '--yes',
      'make add(2, 3) == 5',
    ]);
    assert.equal(run.status, 0, run.stdout);
    assert.match(run.stdout, /halt: accepted \(verified by `node test\.js`\) after 8 turn/);
  });

  test('without a key or a script, a task is refused with a hint instead of a crash', async (t) => {
    const printed = t.mock.method(console, 'error', () => {});
    assert.equal(await main(['fix it'], {}), EXIT.usage);
    assert.match(String(printed.mock.calls[0]!.arguments[0]), /ANTHROPIC_API_KEY is not set/);
  });
});
