// tools.ts: the tool contract, safe_path, the output caps, the three tools, and the two seams
// through which the tools (and the gate) touch the machine: the disk and the command runner. Their
// plain versions are here, for reading; the guarded ones, which createAgent uses unless told
// otherwise, are in hardening/, a file per threat. The model only ever sees a tool's name,
// description and JSON Schema. This file never imports agent.ts: a tool knows nothing of the loop.

import type Anthropic from '@anthropic-ai/sdk';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, realpath, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createTwoFilesPatch } from 'diff';
import { minimatch } from 'minimatch';
import { z } from 'zod';
import { readAgentsFile } from './hardening/context-files.ts';
import { describeArguments, shownPath } from './hardening/hidden-characters.ts';
import { findSnippet, mostlyCrlf, toCrlf } from './hardening/line-endings.ts';
import { malformedInput } from './hardening/malformed-input.ts';

export { describeArguments, shownPath };

// ---------------------------------------------------------------------------------------------
// The tool contract.

/** What a tool may know about the run that calls it, and what it runs under. */
export interface ToolContext {
  /** The project root, already resolved through symlinks. */
  readonly root: string;
  /** Content hash of each file as the model last saw it (real path to sha256): read-before-edit. */
  readonly seen: Map<string, string>;
  /** How the tools read, list and write files: plainDisk here, the guarded one by default. */
  readonly disk: Disk;
  /** How a command runs: runCommand here, the sandboxed one by default. */
  readonly runner: Runner;
  /** Aborted when the run stops (Ctrl-C, time budget): a long-running tool should stop too. */
  readonly signal?: AbortSignal;
  /** The id of the tool_use being run, so a disk can tie a write to its call (a session file's
   *  record of an edit); unset outside a call. */
  readonly callId?: string;
  /** Globs of files the model may not change (--protect): a command-running tool honours them. */
  readonly protect?: readonly string[];
  /** Writes that could run later are asked every time, and repository data is never read;
   *  default true. */
  readonly defaultProtection?: boolean;
  /** The sandbox policy: true, contain or refuse; false, never; unset, where this machine can. */
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
    describe(input) {
      const parsed = spec.input.safeParse(input);
      if (parsed.success && describe) return describe(parsed.data);
      return describeArguments(spec.name, input);
    },
    run: async (input, ctx) => spec.run(spec.input.parse(input), ctx),
    preview: preview && (async (input, ctx) => preview(spec.input.parse(input), ctx)),
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

/** `make` made into a function that makes its result once per tool, kept while the tool lives. */
function oncePerTool<T>(make: (tool: Tool) => T): (tool: Tool) => T {
  const made = new WeakMap<Tool, T>();
  return (tool) => {
    if (!made.has(tool)) made.set(tool, make(tool));
    return made.get(tool)!;
  };
}

/** A tool as the model is shown it: name, description, and the JSON Schema of its input. Built once
 *  per tool and shared by every agent that has it: converting the schema was a fifth of
 *  `createAgent`'s time. */
export const toolDefinition = oncePerTool((tool): Anthropic.Tool => {
  const { $schema: _ignored, ...schema } = z.toJSONSchema(tool.input, { io: 'input' });
  const { name, description } = tool;
  return { name, description, input_schema: { ...schema, type: 'object' } };
});

/** What is wrong with a call's arguments, or null: the schema with unknown keys refused (a plain
 *  z.object would drop one without a word), and nothing coerced ("5" is not 5). An input too
 *  malformed to echo is refused first (hardening/malformed-input.ts). */
export function schemaProblem(tool: Tool, input: unknown): string | null {
  const refused = `invalid arguments for ${tool.name}`;
  const malformed = malformedInput(input);
  if (malformed !== null) return `${refused}: ${malformed}`;
  const parsed = strictInput(tool).safeParse(input);
  if (parsed.success) return null;
  return `${refused}: ${issuesText(parsed.error)}. You sent: ${JSON.stringify(input)}`;
}

/** A tool's schema with unknown keys refused, made once per tool: strict() makes a new schema,
 *  which zod compiles again on its first parse, a tenth of a millisecond for every call checked. */
const strictInput = oncePerTool((tool) => tool.input.strict());

export const issuesText = (error: z.ZodError) =>
  error.issues.map((issue) => `${issue.path.join('.') || '(input)'}: ${issue.message}`).join('; ');

/** What any call has if it has a `path` argument: other keys are neither checked nor kept. */
const PATH_ARGUMENT = z.looseObject({ path: z.string() });

/** A call's `path` argument, if it has one: what the path guards look at, for any tool. */
export const pathOf = (input: unknown): string | undefined =>
  PATH_ARGUMENT.safeParse(input).data?.path;

/** A failure the model can act on: its message becomes an is_error tool_result. */
export class ToolError extends Error {}

// ---------------------------------------------------------------------------------------------
// safe_path: every file tool resolves its path through this, and nothing else.

/** Longer paths are refused before any file system work: each missing segment costs a lookup. */
const MAX_PATH_CHARS = 4096;

/** Prevents escapes from the project: `..`, absolute paths, NUL bytes and symlinks leading out.
 *  Returns the real absolute path. */
export async function safe_path(root: string, requested: string): Promise<string> {
  if (requested.includes('\0'))
    throw new ToolError(`path ${JSON.stringify(requested)} contains a NUL byte`);
  if (requested.length > MAX_PATH_CHARS)
    throw new ToolError(
      `path is ${requested.length} characters long; the limit is ${MAX_PATH_CHARS}`,
    );
  const outside = new ToolError(
    `path ${JSON.stringify(requested)} is outside the project (${root}); use a path inside it`,
  );
  const lexical = path.resolve(root, requested);
  if (!isInside(root, lexical)) throw outside;
  // Symlinks are followed by the OS, so the real path decides. For a path that does not exist
  // yet, the deepest part that does exist is resolved and the rest appended.
  let existing = lexical;
  const missing: string[] = [];
  while (!(await exists(existing))) {
    missing.unshift(path.basename(existing));
    existing = path.dirname(existing);
  }
  const real = await realpath(existing).catch((error: NodeJS.ErrnoException) => {
    const why = error.code === 'ELOOP' ? 'a symlink loop' : 'a broken symlink';
    throw new ToolError(`path ${JSON.stringify(requested)} goes through ${why}`);
  });
  const target = path.join(real, ...missing);
  if (!isInside(root, target)) throw outside;
  return target;
}

/** Whether `candidate` is `root` or below it. "..notes" is a name inside; only ".." leaves. */
export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

/** lstat, not stat: a dangling symlink exists and must be resolved (and refused), not skipped. */
export const exists = (file: string): Promise<boolean> =>
  lstat(file).then(
    () => true,
    () => false,
  );

// ---------------------------------------------------------------------------------------------
// Output caps, shared by every tool: both are needed, since one minified line or ten thousand
// tiny lines each slip past a single cap.

export const MAX_LINES = 2000;
export const MAX_BYTES = 50 * 1024;
export const MAX_LIST_ENTRIES = 1000;
/** Files above this are read in windows and never hashed whole, so they cannot be edited here. */
export const MAX_EDITABLE_BYTES = 10 * 1024 * 1024;

export const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** Cuts any tool's text to the output caps, on whole lines, and says how much was left out. */
export function capOutput(text: string): string {
  const lines = text.split('\n');
  let kept = 0;
  for (let bytes = 0; kept < Math.min(lines.length, MAX_LINES); kept++) {
    bytes += Buffer.byteLength(lines[kept]!) + 1;
    if (bytes > MAX_BYTES + 1) break;
  }
  if (kept === lines.length) return text;
  let shown = lines.slice(0, kept).join('\n');
  if (kept === 0) shown = Buffer.from(lines[0]!).subarray(0, MAX_BYTES).toString('utf8');
  return `${shown}\n[output cut: ${kept} of ${lines.length} lines shown]`;
}

// ---------------------------------------------------------------------------------------------
// The disk seam: how the tools list, read and write. plainDisk is the reading path's; the guarded
// one (hardening/disk.ts, the default) adds .gitignore, windows over huge files and pipes, writes
// that survive a crash and a swapped folder; the editor's buffers are one more (app/acp.ts).

export interface Disk {
  /** The entries under `dir` (a real path safe_path gave): relative to the root, "/"-separated,
   *  folders ending in "/", sorted, at most `cap`; links are listed, never followed. */
  list(dir: string, cap: number, ctx: ToolContext): Promise<Listing>;
  /** The lines of `file` from line `offset` on: to its end, or as far as a window can show. */
  read(file: string, offset: number, ctx: ToolContext): Promise<FileLines>;
  /** Replaces `file` (or creates it, and its folders) with `content`, if it still holds `before`
   *  (null: it must not exist yet); else throws what changedOnDisk makes. */
  write(file: string, content: string, before: string | null, ctx: ToolContext): Promise<void>;
  /** A fingerprint of every file `globs` match ("/"-separated, relative to the root). */
  fingerprints(globs: readonly string[], ctx: ToolContext): Promise<Map<string, string>>;
}

export interface Listing {
  entries: string[];
  /** Entries past the cap, counted only. */
  more: number;
  /** Lines saying what else was left out, and why. */
  notes: string[];
}

export interface FileLines {
  /** From the offset on, without line breaks. */
  lines: string[];
  /** Whether `lines` reach the end of the file. */
  toEnd: boolean;
  /** The file's size in bytes, and its lines if they were counted. */
  size: number;
  total: number | null;
  /** The whole file, when it was read whole: what an edit is checked against. */
  whole: Buffer | null;
}

/** Folders no listing enters: git's data and installed packages. */
const SKIPPED_DIRS = new Set(['.git', 'node_modules']);

/** The disk as it is, through node:fs. */
export const plainDisk: Disk = {
  async list(dir, cap, ctx) {
    const entries = await filesUnder(ctx.root, dir, true);
    return { entries: entries.slice(0, cap), more: Math.max(entries.length - cap, 0), notes: [] };
  },
  // A named pipe would block this read (the guarded disk refuses anything but a regular file).
  read: async (file, offset) => fileLines(await readFile(file), offset),
  // Compares, then writes: a writer in between is lost (the guarded disk locks around both).
  async write(file, content, before, ctx) {
    const current = await readFile(file).catch(() => null);
    if (current?.toString('utf8') !== (before ?? undefined))
      throw changedOnDisk(file, current, ctx);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, content);
  },
  async fingerprints(globs, ctx) {
    const hashes = new Map<string, string>();
    for (const file of await filesUnder(ctx.root, ctx.root, false)) {
      if (protectedBy(globs, file) === undefined) continue;
      hashes.set(file, sha256(await readFile(path.join(ctx.root, file))));
    }
    return hashes;
  },
};

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

