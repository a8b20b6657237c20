// The three tools, safe_path, the output caps, and the harness's other hands on the disk: the
// command runner the gate uses, the AGENTS.md reader and the protected files' fingerprints. The
// model only ever sees a tool's name, description and JSON Schema; everything it can do to the disk
// goes through this file. This file never imports agent.ts: a tool knows nothing about the loop
// that calls it.

import type Anthropic from '@anthropic-ai/sdk';
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { constants, existsSync, lstatSync, readlinkSync, realpathSync, type Stats } from 'node:fs';
import {
  lstat,
  mkdir,
  mkdtemp,
  open,
  readdir,
  readFile,
  readlink,
  realpath,
  rename,
  rm,
  stat,
  type FileHandle,
} from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { createTwoFilesPatch } from 'diff';
import ignore, { type Ignore } from 'ignore';
import { Minimatch } from 'minimatch';
import { z } from 'zod';

/** What a tool may know about the run that calls it, and what it runs under. */
export interface ToolContext {
  /** The project root, already resolved through symlinks. */
  readonly root: string;
  /** Content hash of each file as the model last saw it (real path to sha256): read-before-edit. */
  readonly seen: Map<string, string>;
  /** Aborted when the run stops (Ctrl-C, time budget): a long-running tool should stop too. */
  readonly signal?: AbortSignal;
  /** Writes that could run later are asked every time (runsLaterReason), and `.git` and `.agent`
   *  are never read; default true. */
  readonly defaultProtection?: boolean;
  /** The gate's sandbox policy: true, contain or refuse; false, never; unset, where this can. */
  readonly sandbox?: boolean;
  /** How long a command may run: the verify command's timeout (default COMMAND_TIMEOUT_MS). */
  readonly verifyTimeoutMs?: number;
  /** Environment variables a contained command gets beside the allowlist, by name. */
  readonly passEnv?: readonly string[];
  /** Paths outside the system folders a contained command may read, read-only (--sandbox-read). */
  readonly sandboxRead?: readonly string[];
}

/** What a call does, as an editor names it for its icon (the Agent Client Protocol's kinds). */
export type ToolKind = 'read' | 'edit' | 'search' | 'execute' | 'other';

/** A tool is a schema the model is shown, a description of when (not) to use it, and a function;
 *  and, for whoever shows its calls, whether they change files, their kind, and how one reads in a
 *  line. */
export interface Tool {
  readonly name: string;
  readonly description: string;
  readonly input: z.ZodObject;
  /** Read-only tools change nothing: several may run at once, and none needs approval. */
  readonly readOnly: boolean;
  readonly kind: ToolKind;
  /** A call in a few words for printers (`read_file add.js (lines 1–40)`), which escape it. */
  describe(input: unknown): string;
  /** Runs the tool on input that already passed `input`; returns the text the model reads. */
  run(input: unknown, ctx: ToolContext): Promise<string>;
  /** What the call would change, for the person asked to approve it. */
  preview?(input: unknown, ctx: ToolContext): Promise<string>;
}

/** Ties a schema to its functions, so `run`, `preview` and `describe` see the input's real type. A
 *  call whose input the schema refuses, or a tool without `describe`, is described by
 *  describeArguments; the kind defaults to other. */
export function defineTool<S extends z.ZodObject>(spec: {
  name: string;
  description: string;
  input: S;
  readOnly: boolean;
  kind?: ToolKind;
  describe?: (input: z.infer<S>) => string;
  run: (input: z.infer<S>, ctx: ToolContext) => Promise<string>;
  preview?: (input: z.infer<S>, ctx: ToolContext) => Promise<string>;
}): Tool {
  const { preview, describe } = spec;
  return {
    ...spec,
    kind: spec.kind ?? 'other',
    describe: (input) => {
      const parsed = spec.input.safeParse(input);
      return parsed.success && describe
        ? describe(parsed.data)
        : describeArguments(spec.name, input);
    },
    run: (input, ctx) => spec.run(spec.input.parse(input), ctx),
    preview: preview && ((input, ctx) => preview(spec.input.parse(input), ctx)),
  };
}

/** A call in a few words: its tool's own description, or for a tool not among `tools` (one this
 *  program does not have), its name and plain arguments. It holds what the model sent: a printer
 *  escapes it. */
export function describeCall(
  tool: Tool | string,
  input: unknown,
  tools: readonly Tool[] = TOOLS,
): string {
  const found = typeof tool === 'string' ? tools.find((known) => known.name === tool) : tool;
  return found === undefined ? describeArguments(String(tool), input) : found.describe(input);
}

/** A call by its arguments, for a tool that says nothing of its own calls: its name, then a path as
 *  it is and any other argument as `key=value`, a long string cut and a nested value only counted:
 *  `grep src pattern=TODO`. */
export function describeArguments(name: string, input: unknown): string {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return name;
  const parts = Object.entries(input).map(([key, value]) =>
    key === 'path' && typeof value === 'string'
      ? shownPath(value)
      : `${shownPath(key)}=${shownValue(value)}`,
  );
  return [name, ...parts].join(' ');
}

/** An argument's value in a few characters: a string quoted where it could hide what it says. */
function shownValue(value: unknown): string {
  if (typeof value === 'string')
    return shownPath(value.length > 40 ? `${value.slice(0, 39)}…` : value);
  if (Array.isArray(value)) return `[${value.length} item${value.length === 1 ? '' : 's'}]`;
  if (typeof value === 'object' && value !== null) return '{…}';
  return String(value);
}

/** Characters a path is quoted for, since they could hide what it names: whitespace, quotes,
 *  backslashes, and control, format (bidi, zero-width) or unassigned characters. */
const HIDING = /[\s"\\\p{C}]/u;

/** Prevents a path from hiding what it names (a newline, a space, a right-to-left override): such a
 *  path is shown quoted, JSON-style, with every character that is not plainly visible escaped; any
 *  other path as it is. */
export function shownPath(name: string): string {
  if (name !== '' && !HIDING.test(name)) return name;
  const escaped = [...name].map(
    (c) => QUOTED_ESCAPES[c] ?? (c === ' ' || !/[\p{C}\p{Z}]/u.test(c) ? c : unicodeEscape(c)),
  );
  return `"${escaped.join('')}"`;
}

const QUOTED_ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};

