// The types of bundle.mjs (plain JavaScript, so that it runs before any TypeScript can), for its tests.

/** One file a build was made from: its path, size and modification time as read. */
export type BuildInput = [file: string, size: number, mtimeMs: number];

export interface BuildManifest {
  dir: string;
  main: string;
  inputs: BuildInput[];
}

export function freshBuild(entry: string, folder: string): Promise<URL | undefined>;

export function staleBuild(manifest: BuildManifest): boolean;