/** A file read whole, as the disk gives it: its lines from `offset` on. */
export function fileLines(whole: Buffer, offset: number): FileLines {
  const text = whole.toString('utf8');
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  const shown = lines.slice(offset - 1).map((line) => line.replace(/\r$/, ''));
  return { lines: shown, toEnd: true, size: whole.length, total: lines.length, whole };
}

/** Every entry under `dir`, sorted, relative to the root; with `folders`, folders too ("x/"). */
async function filesUnder(root: string, dir: string, folders: boolean): Promise<string[]> {
  const found: string[] = [];
  const children = await readdir(dir, { withFileTypes: true });
  for (const child of children.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const relative = path.relative(root, path.join(dir, child.name)).split(path.sep).join('/');
    if (!child.isDirectory()) found.push(relative);
    else if (!SKIPPED_DIRS.has(child.name)) {
      if (folders) found.push(`${relative}/`);
      found.push(...(await filesUnder(root, path.join(dir, child.name), folders)));
    }
  }
  return found;
}

/** The first of `globs` that a "/"-separated path matches; dotfiles match too (`.env`). */
export const protectedBy = (globs: readonly string[], file: string) =>
  globs.find((glob) => minimatch(file, glob, { dot: true }));

// ---------------------------------------------------------------------------------------------
// list_files

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
    const dir = await safe_path(ctx.root, requested);
    if (!(await stat(dir)).isDirectory())
      throw new ToolError(`${requested} is a file, not a folder; use read_file`);
    const { entries, more, notes } = await ctx.disk.list(dir, MAX_LIST_ENTRIES, ctx);
    if (entries.length === 0) entries.push('(empty folder)');
    if (more > 0) entries.push(`[${more} more entries not shown; list a subfolder to see them]`);
    return [...entries, ...notes].join('\n');
  },
});

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
    const file = await safe_path(ctx.root, requested);
    const read = await ctx.disk.read(file, offset, ctx);
    const { shown, cutLine } = windowOf(read.lines, offset, limit);
    if (read.whole?.subarray(0, 8192).includes(0) || shown.some((line) => line.includes('\0')))
      throw new ToolError(
        `${requested} is a binary file (${read.size} bytes); read_file shows text only`,
      );
    // The hash is what makes a later edit safe: it pins the version the model has now seen.
    if (read.whole !== null) ctx.seen.set(file, sha256(read.whole));
    if (shown.length === 0) {
      if (read.size === 0) return '(empty file)';
      return `[the file has fewer than ${offset} lines; use a smaller offset]`;
    }
    const last = offset + shown.length - 1;
    const more =
      read.total === null ? shown.length < read.lines.length || !read.toEnd : last < read.total;
    const next = `use offset=${last + 1} to continue`;
    if (cutLine) {
      const rest = more ? next : 'the rest of it cannot be shown';
      shown.push(`[line ${last} is longer than ${MAX_BYTES / 1024} KiB and was cut; ${rest}]`);
    } else if (more) {
      const of = read.total === null ? '' : ` of ${read.total}`;
      shown.push(`[showing lines ${offset}-${last}${of}; ${next}]`);
    }
    return shown.join('\n');
  },
});

