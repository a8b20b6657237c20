// Defends against: the verify command (which imports code the model wrote) reading the machine's
// secrets, reaching the network, or leaving anything behind that runs later. No path check can
// cover what a command does; the kernel can. Contained, a command's world is built from what it
// needs, not from a list of what to hide: the system's program and library folders and node's own
// install read-only, a few /etc entries, the project on a copy-on-write overlay (its writes are
// gone when it ends, its layers out of reach) with its .git and .agent empty, a private /tmp, an
// empty HOME, a minimal /dev, its own /proc, no network. Nothing else of the machine exists for
// it. Bubblewrap on Linux; on macOS sandbox-exec, with the project read-only and HOME, .git and
// .agent unreadable. Its environment is an allowlist; of the harness's descriptors it gets stdin,
// stdout and stderr.
// Tests: test/sandbox/routes-sandbox.check.ts (every route out, tried),
// test/sandbox/sandbox.check.ts.

import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { isInside, type Runner } from '../tools.ts';
import { spawnCommand } from './command-output.ts';

/** The default runner: contained where the policy asks or this machine can, else plain. */
export const containedRunner: Runner = async (command, options) => {
  const problem = await sandboxProblem();
  if (options.sandbox === false || (problem !== null && options.sandbox === undefined))
    return await withoutInherited((more) =>
      spawnCommand(['/bin/sh', '-c', command], process.env, options, more),
    );
  // Prevents code the model wrote from running unconfined when the sandbox was asked for and this
  // machine has none: not run, saying what to install.
  if (problem !== null) throw new Error(problem);
  const root = await realpath(options.cwd); // vetted by sandboxableRoot when the agent was made
  const planted = SANDBOX_PROGRAMS.map(sandboxProgram).find((file) => isInside(root, file ?? '/'));
  if (planted) throw new Error(`the sandbox's own ${planted} is inside the project; not run`);
  const where = { root, passEnv: options.passEnv ?? [], read: options.sandboxRead ?? [] };
  const ran = await withoutInherited((more) =>
    withoutKeyring((filter) => {
      const args = containedArgs(command, where, filter === null ? null : more.length + 3);
      return spawnCommand(
        args,
        containedEnv(where),
        options,
        filter === null ? more : [...more, filter],
      );
    }),
  );
  return { ...ran, contained: true };
};

/** The system calls of the kernel's keyrings, by architecture (as uname names it, then the
 *  kernel's AUDIT_ARCH value): add_key, request_key, keyctl. */
const KEYRING_CALLS: Record<string, { arch: number; calls: number[] }> = {
  x64: { arch: 0xc000003e, calls: [248, 249, 250] },
  arm64: { arch: 0xc00000b7, calls: [217, 218, 219] },
};

/** Prevents the check from reading a secret in the person's kernel keyring (a Kerberos ticket,
 *  a credential helper's token) or leaving a key there: no namespace separates keyrings, so its
 *  keyring calls fail (EPERM), through a seccomp filter bubblewrap installs (--seccomp FD), as
 *  Flatpak's and Docker's default filters do. `run` gets the filter's descriptor, given to
 *  bubblewrap past the others; null on an architecture not listed, which runs without it. */
async function withoutKeyring<T>(run: (filter: number | null) => Promise<T>): Promise<T> {
  const known = KEYRING_CALLS[process.arch];
  if (process.platform !== 'linux' || known === undefined) return await run(null);
  const filter = openFilter(keyringFilterProgram(known.arch, known.calls));
  try {
    return await run(filter);
  } finally {
    closeSync(filter);
  }
}

/** A classic BPF program for seccomp: other architectures' calls (and x32's) fail, `calls` fail
 *  with EPERM, the rest is allowed. */
function keyringFilterProgram(arch: number, calls: number[]): Buffer {
  const [load, jumpIfEqual, jumpIfAbove, ret] = [0x20, 0x15, 0x35, 0x06];
  const [allow, denied] = [0x7fff0000, 0x00050001]; // SECCOMP_RET_ALLOW, _ERRNO | EPERM
  const last = calls.length + 6; // the index of the denial, the program's last instruction
  const program = [
    [load, 0, 0, 4], // seccomp_data.arch
    [jumpIfEqual, 1, 0, arch],
    [ret, 0, 0, denied],
    [load, 0, 0, 0], // seccomp_data.nr
    [jumpIfAbove, last - 5, 0, 0x40000000], // x32's numbers
    ...calls.map((call, i) => [jumpIfEqual, last - 6 - i, 0, call]),
    [ret, 0, 0, allow],
    [ret, 0, 0, denied],
  ];
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    bytes.writeUInt16LE(code!, i * 8);
    bytes.writeUInt8(jt!, i * 8 + 2);
    bytes.writeUInt8(jf!, i * 8 + 3);
    bytes.writeUInt32LE(k!, i * 8 + 4);
  });
  return bytes;
}

