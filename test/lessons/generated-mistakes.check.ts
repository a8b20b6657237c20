// The differential check, checked (npm run test:generated; not in npm test, for its few minutes of CPU): harnesses
// with a mistake a learner makes from lessons/build.md must fail their step, by a story or, when no story thinks of
// it, by a generated scenario that names its seed and shows the smallest script; and the correct harnesses (every
// stage's reference, and test/lessons/built-from-build-md.ts, written from the page alone) must pass every step's
// generated scenarios. Each mistake is a small edit of a harness that passes: a stage reference (lessons/p0.ts to
// p4.ts) or the one built from build.md, written to a temporary folder with its imports pointed back here.

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { checkStage, REFERENCES, SEED, type StageVerdict, story } from '../../lessons/scenarios.ts';
import { type Harness, type Lesson, LESSONS } from '../../lessons/stories.ts';
import * as builtFromThePage from './built-from-build-md.ts';
import { type Caught, caught, inTurn, loadHarness, patchedCode } from './mistake-runner.ts';

type Base = 'lessons/p0.ts' | 'lessons/p1.ts' | 'lessons/p2.ts' | 'lessons/p3.ts' | 'lessons/p4.ts' | typeof BUILT;
const BUILT = 'test/lessons/built-from-build-md.ts';

interface Mistake {
  name: string;
  /** The harness it is made in; default the reference of `failsAt`. */
  in?: Base;
  /** Each `find` must occur exactly once; it becomes `replace`. */
  patches: [find: string, replace: string][];
  failsAt: Lesson;
  /** The step of build.md that teaches the fix, when it is an earlier one than `failsAt`'s. */
  teaches?: Lesson;
}

const P0_APPEND = "  if (content.length > 0) agent.messages.push({ role: 'assistant', content });";
const FILTER = "  const content = reply.content.filter((block) => block.type !== 'text' || block.text.trim() !== '');";
const PUSH_TASK = "  agent.messages.push({ role: 'user', content: task });";
const P1_RESULTS = "    agent.messages.push({ role: 'user', content: await answerCalls(agent, calls, signal) });";
const P3_RESULTS =
  "      agent.messages.push({ role: 'user', content: await answerCalls(agent, calls, cutOff, signal) });";
const LOOP = '  for (let turn = 1; turn <= MAX_TURNS; turn++) {';
const RUN = '    return { content: await tool.run(call.input, { ...agent.toolContext, signal }), isError: false };';
const IS_ERROR = '    if (isError) result.is_error = true;';
const EACH_CALL = '  for (const call of calls) {';
const P2_PATH_CHECK = [
  "  if (typeof requested === 'string') {",
  '    const outside = await safe_path(agent.toolContext.root, requested).then(',
  '      () => null,',
  '      (error: unknown) => errorText(error),',
  '    );',
  '    if (outside !== null) return { content: outside, isError: true };',
  '  }',
].join('\n');
const P2_PARSE = '  const input = tool.input.strict().safeParse(call.input);';
const NOT_DONE = "    agent.messages.push({ role: 'user', content: verdict.notDone });";
const P2_NOT_DONE_TEXT =
  '  return { notDone: `The task is not done yet: \\`${verify}\\` ${how}. Its output:\\n\\n${output}\\n\\nFix the cause.` };';
const PASSED = "  if (exitCode === 0) return { kind: 'accepted', verifiedBy: verify };";
const PROTECTED_CHECK = '      if (!tool.readOnly && isProtected(agent, file))';
const ASK_LAST = [
  '    const approved = await approval(agent, tool, call, signal);',
  '    if (approved !== null) return { content: approved, isError: true };',
].join('\n');
const NO_APPROVAL_NEEDED = '  if (tool.readOnly || approve === undefined) return null;';
const PREVIEW =
  '  const preview = tool.preview ? await tool.preview(call.input, agent.toolContext) : JSON.stringify(call.input);';
const ANSWER = '  const answer = await approve({ tool: tool.name, preview, signal });';
const DECIDED = '    const decided = cutOff ? NOT_RUN : await decide(agent, call, signal);';
const CONTINUES =
  "    if (cutOff) {\n      agent.messages.push({ role: 'user', content: CONTINUE });\n      continue;\n    }";