/** Room in a window for the note that ends it. */
const NOTE_BYTES = 200;

/** Prevents a window the output cap cuts again (and so a note with no offset to continue from):
 *  the numbered lines shown are at most `limit`, and with the note that ends them within both
 *  caps. A first line too long for the window shows its start (cutLine). */
function windowOf(lines: readonly string[], offset: number, limit: number) {
  const shown: string[] = [];
  const most = lines.length > limit ? Math.min(limit, MAX_LINES - 1) : Math.min(limit, MAX_LINES);
  let bytes = 0;
  for (const line of lines.slice(0, most)) {
    const numbered = `${String(offset + shown.length).padStart(6)}\t${line}`;
    bytes += Buffer.byteLength(numbered) + 1;
    if (bytes <= MAX_BYTES - NOTE_BYTES) shown.push(numbered);
    else if (shown.length > 0) return { shown, cutLine: false };
    else {
      const start = Buffer.from(numbered)
        .subarray(0, MAX_BYTES - NOTE_BYTES)
        .toString('utf8');
      return { shown: [start.replace(/\uFFFD$/, '')], cutLine: true };
    }
  }
  return { shown, cutLine: false };
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
    await ctx.disk.write(edit.file, edit.after, edit.before, ctx);
    ctx.seen.set(edit.file, sha256(edit.after));
    return edit.summary;
  },
  async preview(input, ctx) {
    const edit = await planEdit(input, ctx);
    const [before, after] = [`a/${input.path}`, `b/${input.path}`];
    return createTwoFilesPatch(before, after, edit.before ?? '', edit.after, '', '', {
      context: 3,
    });
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
    const summary = `created ${requested} (${lineCount(new_str)} line(s))`;
    return { file, before: null, after: new_str, summary };
  }
  const before = await readEditable(file, requested, ctx);
  const matches = findSnippet(before, old_str);
  if (matches.length === 0)
    throw new ToolError(`old_str was not found in ${requested}; read the file again`);
  if (matches.length > 1)
    throw new ToolError(
      `old_str was found ${matches.length} times in ${requested}; ` +
        'include more context so it is unique',
    );
  const { at, length } = matches[0]!;
  // Keep the file's line endings: the model sees lines without \r, so new lines get the file's
  // usual break.
  const replace = mostlyCrlf(before) ? toCrlf(new_str) : new_str;
  const after = before.slice(0, at) + replace + before.slice(at + length);
  const line = before.slice(0, at).split('\n').length;
  const replaced = `replaced ${lineCount(old_str)} line(s) at line ${line}`;
  return {
    file,
    before,
    after,
    summary: `edited ${requested}: ${replaced} with ${lineCount(new_str)} line(s)`,
  };
}

