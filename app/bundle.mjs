// The program compiled, for the start (issue 51): through tsx's hooks, app/main.ts and the ~950 modules it imports
// (the Anthropic SDK alone ~270) made the first model request leave 1.46× Claude Code's time after the start. esbuild
// bundles them into a few files that Node loads in a fraction of that. Nothing is built at install and no build is
// committed: the first start after any input changed builds again (1-2 s), into app/.build/, so an edited
// .ts file runs as written, as under tsx. The lazy imports stay lazy (one file each, loaded when first used).
// Plain JavaScript, as bin.mjs: it runs before any TypeScript can.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const MANIFEST = 'current.json';
/** A build is removed this long after it stopped being current: a program still running may load its lazy parts. */
const OLD_BUILD_MS = 24 * 60 * 60 * 1000;

/** The URL of a build of `entry` made from its inputs as they are now, built first if there is none; undefined when
 *  none can be had (the folder cannot be written, esbuild is missing or fails), and then the caller runs the TS. */
export async function freshBuild(entry, folder) {
  const manifest = readManifest(path.join(folder, MANIFEST));
  const built = manifest && path.join(folder, manifest.dir, manifest.main);
  if (built && !lostBuild(built) && !staleBuild(manifest)) return pathToFileURL(built);
  return rebuild(entry, folder, manifest?.dir).catch(() => undefined);
}

/** Prevents every start from failing on a build whose files were removed (by hand, or a clean-up) while the
 *  manifest that names them stayed: that build is made again. */
const lostBuild = (file) => statOrNull(file) === null;

function readManifest(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Prevents an edited file from running as it was before the edit: a build stands only while every input it was made
 *  from (each file esbuild read, the packages' package.json files, and this recipe) has the size and time it had. */
export function staleBuild(manifest) {
  return manifest.inputs.some(([file, size, mtimeMs]) => {
    const now = statOrNull(file);
    return now === null || now.size !== size || now.mtimeMs !== mtimeMs;
  });
}

function statOrNull(file) {
  try {
    return statSync(file);
  } catch {
    return null;
  }
}

/** Each file's size and time as read, before esbuild reads it: an edit after that read makes the build stale. */
function inputOf(file) {
  const { size, mtimeMs } = statSync(file);
  return [file, size, mtimeMs];
}

async function rebuild(entry, folder, previous) {
  // esbuild: the bundler tsx itself is built on, a dependency of the program at tsx's own version.
  const { build } = await import('esbuild');
  mkdirSync(folder, { recursive: true });
  const dir = `build-${Date.now()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const inputs = new Map([[fileURLToPath(import.meta.url), inputOf(fileURLToPath(import.meta.url))]]);
  await build({
    entryPoints: [entry],
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir: path.join(folder, dir),
    outExtension: { '.js': '.mjs' },
    entryNames: '[name]',
    logLevel: 'silent',
    // Prevents a project from steering the program's own code, as bin.mjs's tsx reads no tsconfig.json: esbuild
    // would read each one above the program's files (installed in a project, the project's "paths" send
    // `import 'zod'` to a file the model wrote).
    tsconfigRaw: '{}',
    // A CommonJS package bundled into ES modules still calls require() for Node's own modules.
    banner: {
      js:
        "import { createRequire as harnessRequire } from 'node:module';\n" +
        'const require = harnessRequire(import.meta.url);',
    },
    plugins: [ownFiles(inputs)],
  });
  for (const file of [...inputs.keys()]) {
    const packageJson = packageOf(file);
    if (packageJson && !inputs.has(packageJson) && statOrNull(packageJson))
      inputs.set(packageJson, inputOf(packageJson));
  }
  const main = `${path.basename(entry).replace(/\.[cm]?[jt]s$/, '')}.mjs`;
  const manifest = { dir, main, inputs: [...inputs.values()] };
  const written = path.join(folder, `${MANIFEST}.${process.pid}`);
  writeFileSync(written, JSON.stringify(manifest));
  renameSync(written, path.join(folder, MANIFEST)); // whole or not at all, for a start that reads it meanwhile
  if (previous && statOrNull(path.join(folder, previous))) {
    const now = new Date();
    utimesSync(path.join(folder, previous), now, now); // its time is now when it stopped being current
  }
  removeOldBuilds(folder, dir);
  return pathToFileURL(path.join(folder, dir, main));
}

/** Notes every file esbuild loads, and gives the program's own TypeScript its own `import.meta.url`: bundled, it
 *  would be the bundle's, and main.ts finds its package.json and whether it is the program by it. */
function ownFiles(inputs) {
  return {
    name: 'own-files',
    setup(build) {
      build.onLoad({ filter: /.*/ }, async (args) => {
        inputs.set(args.path, inputOf(args.path));
        if (!/\.ts$/.test(args.path)) return undefined; // installed, the program's own files are in node_modules
        const text = await readFile(args.path, 'utf8');
        const url = JSON.stringify(pathToFileURL(args.path).href);
        return { contents: text.replaceAll('import.meta.url', url), loader: 'ts' };
      });
    },
  };
}

/** The package.json of the package a file in node_modules belongs to, whose "exports" chose that file. */
function packageOf(file) {
  const parts = file.split(path.sep);
  const at = parts.lastIndexOf('node_modules');
  if (at < 0) return undefined;
  const name = parts[at + 1]?.startsWith('@') ? 2 : 1;
  return [...parts.slice(0, at + 1 + name), 'package.json'].join(path.sep);
}

function removeOldBuilds(folder, current) {
  for (const dir of readdirSync(folder)) {
    if (!dir.startsWith('build-') || dir === current) continue;
    const old = statOrNull(path.join(folder, dir));
    if (old && Date.now() - old.mtimeMs > OLD_BUILD_MS)
      rmSync(path.join(folder, dir), { recursive: true, force: true });
  }
}