/** The filter as a descriptor bubblewrap reads it from: written to a file that is removed at
 *  once, so nothing is left behind, whatever ends the harness. */
function openFilter(program: Buffer): number {
  const file = path.join(tmpdir(), `sandbox-filter-${randomBytes(8).toString('hex')}.bpf`);
  writeFileSync(file, program, { mode: 0o600, flag: 'wx' });
  try {
    return openSync(file, 'r');
  } finally {
    unlinkSync(file);
  }
}

/** Linux's O_CLOEXEC, as /proc/self/fdinfo shows a descriptor's flags (octal). */
const CLOSE_ON_EXEC = 0o2000000;

/** Prevents a descriptor the harness inherited without close-on-exec (an editor's extra pipe, a
 *  shell's `exec 40<secret`) from reaching the command: libuv's spawn passes on every descriptor
 *  not marked close-on-exec, and bubblewrap passes them into the sandbox. The command gets
 *  /dev/null at each such number. On macOS libuv's posix_spawn closes them already. */
async function withoutInherited<T>(run: (more: (number | 'ignore')[]) => Promise<T>): Promise<T> {
  const inherited = process.platform === 'linux' ? inheritedDescriptors() : [];
  if (inherited.length === 0) return await run([]);
  const empty = openSync('/dev/null', 'r');
  try {
    const last = Math.max(...inherited);
    const more = Array.from({ length: last - 2 }, (_, i) =>
      inherited.includes(i + 3) ? empty : ('ignore' as const),
    );
    return await run(more);
  } finally {
    closeSync(empty);
  }
}

/** The descriptors past stderr a program the harness starts would get, as found at its first
 *  command: node opens all of its own close-on-exec, so later there are only fewer. */
let inheritedAtStart: number[] | undefined;
function inheritedDescriptors(): number[] {
  const flags = (fd: number) => {
    try {
      const info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
      return parseInt(/^flags:\s*([0-7]+)/m.exec(info)?.[1] ?? '0', 8);
    } catch {
      return CLOSE_ON_EXEC; // closed since (the listing's own)
    }
  };
  const passedOn = (fd: number) => fd > 2 && (flags(fd) & CLOSE_ON_EXEC) === 0;
  inheritedAtStart ??= readdirSync('/proc/self/fd').map(Number).filter(passedOn);
  return inheritedAtStart.filter(passedOn);
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

/** Where the sandbox's own tools (and git, for runs-later.ts) are looked for: the system's program
 *  folders, and NixOS's. Never PATH, never the folder the harness was started in. */
export const SYSTEM_PROGRAM_FOLDERS: readonly string[] = [
  '/usr/bin',
  '/bin',
  '/usr/sbin',
  '/sbin',
  '/run/current-system/sw/bin',
];

/** Prevents a program planted in the project, on a PATH entry, or reached through a link from
 *  being started in place of the sandbox's own tools (the harness once trusted PATH's entries
 *  outside the folder it was started in: started from /, that was none, and the sandbox was off).
 *  A program is trusted where it really is, in a system folder, owned by root and writable by
 *  nobody else, as is the folder that holds it; it is then started by that real path. */
export function trustedProgram(
  name: string,
  folders: readonly string[] = SYSTEM_PROGRAM_FOLDERS,
): string | null {
  for (const folder of folders) {
    const real = realProgram(path.join(folder, name));
    if (real !== null && ownedByRootAlone(real) && ownedByRootAlone(path.dirname(real)))
      return real;
  }
  return null;
}

const realProgram = (file: string): string | null => {
  try {
    return statSync(file).isFile() ? realpathSync(file) : null;
  } catch {
    return null; // not there
  }
};

/** Root's, and nobody else may write it (no write bit for its group or others). */
const ownedByRootAlone = (file: string): boolean => {
  const { uid, mode } = statSync(file);
  return uid === 0 && (mode & 0o022) === 0;
};

const SANDBOX_PROGRAMS = ['bwrap', 'mount', 'setpriv', 'unshare'];

/** The sandbox's tools, found once: where they are when the harness starts is where they stay. */
let sandboxPrograms: Map<string, string | null> | undefined;
let programFolders = SYSTEM_PROGRAM_FOLDERS;
const sandboxProgram = (name: string) => {
  sandboxPrograms ??= new Map(
    SANDBOX_PROGRAMS.map((tool) => [tool, trustedProgram(tool, programFolders)]),
  );
  return sandboxPrograms.get(name) ?? null;
};

/** Looks for the sandbox's tools in `folders` instead of the system's, from now on: how a test
 *  plays a machine without bubblewrap. Code only (no flag, no environment variable): nothing a
 *  project or a session file holds can reach it. */
export function lookForProgramsIn(folders: readonly string[]): void {
  programFolders = folders;
  sandboxPrograms = undefined;
  sandboxCheck = undefined;
}

/** The system's program and library folders, read-only; on merged-/usr systems most are links. */
const SYSTEM_FOLDERS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** The /etc entries programs read to start and to name users: the dynamic linker's cache, users
 *  and groups, name service, time zone, Debian's alternatives (links such as /usr/bin/awk go
 *  there), and the certificates. No credentials live in these. Of /etc/ssl only the certificates
 *  and OpenSSL's settings: its private/ holds the machine's TLS keys, readable by root and the
 *  ssl-cert group, which the check is when the harness is. */
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
  'ssl/certs',
  'ssl/openssl.cnf',
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

