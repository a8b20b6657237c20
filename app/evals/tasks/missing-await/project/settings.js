import { readFile } from 'node:fs/promises';

export const DEFAULTS = { theme: 'light', fontSize: 14, wordWrap: true };

async function readJson(file) {
  return JSON.parse(await readFile(file, 'utf8'));
}

/** The user's saved settings over the defaults; the defaults alone if the file is missing or broken. */
export async function loadSettings(file) {
  try {
    const saved = readJson(file);
    return { ...DEFAULTS, ...saved };
  } catch (error) {
    if (error.code === 'ENOENT' || error instanceof SyntaxError) return { ...DEFAULTS };
    throw error;
  }
}
