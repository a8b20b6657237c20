// The checker, checked (npm run test:learners; not in npm test, for its ~25 s of CPU): harnesses with the mistakes
// learners really make must fail `npm run lesson -- pN --check FILE` at the step that teaches the fix, with a message
// that names the mistake; and a harness written from lessons/build.md alone (test/lessons/built-from-build-md.ts) must reach P4.
// Without the first, "All stories pass" could mean "the stories look away"; without the second, the page could ask
// for what it never says. Each mistake is a patch of a harness that passes: lessons/p2.ts for P0 to P2, the one built
// from build.md for P3 and P4. The patched files are written to a temporary folder, their imports pointed back into
// this repository.

import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { runLesson } from '../../lessons/run.ts';
import { type Lesson, STORIES } from '../../lessons/stories.ts';

interface Mistake {
  /** The mistake, as a learner makes it. */
  name: string;
  /** The harness it is made in: lessons/p2.ts (default) for P0 to P2, the harness built from build.md for P3 and P4. */
  in?: typeof P2 | typeof BUILT_FROM_THE_PAGE;
  /** Each `find` must occur exactly once in the harness; it becomes `replace`. */
  patches: [find: string, replace: string][];
  /** The step whose stories catch it: the check of this step fails, every earlier one passes. */
  failsAt: Lesson;
  /** The story that catches it, and what its failure must say. */
  story: string;
  says: RegExp;
}

const REPOSITORY = path.join(import.meta.dirname, '..', '..');
const P2 = 'lessons/p2.ts';
const BUILT_FROM_THE_PAGE = 'test/lessons/built-from-build-md.ts';

/** A learner's own tools, as some write them instead of using tools.ts's: added to the patched file when used. */
const OWN_TOOLS = `
/** A learner's own read_file: \`guard\` decides which paths it reads. It records what it read, as tools.ts's does. */
async function ownRead(agent: Agent, input: unknown, guard: (file: string) => boolean | Promise<boolean>) {
  const file = path.join(agent.toolContext.root, (input as { path: string }).path);
  if (!(await guard(file))) throw new Error('that path is outside the project');
  const content = await readFile(file, 'utf8');
  agent.toolContext.seen.set(file, createHash('sha256').update(content).digest('hex'));
  return content;
}

/** A learner's own edit_file: it replaces old_str wherever it occurs; with \`readFirst\`, in a file read as it is. */
async function ownEdit(agent: Agent, input: unknown, readFirst: boolean): Promise<string> {
  const { path: name, old_str, new_str } = input as { path: string; old_str: string; new_str: string };
  const file = path.join(agent.toolContext.root, name);
  if (old_str === '') return (await writeFile(file, new_str), \`created \${name}\`);
  const before = await readFile(file, 'utf8');
  if (readFirst && agent.toolContext.seen.get(file) !== createHash('sha256').update(before).digest('hex'))
    throw new Error(\`read \${name} before editing it\`);
  if (!before.includes(old_str)) throw new Error('old_str was not found');
  await writeFile(file, before.split(old_str).join(new_str));
  return \`edited \${name}\`;
}
`;
const WITH_OWN_TOOLS: [string, string][] = [
  [
    "import { realpath } from 'node:fs/promises';",
    "import { readFile, realpath, writeFile } from 'node:fs/promises';\nimport path from 'node:path';\n" +
      "import { createHash } from 'node:crypto';",
  ],
  [
    'const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));',
    `const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));\n${OWN_TOOLS}`,
  ],
];
const RUN_THE_TOOL =
  '    return { content: await tool.run(call.input, { ...agent.toolContext, signal }), isError: false };';
