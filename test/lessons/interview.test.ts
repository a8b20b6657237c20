// lessons/interview.md answers from the code with references such as `verifyGate` (`agent.ts:451`): a symbol and
// the file and line it is on. These tests keep every reference pointing at its symbol, so an edit that moves the
// code fails here until the page moves with it.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const REPO = path.join(import.meta.dirname, '..', '..');
const read = (relative: string) => readFileSync(path.join(REPO, relative), 'utf8');

/** `file.ts:12` in backticks, anywhere in the text. */
const REFERENCE = /`([\w./-]+\.[a-z]+):(\d+)`/g;
/** `symbol` (`file.ts:12`) or (`symbol`, `file.ts:12`): a reference with the symbol its line must hold. */
const NAMED_REFERENCE = /`([A-Za-z_$][\w$]*)`(?:\s+\(|,\s+)`([\w./-]+\.[a-z]+):(\d+)`/g;

/** Why each reference in `text` does not hold: a file that is not there, a line past its end, a line without the
 *  symbol named beside it, or a reference with no symbol at all. Paths are from the repository's root. */
function referenceProblems(text: string, repo: string): string[] {
  const problems: string[] = [];
  const named = [...text.matchAll(NAMED_REFERENCE)];
  const all = [...text.matchAll(REFERENCE)];
  const namedAt = new Set(named.map((match) => match.index + match[0].lastIndexOf('`', match[0].length - 2)));
  for (const match of all) {
    if (!namedAt.has(match.index)) problems.push(`${match[0]} has no \`symbol\` beside it`);
  }
  for (const [, symbol, file, line] of named) {
    const where = `${file}:${line}`;
    const full = path.join(repo, file!);
    if (!existsSync(full)) {
      problems.push(`${where}: no such file`);
      continue;
    }
    const lines = readFileSync(full, 'utf8').split('\n');
    const n = Number(line);
    if (n < 1 || n > lines.length) {
      problems.push(`${where}: the file has ${lines.length} lines`);
      continue;
    }
    const escaped = symbol!.replace(/\$/g, '\\$');
    if (!new RegExp(`(?<![\\w$])${escaped}(?![\\w$])`).test(lines[n - 1]!)) {
      problems.push(`${where} does not hold \`${symbol}\`: ${lines[n - 1]!.trim()}`);
    }
  }
  return problems;
}

test('every file:line reference in lessons/interview.md is on a line that holds the symbol named beside it', () => {
  const text = read('lessons/interview.md');
  const count = [...text.matchAll(REFERENCE)].length;
  assert.ok(count >= 40, `only ${count} references: the page answers from the code`);
  // A fork that deletes a folder (the program, say) keeps this page: references into a folder that is not in the
  // checkout are left unchecked.
  const folderGone = (problem: string) => problem.includes('/') && !existsSync(path.join(REPO, problem.split('/')[0]!));
  assert.deepEqual(
    referenceProblems(text, REPO).filter((problem) => !folderGone(problem)),
    [],
  );
});

test('a reference that drifted, points nowhere or names no symbol is reported', () => {
  const at =
    read('agent.ts')
      .split('\n')
      .findIndex((line) => line.startsWith('export async function runTask')) + 1;
  assert.ok(at > 0, 'agent.ts defines runTask');
  const drifted = [
    '`verifyGate` (`agent.ts:1`)', // the wrong line
    '`verifyGate` (`no-such-file.ts:3`)',
    '`verifyGate` (`agent.ts:999999`)',
    `see \`agent.ts:${at}\``, // no symbol
    `(\`runTaskX\`, \`agent.ts:${at}\`)`, // a longer name is not the symbol on the line
  ].join('\n');
  const problems = referenceProblems(drifted, REPO);
  assert.equal(problems.length, 5, problems.join('\n'));
  const held = `(\`runTask\`, \`agent.ts:${at}\`) and \`runTask\` (\`agent.ts:${at}\`)`;
  assert.deepEqual(referenceProblems(held, REPO), []);
});

test('the interview page is linked from README.md and lessons/README.md', () => {
  assert.match(read('README.md'), /\]\(lessons\/interview\.md\)/);
  assert.match(read('lessons/README.md'), /\]\(interview\.md\)/);
});
