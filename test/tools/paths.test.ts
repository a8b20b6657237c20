// Spellings of a path that try to leave the project, each tried against every tool: read_file,
// list_files, edit_file creating a file, and edit_file changing an existing file (with the
// read-before-edit hash already in place, so only safe_path stands in the way).
//
// The assertion is never just "refused": on Linux a backslash, "%2e" or a fullwidth dot is part of
// a file name, so such paths may be used, but only inside the project. For every spelling:
// the sentinel outside is never read (no tool output or error contains it), and nothing outside
// changes (the folders beside the project, names and contents, are the same before and after).

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { runTask } from '../../agent.ts';
import { call, reply, say, type ScriptEntry, toolUse } from '../../scripted-model.ts';
import { edit_file, list_files, read_file, type ToolContext } from '../../tools.ts';
import { scriptedAgent } from '../helpers.ts';
import { containedRunner, guardedDisk } from '../../hardening/index.ts';

const SENTINEL = 'SENTINEL-8d41: outside the project, never to be read\n';
/** A file name that exists only outside: seeing it in a listing means the listing left the project. */
const MARKER = 'MARKER-only-outside-5b2e.txt';

/** A RAM disk when there is one: sixty workspaces of twenty files and links each are built here. */
const TMP = existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();

interface Workspace {
  base: string;
  root: string;
  outside: string;
  ctx: ToolContext;
}

/** base/project is the root; base/outside and base/project-evil (a sibling whose name starts like
 *  the root's) hold the sentinel; the root holds every kind of symlink that could lead out. */
async function workspace(t: TestContext): Promise<Workspace> {
  const base = await realpath(await mkdtemp(path.join(TMP, 'paths-test-')));
  t.after(() => rm(base, { recursive: true, force: true }));
  // `~` and $HOME lead to the outside folder, if anything expands them.
  const home = process.env.HOME;
  t.after(() => (home === undefined ? delete process.env.HOME : (process.env.HOME = home)));
  const root = path.join(base, 'project');
  const outside = path.join(base, 'outside');
  const secret = path.join(outside, 'secret.txt');
  for (const dir of [root, outside, path.join(root, 'src'), path.join(base, 'project-evil')]) mkdirSync(dir);
  writeFileSync(secret, SENTINEL);
  writeFileSync(path.join(outside, MARKER), SENTINEL);
  writeFileSync(path.join(base, 'project-evil', 'secret.txt'), SENTINEL);
  writeFileSync(path.join(root, 'a.txt'), 'inside\n');
  const links: [string, string][] = [
    ['secret-link.txt', secret],
    ['rel-link.txt', '../outside/secret.txt'],
    ['src/inner.txt', '../../outside/secret.txt'],
    ['out', outside],
    ['chain1', 'chain2'],
    ['chain2', 'chain3'],
    ['chain3', secret],
    ['dirchain1', 'dirchain2'],
    ['dirchain2', outside],
    ['up', '..'],
    ['slash', '/'],
    ['procroot', '/proc/self/root'],
    ['dangling.txt', path.join(outside, 'not-yet.txt')],
    ['loop1', 'loop2'],
    ['loop2', 'loop1'],
  ];
  for (const [name, target] of links) symlinkSync(target, path.join(root, name));
  // Seen hashes for every sentinel, under every real path: if safe_path let a change through,
  // read-before-edit would not be what stops it.
  const hash = createHash('sha256').update(SENTINEL).digest('hex');
  const seen = new Map(
    [secret, path.join(outside, MARKER), path.join(base, 'project-evil', 'secret.txt')].map((file) => [file, hash]),
  );
  process.env.HOME = outside;
  return { base, root, outside, ctx: { root, seen, disk: guardedDisk, runner: containedRunner } };
}

/** Everything beside the project, recursively: names, file contents, symlink targets. */
function snapshot(base: string): Record<string, string> {
  const entries: Record<string, string> = {};
  const visit = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      const rel = path.relative(base, full);
      if (rel === 'project') continue;
      const info = lstatSync(full);
      if (info.isSymbolicLink()) entries[rel] = `-> ${readlinkSync(full)}`;
      else if (info.isDirectory()) {
        entries[`${rel}/`] = 'dir';
        visit(full);
      } else entries[rel] = readFileSync(full, 'utf8');
    }
  };
  visit(base);
  return entries;
}

