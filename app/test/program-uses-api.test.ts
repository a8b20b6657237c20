// The program (app/) drives a session only through agent.ts's exported functions (steer, compact,
// withdrawSteering, resume, runTask): it never writes a field of Agent, so what the harness keeps
// consistent (the transcript, the compaction, the estimate's base, the steering queue) stays so, and
// every interface offers the same operations. Without app/ (a fork of the harness alone) there is
// nothing to scan.

import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

const project = path.join(import.meta.dirname, '..', '..');

/** The fields of `interface Agent`, read from agent.ts, so the list follows the code. */
async function agentFields(): Promise<string[]> {
  const source = await readFile(path.join(project, 'agent.ts'), 'utf8');
  const body = /^export interface Agent \{\n([\s\S]*?)\n\}/m.exec(source)?.[1] ?? '';
  return [...body.matchAll(/^ {2}(?:readonly )?(\w+)\??:/gm)].map((match) => match[1]!);
}

/** The lines that write a field of an agent (a name ending in "agent": `agent`, `holder.agent!`,
 *  `subAgent`): `agent.field =`, `agent.field.push(`, `.splice(`, `.length = 0`, … */
function writesOf(source: string, fields: string[]): { line: number; text: string }[] {
  const field = `\\b\\w*[aA]gent!?\\.(?:${fields.join('|')})`;
  const assign = new RegExp(`${field}\\s*(?:[-+*/|&?]|\\|\\||&&|\\?\\?)?=(?!=)`);
  const mutate = new RegExp(
    `${field}(?:\\.\\w+)?\\.(?:push|pop|shift|unshift|splice|sort|reverse|fill|set|delete|clear)\\(`,
  );
  const emptied = new RegExp(`${field}\\.length\\s*=(?!=)`);
  return source
    .split('\n')
    .map((text, i) => ({ line: i + 1, text }))
    .filter(({ text }) => [assign, mutate, emptied].some((pattern) => pattern.test(text)));
}

async function programFiles(folder: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(path.join(project, folder), { withFileTypes: true })) {
    const name = path.join(folder, entry.name);
    if (entry.isDirectory() && entry.name !== 'node_modules') files.push(...(await programFiles(name)));
    else if (entry.isFile() && entry.name.endsWith('.ts')) files.push(name);
  }
  return files;
}

test('the scan finds a write to an Agent field in each form, and reads pass', async () => {
  const fields = await agentFields();
  for (const field of ['messages', 'steering', 'compaction', 'lastRequest', 'ledger']) {
    assert.ok(fields.includes(field), `Agent has a field ${field}`);
  }
  const writes = [
    'agent.compaction = made;',
    'agent.lastRequest ??= null;',
    'agent.steering.push(text);',
    'holder.agent!.steering.splice(0);',
    'agent.messages.length = 0;',
    'agent.toolContext.seen.clear();',
  ];
  const reads = [
    'if (agent.compaction === null) return;',
    'const n = agent.messages.length;',
    'request.messages.push(message);', // not an agent
  ];
  assert.deepEqual(
    writesOf([...writes, ...reads].join('\n'), fields).map((found) => found.text),
    writes,
  );
});

test('the program never writes an Agent field: it uses steer(), compact() and the rest of the API', async () => {
  const fields = await agentFields();
  const found: string[] = [];
  const itself = path.relative(project, import.meta.filename); // its sample writes are data, not the program's
  for (const file of (await programFiles('app')).filter((name) => name !== itself)) {
    const source = await readFile(path.join(project, file), 'utf8');
    for (const { line, text } of writesOf(source, fields)) found.push(`${file}:${line}: ${text.trim()}`);
  }
  assert.deepEqual(found, []);
});