/** A character as JSON escapes it: \u and four hex digits for each of its UTF-16 code units. */
const unicodeEscape = (c: string) =>
  [...Array(c.length).keys()]
    .map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`)
    .join('');

const TOOL_DEFINITIONS = new WeakMap<Tool, Anthropic.Tool>();

/** A tool as the model is shown it: name, description, and the JSON Schema of its input. Built once
 *  per tool and shared by every agent that has it: converting the schema was a fifth of
 *  `createAgent`'s time. */
export function toolDefinition(tool: Tool): Anthropic.Tool {
  let definition = TOOL_DEFINITIONS.get(tool);
  if (definition === undefined) {
    const { $schema: _ignored, ...schema } = z.toJSONSchema(tool.input, { io: 'input' });
    definition = {
      name: tool.name,
      description: tool.description,
      input_schema: { ...schema, type: 'object' },
    };
    TOOL_DEFINITIONS.set(tool, definition);
  }
  return definition;
}

/** What is wrong with a call's arguments, or null. The depth comes first: the echo below, the
 *  session file and the SDK all use JSON.stringify, which overflows the stack a few thousand levels
 *  down. */
export function schemaProblem(tool: Tool, input: unknown): string | null {
  const refused = `invalid arguments for ${tool.name}`;
  if (nestedDeeperThan(input, MAX_INPUT_DEPTH))
    return `${refused}: nested deeper than ${MAX_INPUT_DEPTH} levels`;
  if (typeof input === 'object' && input !== null && UNUSABLE in input)
    return `${refused}: ${input[UNUSABLE]}`;
  const parsed = strictInput(tool).safeParse(input);
  if (parsed.success) return null;
  return `${refused}: ${issuesText(parsed.error)}. You sent: ${JSON.stringify(input)}`;
}

const STRICT_INPUTS = new WeakMap<Tool, z.ZodObject>();

/** A tool's schema with unknown keys refused (a forker's plain z.object would drop one without a
 *  word), made once per tool: strict() makes a new schema, which zod compiles again on its first
 *  parse, a tenth of a millisecond for every call checked. */
function strictInput(tool: Tool): z.ZodObject {
  let strict = STRICT_INPUTS.get(tool);
  if (strict === undefined) {
    strict = tool.input.strict();
    STRICT_INPUTS.set(tool, strict);
  }
  return strict;
}

export const issuesText = (error: z.ZodError) =>
  error.issues.map((issue) => `${issue.path.join('.') || '(input)'}: ${issue.message}`).join('; ');

/** Tool arguments nest a few levels; past this many, a call is refused (see schemaProblem). */
export const MAX_INPUT_DEPTH = 64;

/** Whether objects and arrays in `value` nest more than `levels` deep; the walk stops there, so any
 *  depth is safe. */
export function nestedDeeperThan(value: unknown, levels: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  return levels === 0 || Object.values(value).some((child) => nestedDeeperThan(child, levels - 1));
}

/** The key under which an unusable input's note is stored (agent.ts's withResendableInputs). */
export const UNUSABLE = 'unusable_input';

/** A failure the model can act on: its message becomes an is_error tool_result. */
export class ToolError extends Error {}

// ---------------------------------------------------------------------------------------------
// safe_path: every file tool resolves its path through this, and nothing else.

/** Longer paths are refused before any file system work: each missing segment costs a lookup. */
const MAX_PATH_CHARS = 4096;

/** Prevents escapes from the project: `..`, absolute paths, NUL bytes and symlinks leading out. */
export async function safe_path(root: string, requested: string): Promise<string> {
  if (requested.includes('\0'))
    throw new ToolError(`path ${JSON.stringify(requested)} contains a NUL byte`);
  if (requested.length > MAX_PATH_CHARS)
    throw new ToolError(
      `path is ${requested.length} characters long; the limit is ${MAX_PATH_CHARS}`,
    );
  const outside = () =>
    new ToolError(
      `path ${JSON.stringify(requested)} is outside the project (${root}); use a path inside it`,
    );
  const lexical = path.resolve(root, requested);
  if (!isInside(root, lexical)) throw outside();
  // Symlinks are followed by the OS, so the real path decides. For a path that does not exist
  // yet, the deepest part that does exist is resolved and the rest appended.
  let existing = lexical;
  const missing: string[] = [];
  while (!(await exists(existing))) {
    missing.unshift(path.basename(existing));
    existing = path.dirname(existing);
  }
  let real: string;
  try {
    real = await realpath(existing);
  } catch (error) {
    throw unresolvable(requested, error);
  }
  const target = path.join(real, ...missing);
  if (!isInside(root, target)) throw outside();
  return target;
}

/** Names why a path cannot be followed, so a loop of links is not reported as a link to nowhere. */
function unresolvable(requested: string, error: unknown): ToolError {
  const { code } = error as NodeJS.ErrnoException;
  const why = code === 'ELOOP' ? 'a symlink loop' : 'a broken symlink';
  return new ToolError(`path ${JSON.stringify(requested)} goes through ${why}`);
}

function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  // "..notes" is a name inside the project; only ".." itself or "../…" leaves it.
  return relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

// ---------------------------------------------------------------------------------------------
// What could run later: a write another program may load or run without being asked. The classes
// come from how those programs find their files, not from a list of names: a hidden (dot) name
// (git's .git and .gitmodules, editors' .vscode and .idea, dev containers, direnv's .envrc, other
// agents' folders all hide so); a folder git would open as a repository (git's discovery: a HEAD
// with objects/ and refs/, whatever the folder is called); the folder core.hooksPath names; a file
// that is executable. Such a write is never covered by a blanket yes (see agent.ts's approval).

/** Not hidden, yet loaded when the folder is opened: VS Code's workspace files run their tasks,
 *  mise loads mise.toml on `cd`. From those tools' documentation; everything else hides. */
const OPENED_ON_LOAD = [/\.code-workspace$/, /^mise(\.[\w-]+)?\.toml$/];

/** Prevents a write that runs later, outside any sandbox, from passing under a blanket yes: why
 *  the write to `real` (as safe_path resolved `requested`) could, or null. */
export async function runsLaterReason(
  ctx: ToolContext,
  requested: string,
  real: string,
): Promise<string | null> {
  const lexical = path.relative(ctx.root, path.resolve(ctx.root, requested));
  const segments = [lexical, path.relative(ctx.root, real)].flatMap((p) => p.split(/[\\/]/));
  const hidden = segments.find((name) => name.startsWith('.') && name !== '.' && name !== '..');
  if (hidden !== undefined) return `a hidden name ("${hidden}"), which tools load on their own`;
  if (OPENED_ON_LOAD.some((pattern) => pattern.test(path.basename(real))))
    return 'a file its tool loads when the folder is opened';
  const repository = await repositoryAround(ctx.root, real);
  if (repository !== null) return `inside ${repository}, which git would open as a repository`;
  const hooks = await hooksPath(ctx.root);
  if (hooks !== null && (isInside(hooks, real) || hooks === real))
    return `in core.hooksPath (${hooks}), whose files git runs`;
  const mode = await stat(real).then(
    (info) => info.mode,
    () => 0,
  );
  return (mode & 0o111) !== 0 ? 'an executable file' : null;
}

/** The folder from `file`'s up to the root that git would take for a repository once `file` is
 *  written (a HEAD file, objects/ and refs/), relative to the root; null if none. */
async function repositoryAround(root: string, file: string): Promise<string | null> {
  for (let dir = path.dirname(file); isInside(root, dir) || dir === root; dir = path.dirname(dir)) {
    const has = async (name: string, folder: boolean) =>
      isInside(path.join(dir, name), file) ||
      file === path.join(dir, name) ||
      (await stat(path.join(dir, name)).then(
        (info) => info.isDirectory() === folder,
        () => false,
      ));
    if ((await has('HEAD', false)) && (await has('objects', true)) && (await has('refs', true)))
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

/** Never read or listed, even when asked for by name: git's data (a token in a remote URL) and the
 *  harness's own. */
const UNREADABLE_NAMES: readonly string[] = ['.git', '.agent'];

/** Prevents a tool that reads from showing the model `.git/config` (a token kept in a remote URL)
 *  or the harness's session files, by any spelling or link; `defaultProtection: false` lifts it.
 *  Returns the real path, as safe_path does. */
export async function readablePath(ctx: ToolContext, requested: string): Promise<string> {
  const real = await safe_path(ctx.root, requested);
  if (ctx.defaultProtection === false) return real;
  const relatives = [
    path.relative(ctx.root, path.resolve(ctx.root, requested)),
    path.relative(ctx.root, real),
  ];
  const segments = relatives.flatMap((relative) => relative.toLowerCase().split(/[\\/]/));
  const name = UNREADABLE_NAMES.find((unreadable) => segments.includes(unreadable));
  if (name !== undefined)
    throw new ToolError(
      `${JSON.stringify(requested)} is inside "${name}", which the tools never read`,
    );
  return real;
}

/** lstat, not stat: a dangling symlink exists and must be resolved (and refused), not skipped. */
export async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Output caps, shared by every tool: both are needed, since one minified line or ten thousand
// tiny lines each slip past a single cap.

export const MAX_LINES = 2000;
export const MAX_BYTES = 50 * 1024;
export const MAX_LIST_ENTRIES = 1000;
/** Files above this are read in windows and never hashed whole, so they cannot be edited here. */
export const MAX_EDITABLE_BYTES = 10 * 1024 * 1024;

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

// ---------------------------------------------------------------------------------------------
// list_files

/** Never listed: git's own data, installed packages, and the agent's session transcripts. */
const SKIPPED_DIRS = new Set(['.git', 'node_modules', '.agent']);

export const list_files = defineTool({
  name: 'list_files',
  description:
    'List the files and folders under a folder of the project, recursively, as paths relative ' +
    'to the project root (folders end with "/"; .git, node_modules and what .gitignore ignores ' +
    'are skipped). ' +
    'Use it to find files before reading them. Not for reading contents: use read_file for that.',
  input: z.strictObject({
    path: z
      .string()
      .optional()
      .describe('Folder to list, relative to the project root. Default: the root.'),
  }),
  readOnly: true,
  kind: 'read',
  describe: ({ path: given = '.' }) =>
    `list_files ${given === '.' ? '.' : shownPath(given.replace(/\/?$/, '/'))}`,
  async run({ path: requested = '.' }, ctx) {
    const start = await readablePath(ctx, requested);
    if (!(await stat(start)).isDirectory())
      throw new ToolError(`${requested} is a file, not a folder; use read_file`);
    const rules = await gitignoreAbove(ctx.root, start);
    const listing = await listTree(ctx.root, start, rules, MAX_LIST_ENTRIES);
    const { entries, more, ignored, unreadable } = listing;
    if (entries.length === 0) entries.push('(empty folder)');
    if (more > 0) entries.push(`[${more} more entries not shown; list a subfolder to see them]`);
    if (ignored > 0) entries.push(`[${ignored} entries ignored by .gitignore not shown]`);
    if (unreadable.length > 0) entries.push(`[could not read: ${unreadable.join(', ')}]`);
    return entries.join('\n');
  },
});

/** Every entry under `start`, sorted, relative to the root with "/" separators, folders ending in
 *  "/". Ignored files are included: fingerprints of protected files must see a file git ignores
 *  too. */
export async function walk(root: string, start = root): Promise<string[]> {
  return (await listTree(root, start, null, Infinity)).entries;
}

/** One .gitignore's rules, and the folder they are relative to: "" for the root, else e.g.
 *  "src/". */
interface IgnoreFile {
  readonly base: string;
  readonly rules: Ignore;
}

/** A folder read and sorted out: what it shows, what git ignores in it, and the rules for its
 *  subfolders. */
interface Folder {
  readonly dir: string;
  /** The folder's path relative to the root, ending in "/" ("" for the root). */
  readonly prefix: string;
  /** The .gitignore rules in force in it, its own included, outermost first; null to list ignored
   *  entries too. */
  readonly rules: readonly IgnoreFile[] | null;
  /** Its entries that git does not ignore, relative to the root; sorted while the listing can still
   *  show them. */
  readonly kept: string[];
  /** How many of its entries git ignores. */
  readonly ignored: number;
}

interface Listing {
  /** The first entries in sorted order, up to the cap. */
  readonly entries: string[];
  /** Entries past the cap: counted, not kept. */
  more: number;
  /** Entries left out because git ignores them; an ignored folder counts once, its contents not at
   *  all. */
  ignored: number;
  /** Subfolders listed but not looked into: locked (chmod 000), or gone while it was read. */
  readonly unreadable: string[];
}

/** The entries under `start` as `walk` gives them, less (and counting) what the .gitignore rules
 *  ignore, the first `cap` of them kept. Symlinks are listed but never followed: a link to a folder
 *  outside must not leak its tree. */
async function listTree(
  root: string,
  start: string,
  ignoreFiles: readonly IgnoreFile[] | null,
  cap: number,
): Promise<Listing> {
  const listing: Listing = { entries: [], more: 0, ignored: 0, unreadable: [] };
  const base = path.relative(root, start).split(path.sep).join('/');
  await listFolder(
    await readFolder(start, base === '' ? '' : `${base}/`, ignoreFiles, listing, cap),
    listing,
    cap,
  );
  return listing;
}

/** Reads one folder and tells its entries git ignores from the rest. */
async function readFolder(
  dir: string,
  prefix: string,
  inherited: readonly IgnoreFile[] | null,
  listing: Listing,
  cap: number,
): Promise<Folder> {
  const children = await readdir(dir, { withFileTypes: true });
  let rules = inherited;
  if (rules !== null && children.some((child) => child.name === '.gitignore')) {
    rules = [...rules, ...(await loadIgnoreFile(path.join(dir, '.gitignore'), prefix))];
  }
  // A fresh copy of the rules (compiled, case-sensitive as made) for this folder's entries alone:
  // each copy caches every path it is asked about, and lookups in one cache of a whole tree's paths
  // cost more than the matching itself.
  const local = rules?.map(({ base, rules }) => ({ base, rules: ignore().add(rules) }));
  const kept: string[] = [];
  let ignored = 0;
  for (const child of children) {
    const isFolder = child.isDirectory();
    if (isFolder && SKIPPED_DIRS.has(child.name)) continue;
    // Each folder carries its relative path down, so no entry needs a path.relative of its own.
    const relative = isFolder ? `${prefix}${child.name}/` : prefix + child.name;
    if (local !== undefined && gitIgnores(local, relative)) ignored++;
    else kept.push(relative);
  }
  // Once the listing is full, entries are only counted and their order no longer matters. It only
  // grows, so a folder read while it had room is sorted, perhaps needlessly; one read after it
  // filled never shows.
  if (listing.entries.length < cap) kept.sort();
  return { dir, prefix, rules, kept, ignored };
}

/** Prevents one subfolder that cannot be read (locked, or gone meanwhile) from failing a whole
 *  listing: it is read as empty, and named in `listing.unreadable`. */
function readSubfolder(
  dir: string,
  prefix: string,
  rules: readonly IgnoreFile[] | null,
  listing: Listing,
  cap: number,
): Promise<Folder> {
  return readFolder(dir, prefix, rules, listing, cap).catch(() => {
    listing.unreadable.push(prefix);
    return { dir, prefix, rules, kept: [], ignored: 0 };
  });
}

/** Adds one folder's entries to the listing in sorted order, each subfolder followed by its own
 *  entries. Sorting folder by folder is enough: "src/" and everything in it sort together, next to
 *  "src.ts" and "srcs", so no sort of the whole tree is needed. */
async function listFolder(folder: Folder, listing: Listing, cap: number): Promise<void> {
  const { dir, prefix, rules, kept } = folder;
  listing.ignored += folder.ignored;
  // All subfolders are read at once, each sorted out as soon as it arrives: the reads take a
  // fraction of the time of one by one, and the matching of those already read overlaps the reading
  // of the rest.
  const subfolders = await Promise.all(
    kept.map((relative) =>
      relative.endsWith('/')
        ? readSubfolder(
            path.join(dir, relative.slice(prefix.length, -1)),
            relative,
            rules,
            listing,
            cap,
          )
        : undefined,
    ),
  );
  for (const [i, relative] of kept.entries()) {
    if (listing.entries.length < cap) listing.entries.push(relative);
    else listing.more++;
    const subfolder = subfolders[i];
    if (subfolder !== undefined) await listFolder(subfolder, listing, cap);
  }
}

/** The rules in force at `start`: .git/info/exclude, then the .gitignore of each folder from the
 *  root down to start's parent (start's own is read by the walk). A folder asked for by name is
 *  listed even if it is ignored: the model wants to see it. */
async function gitignoreAbove(root: string, start: string): Promise<IgnoreFile[]> {
  const files = await loadIgnoreFile(path.join(root, '.git', 'info', 'exclude'), '');
  let base = '';
  for (const name of path.relative(root, start).split(path.sep)) {
    if (name === '') continue;
    files.push(...(await loadIgnoreFile(path.join(root, base, '.gitignore'), base)));
    base += `${name}/`;
  }
  return base !== '' && gitIgnores(files, base) ? [] : files;
}

/** A .gitignore (or .git/info/exclude) as rules for the folder `base`; none if it is missing or not
 *  a regular file (git does not follow a symlinked .gitignore either, and a named pipe would
 *  block). */
async function loadIgnoreFile(file: string, base: string): Promise<IgnoreFile[]> {
  const info = await lstat(file).catch(() => undefined);
  if (info?.isFile() !== true) return [];
  // Case-sensitive, as git is unless a repository sets core.ignorecase.
  return [{ base, rules: ignore({ ignorecase: false }).add(await readFile(file, 'utf8')) }];
}

/** Whether git ignores `relative` (from the root; folders end in "/"): as in git, the deepest
 *  .gitignore with a rule about it decides, and a negation ("!keep.log") there brings it back. */
function gitIgnores(files: readonly IgnoreFile[], relative: string): boolean {
  for (let i = files.length - 1; i >= 0; i--) {
    const { base, rules } = files[i]!;
    const { ignored, unignored } = rules.test(relative.slice(base.length));
    if (ignored || unignored) return ignored;
  }
  return false;
}

/** `value` (a message, say) with every string longer than `chars` cut to its head and tail and a
 *  note of how much was left out; thinking blocks stay whole, since the API refuses altered ones.
 *  The harness's cap on what it resends. */
export function capStrings<T>(value: T, chars: number): T {
  const cut = (item: unknown): unknown => {
    if (typeof item === 'string') return item.length <= chars ? item : keepEnds(item, chars);
    if (typeof item !== 'object' || item === null) return item;
    if ('type' in item && (item.type === 'thinking' || item.type === 'redacted_thinking'))
      return item;
    if (Array.isArray(item)) return item.map(cut);
    return Object.fromEntries(Object.entries(item).map(([key, inner]) => [key, cut(inner)]));
  };
  return cut(value) as T;
}

/** `text` cut to about `chars` characters: its head and tail, and a note of how much is left out
 *  between them. */
function keepEnds(text: string, chars: number): string {
  const head = Math.floor(chars * 0.75);
  const tail = Math.floor(chars * 0.25);
  const note = `[... ${text.length - head - tail} characters left out ...]`;
  return `${text.slice(0, head)}\n${note}\n${text.slice(-tail)}`;
}

/** Cuts any tool's text to the output caps, on whole lines, and says how much was left out. */
export function capOutput(text: string): string {
  const lines = text.split('\n');
  let kept = 0;
  for (let bytes = 0; kept < Math.min(lines.length, MAX_LINES); kept++) {
    bytes += Buffer.byteLength(lines[kept]!) + 1;
    if (bytes > MAX_BYTES + 1) break;
  }
  if (kept === lines.length) return text;
  const shown =
    kept > 0
      ? lines.slice(0, kept).join('\n')
      : Buffer.from(lines[0]!).subarray(0, MAX_BYTES).toString('utf8');
  return `${shown}\n[output cut: ${kept} of ${lines.length} lines shown]`;
}

// ---------------------------------------------------------------------------------------------
// read_file

export const read_file = defineTool({
  name: 'read_file',
  description:
    'Read a text file of the project, shown with line numbers. Long files come in windows of ' +
    `at most ${MAX_LINES} lines or ${MAX_BYTES / 1024} KiB; ` +
    'the output says which offset continues. ' +
    'Always read a file before editing it. Not for folders: use list_files.',
  input: z.strictObject({
    path: z.string().describe('File path relative to the project root, e.g. src/main.ts'),
    offset: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('First line to show, counting from 1. Default: 1.'),
    limit: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(`How many lines to show at most. Default and maximum: ${MAX_LINES}.`),
  }),
  readOnly: true,
  kind: 'read',
  describe({ path: requested, offset, limit }) {
    const file = shownPath(requested);
    if (offset === undefined && limit === undefined) return `read_file ${file}`;
    if (limit === undefined) return `read_file ${file} (from line ${offset})`;
    return `read_file ${file} (lines ${offset ?? 1}–${(offset ?? 1) + limit - 1})`;
  },
  async run({ path: requested, offset = 1, limit = MAX_LINES }, ctx) {
    const file = await readablePath(ctx, requested);
    const info = await statRegularFile(file, requested);
    const handle = await openReadable(ctx, file, requested);
    let whole: Buffer | undefined;
    let window: LineWindow | 'binary';
    try {
      // A file small enough to edit is read once, whole: the window, the line count and the hash
      // all come from the same bytes. Read separately, a change in between could pin a version the
      // model never saw.
      whole = info.size <= MAX_EDITABLE_BYTES ? await handle.readFile() : undefined;
      window = await (whole === undefined
        ? readLineWindow(handle, offset, Math.min(limit, MAX_LINES), ctx.signal)
        : lineWindow(chunksOf(whole), offset, Math.min(limit, MAX_LINES)));
    } finally {
      await handle.close();
    }
    // NUL bytes anywhere in the window (not only at the start of the file) mean binary data.
    if (window === 'binary' || window.lines.some((line) => line.includes('\0'))) {
      throw new ToolError(
        `${requested} is a binary file (${info.size} bytes); read_file shows text only`,
      );
    }
    // The hash is what makes a later edit safe: it pins the version the model has now seen.
    if (whole !== undefined) ctx.seen.set(file, sha256(whole));
    if (window.lines.length === 0) {
      return info.size === 0
        ? '(empty file)'
        : `[the file has fewer than ${offset} lines; use a smaller offset]`;
    }
    const numbered = window.lines.map((line, i) => `${String(offset + i).padStart(6)}\t${line}`);
    const last = offset + window.lines.length - 1;
    if (window.cutLine) {
      numbered.push(
        `[line ${last} is longer than ${MAX_BYTES / 1024} KiB and was cut; ` +
          'the rest of it cannot be shown]',
      );
    }
    const total = whole === undefined ? undefined : countLines(whole);
    if (!window.reachedEnd && (total === undefined || last < total)) {
      numbered.push(
        `[showing lines ${offset}-${last}${total === undefined ? '' : ` of ${total}`}; ` +
          `use offset=${last + 1} to continue]`,
      );
    }
    return numbered.join('\n');
  },
});

/** Prevents a read that never returns: a named pipe blocks until someone writes, a device may never
 *  end. So anything but a regular file (or a symlink to one) is refused before it is opened. */
async function statRegularFile(file: string, requested: string): Promise<Stats> {
  const info = await stat(file);
  if (info.isDirectory()) throw new ToolError(`${requested} is a folder; use list_files`);
  if (!info.isFile()) {
    throw new ToolError(
      `${requested} is not a regular file (a named pipe, socket or device); only files can be read`,
    );
  }
  return info;
}

/** For callers outside the tools (e.g. fingerprinting protected files): true for a regular file or
 *  a symlink to one, false for a folder, named pipe, socket, device or missing path, which are
 *  unsafe to read. */
export async function isRegularFile(file: string): Promise<boolean> {
  return stat(file).then(
    (info) => info.isFile(),
    () => false,
  );
}

interface LineWindow {
  lines: string[];
  /** The last line was longer than the byte cap and shows only its start. */
  cutLine: boolean;
  reachedEnd: boolean;
}

/** The window of a file too large to read whole, read chunk by chunk only as far as the window
 *  goes, so a 1 GB file is never loaded. */
async function readLineWindow(
  handle: FileHandle,
  offset: number,
  limit: number,
  signal: AbortSignal | undefined,
): Promise<LineWindow | 'binary'> {
  // Large chunks: each read waits for a thread of the pool, and with 64 KiB ones that wait was
  // most of the time.
  const chunk = Buffer.alloc(1024 * 1024);
  return await lineWindow(
    async () => {
      throwIfStopped(signal);
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      // Only the bytes just read: past them, the buffer still holds the previous chunk's.
      return chunk.subarray(0, bytesRead);
    },
    offset,
    limit,
  );
}

/** Prevents a read that a folder swapped for a link since safe_path looked leads outside the
 *  project (or into `.git`): the file is opened without blocking, and the file it opened is
 *  checked, by the path the kernel gives its descriptor (Linux's /proc/self/fd/N). Elsewhere the
 *  check before the open is all there is. */
export async function openReadable(
  ctx: ToolContext,
  file: string,
  requested: string,
): Promise<FileHandle> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  if (!FOLDERS_BY_FD) return handle;
  try {
    const reached = await readlink(`/proc/self/fd/${handle.fd}`);
    const swapped = 'changed into a link while it was opened, to what the tools do not read';
    await readablePath(ctx, reached).catch(() => {
      throw new ToolError(`${requested} ${swapped}; not read`);
    });
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Prevents a read that outlives its run: skipping to a far offset of a huge file can take minutes
 *  after Ctrl-C. */
function throwIfStopped(signal: AbortSignal | undefined): void {
  if (signal?.aborted)
    throw new ToolError('stopped: the run was interrupted while the file was being read');
}

/** One buffer as the only chunk of a file. */
function chunksOf(whole: Buffer): () => Promise<Buffer> {
  let given = false;
  return async () => {
    if (given) return Buffer.alloc(0);
    given = true;
    return whole;
  };
}

/** The lines from `offset` on, at most `limit` of them and MAX_BYTES in all, from a file's chunks
 *  as `next` gives them (an empty chunk at the end; a chunk may be reused once the next is asked
 *  for). 'binary': the file has a NUL byte in its first 8 KiB. */
async function lineWindow(
  next: () => Promise<Buffer>,
  offset: number,
  limit: number,
): Promise<LineWindow | 'binary'> {
  const lines: string[] = [];
  let partial: Buffer[] = [];
  let partialBytes = 0;
  let lineNumber = 1;
  let shownBytes = 0;
  for (let first = true; ; first = false) {
    const data = await next();
    if (first && data.subarray(0, 8192).includes(0)) return 'binary';
    if (data.length === 0) {
      // Only lines from the offset on are gathered, so a partial line here is one to show.
      if (partialBytes > 0) lines.push(Buffer.concat(partial).toString('utf8'));
      return { lines, cutLine: false, reachedEnd: true };
    }
    let start = 0;
    if (lineNumber < offset) {
      // Lines before the window are only counted.
      while (lineNumber < offset) {
        const newline = data.indexOf(10, start);
        if (newline === -1) break;
        lineNumber++;
        start = newline + 1;
      }
      // The rest of this chunk is the start of a line before the window.
      if (lineNumber < offset) continue;
    }
    while (start < data.length) {
      const newline = data.indexOf(10, start);
      const end = newline === -1 ? data.length : newline;
      partial.push(Buffer.from(data.subarray(start, end)));
      partialBytes += end - start;
      if (shownBytes + partialBytes > MAX_BYTES) {
        // Whole lines only; a single line bigger than the cap is shown cut, and says so.
        if (lines.length > 0) return { lines, cutLine: false, reachedEnd: false };
        lines.push(Buffer.concat(partial).subarray(0, MAX_BYTES).toString('utf8'));
        return { lines, cutLine: true, reachedEnd: false };
      }
      if (end === data.length) break;
      lines.push(Buffer.concat(partial).toString('utf8').replace(/\r$/, ''));
      shownBytes += partialBytes + 1;
      if (lines.length === limit) {
        const reachedEnd = end + 1 < data.length ? false : (await next()).length === 0;
        return { lines, cutLine: false, reachedEnd };
      }
      partial = [];
      partialBytes = 0;
      start = end + 1;
    }
  }
}

/** How many lines `text` has; a last line without a newline counts too. */
function countLines(text: Buffer): number {
  let count = 0;
  for (let i = text.indexOf(10); i !== -1; i = text.indexOf(10, i + 1)) count++;
  return text.length > 0 && text[text.length - 1] !== 10 ? count + 1 : count;
}

// ---------------------------------------------------------------------------------------------
// edit_file

export const edit_file = defineTool({
  name: 'edit_file',
  description:
    'Change a file by replacing one exact snippet. old_str must appear exactly once in the file: ' +
    'include enough surrounding lines to make it unique. Read the file first; ' +
    'an edit of a file changed since you read it is refused. ' +
    'To create a new file, give an empty old_str and the whole content as new_str. ' +
    'Not for reading: use read_file.',
  input: z.strictObject({
    path: z.string().describe('File path relative to the project root'),
    old_str: z
      .string()
      .describe(
        'The exact text to replace, copied from the file (without line numbers). ' +
          'Empty to create a new file.',
      ),
    new_str: z.string().describe('The text to put in its place'),
  }),
  readOnly: false,
  kind: 'edit',
  describe: ({ path: requested, old_str }) =>
    `edit_file ${shownPath(requested)}${old_str === '' ? ' (new)' : ''}`,
  async run(input, ctx) {
    const edit = await planEdit(input, ctx);
    await writeAtomically(ctx, edit.file, edit.after);
    ctx.seen.set(edit.file, sha256(edit.after));
    return edit.summary;
  },
  async preview(input, ctx) {
    const edit = await planEdit(input, ctx);
    return createTwoFilesPatch(
      `a/${input.path}`,
      `b/${input.path}`,
      edit.before ?? '',
      edit.after,
      undefined,
      undefined,
      { context: 3 },
    );
  },
});

interface PlannedEdit {
  file: string;
  /** null: the file does not exist yet. */
  before: string | null;
  after: string;
  summary: string;
}

/** Works an edit out without writing it, so an approval can show exactly what would change. */
async function planEdit(
  input: { path: string; old_str: string; new_str: string },
  ctx: ToolContext,
): Promise<PlannedEdit> {
  const { path: requested, old_str, new_str } = input;
  if (old_str === new_str)
    throw new ToolError('old_str and new_str are the same; nothing would change');
  const file = await safe_path(ctx.root, requested);
  // The path approved is the path changed: a link inside the project is not written through.
  if (file !== path.resolve(ctx.root, requested))
    throw new ToolError(
      `${requested} goes through a link to ${path.relative(ctx.root, file)}; edit that path itself`,
    );
  if (old_str === '') {
    if (await exists(file))
      throw new ToolError(
        `${requested} already exists; read it and give a non-empty old_str to change it`,
      );
    return {
      file,
      before: null,
      after: new_str,
      summary: `created ${requested} (${lineCount(new_str)} line(s))`,
    };
  }
  const before = await readEditable(file, requested, ctx);
  const matches = findSnippet(before, old_str);
  if (matches.length === 0) {
    throw new ToolError(
      `old_str was not found in ${requested}; read the file again. ` +
        `Closest lines:\n${closestLines(before, old_str)}`,
    );
  }
  if (matches.length > 1) {
    throw new ToolError(
      `old_str was found ${matches.length} times in ${requested}; ` +
        'include more context so it is unique',
    );
  }
  const { at, length } = matches[0]!;
  // Keep the file's line endings: the model sees lines without \r, so new lines get the file's
  // usual break.
  const replace = mostlyCrlf(before) ? toCrlf(new_str) : new_str;
  const after = before.slice(0, at) + replace + before.slice(at + length);
  const line = before.slice(0, at).split('\n').length;
  return {
    file,
    before,
    after,
    summary:
      `edited ${requested}: replaced ${lineCount(old_str)} line(s) at line ${line} ` +
      `with ${lineCount(new_str)} line(s)`,
  };
}

/** Prevents edits against a version the model never saw: unread, or changed on disk since it was
 *  read. */
async function readEditable(file: string, requested: string, ctx: ToolContext): Promise<string> {
  await refuseUneditable(file, requested);
  const seenHash = ctx.seen.get(file);
  if (seenHash === undefined)
    throw new ToolError(`read ${requested} with read_file before editing it`);
  const bytes = await readFile(file);
  const current = bytes.toString('utf8');
  // Decoding non-UTF-8 bytes replaces them with U+FFFD: writing that back would corrupt the file.
  if (!Buffer.from(current).equals(bytes))
    throw new ToolError(`${requested} is not UTF-8 text; edit_file would corrupt it`);
  if (sha256(bytes) !== seenHash) {
    ctx.seen.set(file, sha256(bytes));
    throw new ToolError(
      `${requested} changed on disk since you read it; nothing was edited. ` +
        `Its current content:\n${numberLines(current)}`,
    );
  }
  return current;
}

/** Prevents a file too large to hash (or not a file at all) from being loaded whole, and from a
 *  loop of "read it first" answers: read_file never records such a file as seen, so say plainly why
 *  it cannot be edited. */
async function refuseUneditable(file: string, requested: string): Promise<void> {
  const info = await statRegularFile(file, requested);
  if (info.size > MAX_EDITABLE_BYTES) {
    throw new ToolError(
      `${requested} is too large to edit with edit_file ` +
        `(${info.size} bytes; the limit is ${MAX_EDITABLE_BYTES})`,
    );
  }
}

function numberLines(text: string): string {
  return capOutput(
    text
      .split('\n')
      .map((line, i) => `${String(i + 1).padStart(6)}\t${line.replace(/\r$/, '')}`)
      .join('\n'),
  );
}

const toCrlf = (text: string) => text.replace(/\r?\n/g, '\r\n');
const lineCount = (text: string) => (text === '' ? 0 : text.split('\n').length);

/** Prevents "not found" in a file whose line breaks differ from line to line (a\r\nb\nc\r\n): the
 *  model sees lines without \r, so each line break of the snippet matches \n or \r\n, whichever the
 *  file has there. */
function findSnippet(text: string, snippet: string): { at: number; length: number }[] {
  const pattern = new RegExp(snippet.split(/\r?\n/).map(escapeRegExp).join('\\r?\\n'), 'g');
  const found: { at: number; length: number }[] = [];
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    found.push({ at: match.index, length: match[0].length });
    pattern.lastIndex = match.index + 1; // overlapping matches count too: "aa" is in "aaa" twice
  }
  return found;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** True when more of the file's lines end in \r\n than in a bare \n. */
function mostlyCrlf(text: string): boolean {
  const crlf = text.split('\r\n').length - 1;
  return crlf > text.split('\n').length - 1 - crlf;
}

/** The file's lines most like the first line of old_str, to show the model where it went wrong. */
function closestLines(text: string, oldStr: string): string {
  const wanted =
    oldStr
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? oldStr;
  const pairs = (s: string) =>
    new Set(Array.from({ length: Math.max(s.length - 1, 0) }, (_, i) => s.slice(i, i + 2)));
  const wantedPairs = pairs(wanted);
  const scored = text.split('\n').map((line, i) => {
    const linePairs = pairs(line.trim());
    let shared = 0;
    for (const pair of linePairs) if (wantedPairs.has(pair)) shared++;
    return {
      i,
      line: line.replace(/\r$/, ''),
      score: (2 * shared) / (wantedPairs.size + linePairs.size || 1),
    };
  });
  // sort is stable: of equally close lines, the first in the file come first.
  const best = scored
    .sort((a, b) => b.score - a.score)
    .slice(0, 3)
    .filter((s) => s.score > 0);
  if (best.length === 0) return '(no similar lines)';
  return best
    .sort((a, b) => a.i - b.i)
    .map((s) => `${String(s.i + 1).padStart(6)}\t${s.line}`)
    .join('\n');
}

/** A crash mid-write must never leave half a file: write a temp file beside it, then rename. */
async function writeAtomically(ctx: ToolContext, file: string, content: string): Promise<void> {
  const mode = await stat(file).then(
    (s) => s.mode,
    () => undefined,
  );
  const folder = await (FOLDERS_BY_FD ? openFolder : checkedFolder)(ctx, path.dirname(file));
  try {
    const name = path.basename(file);
    const temp = path.join(folder.path, `${name}.${randomBytes(6).toString('hex')}.tmp`);
    // Created with the file's mode, so a private file's new content is never readable by others,
    // even briefly; but the umask masks a new file's mode (0o775 would come out 0o755), so it is
    // set again explicitly.
    const handle = await open(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW,
      mode,
    );
    try {
      await handle.writeFile(content);
      if (mode !== undefined) await handle.chmod(mode);
    } finally {
      await handle.close();
    }
    await rename(temp, path.join(folder.path, name)).catch(async (error: unknown) => {
      await rm(temp, { force: true });
      throw error;
    });
    await folder.check(name);
  } finally {
    await folder.close();
  }
}

const NOFOLLOW = constants.O_NOFOLLOW;
/** Whether a path names an open folder (Linux's /proc/self/fd/N): what makes a write immune to
 *  swapped folders. */
const FOLDERS_BY_FD = existsSync('/proc/self/fd');

/** A folder a file is written in: a path that names it, a check of the written file, and a way to
 *  let it go. */
interface WriteFolder {
  readonly path: string;
  check(name: string): Promise<void>;
  close(): Promise<void>;
}

/** Prevents a write landing outside the project (or in a protected folder) when a folder on its
 *  path is swapped for a symlink meanwhile (two sessions on one project): the folders of `dir`, the
 *  real path safe_path gave, are opened one by one from the root, each without following a link,
 *  and the file is made and renamed in the last one through /proc/self/fd, which names that very
 *  folder wherever a link may point now. A link found on the way was put there since safe_path
 *  looked, and the write is refused. Missing folders are made on the way. */
async function openFolder(ctx: ToolContext, dir: string): Promise<WriteFolder> {
  let handle = await open(ctx.root, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    const names = path.relative(ctx.root, dir).split(path.sep);
    for (const name of names.filter((name) => name !== '')) {
      const next = `/proc/self/fd/${handle.fd}/${name}`;
      await mkdir(next).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
      const opened = await open(next, constants.O_RDONLY | constants.O_DIRECTORY | NOFOLLOW).catch(
        async (error: unknown) => {
          // A file in the way is a plain mistake; anything else (a link, or nothing by now) is the
          // swap.
          const file = await lstat(next).then(
            (info) => info.isFile(),
            () => false,
          );
          throw file ? error : swapped(ctx, dir);
        },
      );
      await handle.close();
      handle = opened;
    }
  } catch (error) {
    await handle.close();
    throw error;
  }
  const opened = handle;
  return { path: `/proc/self/fd/${opened.fd}`, check: async () => {}, close: () => opened.close() };
}

/** Elsewhere (macOS), where no path names an open folder: the folder's real path is checked before
 *  the write and the written file's after it, and a file that landed outside is removed again. This
 *  narrows the race without closing it: forced on Linux under the flipping of
 *  test/tools/routes-write-race.test.ts, 1 to 8 files in 400 landed outside (22 to 30 with no check
 *  at all). Exported so that a test on Linux can try it. */
export async function checkedFolder(ctx: ToolContext, dir: string): Promise<WriteFolder> {
  await mkdir(dir, { recursive: true }); // a new file may be in a new folder
  const where = async (file: string) => {
    const real = await realpath(file);
    return isInside(ctx.root, real) ? null : real;
  };
  if ((await where(dir)) !== null) throw swapped(ctx, dir);
  return {
    path: dir,
    async check(name) {
      const outside = await where(path.join(dir, name));
      if (outside === null) return;
      await rm(outside, { force: true });
      throw swapped(ctx, dir);
    },
    close: async () => {},
  };
}

const swapped = (ctx: ToolContext, dir: string) =>
  new ToolError(
    `${path.relative(ctx.root, dir) || '.'} changed into a link while it was written to; ` +
      'nothing was written',
  );

/** The tools in the order the model is shown them: what every view of a call (the terminal, the
 *  session page, an editor) reads a tool's kind, description and whether it changes files from. */
export const TOOLS: readonly Tool[] = [list_files, read_file, edit_file];

// -------------------------------------------------------------------------------------------------
// The command runner: the verify gate's hands. The check it runs imports code the model wrote, so
// no path check can cover what it does; the kernel can. Contained, a command's world is built from
// what it needs, not from a list of what to hide: the system's program and library folders and
// node's own install read-only, a few /etc entries, the project on a copy-on-write overlay (its
// writes are gone when it ends), a private /tmp, an empty HOME, a minimal /dev, its own /proc, no
// network. Nothing else of the machine exists for it. Bubblewrap on Linux; on macOS sandbox-exec,
// with the project read-only and HOME unreadable. Its environment is an allowlist.

export interface CommandRun {
  exitCode: number | null;
  timedOut: boolean;
  /** stdout and stderr interleaved, capped: the head and the tail are kept. */
  output: string;
}

const OUTPUT_HEAD = 8 * 1024;
const OUTPUT_TAIL = 8 * 1024;

/** Where and how long a command runs, and who hears its output as it comes. */
export interface CommandOptions {
  cwd: string;
  timeoutMs: number;
  signal: AbortSignal;
  /** Each piece of output as it arrives, stdout and stderr alike: a live tail for whoever
   *  watches. */
  onOutput?: (text: string) => void;
  /** Run it in the OS sandbox; throws if this machine has none (ask sandboxProblem first). */
  sandbox?: boolean;
  /** Environment variables the contained command gets beside CONTAINED_ENV, by name (e.g.
   *  "NODE_OPTIONS"). */
  passEnv?: readonly string[];
  /** Paths outside the system folders a contained command may read (--sandbox-read). */
  sandboxRead?: readonly string[];
}

/** A command's time limit unless the run sets one (the verify command's `verifyTimeoutMs`). */
export const COMMAND_TIMEOUT_MS = 120_000;

/** Prevents code the model wrote from running unconfined when the sandbox was asked for and this
 *  machine has none: under policy true a command is contained, or not run (the string says what to
 *  install); under false it is not contained; unset, it is wherever this machine can. The gate's
 *  rule, and any command-running tool's. */
export async function sandboxChoice(policy: boolean | undefined): Promise<boolean | string> {
  const problem = await sandboxProblem();
  if (problem !== null && policy === true) return problem;
  return policy ?? problem === null;
}

/** How a command-running tool runs its command the way the gate runs the verify command: in the
 *  sandbox the run's policy chooses, with its time limit, environment and readable paths, stopped
 *  with the run. A ToolError where the policy needs a sandbox this machine does not have. */
export async function commandOptions(ctx: ToolContext): Promise<CommandOptions> {
  const sandbox = await sandboxChoice(ctx.sandbox);
  if (typeof sandbox === 'string') throw new ToolError(sandbox);
  return {
    cwd: ctx.root,
    timeoutMs: ctx.verifyTimeoutMs ?? COMMAND_TIMEOUT_MS,
    signal: ctx.signal ?? new AbortController().signal,
    sandbox,
    passEnv: ctx.passEnv ?? [],
    sandboxRead: ctx.sandboxRead ?? [],
  };
}

/** Runs a shell command in the project with a timeout; keeps the start and the end of its
 *  output. */
export async function runCommand(command: string, options: CommandOptions): Promise<CommandRun> {
  if (!options.sandbox) return await runProcess(command, options);
  const problem = await sandboxProblem();
  if (problem !== null) throw new Error(problem);
  const root = await realpath(options.cwd);
  const planted = SANDBOX_PROGRAMS.map(sandboxProgram).find((file) => isInside(root, file ?? '/'));
  if (planted) throw new Error(`the sandbox's own ${planted} is inside the project; not run`);
  const where = { root, passEnv: options.passEnv, read: options.sandboxRead ?? [] };
  return await runProcess(command, options, where);
}