/** Prevents edits against a version the model never saw (unread, or changed on disk since), or
 *  of a file decoding would corrupt. */
async function readEditable(file: string, requested: string, ctx: ToolContext): Promise<string> {
  const { size } = await stat(file);
  const { whole } = size > MAX_EDITABLE_BYTES ? { whole: null } : await ctx.disk.read(file, 1, ctx);
  if (whole === null)
    throw new ToolError(
      `${requested} is too large to edit with edit_file ` +
        `(${size} bytes; the limit is ${MAX_EDITABLE_BYTES})`,
    );
  const seenHash = ctx.seen.get(file);
  if (seenHash === undefined)
    throw new ToolError(`read ${requested} with read_file before editing it`);
  const current = whole.toString('utf8');
  // Decoding non-UTF-8 bytes replaces them with U+FFFD: writing that back would corrupt the file.
  if (!Buffer.from(current).equals(whole))
    throw new ToolError(`${requested} is not UTF-8 text; edit_file would corrupt it`);
  if (sha256(whole) !== seenHash) throw changedOnDisk(file, whole, ctx);
  return current;
}

/** Prevents a lost update: an edit of a file that changed since the model read it is refused, with
 *  the content it has now (null: gone), which counts as read. */
export function changedOnDisk(file: string, current: Buffer | null, ctx: ToolContext): ToolError {
  const requested = path.relative(ctx.root, file);
  const changed = `${requested} changed on disk since you read it; nothing was edited.`;
  if (current === null) return new ToolError(`${changed} It is gone now.`);
  ctx.seen.set(file, sha256(current));
  const lines = current.toString('utf8').replace(/\r$/gm, '').split('\n');
  const numbered = lines.map((text, i) => `${String(i + 1).padStart(6)}\t${text}`).join('\n');
  return new ToolError(`${changed} Its current content:\n${capOutput(numbered)}`);
}

