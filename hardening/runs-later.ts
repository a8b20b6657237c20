// Defends against: a write by edit_file that another program runs or loads later, outside any
// sandbox, passing under a blanket yes (--yes, "always", an editor's accept-edits mode). The
// classes come from how those programs find their files, not from a list of names: a hidden (dot)
// name (git's .git and .gitmodules, editors' .vscode and .idea, dev containers, direnv's .envrc,
// other agents' folders all hide so); a folder git would open as a repository (git's discovery: a
// HEAD with objects/ and refs/, whatever the folder is called); the folder core.hooksPath names; a
// file that is executable; installed packages, which programs load by name (Node's node_modules,
// Python's site-packages and virtual environments), and a module at the root that Python would
// import in their place (pip.py, at `python -m pip`); a package.json change to a script npm runs on
// its own at `npm install`, and the files an install runs by their presence (binding.gyp,
// setup.py, setup.cfg, pyproject.toml). Names are compared as a file system that ignores case
// compares them (macOS's and Windows' defaults: SETUP.PY is setup.py there). Such a write is
// asked of a person every time (see agent.ts's approval). The project's own source, a Makefile or
// a test script included, is the task: the person runs it by name.
// Tests: test/tools/routes-git.test.ts.

import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { exists, isInside, pathOf, safe_path, type Tool, type ToolContext } from '../tools.ts';
import { trustedProgram } from './sandbox.ts';

/** Prevents a write that could run later from passing without a person's yes: it is asked every
 *  time, saying why; `defaultProtection: false` (--no-default-protection) lifts it. */
export const runsLaterCheck = {
  name: 'runs later',
  async check(
    { tool, input }: { tool: Tool; input: unknown },
    { toolContext: ctx }: HookAgent,
  ): Promise<HookDecision> {
    const requested = pathOf(input);
    if (tool.readOnly || requested === undefined || ctx.defaultProtection === false)
      return { action: 'allow' };
    const why = await runsLaterReason(ctx, input, requested, await safe_path(ctx.root, requested));
    return why === null ? ALLOW : { action: 'ask', reason: why };
  },
};

/** What a hook here needs of the agent (a before-call hook, see agent.ts; hardening never
 *  imports agent.ts, which imports it). */
export type HookAgent = { readonly toolContext: ToolContext };
export type HookDecision = { action: 'allow' } | { action: 'ask'; reason: string };
export const ALLOW: HookDecision = { action: 'allow' };

/** Not hidden, yet loaded when the folder is opened: VS Code's workspace files run their tasks,
 *  mise loads mise.toml on `cd`. From those tools' documentation; everything else hides. */
const OPENED_ON_LOAD = [/\.code-workspace$/, /^mise(\.[\w-]+)?\.toml$/];

/** Why the write `input` asks for, to `real` (as safe_path resolved `requested`), could run
 *  later, or null. */
export async function runsLaterReason(
  ctx: ToolContext,
  input: unknown,
  requested: string,
  real: string,
): Promise<string | null> {
  const lexical = path.relative(ctx.root, path.resolve(ctx.root, requested));
  const segments = [lexical, path.relative(ctx.root, real)].flatMap((p) => p.split(/[\\/]/));
  const hidden = segments.find((name) => name.startsWith('.') && name !== '.' && name !== '..');
  if (hidden !== undefined) return `a hidden name ("${hidden}"), which tools load on their own`;
  const name = folded(path.basename(real));
  if (OPENED_ON_LOAD.some((pattern) => pattern.test(name)))
    return 'a file its tool loads when the folder is opened';
  const installed = segments.find((segment) => INSTALLED_PACKAGES.includes(folded(segment)));
  if (installed !== undefined)
    return `inside ${installed}, where programs load installed packages from`;
  const environment = await virtualEnvironmentAround(ctx.root, real);
  if (environment !== null)
    return `inside ${environment}, a Python virtual environment (pyvenv.cfg)`;
  const shadowed = await shadowedModule(ctx.root, real);
  if (shadowed !== null)
    return `a module Python imports in place of its installed ${shadowed} (python -m ${shadowed})`;
  const repository = await repositoryAround(ctx.root, real);
  if (repository !== null) return `inside ${repository}, which git would open as a repository`;
  const hooks = await hooksPath(ctx.root);
  if (hooks !== null && isInside(hooks, real))
    return `in core.hooksPath (${hooks}), whose files git runs`;
  const mode = await stat(real).then(
    (info) => info.mode,
    () => 0,
  );
  if ((mode & 0o111) !== 0) return 'an executable file';
  if (RUN_BY_INSTALL.includes(name)) return 'a file an install runs as code, by its mere presence';
  return await installScriptChange(input, real);
}