/** What a contained command is given of the machine beside the system folders. */
export interface Contained {
  /** The project: seen through a copy-on-write overlay (Linux) or read-only (macOS). */
  readonly root: string;
  /** Names passed on beside CONTAINED_ENV; none unless given. */
  readonly passEnv?: readonly string[];
  /** More paths it may read (--sandbox-read). */
  readonly read: readonly string[];
}

/** Runs `command` through a shell, or with `where` given, contained there. */
function runProcess(
  command: string,
  { cwd, timeoutMs, signal, onOutput }: CommandOptions,
  where?: Contained,
) {
  return new Promise<CommandRun>((resolve) => {
    const [file = command, ...args] = where === undefined ? [] : containedArgs(command, where);
    const env = where === undefined ? process.env : containedEnv(where);
    const child = spawn(file, args, {
      cwd,
      env,
      shell: where === undefined,
      detached: true,
      stdio: STDIO,
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
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    // The whole process group goes, so a test runner's children cannot outlive the timeout. In the
    // sandbox the group is bubblewrap's: it takes its own processes with it (--die-with-parent,
    // --unshare-pid).
    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
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
      resolve({ exitCode, timedOut, output: head + cut + tail || '(no output)' });
    };
    child.on('error', (error) => {
      collect(Buffer.from(error.message));
      done(null);
    });
    child.on('close', (code) => done(code));
  });
}

const STDIO: ['ignore', 'pipe', 'pipe'] = ['ignore', 'pipe', 'pipe'];

/** Prevents a program planted in the project, or on a PATH entry the project controls, from being
 *  started in place of the sandbox's own tools: each is looked up on PATH's absolute entries only,
 *  never one inside `cwd` (the folder the harness was started in, maybe the project), and then
 *  started by the absolute path found. */
export function trustedProgram(
  name: string,
  searchPath = process.env.PATH ?? '',
  cwd = process.cwd(),
): string | null {
  const folders = searchPath.split(path.delimiter).filter((folder) => path.isAbsolute(folder));
  const trusted = folders.filter((folder) => !isInside(cwd, folder) && folder !== cwd);
  const found = trusted.map((folder) => path.join(folder, name)).find((file) => existsSync(file));
  return found ?? null;
}

/** The sandbox's tools, found once: where they are when the harness starts is where they stay. */
let sandboxPrograms: Map<string, string | null> | undefined;
const sandboxProgram = (name: string) => {
  sandboxPrograms ??= new Map(SANDBOX_PROGRAMS.map((tool) => [tool, trustedProgram(tool)]));
  return sandboxPrograms.get(name) ?? null;
};

/** The system's program and library folders, read-only; on merged-/usr systems most are links. */
const SYSTEM_FOLDERS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** The /etc entries programs read to start and to name users: the dynamic linker's cache, users
 *  and groups, name service, time zone, Debian's alternatives (links such as /usr/bin/awk go
 *  there), and the certificates. No credentials live in these. */