const lineCount = (text: string) => (text === '' ? 0 : text.split('\n').length);

/** The tools in the order the model is shown them, unless a session is given its own. */
export const TOOLS: readonly Tool[] = [list_files, read_file, edit_file];

// -------------------------------------------------------------------------------------------------
// The runner seam: how a command runs. The gate runs the verify command through it, and so can a
// fork's command tool (commandOptions). runCommand is the reading path's: a shell in the project,
// a timeout, and the whole process group killed. The default (hardening/sandbox.ts) runs it in the
// OS sandbox, on a throwaway copy of the project, through hardening/command-output.ts.

export interface CommandRun {
  exitCode: number | null;
  timedOut: boolean;
  /** stdout and stderr interleaved, capped: the head and the tail are kept. */
  output: string;
  /** Whether it ran in the OS sandbox. */
  contained: boolean;
}

/** Where and how long a command runs, under which sandbox policy, and who hears its output. */
export interface CommandOptions {
  cwd: string;
  timeoutMs: number;
  signal: AbortSignal;
  /** Each piece of output as it arrives, stdout and stderr alike: a live tail for whoever
   *  watches. */
  onOutput?: (text: string) => void;
  /** true: contain it or refuse; false: never; unset: where this machine can. */
  sandbox?: boolean;
  /** Environment variables a contained command gets beside the allowlist, by name. */
  passEnv?: readonly string[];
  /** Paths outside the system folders a contained command may read (--sandbox-read). */
  sandboxRead?: readonly string[];
}