const SUMMARISED = '  agent.summary = { text: summary, from: cut };';
const P4_LOOP = '  for (let turn = 1; turn <= limit; turn++) {';
const CUT_AT_ASSISTANT = "    if (agent.messages[i]?.role !== 'assistant') continue;";
const READ_ONLY_TOOLS = '      const readOnly = config.tools.filter((tool) => tool.readOnly);';

const MISTAKES: Mistake[] = [
  // Step 1: P0.
  {
    name: 'only the latest message sent',
    failsAt: 'p0',
    patches: [['messages: agent.messages }', 'messages: agent.messages.slice(-1) }']],
  },
  { name: 'empty text blocks kept', failsAt: 'p0', patches: [[FILTER, '  const content = reply.content;']] },
  {
    name: 'the reply rebuilt from its text',
    failsAt: 'p0',
    patches: [
      [FILTER, "  const content = reply.content.filter((block) => block.type === 'text' && block.text.trim() !== '');"],
    ],
  },
  {
    name: 'the whole reply appended',
    failsAt: 'p0',
    patches: [[P0_APPEND, '  if (content.length > 0) agent.messages.push({ ...reply, content });']],
  },
  {
    name: 'an empty reply appended anyway',
    failsAt: 'p0',
    patches: [[P0_APPEND, "  agent.messages.push({ role: 'assistant', content });"]],
  },
  {
    name: 'a failed model call thrown out of runTask',
    failsAt: 'p0',
    patches: [
      [
        "    return halt(agent, { kind: 'error', message: `model call failed: ${errorText(error)}` });",
        '    throw error;',
      ],
    ],
  },
  {
    name: 'the task taken back when the model call fails',
    failsAt: 'p0',
    patches: [
      ['  } catch (error) {\n    return halt(', '  } catch (error) {\n    agent.messages.pop();\n    return halt('],
    ],
  },
  {
    name: 'accepted without verifiedBy',
    failsAt: 'p0',
    patches: [
      [
        "  return halt(agent, { kind: 'accepted', verifiedBy: null });",
        "  return halt(agent, { kind: 'accepted' } as Halt);",
      ],
    ],
  },
  {
    name: 'a thinking block stripped of its signature',
    failsAt: 'p0',
    patches: [
      [FILTER, `${FILTER.replace(';', '')}.map((b) => (b.type === 'thinking' ? { ...b, signature: '' } : b));`],
    ],
  },
  {
    name: 'the transcript cleared for each task',
    failsAt: 'p0',
    patches: [[PUSH_TASK, `  agent.messages.length = 0;\n${PUSH_TASK}`]],
  },
  {
    name: 'the system prompt sent as a message',
    failsAt: 'p0',
    patches: [['{ system: SYSTEM_PROMPT, messages: agent.messages }', "{ system: '', messages: agent.messages }"]],
  },

  // Step 2: P1.
  {
    name: 'no tool_result for an unknown tool',
    failsAt: 'p1',
    patches: [[EACH_CALL, `${EACH_CALL}\n    if (!agent.config.tools.some((t) => t.name === call.name)) continue;`]],
  },
  {
    name: 'results not first in the user message',
    failsAt: 'p1',
    patches: [
      [
        P1_RESULTS,
        "    agent.messages.push({ role: 'user', content: [{ type: 'text', text: 'Results:' }, ...(await answerCalls(agent, calls, signal))] });",
      ],
    ],
  },
  {
    name: 'each result in a user message of its own',
    failsAt: 'p1',
    patches: [
      [
        P1_RESULTS,
        "    for (const r of await answerCalls(agent, calls, signal)) agent.messages.push({ role: 'user', content: [r] });",
      ],
    ],
  },
  { name: 'a tool error sent without is_error', failsAt: 'p1', patches: [[IS_ERROR, '']] },
  {
    name: 'a throwing tool ends the run',
    failsAt: 'p1',
    patches: [
      ['  try {\n    return { content: await tool.run', '  {\n    return { content: await tool.run'],
      [
        '  } catch (error) {\n    return { content: errorText(error), isError: true };\n  }\n}\n\nfunction halt',
        '  }\n}\n\nfunction halt',
      ],
    ],
  },
  {
    name: 'one model call short of the turn limit',
    failsAt: 'p1',
    patches: [[LOOP, '  for (let turn = 1; turn < MAX_TURNS; turn++) {']],
  },
  {
    name: 'one model call past the turn limit',
    failsAt: 'p1',
    patches: [[LOOP, '  for (let turn = 0; turn <= MAX_TURNS; turn++) {']],
  },
  {
    name: 'calls run side by side',
    failsAt: 'p1',
    patches: [
      [
        '  const results: Anthropic.ToolResultBlockParam[] = [];\n  for (const call of calls) {\n    const { content, isError } = await execute(agent, call, signal);',
        '  return await Promise.all(calls.map(async (call) => {\n    const { content, isError } = await execute(agent, call, signal);',
      ],
      ['    results.push(result);\n  }\n  return results;\n}', '    return result;\n  }));\n}'],
    ],
  },
  {
    name: 'calls run last first',
    failsAt: 'p1',
    patches: [[EACH_CALL, '  for (const call of [...calls].reverse()) {']],
  },
  {
    name: 'the turn limit an error halt',
    failsAt: 'p1',
    patches: [
      [
        "  return halt(agent, { kind: 'budget', budget: 'turns', limit: MAX_TURNS }, MAX_TURNS);",
        "  return halt(agent, { kind: 'error', message: 'too many turns' }, MAX_TURNS);",
      ],
    ],
  },
  {
    name: 'results answering the tool name, not the id',
    failsAt: 'p1',
    patches: [['tool_use_id: call.id', 'tool_use_id: call.name']],
  },
  {
    name: 'only the first call of a reply answered',
    failsAt: 'p1',
    patches: [
      [
        "const calls = reply.content.filter((block) => block.type === 'tool_use');",
        "const calls = reply.content.filter((block) => block.type === 'tool_use').slice(0, 1);",
      ],
    ],
  },
  {
    name: 'an unknown tool throws',
    failsAt: 'p1',
    patches: [
      [
        '  if (!tool) {\n    const names',
        "  if (!tool) throw new Error('no such tool');\n  if (!tool) {\n    const names",
      ],
    ],
  },
  {
    name: 'an empty tool output dropped',
    failsAt: 'p1',
    patches: [
      [
        RUN,
        "    const out = await tool.run(call.input, { ...agent.toolContext, signal });\n    if (out === '') return { content: '(no output)', isError: true };\n    return { content: out, isError: false };",
      ],
    ],
  },
  {
    name: 'a new tool context for every task',
    failsAt: 'p2',
    patches: [[PUSH_TASK, `  agent.toolContext.seen.clear();\n${PUSH_TASK}`]],
  },

  // Step 3: P2.
  {
    name: 'the path checked by string prefix',
    failsAt: 'p2',
    patches: [
      [
        "import { realpath } from 'node:fs/promises';",
        "import { realpath } from 'node:fs/promises';\nimport path from 'node:path';",
      ],
      [
        P2_PATH_CHECK,
        "  if (typeof requested === 'string' && !path.resolve(agent.toolContext.root, requested).startsWith(agent.toolContext.root))\n    return { content: 'outside the project', isError: true };",
      ],
    ],
  },
  { name: 'no path check: the tools check their own', failsAt: 'p2', patches: [[P2_PATH_CHECK, '']] },
  {
    name: 'the path checked for the three tools only',
    failsAt: 'p2',
    patches: [
      [
        "  if (typeof requested === 'string') {",
        "  if (typeof requested === 'string' && ['list_files', 'read_file', 'edit_file'].includes(tool.name)) {",
      ],
    ],
  },
  {
    name: 'the path checked for ".." only',
    failsAt: 'p2',
    patches: [
      [
        P2_PATH_CHECK,
        "  if (typeof requested === 'string' && requested.includes('..')) return { content: 'outside', isError: true };",
      ],
    ],
  },
  {
    name: 'the path checked without following links',
    failsAt: 'p2',
    patches: [
      [
        "import { realpath } from 'node:fs/promises';",
        "import { realpath } from 'node:fs/promises';\nimport path from 'node:path';",
      ],
      [
        P2_PATH_CHECK,
        "  if (typeof requested === 'string' && (requested.includes('\\0') || path.relative(agent.toolContext.root, path.resolve(agent.toolContext.root, requested)).startsWith('..')))\n    return { content: 'outside the project', isError: true };",
      ],
    ],
  },
  {
    name: 'no schema check',
    failsAt: 'p2',
    patches: [[P2_PARSE, '  const input = { success: true as const, data: call.input as Record<string, unknown> };']],
  },
  {
    name: 'the schema checked without strict()',
    failsAt: 'p2',
    patches: [[P2_PARSE, '  const input = tool.input.safeParse(call.input);']],
  },
  {
    name: 'numbers in strings coerced',
    failsAt: 'p2',
    patches: [
      [
        P2_PARSE,
        "  const coerced = Object.fromEntries(Object.entries(call.input as object).map(([k, v]) => [k, typeof v === 'string' && /^\\d+$/.test(v) ? Number(v) : v]));\n  const input = tool.input.strict().safeParse(coerced);\n  if (input.success) call.input = coerced;",
      ],
    ],
  },
  {
    name: 'an unknown tool answered as a success',
    failsAt: 'p2',
    teaches: 'p1', // errors are results, unknown tools' too: step 2
    patches: [
      [
        '    return { content: `unknown tool "${call.name}"; the tools are: ${names}`, isError: true };',
        '    return { content: `unknown tool "${call.name}"; the tools are: ${names}`, isError: false };',
      ],
    ],
  },
  {
    name: 'no gate',
    failsAt: 'p2',
    patches: [
      [
        '    const verdict = await verifyGate(agent, signal);',
        "    const verdict: Halt | { notDone: string } = { kind: 'accepted', verifiedBy: null };",
      ],
    ],
  },
  {
    name: 'a check that did not finish passes',
    failsAt: 'p2',
    patches: [[PASSED, "  if (exitCode === 0 || exitCode === null) return { kind: 'accepted', verifiedBy: verify };"]],
  },
  {
    name: '"not done" sent as the assistant',
    failsAt: 'p2',
    patches: [[NOT_DONE, "    agent.messages.push({ role: 'assistant', content: verdict.notDone });"]],
  },
  {
    name: '"not done" without the output',
    failsAt: 'p2',
    patches: [[P2_NOT_DONE_TEXT, '  return { notDone: `The task is not done yet: \\`${verify}\\` ${how}.` };']],
  },
  {
    name: 'the check output never cut',
    failsAt: 'p2',
    patches: [['const OUTPUT_KEPT_CHARS = 4_000;', 'const OUTPUT_KEPT_CHARS = 40_000;']],
  },
  {
    name: 'only the head of the check output kept',
    failsAt: 'p2',
    patches: [
      [
        '          : `${output.slice(0, OUTPUT_KEPT_CHARS)}\\n[…]\\n${output.slice(-OUTPUT_KEPT_CHARS)}`;',
        '          : output.slice(0, 2 * OUTPUT_KEPT_CHARS);',
      ],
    ],
  },
  {
    name: 'verifyTimeoutMs ignored',
    failsAt: 'p2',
    patches: [
      [
        '  const { verify, root, verifyTimeoutMs = VERIFY_TIMEOUT_MS } = agent.config;',
        '  const { verify, root } = agent.config;\n  const verifyTimeoutMs = 2_000;',
      ],
    ],
  },
  {
    name: 'accepted by the gate, verifiedBy null',
    failsAt: 'p2',
    patches: [[PASSED, "  if (exitCode === 0) return { kind: 'accepted', verifiedBy: null };"]],
  },
  { name: '"done" claims not counted as turns', failsAt: 'p2', patches: [[NOT_DONE, `${NOT_DONE}\n    turn--;`]] },
  {
    name: 'a tool context for every call',
    failsAt: 'p2',
    patches: [
      [
        RUN,
        '    return { content: await tool.run(call.input, { root: agent.toolContext.root, seen: new Map(), signal }), isError: false };',
      ],
    ],
  },
  {
    name: 'the check run outside the project',
    failsAt: 'p2',
    patches: [
      [
        'await runCommand(verify, root, verifyTimeoutMs, signal)',
        'await runCommand(verify, path.dirname(root), verifyTimeoutMs, signal)',
      ],
      [
        "import { realpath } from 'node:fs/promises';",
        "import { realpath } from 'node:fs/promises';\nimport path from 'node:path';",
      ],
    ],
  },
  {
    name: 'config.root used without realpath',
    failsAt: 'p2',
    patches: [['  const root = await realpath(config.root);', '  const root = config.root;']],
  },
  {
    name: 'every check passes with exit code 1 too',
    failsAt: 'p2',
    patches: [[PASSED, "  if (exitCode === 0 || exitCode === 1) return { kind: 'accepted', verifiedBy: verify };"]],
  },

  // Step 4: P3.
  {
    name: 'protection matched on the path as written',
    failsAt: 'p3',
    patches: [
      [
        '      if (!tool.readOnly && isProtected(agent, file))',
        '      if (!tool.readOnly && (agent.config.protect ?? []).some((glob) => minimatch(requested, glob)))',
      ],
    ],
  },
  {
    name: 'only edit_file protected',
    failsAt: 'p3',
    patches: [[PROTECTED_CHECK, "      if (tool.name === 'edit_file' && isProtected(agent, file))"]],
  },
  {
    name: 'reads of protected files refused too',
    failsAt: 'p3',
    patches: [[PROTECTED_CHECK, '      if (isProtected(agent, file))']],
  },
  {
    name: 'protection matched on the absolute path',
    failsAt: 'p3',
    patches: [['  const relative = path.relative(agent.toolContext.root, file);', '  const relative = file;']],
  },
  {
    name: 'approval asked before the other checks',
    failsAt: 'p3',
    patches: [
      [ASK_LAST, ''],
      ['  try {\n    // Any tool', `  try {\n${ASK_LAST}\n    // Any tool`],
    ],
  },
  {
    name: 'approval asked for read-only tools too',
    failsAt: 'p3',
    patches: [[NO_APPROVAL_NEEDED, '  if (approve === undefined) return null;']],
  },
  {
    name: 'an approver that throws taken as yes',
    failsAt: 'p3',
    patches: [
      [
        ANSWER,
        '  const answer = await approve({ tool: tool.name, preview, signal }).catch(() => ({ approved: true as const }));',
      ],
    ],
  },
  {
    name: 'the Tool handed to config.approve, not its name',
    failsAt: 'p3',
    patches: [[ANSWER, '  const answer = await approve({ tool: tool as unknown as string, preview, signal });']],
  },
  {
    name: 'a preview that throws taken as no preview',
    failsAt: 'p3',
    patches: [
      [
        PREVIEW,
        '  const preview = tool.preview ? await tool.preview(call.input, agent.toolContext).catch(() => JSON.stringify(call.input)) : JSON.stringify(call.input);',
      ],
    ],
  },
  {
    name: 'tools without a preview never asked about',
    failsAt: 'p3',
    patches: [[NO_APPROVAL_NEEDED, '  if (tool.readOnly || approve === undefined || !tool.preview) return null;']],
  },
  {
    name: "a declined call's answer not an error",
    failsAt: 'p3',
    patches: [
      [
        '    if (approved !== null) return { content: approved, isError: true };',
        '    if (approved !== null) return { content: approved, isError: false };',
      ],
    ],
  },
  {
    name: 'the approver asked, its no ignored',
    failsAt: 'p3',
    patches: [
      [
        "  return answer.approved ? null : `declined by the user${answer.reason ? `: ${answer.reason}` : ''}`;",
        '  return answer && null;',
      ],
    ],
  },
  {
    name: "a cut-off reply's calls run",
    failsAt: 'p3',
    patches: [[DECIDED, '    const decided = await decide(agent, call, signal);']],
  },
  { name: 'a cut-off reply without calls taken as "done"', failsAt: 'p3', patches: [[CONTINUES, '']] },
  {
    name: 'a cut-off reply not counted as a turn',
    failsAt: 'p3',
    patches: [
      [
        CONTINUES,
        "    if (cutOff) {\n      agent.messages.push({ role: 'user', content: CONTINUE });\n      turn--;\n      continue;\n    }",
      ],
    ],
  },
  {
    name: "a cut-off reply's calls unanswered",
    failsAt: 'p3',
    teaches: 'p1', // every call gets a result: the API's rule, step 2's
    patches: [
      [
        P3_RESULTS,
        `    if (cutOff) {\n      agent.messages.push({ role: 'user', content: CONTINUE });\n      continue;\n    }\n${P3_RESULTS}`,
      ],
    ],
  },
  {
    name: 'the check run with exec, its children left running',
    failsAt: 'p3',
    teaches: 'p2',
    patches: [
      [
        "import { realpath } from 'node:fs/promises';",
        "import { exec } from 'node:child_process';\nimport { realpath } from 'node:fs/promises';",
      ],
      [
        '  const { exitCode, output } = await runCommand(verify, { cwd: root, timeoutMs: verifyTimeoutMs, signal });',
        [
          '  const { exitCode, output } = await new Promise<{ exitCode: number | null; output: string }>((resolve) =>',
          '    exec(verify, { cwd: root, timeout: verifyTimeoutMs }, (error, stdout, stderr) => {',
          '      const all = stdout + stderr;',
          '      const output = all.length > 16_000 ? `${all.slice(0, 8_000)}\\n…\\n${all.slice(-8_000)}` : all;',
          "      const code = error === null ? 0 : typeof error.code === 'number' && !error.killed ? error.code : null;",
          '      resolve({ exitCode: code, output });',
          '    }),',
          '  );',
        ].join('\n'),
      ],
    ],
  },
  {
    name: 'no protection without approval',
    failsAt: 'p3',
    patches: [
      [PROTECTED_CHECK, '      if (!tool.readOnly && agent.config.approve !== undefined && isProtected(agent, file))'],
    ],
  },

  // Step 5: P4.
  {
    name: 'no compaction',
    failsAt: 'p4',
    patches: [['  if (window === undefined || tokensOf', '  if (window !== 0 || tokensOf']],
  },
  {
    name: 'the messages alone estimated',
    failsAt: 'p4',
    patches: [
      [
        'tokensOf({ ...fixed, messages: view(agent) }) <= COMPACT_AT * window',
        'tokensOf(view(agent)) <= COMPACT_AT * window',
      ],
    ],
  },
  {
    name: 'compaction only once over the window',
    failsAt: 'p4',
    patches: [['const COMPACT_AT = 0.75;', 'const COMPACT_AT = 1.2;']],
  },
  {
    name: 'summary requests counted as turns',
    failsAt: 'p4',
    patches: [
      [
        SUMMARISED,
        `${SUMMARISED}\n  (agent as { summaries?: number }).summaries = ((agent as { summaries?: number }).summaries ?? 0) + 1;`,
      ],
      [P4_LOOP, '  for (let turn = 1; turn + ((agent as { summaries?: number }).summaries ?? 0) <= limit; turn++) {'],
    ],
  },
  { name: 'a cut between a call and its result', failsAt: 'p4', patches: [[CUT_AT_ASSISTANT, '']] },
  {
    name: 'the summary replaces the transcript',
    failsAt: 'p4',
    patches: [
      [
        SUMMARISED,
        "  agent.messages.splice(from, cut - from, { role: 'user', content: summary }, { role: 'assistant', content: 'Understood.' });",
      ],
    ],
  },
  {
    name: 'the summary never sent',
    failsAt: 'p4',
    patches: [
      [
        '  return [summaryMessage(agent.summary.text), ...agent.messages.slice(agent.summary.from)];',
        '  return agent.messages.slice(agent.summary.from);',
      ],
    ],
  },
  {
    name: 'the older summary left out of the next',
    failsAt: 'p4',
    patches: [
      [
        '  const earlier = agent.summary === null ? [] : [summaryMessage(agent.summary.text)];',
        '  const earlier: Anthropic.MessageParam[] = [];',
      ],
    ],
  },
  {
    name: 'a summary request without the tools',
    failsAt: 'p4',
    patches: [
      [
        "  const reply = await complete(agent, { ...fixed, tool_choice: { type: 'none' }, messages }, signal);",
        '  const reply = await complete(agent, { system: agent.system, messages }, signal);',
      ],
    ],
  },
  {
    name: 'AGENTS.md opened without safe_path',
    failsAt: 'p4',
    patches: [
      [
        "    const file = await open(await safe_path(root, 'AGENTS.md'));",
        '    const file = await open(`${root}/AGENTS.md`);',
      ],
    ],
  },
  {
    name: 'AGENTS.md read whole',
    failsAt: 'p4',
    patches: [['const AGENTS_MD_MAX_BYTES = 32 * 1024;', 'const AGENTS_MD_MAX_BYTES = 1024 * 1024;']],
  },
  {
    name: 'AGENTS.md never read',
    failsAt: 'p4',
    patches: [['  const rules = await projectRules(root);', "  const rules = '';"]],
  },
  {
    name: 'the sub-agent given every tool',
    failsAt: 'p4',
    patches: [[READ_ONLY_TOOLS, '      const readOnly = config.tools;']],
  },
  {
    name: 'the sub-agent on config.model',
    failsAt: 'p4',
    patches: [['      const model = config.taskModel ?? config.model;', '      const model = config.model;']],
  },
  {
    name: "the sub-agent on the parent's system prompt",
    failsAt: 'p4',
    patches: [['SUB_AGENT_PROMPT, readOnly, TASK_MAX_TURNS)', 'SYSTEM_PROMPT, readOnly, TASK_MAX_TURNS)']],
  },
  {
    name: "the sub-agent on the parent's turn limit",
    failsAt: 'p4',
    patches: [['export const TASK_MAX_TURNS = 30;', 'export const TASK_MAX_TURNS = 25;']],
  },
  {
    name: "a stopped sub-agent's answer an error",
    failsAt: 'p4',
    patches: [
      [
        '      return `[the sub-agent stopped: ${why}]\\n${said}`;',
        '      throw new Error(`the sub-agent stopped: ${why}`);',
      ],
    ],
  },
  {
    name: 'the sub-agent can delegate too',
    failsAt: 'p4',
    patches: [
      [READ_ONLY_TOOLS, '      const readOnly = [...config.tools.filter((tool) => tool.readOnly), taskTool(config)];'],
    ],
  },
  {
    name: "the sub-agent's last words lost",
    failsAt: 'p4',
    patches: [
      [
        "      if (ended.kind === 'accepted') return said || '(the sub-agent gave no answer)';",
        "      if (ended.kind === 'accepted') return '(the sub-agent is done)';",
      ],
    ],
  },

  // The same kinds of mistake in the harness written from build.md alone.
  {
    name: 'built from the page: no cut-off handling',
    in: BUILT,
    failsAt: 'p3',
    patches: [["    const cutOff = reply.stop_reason === 'max_tokens';", '    const cutOff = false;']],
  },
  {
    name: 'built from the page: approval before protection',
    in: BUILT,
    failsAt: 'p3',
    patches: [
      [
        '      if (guarded && !tool.readOnly) return refuse(',
        '      if (guarded && !tool.readOnly && !agent.config.approve) return refuse(',
      ],
    ],
  },
  {
    name: 'built from the page: the sub-agent with no turn limit of its own',
    in: BUILT,
    failsAt: 'p4',
    patches: [['const SUB_AGENT_TURNS = 30;', 'const SUB_AGENT_TURNS = 25;']],
  },
  {
    name: 'built from the page: a compaction that cuts anywhere',
    in: BUILT,
    failsAt: 'p4',
    patches: [["    if (agent.messages[i]?.role !== 'assistant') continue;\n", '']],
  },
];