const ETC_ENTRIES = [
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'passwd',
  'group',
  'nsswitch.conf',
  'hosts',
  'localtime',
  'alternatives',
  'ssl',
  'ca-certificates',
];

/** Where the overlay's changes go: in the private /tmp, so they vanish with the sandbox. */
const SCRATCH = '/tmp/.sandbox';
/** Its home: an empty folder in the private /tmp. */
const SANDBOX_HOME = '/tmp/home';

/** How a path is given to bubblewrap: a link re-made as a link, a folder or file bound read-only;
 *  nothing for a path this machine does not have. */
function readOnlyBinding(file: string): string[] {
  try {
    const info = lstatSync(file);
    if (info.isSymbolicLink()) return ['--symlink', readlinkSync(file), file];
    return ['--ro-bind', file, file];
  } catch {
    return [];
  }
}

/** Node's own install (its prefix), when it is not in the system folders: a check runs node. */
function nodeInstall(): string[] {
  const prefix = path.dirname(path.dirname(realpathSync(process.execPath)));
  return SYSTEM_FOLDERS.some((folder) => isInside(folder, prefix) || folder === prefix)
    ? []
    : [prefix];
}

/** The command line that runs `command` contained as `where` says. */
function containedArgs(command: string, where: Contained): string[] {
  if (process.platform === 'darwin') return seatbeltArgs(command, where);
  const { root, read } = where;
  const lower = `${SCRATCH}/lower`;
  const [bwrap, mount, setpriv, unshare] = SANDBOX_PROGRAMS.map(sandboxProgram);
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  // Inside, as root of its own namespace: mount the overlay, then drop every capability (root) or
  // become the person again (anyone else) before the command runs.
  const drop =
    uid === 0
      ? [setpriv, '--bounding-set=-all', '--inh-caps=-all', '--ambient-caps=-all', '--']
      : [unshare, '--user', `--map-user=${uid}`, `--map-group=${gid}`];
  const overlay = `lowerdir=${lower},upperdir=${SCRATCH}/upper,workdir=${SCRATCH}/work,userxattr`;
  const mounted = `${mount} -n -t overlay overlay -o ${overlay} "$1"`;
  const script = `${mounted} && cd "$1" && shift && exec "$@"`;
  return [
    bwrap!,
    ...['--tmpfs', '/'], // nothing of the machine but what follows
    ...SYSTEM_FOLDERS.flatMap(readOnlyBinding),
    ...ETC_ENTRIES.flatMap((entry) => readOnlyBinding(`/etc/${entry}`)),
    ...[...nodeInstall(), ...read].flatMap((file) => ['--ro-bind', file, file]),
    ...['--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'],
    ...['--dir', `${SCRATCH}/upper`, '--dir', `${SCRATCH}/work`, '--dir', SANDBOX_HOME],
    ...['--ro-bind', root, lower, '--dir', root],
    // Its own users, processes and network (loopback only); it dies with us, with no terminal.
    ...['--unshare-user', '--uid', '0', '--gid', '0', '--cap-add', 'ALL'],
    ...['--unshare-pid', '--unshare-net', '--die-with-parent', '--new-session'],
    ...['--', '/bin/sh', '-c', script, 'sh', root],
    ...drop,
    ...['/bin/sh', '-c', command],
  ].filter((arg): arg is string => arg !== undefined);
}