interface Spelling {
  name: string;
  path: (w: Workspace) => string;
  /** Every tool must refuse it (it leads outside, or is malformed). */
  refused: boolean;
  /** A literal name: where, under the root, creating it must put the file. */
  createsAt?: string;
}

const literal = (name: string, p: string): Spelling => ({ name, path: () => p, refused: false, createsAt: p });
const out = (name: string, p: string | ((w: Workspace) => string)): Spelling => ({
  name,
  path: typeof p === 'string' ? () => p : p,
  refused: true,
});

const SPELLINGS: Spelling[] = [
  // .. in all its forms
  out('.. into the sibling folder', '../outside/secret.txt'),
  out('.. alone', '..'),
  out('../..', '../..'),
  out('.. deep enough to reach /', '../../../../../../../../../../etc/passwd'),
  out('.. after a real folder', 'src/../../outside/secret.txt'),
  out('./ then ..', './../outside/secret.txt'),
  out('.. with a trailing slash', '../outside/'),
  out('a file path with a trailing slash', '../outside/secret.txt/'),
  out('outside/../.. (trailing dots)', 'outside/../..'),
  out("through the root's parent and back out", '../project/../outside/secret.txt'),
  out('a sibling whose name starts like the root', '../project-evil/secret.txt'),
  out('doubled slashes', '..//outside//secret.txt'),
  // Absolute paths
  out('the sentinel, absolute', (w) => path.join(w.outside, 'secret.txt')),
  out('the outside folder, absolute', (w) => w.outside),
  out('/', '/'),
  out('/etc/passwd', '/etc/passwd'),
  out('the root, absolute, then ..', (w) => `${w.root}/../outside/secret.txt`),
  out('the sibling with the root as a name prefix, absolute', (w) => `${w.root}-evil/secret.txt`),
  out('a leading double slash', (w) => `/${w.outside}/secret.txt`),
  out('/proc/self/root/…', (w) => `/proc/self/root${w.outside}/secret.txt`),
  out('/proc/self/cwd/…', '/proc/self/cwd/package.json'),
  // Bytes the OS treats specially
  out('a NUL byte', 'a\0b'),
  out('a NUL byte hiding a ..', 'a.txt\0/../../outside/secret.txt'),
  out(
    '5,000 characters of a/ segments, then enough .. to climb out',
    () => `${'a/'.repeat(2500)}${'../'.repeat(2501)}outside/secret.txt`,
  ),
  // Symlinks
  out('a symlinked file (absolute target)', 'secret-link.txt'),
  out('a symlinked file (relative target)', 'rel-link.txt'),
  out('a symlinked file in a subfolder', 'src/inner.txt'),
  out('a symlinked folder', 'out'),
  out('a file under a symlinked folder', 'out/secret.txt'),
  out('a new file under a symlinked folder', 'out/new.txt'),
  out('a new file deep under a symlinked folder', 'out/deep/er/new.txt'),
  out('a symlink chain: link -> link -> link -> outside', 'chain1'),
  out('a chain of folder links', 'dirchain1/secret.txt'),
  out('a symlink to ..', 'up/outside/secret.txt'),
  out('a symlink to /', (w) => `slash${w.outside}/secret.txt`),
  out('a symlink to /proc/self/root', (w) => `procroot${w.outside}/secret.txt`),
  out('a dangling symlink pointing outside', 'dangling.txt'),
  out('a symlink loop', 'loop1'),
  // Literal names: allowed, but only ever inside
  {
    name: '.. after a symlinked folder (the OS would climb from the target, the tools do not)',
    path: () => 'out/../outside/secret.txt',
    refused: false,
    createsAt: 'outside/secret.txt',
  },
  { name: 'trailing dots that stay inside: outside/..', path: () => 'outside/..', refused: false },
  { name: '.. back into the root through its parent', path: () => '../project/a.txt', refused: false },
  literal('backslashes', '..\\..\\outside\\secret.txt'),
  literal('mixed separators', '..\\outside/secret.txt'),
  literal('URL-encoded dots', '%2e%2e/outside/secret.txt'),
  literal('URL-encoded dots and slashes', '%2e%2e%2foutside%2fsecret.txt'),
  literal('a URL', 'file:///etc/passwd'),
  literal('fullwidth dots', '．．/outside/secret.txt'),
  literal('a two-dot leader', '‥/outside/secret.txt'),
  literal('a fullwidth solidus', '..／outside／secret.txt'),
  literal('a division slash', '..∕outside∕secret.txt'),
  literal('three dots', '.../outside/secret.txt'),
  literal('.. with a space', '.. /outside/secret.txt'),
  literal('~', '~/secret.txt'),
  literal('$HOME', '$HOME/secret.txt'),
  literal('${HOME}', '${HOME}/secret.txt'),
  // Long names and paths: ENAMETOOLONG must stay an ordinary refusal. (Not 2,500 tiny segments:
  // safe_path spends one lstat per missing segment, ~0.1 s for such a path, and that is no escape.)
  { name: '5,000 characters in 100 segments', path: () => `${`${'a'.repeat(49)}/`.repeat(100)}x`, refused: false },
  { name: 'one 5,000-character name', path: () => 'a'.repeat(5000), refused: false },
  {
    name: 'a 5,000-character name, then ..',
    path: () => `${'a'.repeat(5000)}/../../outside/secret.txt`,
    refused: true,
  },
];

