// The lessons say how many stories each has, and what they try: counted here from lessons/stories.ts, never typed,
// so a story added or removed makes the page that counts it fail until it says so.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { type Lesson, LESSONS, Scene, STORIES } from '../../lessons/stories.ts';

const REPOSITORY = path.join(import.meta.dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(REPOSITORY, file), 'utf8');
const WORDS = ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'];
const word = (n: number) => WORDS[n] ?? String(n);
const PAGES: Record<Lesson, string> = {
  p0: 'lessons/p0-scaffold.md',
  p1: 'lessons/p1-loop.md',
  p2: 'lessons/p2-three-tools.md',
  p3: 'lessons/p3-hardening.md',
  p4: 'lessons/p4-endurance.md',
};
const storiesOf = (lesson: Lesson) => STORIES.filter((story) => story.lesson === lesson).length;
/** Every "<number word> stories" a text says, in lower case. */
const counted = (text: string) =>
  [...text.matchAll(new RegExp(`\\b(${WORDS.join('|')}) stories\\b`, 'gi'))].map((m) => m[1]!.toLowerCase());

for (const lesson of LESSONS) {
  test(`${PAGES[lesson]} says how many stories ${lesson} has: as many as lessons/stories.ts holds`, () => {
    assert.deepEqual(counted(read(PAGES[lesson])), [word(storiesOf(lesson))]);
  });
}

test("lessons/README.md's table counts each lesson's stories as lessons/stories.ts holds them", () => {
  const rows = read('lessons/README.md')
    .split('\n')
    .filter((line) => /^\| \[P\d/.test(line));
  assert.equal(rows.length, LESSONS.length);
  for (const [i, lesson] of LESSONS.entries())
    assert.deepEqual(counted(rows[i]!), [word(storiesOf(lesson))], `${lesson}: ${rows[i]}`);
});

test('p3-hardening.md counts the tries at the protected test.js as the story makes them', async () => {
  const story = STORIES.find((s) => s.name === 'a protected file stays as it is')!;
  const scene = new Scene('/nonexistent', '/nonexistent');
  const tries = (await story.script(scene))
    .map((entry) => (typeof entry === 'function' ? entry({ messages: [] }) : entry))
    .flatMap((reply) => reply.content)
    .filter((block) => block.type === 'tool_use' && block.name !== 'read_file')
    .filter((block) => {
      const input = 'input' in block ? block.input : null;
      const file = typeof input === 'object' && input !== null && 'path' in input ? String(input.path) : '';
      return path.normalize(file) === 'test.js';
    }).length;
  assert.match(read(PAGES.p3), new RegExp(`tries to change it ${word(tries)} times`));
});

/** Every name the code declares: functions, classes, constants, types, methods and object keys, in every .ts file. */
function declaredNames(): Set<string> {
  const names = new Set<string>();
  const folders = ['.', 'hardening', 'lessons', 'app', 'app/session-page', 'app/evals'];
  for (const folder of folders)
    for (const file of readdirSync(path.join(REPOSITORY, folder)).filter((name) => name.endsWith('.ts'))) {
      const code = read(path.join(folder, file));
      const declared =
        /\b(?:function\*?|const|let|class|interface|type)\s+([A-Za-z_$][\w$]*)|^\s*(?:async\s+|readonly\s+|private\s+)*([A-Za-z_$][\w$]*)\??\s*[(:]/gm;
      for (const match of code.matchAll(declared)) names.add((match[1] ?? match[2])!);
    }
  return names;
}

test('each lesson\'s "Read this" names only code that exists: a function renamed or moved out is a stale page', () => {
  const names = declaredNames();
  const missing: string[] = [];
  for (const page of [...Object.values(PAGES), 'lessons/interview.md']) {
    const text = read(page);
    const section = text.split(/^## Read this$/m)[1]?.split(/^## /m)[0] ?? '';
    for (const [, quoted] of section.matchAll(/`([^`]+)`/g)) {
      if (/\.(?:ts|mjs|md|json)$/.test(quoted!)) continue; // a file, not a name
      const name = quoted!.split('.').at(-1)!;
      if (/^[A-Za-z_$][\w$]*$/.test(name) && !quoted!.includes('/') && !names.has(name))
        missing.push(`${page}: ${quoted}`);
    }
  }
  assert.deepEqual(missing, []);
});