const SANDBOX_PROGRAMS = ['bwrap', 'mount', 'setpriv', 'unshare'];

/** sandbox-exec's command line (macOS): everything readable but HOME (the project and the extra
 *  paths excepted), writes only to a private temporary folder. Exported so that a test on any
 *  machine can read it. */
export function seatbeltArgs(command: string, { root, read }: Contained): string[] {
  const readable = [root, ...read];
  const params = readable.flatMap((p, i) => ['-D', `READ${i}=${p}`]);
  const rules = readable.map((_, i) => `\n(allow file-read* (subpath (param "READ${i}")))`);
  const profile = SEATBELT_PROFILE + rules.join('');
  const home = ['-D', `HOME=${homedir()}`];
  return ['/usr/bin/sandbox-exec', '-p', profile, ...home, ...params, '/bin/sh', '-c', command];
}

/** macOS's sandbox policy: the last rule that matches wins. The paths come in as -D parameters. */
const SEATBELT_PROFILE = `(version 1) (allow default) (deny network*) (deny lsopen)
(deny appleevent-send)
(deny file-write*)
(allow file-write* (subpath "/private/tmp") (subpath "/private/var/folders") (literal "/dev/null")
  (regex #"^/dev/(tty|fd/)"))
(deny file-read* (subpath (param "HOME")))`;