type Op = 'read' | 'list' | 'create' | 'change' | 'preview';
const OPS: Record<Op, (p: string, ctx: ToolContext) => Promise<string>> = {
  read: (p, ctx) => read_file.run({ path: p }, ctx),
  list: (p, ctx) => list_files.run({ path: p }, ctx),
  create: (p, ctx) => edit_file.run({ path: p, old_str: '', new_str: 'PWNED\n' }, ctx),
  change: (p, ctx) => edit_file.run({ path: p, old_str: 'SENTINEL', new_str: 'PWNED' }, ctx),
  // What the approval prompt would show the user for the change.
  preview: (p, ctx) => edit_file.preview!({ path: p, old_str: 'SENTINEL', new_str: 'PWNED' }, ctx),
};

/** Runs one tool on one path: what it returned or threw, as text. */
async function attempt(op: Op, p: string, ctx: ToolContext): Promise<{ ok: boolean; text: string }> {
  return await OPS[op](p, ctx).then(
    (text) => ({ ok: true, text }),
    (error: unknown) => ({ ok: false, text: error instanceof Error ? error.message : String(error) }),
  );
}

const leaks = (text: string) => text.includes('SENTINEL-8d41') || text.includes(MARKER);

describe(`${SPELLINGS.length} spellings of a path out of the project, against every tool`, () => {
  for (const spelling of SPELLINGS) {
    test(spelling.name, async (t) => {
      const w = await workspace(t);
      const requested = spelling.path(w);
      const before = snapshot(w.base);
      for (const op of Object.keys(OPS) as Op[]) {
        const { ok, text } = await attempt(op, requested, w.ctx);
        assert.ok(
          !leaks(text),
          `${op} ${JSON.stringify(requested.slice(0, 80))} showed what is outside:\n${text.slice(0, 500)}`,
        );
        if (spelling.refused)
          assert.ok(!ok, `${op} ${JSON.stringify(requested.slice(0, 80))} was not refused:\n${text.slice(0, 500)}`);
        assert.deepEqual(
          snapshot(w.base),
          before,
          `${op} ${JSON.stringify(requested.slice(0, 80))} changed something outside`,
        );
      }
      if (spelling.createsAt !== undefined) {
        assert.equal(
          readFileSync(path.join(w.root, spelling.createsAt), 'utf8'),
          'PWNED\n',
          'a literal name is created inside the project',
        );
      }
    });
  }
});