/** Files an install runs by their presence, whatever they say: npm compiles a package that has a
 *  binding.gyp with node-gyp, which runs its commands (docs.npmjs.com/cli/using-npm/scripts,
 *  "default values"); pip builds a project through setup.py or the build backend pyproject.toml
 *  names, which may be the project's own code (PEP 517's backend-path), and setuptools imports
 *  the module a setup.cfg's `attr:` or `cmdclass` names (setuptools' "Configuring setuptools
 *  using setup.cfg files"). */
const RUN_BY_INSTALL = ['binding.gyp', 'setup.py', 'setup.cfg', 'pyproject.toml'];

/** Prevents a name spelled in another case (SETUP.PY, x/head, Package.json) from passing as
 *  harmless where the file system ignores case, as macOS's and Windows' do by default, and opens
 *  it for whoever asks for setup.py: a name as such a file system compares it, its canonical
 *  decomposition (the Kelvin sign is a K) in one case. */
const folded = (name: string): string => name.normalize('NFD').toUpperCase().toLowerCase();

/** Where programs load installed packages from by name, never the project's own source (which
 *  git shows; these it mostly ignores): Node's module resolution looks into every node_modules
 *  folder up the tree, Python's `site` into site-packages (dist-packages on Debian), whose .pth
 *  files it runs at every start. */
const INSTALLED_PACKAGES = ['node_modules', 'site-packages', 'dist-packages'];

/** The folder from `file`'s up to the root that is a Python virtual environment (PEP 405: its
 *  root holds pyvenv.cfg; its bin/ is sourced and run by name), relative to the root; or null. */
async function virtualEnvironmentAround(root: string, file: string): Promise<string | null> {
  for (let dir = path.dirname(file); isInside(root, dir); dir = path.dirname(dir)) {
    if (await exists(path.join(dir, 'pyvenv.cfg'))) return path.relative(root, dir) || '.';
    if (dir === root) break;
  }
  return null;
}

/** The module Python would import from `file` in place of one it has installed, or null. Prevents
 *  pip.py from running at `python -m pip` in the project, as pip's own guide has it run: `-m`,
 *  `-c` and the interactive prompt put the current folder first on the import path (Python's
 *  "The initialization of the sys.path module search path"), so a module at the root (X.py, or
 *  X/__init__.py) named as one Python finds elsewhere, in the standard library or installed, is
 *  imported instead. Whether it does is asked of the system's python3, isolated (-I: neither the
 *  current folder nor the environment); without one, no name is known to be taken. */
async function shadowedModule(root: string, file: string): Promise<string | null> {
  const [first = '', inside, ...deeper] = path.relative(root, file).split(path.sep);
  // Exact names: Python's finder matches a name's case even where the file system ignores it.
  const [module, folder] = [/^([A-Za-z_]\w*)\.py$/.exec(first)?.[1], /^[A-Za-z_]\w*$/.test(first)];
  const name =
    inside === undefined ? module : inside === '__init__.py' && folder ? first : undefined;
  const python = trustedProgram('python3');
  if (name === undefined || deeper.length > 0 || python === null) return null;
  const found = 'import importlib.util as u, sys; print(u.find_spec(sys.argv[1]) is not None)';
  return new Promise((resolve) => {
    const options = { cwd: '/', timeout: 5_000 };
    execFile(python, ['-I', '-c', found, name], options, (_error, out) =>
      resolve(out.trim() === 'True' ? name : null),
    );
  });
}