/** All of the harness's environment the contained command gets, with LC_* and what the person
 *  passes by name. */
const CONTAINED_ENV = new Set(['PATH', 'LANG', 'TERM', 'TZ', 'USER']);

/** Prevents the check from reading the person's tokens from its environment (GITHUB_TOKEN,
 *  AWS_SECRET_ACCESS_KEY, the harness's own ANTHROPIC_API_KEY, SSH_AUTH_SOCK): it gets an
 *  allowlist, an empty HOME and its own temporary folder. Bubblewrap is started with it, so
 *  /proc/1/environ inside holds only this too. */
function containedEnv({ passEnv }: Contained): NodeJS.ProcessEnv {
  const passed = (name: string) =>
    CONTAINED_ENV.has(name) || name.startsWith('LC_') || passEnv?.includes(name);
  const inherited = Object.entries(process.env).filter(([name]) => passed(name));
  const darwin = process.platform === 'darwin';
  const home = darwin ? tmpdir() : SANDBOX_HOME;
  const tmp = darwin ? tmpdir() : '/tmp';
  return { ...Object.fromEntries(inherited), HOME: home, TMPDIR: tmp, TMP: tmp, TEMP: tmp };
}

/** Prevents a root that holds what the sandbox hides or keeps read-only: the project is bound after
 *  the private /tmp, so the host's /tmp (and its sockets) would come back, and $HOME's dotfiles
 *  would be the project's, for the check to change. The root, resolved through links; throws one
 *  line saying why it is refused. */