/** Runs the learner's own `tool` for calls of that name, and tools.ts's for the rest. */
const runOwn = (tool: string, run: string): [string, string] => [
  RUN_THE_TOOL,
  `    if (tool.name === '${tool}') return { content: await ${run}, isError: false };\n${RUN_THE_TOOL}`,
];
/** The learner's own read_file checks its paths itself, so the harness's check is skipped for it. */
const READ_GUARDED_BY_ITSELF: [string, string] = [
  "  if (typeof requested === 'string') {",
  "  if (typeof requested === 'string' && tool.name !== 'read_file') {",
];
const APPEND_RESULTS = "      agent.messages.push({ role: 'user', content: await answerCalls(agent, calls, signal) });";
const APPEND_NOT_DONE = "    agent.messages.push({ role: 'user', content: verdict.notDone });";
/** In the harness built from build.md: its protect check, the request to config.approve, and the run of a tool. */
const PROTECT = [
  "    if (typeof requested === 'string') {",
  '      const file = await safe_path(agent.context.root, requested);',
  '      const relative = path.relative(agent.context.root, file);',
  '      const guarded = (agent.config.protect ?? []).some((glob) => minimatch(relative, glob));',
  '      if (guarded && !tool.readOnly) return refuse(`${requested} is protected: change the code, not the checks.`);',
  '    }\n',
].join('\n');
const ASK = '      const answered = await approve({ tool: tool.name, preview, signal });';
const RUN_BUILT = '    const content = await tool.run(call.input, { ...agent.context, signal });';
const THE_REQUEST = '      { system: SYSTEM_PROMPT, tools: agent.toolDefinitions, messages: agent.messages },';

