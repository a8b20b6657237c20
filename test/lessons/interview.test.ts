// lessons/interview.md answers from the code with references such as `verifyGate` (`agent.ts`), a symbol and the
// file that declares it, or `seen` in `edit_file` (`tools.ts`), a name and the declaration it is used in. These tests
// keep every reference pointing at its symbol, so renaming or removing it fails here until the page follows. A
// reference names no line: lines move with every edit, a fork's first tool among them, and the page would be wrong.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const REPO = path.join(import.meta.dirname, '..', '..');
const read = (relative: string) => readFileSync(path.join(REPO, relative), 'utf8');

/** `file.ts:12` in backticks: a reference by line, which the page no longer makes. */
const LINE_REFERENCE = /`[\w./-]+\.[a-z]+:\d+`/g;
/** `symbol` (`file.ts`), (`symbol`, `file.ts`), or either with `in `scope`` after the symbol. */
const REFERENCE = /`([A-Za-z_$][\w$]*)`(?: in `([A-Za-z_$][\w$]*)`)?(?:\s+\(|,\s+)`([\w./-]+\.[a-z]+)`/g;
/** A declaration at the top level of a file: `export async function runTask(`, `const TOOLS =`, `interface Agent {`. */
const DECLARATION = /^(?:export\s+)?(?:async\s+)?(?:function\*?|const|let|class|interface|type)\s+([A-Za-z_$][\w$]*)/;

/** Each top-level declaration of `source` with its lines: from its own to the one before the next declaration. */
function declarations(source: string): Map<string, string[]> {
  const lines = source.split('\n');
  const starts = lines.flatMap((line, i) => {
    const name = DECLARATION.exec(line)?.[1];
    return name === undefined ? [] : [{ name, i }];
  });
  return new Map(starts.map(({ name, i }, k) => [name, lines.slice(i, starts[k + 1]?.i ?? lines.length)]));
}

/** Why each reference in `text` does not hold: a line number, a file that is not there, a symbol the file does not
 *  declare, or a name its scope does not use. Paths are from the repository's root. */
function referenceProblems(text: string, repo: string): string[] {
  const problems = [...text.matchAll(LINE_REFERENCE)].map(([reference]) => `${reference} names a line, not a symbol`);
  for (const [reference, symbol, scope, file] of text.matchAll(REFERENCE)) {
    const full = path.join(repo, file!);
    // A fork that deletes a folder (the program, say) keeps this page: references into it are left unchecked.
    if (file!.includes('/') && !existsSync(path.join(repo, file!.split('/')[0]!))) continue;
    if (!existsSync(full)) {
      problems.push(`${reference}: no such file`);
      continue;
    }
    const declared = declarations(readFileSync(full, 'utf8'));
    const word = new RegExp(`(?<![\\w$])${symbol!.replace(/\$/g, '\\$')}(?![\\w$])`);
    if (scope === undefined) {
      if (!declared.has(symbol!)) problems.push(`${reference}: ${file} does not declare ${symbol}`);
    } else if (!declared.has(scope)) {
      problems.push(`${reference}: ${file} does not declare ${scope}`);
    } else if (!declared.get(scope)!.some((line) => word.test(line))) {
      problems.push(`${reference}: ${scope} does not use ${symbol}`);
    }
  }
  return problems;
}

test('every reference in lessons/interview.md names a symbol its file declares, or a name its scope uses', () => {
  const text = read('lessons/interview.md');
  const count = [...text.matchAll(REFERENCE)].length;
  assert.ok(count >= 40, `only ${count} references: the page answers from the code`);
  assert.deepEqual(referenceProblems(text, REPO), []);
});

test('a reference that names a line, points nowhere, or names what its file lacks is reported', () => {
  const wrong = [
    '`verifyGate` (`agent.ts:451`)', // a line, which moves
    '`verifyGate` (`no-such-file.ts`)',
    '(`verifyGateX`, `agent.ts`)', // a longer name is not the symbol
    '`seen` (`agent.ts`)', // a field, not a declaration of agent.ts
    '`seen` in `noSuchScope` (`agent.ts`)',
    '`seenHash` in `runTask` (`agent.ts`)', // runTask does not use it
  ].join('\n');
  const problems = referenceProblems(wrong, REPO);
  assert.equal(problems.length, 6, problems.join('\n'));
  const held = '(`runTask`, `agent.ts`), `verifyGate` (`agent.ts`) and `tampered` in `verifyGate` (`agent.ts`)';
  assert.deepEqual(referenceProblems(held, REPO), []);
});

test('the interview page is linked from README.md and lessons/README.md', () => {
  assert.match(read('README.md'), /\]\(lessons\/interview\.md\)/);
  assert.match(read('lessons/README.md'), /\]\(interview\.md\)/);
});