export async function sandboxableRoot(given: string): Promise<string> {
  const root = await realpath(given);
  const holds = (folder: string) => isInside(root, folder);
  const real = (folder: string) => realpath(folder).catch(() => folder);
  const [tmp, systemTmp, home] = await Promise.all([real('/tmp'), real(tmpdir()), real(homedir())]);
  const refused = `the root ${root} is refused:`;
  if (root === path.parse(root).root)
    throw new Error(`${refused} it is the whole file system; give the project's folder`);
  const heldTmp = [tmp, systemTmp].find(holds);
  if (heldTmp)
    throw new Error(`${refused} it holds ${heldTmp}, the temporary folder the sandbox replaces`);
  if (holds(home))
    throw new Error(
      `${refused} it holds your home ${home}, whose dotfiles the check must not change`,
    );
  return root;
}

let sandboxCheck: Promise<string | null> | undefined;

/** Why this machine cannot contain a command, and what to install; null when it can. Found out
 *  once, by a trial run of the real policy: the tools must be there, and work (a container may
 *  forbid the namespaces it needs), and the trial's write must stay inside it. */
export function sandboxProblem(): Promise<string | null> {
  return (sandboxCheck ??= (async () => {
    if (process.platform !== 'linux' && process.platform !== 'darwin')
      return `no OS sandbox on ${process.platform}`;
    if (process.platform === 'linux') {
      const missing = SANDBOX_PROGRAMS.filter((name) => sandboxProgram(name) === null);
      if (missing.includes('bwrap'))
        return 'no OS sandbox: bubblewrap is not installed (apt-get install bubblewrap)';
      if (missing.length > 0) return `no OS sandbox: ${missing.join(', ')} not found (util-linux)`;
    }
    const base = await realpath(await mkdtemp(path.join(tmpdir(), 'sandbox-check-')));
    try {
      const options = { cwd: base, timeoutMs: 10_000, signal: new AbortController().signal };
      const where = { root: base, read: [] };
      const trial = await runProcess('touch probe && test -f probe', options, where);
      const kept = process.platform === 'linux' && existsSync(path.join(base, 'probe'));
      if (trial.exitCode === 0 && !kept) return null;
      if (process.platform === 'darwin')
        return `sandbox-exec does not work here (${trial.output.trim()})`;
      const why = kept ? 'its writes reached the project' : trial.output.split('\n')[0];
      const needs = 'it needs user namespaces and overlayfs';
      return `no OS sandbox: bubblewrap cannot run here (${why}); ${needs}`;
    } finally {
      await rm(base, { recursive: true });
    }
  })());
}