const MISTAKES: Mistake[] = [
  {
    name: 'a reply rebuilt from its text',
    patches: [
      [
        "  const content = reply.content.filter((block) => block.type !== 'text' || block.text.trim() !== '');",
        "  const content = reply.content.flatMap((block) => (block.type === 'text' && block.text.trim() !== '' ? " +
          "[{ type: 'text' as const, text: block.text }] : block.type === 'tool_use' ? [block] : []));",
      ],
    ],
    failsAt: 'p0',
    story: 'the reply goes back as received',
    says: /^the thinking block did not go back unchanged: the reply went back as /,
  },
  {
    name: 'the whole reply appended, id and usage included',
    patches: [
      [
        "  if (content.length > 0) agent.messages.push({ role: 'assistant', content });",
        '  if (content.length > 0) agent.messages.push({ ...reply, content });',
      ],
    ],
    failsAt: 'p0',
    story: 'the transcript is resent',
    says: /^request 2 would be refused by the API \(400\): messages\.1\.id: Extra inputs are not permitted\. Append/,
  },
  {
    name: 'empty text blocks sent back',
    patches: [
      [
        "  const content = reply.content.filter((block) => block.type !== 'text' || block.text.trim() !== '');",
        '  const content = reply.content;',
      ],
    ],
    failsAt: 'p0',
    story: 'the reply goes back as received',
    says: /^request 2 would be refused by the API \(400\): .*non-whitespace text\. Drop empty text blocks from a reply/,
  },
  {
    name: 'a reply with nothing left appended as an empty message',
    patches: [
      [
        "  if (content.length > 0) agent.messages.push({ role: 'assistant', content });",
        "  agent.messages.push({ role: 'assistant', content });",
      ],
    ],
    failsAt: 'p0',
    story: 'the reply goes back as received',
    says: /^request 4 would be refused by the API \(400\): .*non-empty content\. Never append a message without/,
  },
  {
    name: 'a model error escapes runTask',
    patches: [["    return { kind: 'error', message: `model call failed: ${errorText(error)}` };", '    throw error;']],
    failsAt: 'p0',
    story: 'a failed model call is a halt',
    says: /^runTask threw: 529 overloaded_error.*: nothing may escape runTask \(a failed model call is a halt/,
  },
  {
    name: 'requests sent without the system prompt',
    patches: [[THE_REQUEST, '      { tools: agent.toolDefinitions, messages: agent.messages },']],
    failsAt: 'p0',
    story: 'the transcript is resent',
    says: /^request 1 was sent without a system prompt: send one with every request$/,
  },
  {
    name: 'requests sent without the tool definitions',
    patches: [[THE_REQUEST, '      { system: SYSTEM_PROMPT, messages: agent.messages },']],
    failsAt: 'p1',
    story: 'every call answered',
    says: /^request 1 did not define the tool echo: send \{ name, description, input_schema \} of every tool/,
  },
  {
    name: "the next request is sent before the previous call's results are appended",
    patches: [
      [
        "  agent.messages.push({ role: 'user', content: task });",
        "  agent.messages.push({ role: 'user', content: task });\n" +
          '  const pending: Anthropic.ToolResultBlockParam[] = [];',
      ],
      [
        '    const reply = await callModel(agent, signal);',
        '    const reply = await callModel(agent, signal);\n' +
          "    if (pending.length > 0) agent.messages.push({ role: 'user', content: pending.splice(0) });",
      ],
      [APPEND_RESULTS, '      pending.push(...(await answerCalls(agent, calls, signal)));'],
    ],
    failsAt: 'p1',
    story: 'every call answered',
    says: /^request 2 would be refused .*without tool_result blocks.*Answer every tool_use with a tool_result in the/,
  },
  {
    name: 'a text block before the tool results',
    patches: [
      [
        APPEND_RESULTS,
        "      const results = await answerCalls(agent, calls, signal);\n      agent.messages.push({ role: 'user', " +
          "content: [{ type: 'text', text: 'Here are the results.' }, ...results] });",
      ],
    ],
    failsAt: 'p1',
    story: 'every call answered',
    says: /^request 2 would be refused by the API \(400\): .*must come first.*Put a reply's results first/,
  },
  {
    name: 'the calls of one reply run in parallel',
    patches: [
      [
        '  const results: Anthropic.ToolResultBlockParam[] = [];\n  for (const call of calls) {',
        '  return Promise.all(calls.map(async (call) => {',
      ],
      ['    results.push(result);\n  }\n  return results;', '    return result;\n  }));'],
    ],
    failsAt: 'p1',
    story: 'calls run one at a time, in order',
    says: /^log\.txt holds ".*", not the four lines in call order: the calls of one reply ran at the same time/,
  },
  {
    name: 'no schema check',
    patches: [
      [
        '  const input = tool.input.strict().safeParse(call.input);\n' +
          '  if (!input.success) return { content: `invalid arguments: ${z.prettifyError(input.error)}`, ' +
          'isError: true };',
        '  const input = { data: call.input as Record<string, unknown> };',
      ],
    ],
    failsAt: 'p2',
    story: 'arguments are checked, never coerced',
    says: /^count with n: "5" was answered without is_error: .*check every call's arguments with tool\.input\.strict\(\)/,
  },
  {
    name: 'arguments coerced to fit the schema ("5" becomes 5)',
    patches: [
      [
        '  const input = tool.input.strict().safeParse(call.input);',
        '  const args = call.input as Record<string, unknown>;\n' +
          "  for (const [key, value] of Object.entries(args)) if (typeof value === 'string' && /^\\d+$/.test(value)) " +
          'args[key] = Number(value);\n  const input = tool.input.strict().safeParse(args);',
      ],
    ],
    failsAt: 'p2',
    story: 'arguments are checked, never coerced',
    says: /^count with n: "5" was answered without is_error: "counted: \{\\"n\\":5\}": .*nothing coerced/,
  },
  {
    name: 'a read_file with no path guard at all',
    patches: [...WITH_OWN_TOOLS, READ_GUARDED_BY_ITSELF, runOwn('read_file', 'ownRead(agent, call.input, () => true)')],
    failsAt: 'p2',
    story: 'paths stay inside the project',
    says: /^the secret beside the project reached the model through read_file "\.\.\/secret\.txt".*refuse any outside/,
  },
  {
    name: "a read_file that checks only the path's text",
    patches: [
      ...WITH_OWN_TOOLS,
      READ_GUARDED_BY_ITSELF,
      runOwn('read_file', 'ownRead(agent, call.input, (file) => file.startsWith(agent.toolContext.root + path.sep))'),
    ],
    failsAt: 'p2',
    story: 'paths stay inside the project',
    says: /^the secret beside the project reached the model through read_file "link\/secret\.txt" \(a symlink/,
  },
  {
    name: 'an edit_file that replaces every match, without read-before-edit',
    patches: [...WITH_OWN_TOOLS, runOwn('edit_file', 'ownEdit(agent, call.input, false)')],
    failsAt: 'p2',
    story: 'an ambiguous edit is refused',
    says: /^the edit of "mode = debug", found twice in config\.txt, left it as ".*mode = fast.*": refuse an old_str/,
  },
  {
    name: 'an edit_file that replaces every match, with read-before-edit',
    patches: [...WITH_OWN_TOOLS, runOwn('edit_file', 'ownEdit(agent, call.input, true)')],
    failsAt: 'p2',
    story: 'an ambiguous edit is refused',
    says: /^the edit of "mode = debug", found twice in config\.txt, .*refuse an old_str that is not found exactly once/,
  },
  {
    name: 'a new tool context for every call',
    patches: [
      [
        RUN_THE_TOOL,
        '    const fresh = { root: agent.toolContext.root, seen: new Map<string, string>(), signal };\n' +
          '    return { content: await tool.run(call.input, fresh), isError: false };',
      ],
    ],
    failsAt: 'p2',
    story: 'fizzbuzz',
    says: /^the edit after read_file was refused .*keep one tool context, with its seen map, for the whole life/,
  },
  {
    name: 'a gate that never tells the model "not done"',
    patches: [[APPEND_NOT_DONE, '']],
    failsAt: 'p2',
    story: 'the gate',
    says: /^after the check failed, request 6 ended with an assistant message: tell the model "not done yet" in a user/,
  },
  {
    name: 'a gate that says "not done" without the test\'s output',
    patches: [['Its output:\\n\\n${output}\\n\\nFix the cause.', 'Fix the cause.']],
    failsAt: 'p2',
    story: 'the gate',
    says: /^after the check failed, the model was told ".*", without the check's output \("-1 !== 5"\)/,
  },
  {
    name: 'a gate that says "not done" as an assistant message',
    patches: [[APPEND_NOT_DONE, "    agent.messages.push({ role: 'assistant', content: verdict.notDone });"]],
    failsAt: 'p2',
    story: 'the gate',
    says: /^after the check failed, request 6 ended with an assistant message/,
  },
  {
    name: 'a killed check counts as a pass',
    patches: [
      [
        "typeof error.code === 'number' && !error.killed ? error.code : null;",
        "typeof error.code === 'number' ? error.code : 0;",
      ],
    ],
    failsAt: 'p2',
    story: 'a check that did not finish is a failure',
    says: /^the check was killed by a signal, so it had no exit code \(null\), and "done" was accepted: only 0 is$/,
  },
  {
    name: 'a check without a time limit',
    patches: [['{ cwd, signal, timeout, maxBuffer', '{ cwd, signal, maxBuffer']],
    failsAt: 'p2',
    story: 'a check that did not finish is a failure',
    says: /^the check ran past verifyTimeoutMs \(200 ms\) and "done" was accepted .*stop the command at config\.verify/,
  },
  {
    name: "the check's output sent whole",
    patches: [['resolve({ exitCode, output: kept });', 'resolve({ exitCode, output });']],
    failsAt: 'p2',
    story: 'a long failure is cut',
    says: /^the model was sent \d{6} characters of the check's output: keep its head and its tail/,
  },
  {
    name: 'a turn limit that counts only the turns with tool calls',
    patches: [[APPEND_NOT_DONE, `${APPEND_NOT_DONE}\n    turn--;`]],
    failsAt: 'p2',
    story: 'a model that keeps claiming "done" is stopped',
    says: /^a model claiming "done" while the check fails was called 100 times .*count every model call toward the turn/,
  },
  {
    name: 'a path check by startsWith(root), without a separator',
    patches: [
      ...WITH_OWN_TOOLS,
      READ_GUARDED_BY_ITSELF,
      runOwn(
        'read_file',
        'ownRead(agent, call.input, async (file) => (await realpath(file)).startsWith(agent.toolContext.root))',
      ),
    ],
    failsAt: 'p2',
    story: 'paths stay inside the project',
    says: /^the secret beside the project reached the model through read_file "\.\.\/project-private\/secret\.txt"/,
  },
  {
    name: 'config.root used as given, a symlink unresolved',
    patches: [['  const root = await realpath(config.root);', '  const root = config.root;']],
    failsAt: 'p2',
    story: 'a root reached through a symlink',
    says: /^with config\.root a symlink to the project, a call inside it was refused .*resolve config\.root once, with/,
  },
  {
    name: "safeParse with the tool's own schema, which drops unknown keys when it is a plain z.object",
    patches: [['tool.input.strict().safeParse(call.input)', 'tool.input.safeParse(call.input)']],
    failsAt: 'p2',
    story: 'arguments are checked, never coerced',
    says: /^tally \(a plain z\.object schema\) with an extra key was answered without is_error/,
  },
  {
    name: 'the read-before-edit memory reset for every task',
    patches: [
      [
        "  agent.messages.push({ role: 'user', content: task });",
        "  agent.messages.push({ role: 'user', content: task });\n  agent.toolContext.seen.clear();",
      ],
    ],
    failsAt: 'p2',
    story: 'what was read stays read',
    says: /^the edit in task 2 of notes\.txt, read in task 1, was refused .*not one per task$/,
  },
  {
    name: 'protected files matched against the path as the model spelled it',
    in: BUILT_FROM_THE_PAGE,
    patches: [['minimatch(relative, glob)', 'minimatch(requested, glob)']],
    failsAt: 'p3',
    story: 'a protected file stays as it is',
    says: /^test\.js, which config\.protect names, was changed by an edit of "\.\/test\.js": match the path as it/,
  },
  {
    name: 'approval asked about every call, reads included',
    in: BUILT_FROM_THE_PAGE,
    patches: [['if (!tool.readOnly && approve !== undefined) {', 'if (approve !== undefined) {']],
    failsAt: 'p3',
    story: 'a declined change is not made',
    says: /^config\.approve was asked about read_file, .*: ask only about tools that are not readOnly$/,
  },
  {
    name: 'protected files matched against the path\'s text, "./" stripped',
    in: BUILT_FROM_THE_PAGE,
    patches: [['minimatch(relative, glob)', "minimatch(requested.replace(/^\\.\\//, ''), glob)"]],
    failsAt: 'p3',
    story: 'a protected file stays as it is',
    says: /^test\.js, which config\.protect names, was changed by an edit of "sub\/\.\.\/test\.js": match the path as/,
  },
  {
    name: 'protected files refused only to edit_file',
    in: BUILT_FROM_THE_PAGE,
    patches: [['if (guarded && !tool.readOnly)', "if (guarded && tool.name === 'edit_file')"]],
    failsAt: 'p3',
    story: 'a protected file stays as it is',
    says: /^test\.js, which config\.protect names, was changed by write_file: refuse a protected path for every tool/,
  },
  {
    name: 'the person asked before the other checks',
    in: BUILT_FROM_THE_PAGE,
    patches: [
      [PROTECT, ''],
      [RUN_BUILT, `${PROTECT}${RUN_BUILT}`],
    ],
    failsAt: 'p3',
    story: 'a protected file stays as it is',
    says: /^config\.approve was asked \d+ times, about calls then refused anyway .*ask the person last/,
  },
  {
    name: 'an approver that throws taken for a yes',
    in: BUILT_FROM_THE_PAGE,
    patches: [[ASK, ASK.replace('signal });', 'signal }).catch(() => ({ approved: true as const }));')]],
    failsAt: 'p3',
    story: 'an approver that fails is a no',
    says: /^the edit ran though config\.approve threw: .*fail closed/,
  },
  {
    name: 'approval asked only about tools with a preview',
    in: BUILT_FROM_THE_PAGE,
    patches: [
      [
        'if (!tool.readOnly && approve !== undefined) {',
        'if (!tool.readOnly && approve !== undefined && tool.preview) {',
      ],
    ],
    failsAt: 'p3',
    story: 'a change without a preview is asked about too',
    says: /^append_line, which changes a file and has no preview, ran without config\.approve being asked/,
  },
  {
    name: 'config.approve handed the Tool object, not its name',
    in: BUILT_FROM_THE_PAGE,
    patches: [[ASK, ASK.replace('tool: tool.name', 'tool: tool as never')]],
    failsAt: 'p3',
    story: 'a declined change is not made',
    says: /^config\.approve was handed an object \(the Tool "edit_file"\) as its tool: hand it the tool's name/,
  },
  {
    name: 'the calls of a cut-off reply run',
    in: BUILT_FROM_THE_PAGE,
    patches: [["  if (cutOff) return refuse('Not run", "  if (cutOff && !cutOff) return refuse('Not run"]],
    failsAt: 'p3',
    story: 'a cut-off reply is not run',
    says: /^the call of a reply cut off at max_tokens ran, with arguments that may be cut short/,
  },
  {
    name: 'a cut-off reply without calls taken for "done"',
    in: BUILT_FROM_THE_PAGE,
    patches: [['    } else if (cutOff) {', '    } else if (cutOff && !cutOff) {']],
    failsAt: 'p3',
    story: 'a cut-off reply is not run',
    says: /^a reply cut off at max_tokens, without calls, was taken for "done": ask the model to go on instead$/,
  },
  {
    name: 'a compaction that forgets the summary before it',
    in: BUILT_FROM_THE_PAGE,
    patches: [
      ['const before = agent.summary === null ? [] : [summaryMessage(agent.summary.text)];', 'const before = [];'],
    ],
    failsAt: 'p4',
    story: 'endurance',
    says: /^request \d+ would be refused .*: messages\.0: the first message must use the "user" role\. .*the summary$/,
  },
  {
    name: 'a compaction that summarises only what came after the summary before it',
    in: BUILT_FROM_THE_PAGE,
    patches: [
      [
        'const before = agent.summary === null ? [] : [summaryMessage(agent.summary.text)];',
        "const before: Anthropic.MessageParam[] = [{ role: 'user', content: 'The conversation to summarise:' }];",
      ],
    ],
    failsAt: 'p4',
    story: 'endurance',
    says: /^summary request 2 did not carry summary 1: summarise the previous summary with the messages after it/,
  },
  {
    name: 'a compaction that keeps sending its first summary',
    in: BUILT_FROM_THE_PAGE,
    patches: [
      [
        '  agent.summary = { text: textOf(reply.content), from: cut };',
        '  agent.summary = { text: agent.summary?.text ?? textOf(reply.content), from: cut };',
      ],
    ],
    failsAt: 'p4',
    story: 'endurance',
    says: /^summary 2 was never sent: after a compaction the model sees the summary, then the recent part$/,
  },
  {
    name: 'a compaction that deletes the messages it summarised',
    in: BUILT_FROM_THE_PAGE,
    patches: [
      [
        '  agent.summary = { text: textOf(reply.content), from: cut };',
        '  agent.messages.splice(from, cut - from, summaryMessage(textOf(reply.content)));',
      ],
      ['const before = agent.summary === null ? [] : [summaryMessage(agent.summary.text)];', 'const before = [];'],
    ],
    failsAt: 'p4',
    story: 'endurance',
    says: /^the transcript keeps \d+ of the 45 reads: a compaction changes what the model is sent, never agent\.mess/,
  },
  {
    name: 'a summary request without tool_choice none',
    in: BUILT_FROM_THE_PAGE,
    patches: [["    tool_choice: { type: 'none' as const },\n", '']],
    failsAt: 'p4',
    story: 'endurance',
    says: /^summary request 1 offered the tools without tool_choice \{ type: 'none' \}/,
  },
  {
    name: 'a size estimate of the messages alone, without the system prompt and the tools',
    in: BUILT_FROM_THE_PAGE,
    patches: [['tokens({ system: agent.system, tools: agent.definitions, messages })', 'tokens({ messages })']],
    failsAt: 'p4',
    story: 'the whole request is counted',
    says: /^request \d+ was ~\d+ tokens, over the 20000-token window, .*its messages only ~\d+: count the system prompt/,
  },
  {
    name: 'almost nothing kept verbatim after a cut',
    in: BUILT_FROM_THE_PAGE,
    patches: [['if (cut !== null && tokens(agent.messages.slice(i)) > window / 4) break;', 'if (cut !== null) break;']],
    failsAt: 'p4',
    story: 'endurance',
    says: /^after summary 1, request \d+ kept only ~\d+ tokens of messages as they were: keep the recent part/,
  },
  {
    name: 'AGENTS.md never read',
    in: BUILT_FROM_THE_PAGE,
    patches: [["canDelegate ? await projectRules(root) : ''", "''"]],
    failsAt: 'p4',
    story: "the project's AGENTS.md reaches the model",
    says: /^the system prompt of request 1 did not carry the rule of the project's AGENTS\.md/,
  },
  {
    name: 'AGENTS.md read without the path check, through a symlink out',
    in: BUILT_FROM_THE_PAGE,
    patches: [["await safe_path(root, 'AGENTS.md')", "path.join(root, 'AGENTS.md')"]],
    failsAt: 'p4',
    story: 'an AGENTS.md linked out of the project is skipped',
    says: /^request 1 carried the AGENTS\.md outside the project, through the symlink: open it through/,
  },
  {
    name: "a sub-agent on the parent's system prompt",
    in: BUILT_FROM_THE_PAGE,
    patches: [['SUB_AGENT_SYSTEM, readOnly, false)', 'parent.system, readOnly, false)']],
    failsAt: 'p4',
    story: 'a sub-agent',
    says: /^the sub-agent was sent the parent's system prompt: give it one of its own/,
  },
  {
    name: 'a sub-agent on config.model instead of config.taskModel',
    in: BUILT_FROM_THE_PAGE,
    patches: [['config.taskModel ?? config.model', 'config.model']],
    failsAt: 'p4',
    story: 'a sub-agent',
    says: /^the task call never reached config\.taskModel .*runs a sub-agent on config\.taskModel$/,
  },
  {
    name: 'a sub-agent given every tool',
    in: BUILT_FROM_THE_PAGE,
    patches: [['config.tools.filter((tool) => tool.readOnly)', 'config.tools']],
    failsAt: 'p4',
    story: 'a sub-agent',
    says: /^the sub-agent was offered edit_file: give it the read-only tools only, never task$/,
  },
];

/** The harness with a mistake's patches applied, its imports pointed back into the repository. */
async function patched({ name, in: file = P2, patches }: Mistake): Promise<string> {
  let code = await readFile(path.join(REPOSITORY, file), 'utf8');
  for (const [find, replace] of patches) {
    assert.equal(code.split(find).length, 2, `${name}: the patch's text must occur once in ${file}: ${find}`);
    code = code.replace(find, () => replace);
  }
  const inRepository = (name: string) => pathToFileURL(path.join(REPOSITORY, name)).href;
  return code
    .replace(/from '(?:\.\.\/)+(tools|agent)\.ts'/g, (_, module: string) => `from '${inRepository(`${module}.ts`)}'`)
    .replace(/from '(zod|minimatch)'/g, (_, dependency: string) => `from '${import.meta.resolve(dependency)}'`);
}

const CHECKS_AT_ONCE = 6;
/** Longer than `--check`'s own: none of these harnesses hangs, and a busy machine must not make one look as if it did. */
const STORY_TIME_LIMIT_MS = 30_000;
const BUILT_FROM_THE_PAGE_FILE = path.join(REPOSITORY, BUILT_FROM_THE_PAGE);

/** What `npm run lesson -- ARGS` prints, and its exit code. */
async function lesson(args: string[]): Promise<{ code: number; output: string }> {
  const out = new PassThrough();
  let output = '';
  out.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  return { code: await runLesson(args, out, STORY_TIME_LIMIT_MS), output };
}

describe('learner mistakes: each fails --check at the step that teaches it, with a message naming it', () => {
  const outputs = new Map<string, { code: number; output: string }>();
  let dir = '';
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'learner-mistakes-'));
    await writeFile(path.join(dir, 'package.json'), '{ "type": "module" }\n');
    const checks = [
      // The stories alone: the generated scenarios of every step are test/lessons/generated-mistakes.check.ts's.
      async () =>
        outputs.set(BUILT_FROM_THE_PAGE, await lesson(['p4', '--check', BUILT_FROM_THE_PAGE_FILE, '--stories-only'])),
      ...MISTAKES.map((mistake, i) => async () => {
        const file = path.join(dir, `mistake-${i}.ts`);
        await writeFile(file, await patched(mistake));
        outputs.set(mistake.name, await lesson([mistake.failsAt, '--check', file]));
      }),
    ];
    // Each check plays its stories in folders of its own, so checks can run side by side; a few at a time, since each
    // starts `node test.js` now and then, and thirty at once on two busy cores would push a story past its time limit.
    const next = () => checks.shift();
    const worker = async () => {
      for (let check = next(); check !== undefined; check = next()) await check();
    };
    await Promise.all(Array.from({ length: CHECKS_AT_ONCE }, worker));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('a harness written from lessons/build.md alone, test/lessons/built-from-build-md.ts, reaches p4', () => {
    const { code, output } = outputs.get(BUILT_FROM_THE_PAGE)!;
    assert.equal(code, 0, output);
  });

  test('every story a mistake names exists, at the step it says', () => {
    for (const { story, failsAt } of MISTAKES)
      assert.ok(
        STORIES.some((s) => s.name === story && s.lesson === failsAt),
        `no ${failsAt} story "${story}"`,
      );
  });

  for (const mistake of MISTAKES) {
    test(`${mistake.name}: fails ${mistake.failsAt}, "${mistake.story}"`, () => {
      const { code, output } = outputs.get(mistake.name)!;
      assert.equal(code, 1, output);
      assert.match(output, new RegExp(`does not reach ${mistake.failsAt} yet`), output);
      const verdict = output.split('\n').findIndex((line) => line === `FAIL  ${mistake.failsAt}  ${mistake.story}`);
      assert.ok(verdict >= 0, output);
      const happened = output.split('\n')[verdict + 2]!.replace(/^ {8}happened: /, '');
      assert.match(happened, mistake.says, output);
    });
  }
});