/** Node's own binary, when it is not in the system folders: a check runs node. Only the binary:
 *  the folder two levels above it may be a home (~/bin/node) or all of /opt. */
function nodeInstall(): string[] {
  const binary = realpathSync(process.execPath);
  const bound = [binary, process.execPath].filter((file, i, all) => all.indexOf(file) === i);
  return SYSTEM_FOLDERS.some((folder) => isInside(folder, binary)) ? [] : bound;
}

/** The command line that runs `command` contained as `where` says. */
function containedArgs(
  command: string,
  where: Contained,
  filterFd: number | null = null,
): string[] {
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
  const mounted = `"$0" -n -t overlay overlay -o ${overlay} "$1"`;
  const script = [
    mounted,
    withoutLayers(),
    ...hiddenFromCheck(where),
    'cd "$1" && shift && exec "$@"',
  ].join(' && ');
  return [
    bwrap!,
    ...['--tmpfs', '/'], // nothing of the machine but what follows
    ...SYSTEM_FOLDERS.flatMap(readOnlyBinding),
    ...ETC_ENTRIES.flatMap((entry) => readOnlyBinding(`/etc/${entry}`)),
    ...[...nodeInstall(), ...read.filter((file) => !isInside(root, file))].flatMap((file) => [
      '--ro-bind',
      file,
      file,
    ]),
    ...['--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'],
    // The kernel's settings stay read-only: as root, /proc/sys/kernel/core_pattern would run a
    // program on the host at the next crash.
    ...['--ro-bind', '/proc/sys', '/proc/sys', '--ro-bind-try', '/proc/sysrq-trigger'],
    '/proc/sysrq-trigger',
    ...['--dir', `${SCRATCH}/upper`, '--dir', `${SCRATCH}/work`, '--dir', SANDBOX_HOME],
    ...['--ro-bind', root, lower, '--dir', root],
    // Every namespace its own (users, processes, network with loopback only, System V IPC, host
    // name, cgroups), not a list of the ones thought of; it dies with us, with no terminal.
    ...['--unshare-all', '--unshare-user', '--uid', '0', '--gid', '0', '--cap-add', 'ALL'],
    ...['--die-with-parent', '--new-session'],
    ...(filterFd === null ? [] : ['--seccomp', String(filterFd)]),
    ...['--', '/bin/sh', '-c', script, mount!, root],
    ...drop,
    ...['/bin/sh', '-c', command],
  ].filter((arg): arg is string => arg !== undefined);
}