describe('a symlink that appears between two tool calls', () => {
  test('a file read, then swapped for a symlink to the sentinel, cannot be edited or read again', async (t) => {
    const w = await workspace(t);
    writeFileSync(path.join(w.root, 'swap.txt'), 'SENTINEL lookalike, inside\n');
    assert.match(await read_file.run({ path: 'swap.txt' }, w.ctx), /lookalike/);
    const before = snapshot(w.base);
    rmSync(path.join(w.root, 'swap.txt'));
    symlinkSync(path.join(w.outside, 'secret.txt'), path.join(w.root, 'swap.txt'));
    for (const op of ['change', 'preview', 'read', 'create'] as const) {
      const { ok, text } = await attempt(op, 'swap.txt', w.ctx);
      assert.ok(!ok && !leaks(text), `${op}: ${text}`);
    }
    assert.deepEqual(snapshot(w.base), before);
  });

  test('a folder listed, then swapped for a symlink to the outside folder, cannot be read, listed or written through', async (t) => {
    const w = await workspace(t);
    mkdirSync(path.join(w.root, 'mid'));
    writeFileSync(path.join(w.root, 'mid', 'x.txt'), 'inside\n');
    assert.equal(await list_files.run({ path: 'mid' }, w.ctx), 'mid/x.txt');
    const before = snapshot(w.base);
    rmSync(path.join(w.root, 'mid'), { recursive: true });
    symlinkSync(w.outside, path.join(w.root, 'mid'));
    for (const [op, p] of [
      ['list', 'mid'],
      ['read', 'mid/secret.txt'],
      ['create', 'mid/new.txt'],
      ['change', 'mid/secret.txt'],
      ['create', 'mid/x.txt'],
    ] as const) {
      const { ok, text } = await attempt(op, p, w.ctx);
      assert.ok(!ok && !leaks(text), `${op} ${p}: ${text}`);
    }
    assert.deepEqual(snapshot(w.base), before);
  });

  test('through the loop: the model reads mid/x.txt, mid becomes a symlink, and its next calls reach nothing outside', async (t) => {
    const w = await workspace(t);
    mkdirSync(path.join(w.root, 'mid'));
    writeFileSync(path.join(w.root, 'mid', 'x.txt'), 'inside\n');
    const before = snapshot(w.base);
    const swap: ScriptEntry = () => {
      rmSync(path.join(w.root, 'mid'), { recursive: true });
      symlinkSync(w.outside, path.join(w.root, 'mid'));
      return call('read_file', { path: 'mid/secret.txt' });
    };
    const script = [
      call('read_file', { path: 'mid/x.txt' }),
      swap,
      call('list_files', { path: 'mid' }),
      call('edit_file', { path: 'mid/new.txt', old_str: '', new_str: 'PWNED' }),
      call('list_files', {}),
      say('Done.'),
    ];
    const { agent, model } = await scriptedAgent(w.root, script, { contextFiles: false, subAgents: false });
    assert.equal((await runTask(agent, 'look in mid')).kind, 'accepted');
    assert.equal(model.requests.length, script.length);
    const seen = JSON.stringify(model.requests);
    assert.ok(seen.includes('inside'), 'the first read worked');
    assert.ok(!leaks(seen), 'the model saw what is outside');
    assert.deepEqual(snapshot(w.base), before);
  });
});

test("every spelling, as the model's calls through the loop (hooks and tools), reaches nothing outside", async (t) => {
  const w = await workspace(t);
  const before = snapshot(w.base);
  // One reply per spelling, with all four calls in it. The 5,000-character ones are left to the
  // table above (the loop resolves a path up to three times a call: it would double this test's time).
  const paths = SPELLINGS.map((s) => s.path(w)).filter((p) => p.length < 1000);
  const script: ScriptEntry[] = paths.map((p) =>
    reply(
      toolUse('read_file', { path: p }),
      toolUse('list_files', { path: p }),
      toolUse('edit_file', { path: p, old_str: '', new_str: 'PWNED\n' }),
      toolUse('edit_file', { path: p, old_str: 'SENTINEL', new_str: 'PWNED' }),
    ),
  );
  script.push(say('Done.'));
  const { agent, model } = await scriptedAgent(w.root, script, {
    contextFiles: false,
    subAgents: false,
    budgets: { maxTurns: script.length },
  });
  assert.equal((await runTask(agent, 'try every path')).kind, 'accepted');
  assert.equal(model.requests.length, script.length);
  assert.ok(!leaks(JSON.stringify(agent.messages)), 'the model saw what is outside');
  assert.deepEqual(snapshot(w.base), before);
  assert.ok(!existsSync(path.join(w.outside, 'new.txt')));
});