/** The scripts npm runs on its own during `npm install` and `npm ci`, from npm's "Life Cycle
 *  Operation Order" (docs.npmjs.com/cli/using-npm/scripts), in any package.json (a workspace's
 *  run too). The others run when the person names them (`npm test` runs "test"). */
const INSTALL_SCRIPTS = [
  'preinstall',
  'install',
  'postinstall',
  'prepublish',
  'preprepare',
  'prepare',
  'postprepare',
  'dependencies',
];

/** Why a write to package.json changes what `npm install` runs, or null. A write this cannot
 *  work out (another tool's, an old_str not there exactly once, a file not regular) counts as a
 *  change. */
async function installScriptChange(input: unknown, real: string): Promise<string | null> {
  if (folded(path.basename(real)) !== 'package.json') return null;
  // Never opened unless a regular file: a named pipe would block the read.
  const regular = await stat(real).then(
    (info) => info.isFile(),
    () => null,
  );
  const before = regular ? await readFile(real, 'utf8') : '';
  const after = regular === false ? null : editedText(input, before);
  const [was, will] = [installScripts(before), after === null ? null : installScripts(after)];
  const same = (name: string) => JSON.stringify(was[name]) === JSON.stringify(will?.[name]);
  const changed = INSTALL_SCRIPTS.filter((name) => will === null || !same(name));
  if (changed.length === 0) return null;
  return `npm's manifest, with a script npm install runs on its own (${changed.join(', ')})`;
}

const EDIT = z.object({ old_str: z.string(), new_str: z.string() });

/** The text edit_file's `input` makes of `before`; null if not its input, or if old_str is not
 *  there exactly once (edit_file then refuses, or its line-ending guard matches otherwise). */
function editedText(input: unknown, before: string): string | null {
  const edit = EDIT.safeParse(input);
  if (!edit.success) return null;
  const { old_str, new_str } = edit.data;
  if (old_str === '') return new_str;
  const pieces = before.split(old_str);
  return pieces.length === 2 ? pieces.join(new_str) : null;
}

const MANIFEST = z.object({ scripts: z.record(z.string(), z.unknown()) });

/** A package.json text's scripts as npm reads them: none if it does not parse. */
function installScripts(text: string): Record<string, unknown> {
  try {
    const manifest = MANIFEST.safeParse(JSON.parse(text.replace(/^\uFEFF/, '')));
    return manifest.success ? manifest.data.scripts : {};
  } catch {
    return {};
  }
}

/** The folder from `file`'s up to the root that git would take for a repository once `file` is
 *  written (a HEAD file with objects/ and refs/, or with a commondir file naming where they are,
 *  as a worktree's is), relative to the root; null if none. */
export async function repositoryAround(root: string, file: string): Promise<string | null> {
  for (let dir = path.dirname(file); isInside(root, dir); dir = path.dirname(dir)) {
    const has = async (name: string, folder: boolean) =>
      folded(path.relative(dir, file).split(path.sep)[0]!) === folded(name) ||
      (await stat(path.join(dir, name)).then(
        (info) => info.isDirectory() === folder,
        () => false,
      ));
    const shared = (await has('objects', true)) && (await has('refs', true));
    if ((await has('HEAD', false)) && (shared || (await has('commondir', false))))
      return path.relative(root, dir) || '.';
    if (dir === root) break;
  }
  return null;
}

/** The folder git's core.hooksPath names for this project, resolved; null if unset or no git. */
async function hooksPath(root: string): Promise<string | null> {
  const git = trustedProgram('git');
  if (git === null) return null;
  return new Promise((resolve) => {
    execFile(git, ['config', '--get', 'core.hooksPath'], { cwd: root, timeout: 5_000 }, (_e, out) =>
      resolve(out.trim() === '' ? null : path.resolve(root, out.trim())),
    );
  });
}