/** Prevents the check from reading the real project through the overlay's own layers: the lower
 *  one is the project bound as it is, .git and .agent not hidden (the token in .git/config) and
 *  its Unix sockets live (a socket reached through the overlay refuses; through a bind it answers:
 *  a dev server's, a database's). The overlay keeps its own hold of its layers, so once it is
 *  mounted an empty read-only folder covers them all; the check, without capabilities over this
 *  mount namespace, cannot take it off, and in a namespace of its own the cover is locked. A shell
 *  command for the script in containedArgs. */
const withoutLayers = () => `"$0" -n -t tmpfs -o ro,mode=555 gone ${SCRATCH}`;

/** The names the tools never read (repository-data.ts): git's folder, or its file in a worktree,
 *  and the session files' folder (app/session-file.ts). */
export const REPOSITORY_DATA: readonly string[] = ['.git', '.agent'];

/** Prevents the check's output from showing the model what its tools never read: the project's
 *  git data (.git/config can keep a token in a remote URL) and its session files. Mounted over
 *  each, inside the sandbox: an empty read-only folder, or /dev/null over a file. A path that
 *  --sandbox-read names stays (`git diff --exit-code` needs .git); a link is left, as its target
 *  outside the project is not in the sandbox. Shell commands for the script in containedArgs. */
function hiddenFromCheck({ root, read }: Contained): string[] {
  const real = (file: string) => (existsSync(file) ? realpathSync(file) : file);
  const kept = new Set(read.map(real));
  return REPOSITORY_DATA.flatMap((name) => {
    const file = path.join(root, name);
    const info = lstatSync(file, { throwIfNoEntry: false });
    if (info === undefined || info.isSymbolicLink() || kept.has(file)) return [];
    return info.isDirectory()
      ? [`"$0" -n -t tmpfs -o ro,mode=555 hidden "$1/${name}"`]
      : [`"$0" -n --bind /dev/null "$1/${name}"`];
  });
}

/** sandbox-exec's command line (macOS): everything readable but HOME (the project and the extra
 *  paths excepted) and the project's repository data, writes only to the temporary folders.
 *  Exported so that a test on any machine can read it. Prevents the check's writes from reaching
 *  a project inside those folders (a clone in /tmp: its .git/hooks would run at the next commit):
 *  the project and the extra paths are never writable, wherever they are. */
export function seatbeltArgs(command: string, { root, read }: Contained): string[] {
  const readable = [root, ...read];
  const hidden = REPOSITORY_DATA.map((name) => path.join(root, name));
  const unread = hidden.filter((file) => !read.includes(file)); // as hiddenFromCheck on Linux
  const params = [
    ...readable.flatMap((p, i) => ['-D', `READ${i}=${p}`]),
    ...unread.flatMap((p, i) => ['-D', `HIDE${i}=${p}`]),
  ];
  const rules = [
    ...readable.map((_, i) => `(deny file-write* (subpath (param "READ${i}")))`),
    '(deny file-read* (subpath (param "HOME")))',
    ...readable.map((_, i) => `(allow file-read* (subpath (param "READ${i}")))`),
    ...unread.map((_, i) => `(deny file-read* (subpath (param "HIDE${i}")))`),
  ];
  const profile = [SEATBELT_PROFILE, ...rules].join('\n');
  const home = ['-D', `HOME=${homedir()}`];
  return ['/usr/bin/sandbox-exec', '-p', profile, ...home, ...params, '/bin/sh', '-c', command];
}

/** macOS's sandbox policy: the last rule that matches wins. The paths come in as -D parameters
 *  (seatbeltArgs adds the rules that name them). */
const SEATBELT_PROFILE = `(version 1) (allow default) (deny network*) (deny lsopen)
(deny appleevent-send)
(deny file-write*)
(allow file-write* (subpath "/private/tmp") (subpath "/private/var/folders") (literal "/dev/null")
  (regex #"^/dev/(tty|fd/)"))`;

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

/** Prevents a root that holds what the sandbox hides: bound whole, the host's /tmp (and its
 *  sockets) would come back, and $HOME's dotfiles would be readable. The root, resolved through
 *  links; throws one line saying why it is refused. */
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
    throw new Error(`${refused} it holds your home ${home}, whose dotfiles the check must not see`);
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
      // Linux's check writes its own copy; macOS's may not write the project at all.
      const probe =
        process.platform === 'darwin'
          ? 'touch probe 2>/dev/null; test ! -e probe'
          : 'touch probe && test -f probe';
      const trial = await spawnCommand(containedArgs(probe, where), containedEnv(where), options);
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