// -------------------------------------------------------------------------------------------------
// AGENTS.md files: what the project tells the model about itself, read into the system prompt
// (never instructions for the harness).

/** An AGENTS.md file as the system prompt quotes it; or, with `skipped`, left out of it, and why
 *  (the start-up says so, a line a file). */
export interface ContextFile {
  path: string;
  text: string;
  skipped?: string;
}

export const CONTEXT_FILES_MAX_BYTES = 32 * 1024;

/** AGENTS.md from the root up to the enclosing git repository's top, farthest first, so the
 *  nearest (most specific) file has the last word; capped, keeping the nearest. */
export async function loadContextFiles(root: string): Promise<ContextFile[]> {
  const folders = [root];
  for (let dir = root; !(await exists(path.join(dir, '.git')));) {
    const parent = path.dirname(dir);
    if (parent === dir) {
      folders.splice(1); // no git repository above: only the root's own file counts
      break;
    }
    folders.push((dir = parent));
  }
  const files: ContextFile[] = [];
  let room = CONTEXT_FILES_MAX_BYTES;
  for (const dir of folders) {
    const file = path.join(dir, 'AGENTS.md');
    if (!(await exists(file))) continue;
    if (room <= 0) {
      const skipped = `nearer AGENTS.md files fill the ${CONTEXT_FILES_MAX_BYTES / 1024} KiB cap`;
      files.unshift({ path: file, text: '', skipped });
      continue;
    }
    const read = await readContextFile(dir, file, room);
    if (typeof read === 'string') {
      files.unshift({ path: file, text: '', skipped: read });
      continue;
    }
    const cap = `${CONTEXT_FILES_MAX_BYTES / 1024} KiB`;
    const cutNote = `\n[cut: AGENTS.md files are capped at ${cap} in all]`;
    const text = read.bytes.toString('utf8');
    files.unshift({ path: file, text: read.size <= room ? text : `${text}${cutNote}` });
    room -= read.size;
  }
  return files;
}

/** Prevents AGENTS.md from putting a file outside its folder in the system prompt (a symlink out)
 *  or hanging the start (a named pipe blocks whoever opens it): it is read only if its real path is
 *  inside the folder it stands for, opened without blocking, and a regular file; at most `room`
 *  bytes of it. A string says why it was skipped. */
async function readContextFile(
  dir: string,
  file: string,
  room: number,
): Promise<{ bytes: Buffer; size: number } | string> {
  const real = await realpath(file).catch(() => null);
  if (real === null) return 'a broken symlink';
  if (!isInside(dir, real)) return `a link out of its folder, to ${real}`;
  const handle = await open(real, constants.O_RDONLY | constants.O_NONBLOCK | NOFOLLOW).catch(
    (error: NodeJS.ErrnoException) => `unreadable (${error.code})`,
  );
  if (typeof handle === 'string') return handle;
  try {
    const info = await handle.stat();
    if (!info.isFile()) return 'not a regular file (a named pipe, socket, device or folder)';
    const bytes = Buffer.alloc(Math.min(info.size, room));
    const { bytesRead } = await handle.read(bytes, 0, bytes.length, 0);
    return { bytes: bytes.subarray(0, bytesRead), size: info.size };
  } finally {
    await handle.close();
  }
}

// -------------------------------------------------------------------------------------------------
// Fingerprints of the protected files (--protect): the gate compares them with the session's start,
// so a change made by any means, the verify command's included, is seen.

/** Fingerprints every protected file, so the gate can tell whether one changed by any means. */
export async function hashProtected(
  root: string,
  globs: readonly string[],
): Promise<Map<string, string>> {
  const hashes = new Map<string, string>();
  if (globs.length === 0) return hashes;
  const protectedBy = globMatcher(globs);
  const files = (await filesGlobsReach(root, globs)).filter(
    (file) => protectedBy(file) !== undefined,
  );
  for (const file of files.sort()) hashes.set(file, await fingerprint(root, path.join(root, file)));
  return hashes;
}

/** Every file of the project ("/"-separated, links not followed), git's ignored ones included, and
 *  inside node_modules, .git and .agent only as far as a glob that names the folder can match:
 *  "node_modules/pkg/**" walks pkg alone, and "test/**" never enters node_modules. A folder it
 *  cannot read counts as empty, so a protected file the check locked away is "deleted". */
async function filesGlobsReach(root: string, globs: readonly string[]): Promise<string[]> {
  const naming = [...SKIPPED_DIRS].flatMap((name) =>
    globs
      .filter((glob) => glob.split('/').includes(name))
      .map((glob) => new Minimatch(glob, { dot: true }))
      .filter((pattern) => !pattern.negate),
  );
  const files: string[] = [];
  const visit = async (dir: string, prefix: string, guarded: boolean): Promise<void> => {
    // Prevents the gate from throwing (a rejected run) on a folder locked or gone meanwhile.
    const children = await readdir(dir, { withFileTypes: true }).catch(() => []);
    await Promise.all(
      children.map(async (child) => {
        const relative = prefix + child.name;
        if (!child.isDirectory()) return void files.push(relative);
        const inGuarded = guarded || SKIPPED_DIRS.has(child.name);
        if (!inGuarded || naming.some((pattern) => pattern.match(relative, true)))
          await visit(path.join(dir, child.name), `${relative}/`, inGuarded);
      }),
    );
  };
  await visit(root, '', false);
  return files;
}

/** What changed in the protected files since `before` (hashProtected's fingerprints), by any
 *  means. */
export async function protectedChanges(
  root: string,
  globs: readonly string[],
  before: Map<string, string>,
) {
  return changedFiles(before, await hashProtected(root, globs));
}

/** What changed between two fingerprints: `changedFiles({a: 1, b: 2}, {a: 1, b: 3, c: 4})` is
 *  `["b (changed)", "c (added)"]`. */
export function changedFiles(before: Map<string, string>, after: Map<string, string>): string[] {
  const changed = [...before]
    .filter(([file, hash]) => after.get(file) !== hash)
    .map(([file]) => `${file} (${after.has(file) ? 'changed' : 'deleted'})`);
  return [
    ...changed,
    ...[...after.keys()].filter((file) => !before.has(file)).map((file) => `${file} (added)`),
  ];
}

const compiledGlobs = new WeakMap<readonly string[], (file: string) => string | undefined>();

/** The --protect globs, compiled once per list (so once per session) rather than once per file: the
 *  gate tests every file of the project. Returns the first glob a "/"-separated path matches;
 *  dotfiles match too (`.env`). A regular expression turns most paths away at once; minimatch's own
 *  match() confirms the few it lets through, so the answer is exactly minimatch's (the expression
 *  is looser: "test/**" also takes a file named "test"). */
export function globMatcher(globs: readonly string[]): (file: string) => string | undefined {
  let matcher = compiledGlobs.get(globs);
  if (matcher === undefined) {
    const compiled = globs.map((glob) => {
      const pattern = new Minimatch(glob, { dot: true });
      // false for a comment or an empty glob; a negated expression for a negated one
      const loose = pattern.makeRe();
      return {
        glob,
        matches: (file: string) => (loose === false || loose.test(file)) && pattern.match(file),
      };
    });
    matcher = (file) => compiled.find(({ matches }) => matches(file))?.glob;
    compiledGlobs.set(globs, matcher);
  }
  return matcher;
}

/** Prevents a hang at startup or at the gate, and a fingerprint that reads outside the project:
 *  a link is followed only to a file inside the root (one out is fingerprinted by where it points,
 *  never opened), and only a regular file is opened, without blocking and without following a link
 *  swapped in meanwhile; anything else is fingerprinted by its mode, so a named pipe is never
 *  opened. A broken link or an unreadable file still gets a fingerprint: the gate must not
 *  crash. */
async function fingerprint(root: string, file: string): Promise<string> {
  const unreadable = (error: NodeJS.ErrnoException) => `unreadable: ${error.code}`;
  const real = await realpath(file).catch(unreadable);
  if (real.startsWith('unreadable')) return real;
  if (!isInside(root, real)) return `a link out of the project, to ${await readlink(file)}`;
  const stats = await lstat(real).catch(unreadable);
  if (typeof stats === 'string') return stats;
  if (!stats.isFile()) return `not a regular file (mode ${stats.mode.toString(8)})`;
  const flags = constants.O_RDONLY | constants.O_NONBLOCK | NOFOLLOW;
  const handle = await open(real, flags).catch(unreadable);
  if (typeof handle === 'string') return handle;
  try {
    const opened = await handle.stat();
    if (!opened.isFile()) return `not a regular file (mode ${opened.mode.toString(8)})`;
    const bytes = await handle.readFile().catch(unreadable);
    return typeof bytes === 'string' ? bytes : createHash('sha256').update(bytes).digest('hex');
  } finally {
    await handle.close();
  }
}