export type Runner = (command: string, options: CommandOptions) => Promise<CommandRun>;

/** A command's time limit unless the run sets one (the verify command's `verifyTimeoutMs`). */
export const COMMAND_TIMEOUT_MS = 120_000;

/** How a command-running tool runs its command the way the gate runs the verify command: under the
 *  run's sandbox policy, time limit, environment and readable paths, stopped with the run. */
export function commandOptions(ctx: ToolContext): CommandOptions {
  return {
    cwd: ctx.root,
    timeoutMs: ctx.verifyTimeoutMs ?? COMMAND_TIMEOUT_MS,
    signal: ctx.signal ?? new AbortController().signal,
    sandbox: ctx.sandbox,
    passEnv: ctx.passEnv ?? [],
    sandboxRead: ctx.sandboxRead ?? [],
  };
}

/** The plain runner: a shell in the project. At the timeout or on a stop its whole process group is
 *  killed, so a test runner's children cannot outlive it. Never contained, so it refuses where the
 *  policy asks for a sandbox. */
export const runCommand: Runner = async (
  command,
  { cwd, timeoutMs, signal, onOutput, sandbox },
) => {
  if (sandbox === true)
    throw new Error('this runner has no OS sandbox, and the run asks for one; not run');
  // Detached: the shell leads a process group of its own, so one kill reaches its children too.
  const child = spawn('/bin/sh', ['-c', command], {
    cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    onOutput?.(text);
    output = headAndTail(output + text);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
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
  signal.addEventListener('abort', kill);
  if (signal.aborted) kill();
  const exitCode = await new Promise<number | null>((resolve) => {
    child.on('close', resolve);
    child.on('error', (error) => {
      output += error.message;
      resolve(null);
    });
  });
  clearTimeout(timer);
  signal.removeEventListener('abort', kill);
  return { exitCode, timedOut, output: output || '(no output)', contained: false };
};

/** How much of a command's output is kept: this many characters of its start, and of its end. */
const OUTPUT_KEPT = 8 * 1024;

/** Prevents a chatty command from filling memory (a test runner can print megabytes): output past
 *  the cap keeps its head and tail. Applied to what is kept so far, it keeps the same head. */
function headAndTail(output: string): string {
  if (output.length <= 2 * OUTPUT_KEPT) return output;
  const cut = '\n[... output left out ...]\n';
  return output.slice(0, OUTPUT_KEPT) + cut + output.slice(-OUTPUT_KEPT);
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
  const cap = `${CONTEXT_FILES_MAX_BYTES / 1024} KiB`;
  for (const dir of folders) {
    const file = path.join(dir, 'AGENTS.md');
    if (!(await exists(file))) continue;
    const read =
      room > 0
        ? await readContextFile(dir, file, room)
        : `nearer AGENTS.md files fill the ${cap} cap`;
    if (typeof read === 'string') {
      files.unshift({ path: file, text: '', skipped: read });
      continue;
    }
    const text = read.subarray(0, room).toString('utf8');
    const cut = read.length > room ? `\n[cut: AGENTS.md files are capped at ${cap} in all]` : '';
    files.unshift({ path: file, text: text + cut });
    room -= read.length;
  }
  return files;
}

/** Prevents AGENTS.md from putting a file outside its folder in the system prompt (a symlink out);
 *  reads at most `most` bytes and one more, to tell a cut, through readAgentsFile. A string says
 *  why not. */
async function readContextFile(dir: string, file: string, most: number): Promise<Buffer | string> {
  const real = await realpath(file).catch(() => null);
  if (real === null) return 'a broken symlink';
  if (!isInside(dir, real)) return `a link out of its folder, to ${real}`;
  return await readAgentsFile(real, most);
}