/** The harness with a mistake's patches applied, its imports pointed back into the repository. */
const patched = (mistake: Mistake) => patchedCode(mistake.in ?? `lessons/${mistake.failsAt}.ts`, mistake.patches);

describe('the differential check catches learners’ mistakes, and passes correct harnesses', () => {
  const results = new Map<string, Caught>();
  const correct = new Map<string, StageVerdict>();
  let dir = '';
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'generated-mistakes-'));
    await writeFile(path.join(dir, 'package.json'), '{ "type": "module" }\n');
    const correctHarnesses: [string, Harness][] = [
      ...LESSONS.map((stage): [string, Harness] => [`lessons/${stage}.ts`, REFERENCES[stage]]),
      [BUILT, builtFromThePage as Harness],
    ];
    await inTurn([
      ...correctHarnesses.flatMap(([name, harness]) =>
        LESSONS.filter((stage) => name === BUILT || name === `lessons/${stage}.ts`).map((stage) => async () => {
          correct.set(`${name} ${stage}`, await checkStage(harness, stage));
        }),
      ),
      ...MISTAKES.map((mistake, i) => async () => {
        const harness = await loadHarness(dir, `mistake-${i}.ts`, await patched(mistake));
        results.set(mistake.name, await caught(harness, mistake.failsAt));
      }),
    ]);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('at least 60 mistakes, each with a name of its own', () => {
    assert.ok(MISTAKES.length >= 60, `${MISTAKES.length} mistakes`);
    assert.equal(new Set(MISTAKES.map((m) => m.name)).size, MISTAKES.length);
  });

  for (const stage of LESSONS)
    for (const name of [`lessons/${stage}.ts`, BUILT])
      test(`${name} passes the generated scenarios of ${stage}, seed ${SEED}`, () => {
        const verdict = correct.get(`${name} ${stage}`)!;
        assert.equal(verdict.failure, null, story(verdict, name));
      });

  for (const mistake of MISTAKES)
    test(`${mistake.name}: fails ${mistake.failsAt}`, () => {
      const { story: failedStory, verdict } = results.get(mistake.name)!;
      assert.ok(
        failedStory !== null || verdict.failure !== null,
        `${mistake.name} passed every story and generated scenario of ${mistake.failsAt}`,
      );
      if (verdict.failure === null) return;
      const told = story(verdict, 'mistake.ts');
      assert.match(told, new RegExp(`^FAIL {2}${mistake.failsAt} {2}generated scenario \\(seed ${SEED};`), told);
      assert.match(told, /\n {8}task 1: /, told);
      assert.match(told, /\n {8}replay: {3}npm run lesson -- p\d --check mistake\.ts --seed \d+$/, told);
    });

  test('the generated scenarios alone catch nearly every mistake, each blamed on its own step', (t) => {
    const generated = MISTAKES.filter((mistake) => results.get(mistake.name)?.verdict.failure !== null);
    const storiesMissed = MISTAKES.filter((mistake) => results.get(mistake.name)?.story === null);
    const blamedElsewhere = generated.flatMap((mistake) => {
      const see = results.get(mistake.name)?.verdict.failure?.difference.see;
      return see === (mistake.teaches ?? mistake.failsAt) ? [] : [`${mistake.name}: blamed on ${see}`];
    });
    t.diagnostic(
      `${MISTAKES.length} mistakes: the stories catch ${MISTAKES.length - storiesMissed.length}, the generated ` +
        `scenarios ${generated.length}, blamed on their own step ${generated.length - blamedElsewhere.length}`,
    );
    const missed = MISTAKES.filter((m) => !generated.includes(m)).map((m) => m.name);
    t.diagnostic(`no generated scenario catches: ${missed.join('; ') || 'none'}`);
    t.diagnostic(`blamed on another step: ${blamedElsewhere.join('; ') || 'none'}`);
    assert.ok(generated.length >= 0.95 * MISTAKES.length, `the generated scenarios miss:\n${missed.join('\n')}`);
    assert.ok(
      storiesMissed.every((m) => generated.includes(m)),
      'a mistake no story catches passes the generator',
    );
    assert.ok(blamedElsewhere.length <= 0.1 * generated.length, blamedElsewhere.join('\n'));
  });
});
