// test/lessons/independent-mistakes.ts — mistakes a learner makes while following lessons/build.md, written by
// someone who read only build.md, the lesson pages and the stage harnesses (lessons/p1.ts to lessons/p4.ts), not
// the scenario generator. Each is a small edit of the stage's correct harness: the same file with `edits` applied,
// each `old` occurring exactly once. Checked by independent-mistakes.check.ts: every one must fail its stage.

export type Stage = 'p1' | 'p2' | 'p3' | 'p4';

export interface Mistake {
  id: string;
  stage: Stage;
  /** The correct harness of the stage the mistake is made at, relative to the repository root. */
  file: string;
  edits: readonly { old: string; new: string }[];
  /** What the learner meant to do. */
  intent: string;
}

const P1 = 'lessons/p1.ts';
const P2 = 'lessons/p2.ts';
const P3 = 'lessons/p3.ts';
const P4 = 'lessons/p4.ts';

const p1: Mistake[] = [
  {
    id: 'p1-turn-limit-one-short',
    stage: 'p1',
    file: P1,
    edits: [{ old: 'turn <= MAX_TURNS; turn++', new: 'turn < MAX_TURNS; turn++' }],
    intent: 'a limit of 25 turns, written as the usual `<` loop',
  },
  {
    id: 'p1-turn-limit-from-zero',
    stage: 'p1',
    file: P1,
    edits: [{ old: 'let turn = 1; turn <= MAX_TURNS', new: 'let turn = 0; turn <= MAX_TURNS' }],
    intent: 'count turns from 0 like an index, keeping `<=` for the limit',
  },
  {
    id: 'p1-results-reversed',
    stage: 'p1',
    file: P1,
    edits: [{ old: 'results.push(result);', new: 'results.unshift(result);' }],
    intent: 'put each result at the front of the message, the newest first',
  },
  {
    id: 'p1-calls-side-by-side',
    stage: 'p1',
    file: P1,
    edits: [
      {
        old: `  const results: Anthropic.ToolResultBlockParam[] = [];
  for (const call of calls) {
    const { content, isError } = await execute(agent, call, signal);
    const result: Anthropic.ToolResultBlockParam = { type: 'tool_result', tool_use_id: call.id, content };
    if (isError) result.is_error = true;
    agent.config.onEvent?.({ type: 'result', call, result });
    results.push(result);
  }
  return results;`,
        new: `  return Promise.all(
    calls.map(async (call) => {
      const { content, isError } = await execute(agent, call, signal);
      const result: Anthropic.ToolResultBlockParam = { type: 'tool_result', tool_use_id: call.id, content };
      if (isError) result.is_error = true;
      agent.config.onEvent?.({ type: 'result', call, result });
      return result;
    }),
  );`,
      },
    ],
    intent: 'run the calls of one reply together with Promise.all, to be faster',
  },
  {
    id: 'p1-first-call-only',
    stage: 'p1',
    file: P1,
    edits: [{ old: 'for (const call of calls) {', new: 'for (const call of calls.slice(0, 1)) {' }],
    intent: 'the model makes one call per reply, so answer the first one',
  },
  {
    id: 'p1-unknown-tool-skipped',
    stage: 'p1',
    file: P1,
    edits: [
      {
        old: `  for (const call of calls) {
    const { content, isError } = await execute(agent, call, signal);`,
        new: `  for (const call of calls) {
    if (!agent.config.tools.some((t) => t.name === call.name)) continue;
    const { content, isError } = await execute(agent, call, signal);`,
      },
    ],
    intent: 'ignore a call to a tool that does not exist, there is nothing to run',
  },
  {
    id: 'p1-throwing-tool-not-an-error',
    stage: 'p1',
    file: P1,
    edits: [
      {
        old: `  } catch (error) {
    return { content: errorText(error), isError: true };
  }
}

function halt(`,
        new: `  } catch (error) {
    return { content: errorText(error), isError: false };
  }
}

function halt(`,
      },
    ],
    intent: 'give the model the error message of a throwing tool as its output',
  },
  {
    id: 'p1-throwing-tool-escapes',
    stage: 'p1',
    file: P1,
    edits: [
      {
        old: `  try {
    return { content: await tool.run(call.input, { ...agent.toolContext, signal }), isError: false };
  } catch (error) {
    return { content: errorText(error), isError: true };
  }`,
        new: `  return { content: await tool.run(call.input, { ...agent.toolContext, signal }), isError: false };`,
      },
    ],
    intent: 'the tools are given, and tested, so they do not need a try around them',
  },
  {
    id: 'p1-empty-output-is-error',
    stage: 'p1',
    file: P1,
    edits: [
      {
        old: `    return { content: await tool.run(call.input, { ...agent.toolContext, signal }), isError: false };`,
        new: `    const output = await tool.run(call.input, { ...agent.toolContext, signal });
    return output === '' ? { content: '(no output)', isError: true } : { content: output, isError: false };`,
      },
    ],
    intent: 'a tool that printed nothing must have failed: tell the model so',
  },
  {
    id: 'p1-whole-reply-appended',
    stage: 'p1',
    file: P1,
    edits: [
      {
        old: `if (content.length > 0) agent.messages.push({ role: 'assistant', content });`,
        new: `if (content.length > 0) agent.messages.push({ ...reply, content } as Anthropic.MessageParam);`,
      },
    ],
    intent: 'append the reply itself, it already has role assistant and its content',
  },
  {
    id: 'p1-whitespace-text-kept',
    stage: 'p1',
    file: P1,
    edits: [
      {
        old: `block.type !== 'text' || block.text.trim() !== ''`,
        new: `block.type !== 'text' || block.text !== ''`,
      },
    ],
    intent: 'drop the empty text blocks: the ones whose text is ""',
  },
  {
    id: 'p1-thinking-dropped',
    stage: 'p1',
    file: P1,
    edits: [
      {
        old: `block.type !== 'text' || block.text.trim() !== ''`,
        new: `block.type === 'tool_use' || (block.type === 'text' && block.text.trim() !== '')`,
      },
    ],
    intent: 'keep what the loop needs of a reply: its text and its tool calls',
  },
  {
    id: 'p1-results-after-a-text',
    stage: 'p1',
    file: P1,
    edits: [
      {
        old: `agent.messages.push({ role: 'user', content: await answerCalls(agent, calls, signal) });`,
        new: `agent.messages.push({
      role: 'user',
      content: [{ type: 'text', text: 'Here are the results.' }, ...(await answerCalls(agent, calls, signal))],
    });`,
      },
    ],
    intent: 'introduce the results with a sentence, so the model knows what follows',
  },
  {
    id: 'p1-budget-before-answering',
    stage: 'p1',
    file: P1,
    edits: [
      {
        old: `    if (calls.length === 0) return halt(agent, { kind: 'accepted', verifiedBy: null }, turn);
`,
        new: `    if (calls.length === 0) return halt(agent, { kind: 'accepted', verifiedBy: null }, turn);
    if (turn === MAX_TURNS) return halt(agent, { kind: 'budget', budget: 'turns', limit: MAX_TURNS }, turn);
`,
      },
    ],
    intent: 'stop at the last turn right away: no point running calls whose results nobody reads',
  },
  {
    id: 'p1-tools-signal-dropped',
    stage: 'p1',
    file: P1,
    edits: [
      {
        old: 'await tool.run(call.input, { ...agent.toolContext, signal })',
        new: 'await tool.run(call.input, agent.toolContext)',
      },
    ],
    intent: 'the context already has what a tool needs',
  },
  {
    id: 'p1-schema-without-required',
    stage: 'p1',
    file: P1,
    edits: [
      {
        old: `input_schema: { ...schema, type: 'object' }`,
        new: `input_schema: { type: 'object', properties: schema.properties }`,
      },
    ],
    intent: 'the model needs the type and the properties of the input, nothing more',
  },
  {
    id: 'p1-tools-only-on-first-request',
    stage: 'p1',
    file: P1,
    edits: [
      {
        old: `{ system: SYSTEM_PROMPT, tools: agent.toolDefinitions, messages: agent.messages }`,
        new: `{ system: SYSTEM_PROMPT, tools: agent.messages.length === 1 ? agent.toolDefinitions : [], messages: agent.messages }`,
      },
    ],
    intent: 'the model learns the tools from the first request; later ones save the tokens',
  },
];

const p2: Mistake[] = [
  {
    // Made at step 2, where build.md asks for realpath; no P1 tool looks at where the root really is, so it shows at P2.
    id: 'p2-root-not-resolved',
    stage: 'p2',
    file: P2,
    edits: [{ old: 'const root = await realpath(config.root);', new: 'const root = config.root;' }],
    intent: 'the root is a folder the check made, already a plain path',
  },
  {
    id: 'p2-path-check-by-prefix',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: `import { exec } from 'node:child_process';`,
        new: `import { exec } from 'node:child_process';\nimport path from 'node:path';`,
      },
      {
        old: `    const outside = await safe_path(agent.toolContext.root, requested).then(
      () => null,
      (error: unknown) => errorText(error),
    );`,
        new: `    const root = agent.toolContext.root;
    const outside = path.resolve(root, requested).startsWith(root) ? null : \`\${requested} is outside the project\`;`,
      },
    ],
    intent: 'a check of my own: the resolved path must start with the root',
  },
  {
    id: 'p2-path-check-relative-no-realpath',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: `import { exec } from 'node:child_process';`,
        new: `import { exec } from 'node:child_process';\nimport path from 'node:path';`,
      },
      {
        old: `    const outside = await safe_path(agent.toolContext.root, requested).then(
      () => null,
      (error: unknown) => errorText(error),
    );`,
        new: `    const root = agent.toolContext.root;
    const relative = path.relative(root, path.resolve(root, requested));
    const leaves = relative.startsWith('..') || path.isAbsolute(relative);
    const outside = leaves ? \`\${requested} is outside the project\` : null;`,
      },
    ],
    intent: 'compare whole segments with path.relative, as build.md says, instead of startsWith',
  },
  {
    id: 'p2-path-check-only-the-three-tools',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: `if (typeof requested === 'string') {`,
        new: `if (typeof requested === 'string' && ['list_files', 'read_file', 'edit_file'].includes(tool.name)) {`,
      },
    ],
    intent: 'check the path of the three file tools, the ones that take a path',
  },
  {
    id: 'p2-safe-path-not-awaited',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: `    const outside = await safe_path(agent.toolContext.root, requested).then(
      () => null,
      (error: unknown) => errorText(error),
    );`,
        new: `    let outside: string | null = null;
    safe_path(agent.toolContext.root, requested).catch((error: unknown) => {
      outside = errorText(error);
    });`,
      },
    ],
    intent: 'note the reason when safe_path rejects, and refuse if there is one',
  },
  {
    id: 'p2-absolute-path-refused',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: `  if (typeof requested === 'string') {
    const outside`,
        new: `  if (typeof requested === 'string') {
    if (requested.startsWith('/')) return { content: 'paths must be relative', isError: true };
    const outside`,
      },
    ],
    intent: 'an absolute path points somewhere on the machine: refuse it before safe_path',
  },
  {
    id: 'p2-dotdot-refused',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: `  if (typeof requested === 'string') {
    const outside`,
        new: `  if (typeof requested === 'string') {
    if (requested.includes('..')) return { content: 'no .. in paths', isError: true };
    const outside`,
      },
    ],
    intent: 'a path with .. is how one gets out: refuse it on sight',
  },
  {
    id: 'p2-schema-not-strict',
    stage: 'p2',
    file: P2,
    edits: [{ old: 'tool.input.strict().safeParse(call.input)', new: 'tool.input.safeParse(call.input)' }],
    intent: 'validate the arguments with the tool’s own schema',
  },
  {
    id: 'p2-schema-skipped-for-reads',
    stage: 'p2',
    file: P2,
    edits: [{ old: 'if (!input.success) return', new: 'if (!input.success && !tool.readOnly) return' }],
    intent: 'a read cannot break anything, so only check the arguments of tools that change files',
  },
  {
    id: 'p2-refused-path-not-an-error',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: 'if (outside !== null) return { content: outside, isError: true };',
        new: 'if (outside !== null) return { content: outside, isError: false };',
      },
    ],
    intent: 'the refusal is a normal answer that explains why, not a failure of the tool',
  },
  {
    id: 'p2-refused-call-not-answered',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: `    const decided = await decide(agent, call);
`,
        new: `    const decided = await decide(agent, call);
    if (!('tool' in decided) && decided.content.includes('outside')) continue;
`,
      },
    ],
    intent: 'a call out of the project gets nothing: the model should not learn what is out there',
  },
  {
    id: 'p2-killed-check-passes',
    stage: 'p2',
    file: P2,
    edits: [{ old: 'if (exitCode === 0) return', new: 'if (!exitCode) return' }],
    intent: 'exit code 0 means success: no error code',
  },
  {
    id: 'p2-only-exit-1-fails',
    stage: 'p2',
    file: P2,
    edits: [{ old: 'if (exitCode === 0) return', new: 'if (exitCode !== 1) return' }],
    intent: 'failing tests exit with 1',
  },
  {
    id: 'p2-verify-timeout-ignored',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: 'const { verify, root, verifyTimeoutMs = VERIFY_TIMEOUT_MS } = agent.config;',
        new: 'const { verify, root } = agent.config;\n  const verifyTimeoutMs = VERIFY_TIMEOUT_MS;',
      },
    ],
    intent: 'two minutes is long enough for any test suite',
  },
  {
    id: 'p2-verify-timeout-as-seconds',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: 'runCommand(verify, root, verifyTimeoutMs, signal)',
        new: 'runCommand(verify, root, verifyTimeoutMs * 1000, signal)',
      },
    ],
    intent: 'convert the time limit to milliseconds for exec',
  },
  {
    id: 'p2-verify-in-cwd',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: 'runCommand(verify, root, verifyTimeoutMs, signal)',
        new: 'runCommand(verify, process.cwd(), verifyTimeoutMs, signal)',
      },
    ],
    intent: 'run the check command where the harness runs, like npm test',
  },
  {
    id: 'p2-not-done-without-output',
    stage: 'p2',
    file: P2,
    edits: [{ old: 'Its output:\\n\\n${output}\\n\\nFix the cause.', new: 'Fix the cause.' }],
    intent: 'tell the model it is not done; it can run the tests itself',
  },
  {
    id: 'p2-not-done-as-assistant',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: `agent.messages.push({ role: 'user', content: verdict.notDone });`,
        new: `agent.messages.push({ role: 'assistant', content: verdict.notDone });`,
      },
    ],
    intent: 'the harness is on the agent’s side: its verdict goes in as the agent’s own note',
  },
  {
    id: 'p2-output-head-only',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: '`${output.slice(0, OUTPUT_KEPT_CHARS)}\\n[…]\\n${output.slice(-OUTPUT_KEPT_CHARS)}`',
        new: '`${output.slice(0, 2 * OUTPUT_KEPT_CHARS)}\\n[…]`',
      },
    ],
    intent: 'keep the output bounded: its first 8,000 characters',
  },
  {
    id: 'p2-output-cut-too-large',
    stage: 'p2',
    file: P2,
    edits: [{ old: 'const OUTPUT_KEPT_CHARS = 4_000;', new: 'const OUTPUT_KEPT_CHARS = 12_000;' }],
    intent: 'show the model more of the output: 12,000 characters from each end',
  },
  {
    id: 'p2-stderr-dropped',
    stage: 'p2',
    file: P2,
    edits: [{ old: 'const output = stdout + stderr;', new: 'const output = stdout;' }],
    intent: 'the output of the command is what it printed',
  },
  {
    id: 'p2-seen-cleared-per-task',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: `  agent.messages.push({ role: 'user', content: task });`,
        new: `  agent.messages.push({ role: 'user', content: task });\n  agent.toolContext.seen.clear();`,
      },
    ],
    intent: 'a new task starts from a clean slate: forget the reads of the last one',
  },
  {
    id: 'p2-seen-per-call',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: 'await tool.run(call.input, { ...agent.toolContext, signal })',
        new: 'await tool.run(call.input, { ...agent.toolContext, seen: new Map(), signal })',
      },
    ],
    intent: 'give each call a fresh context, so no call sees another’s state',
  },
  {
    id: 'p2-gate-failure-not-a-turn',
    stage: 'p2',
    file: P2,
    edits: [
      {
        old: `    agent.messages.push({ role: 'user', content: verdict.notDone });
`,
        new: `    agent.messages.push({ role: 'user', content: verdict.notDone });
    turn--;
`,
      },
    ],
    intent: 'a failed check is the harness’s doing, not the model’s: do not charge it a turn',
  },
];

const p3: Mistake[] = [
  {
    id: 'p3-protect-by-text',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: 'if (!tool.readOnly && isProtected(agent, file))',
        new: 'if (!tool.readOnly && (agent.config.protect ?? []).includes(requested))',
      },
    ],
    intent: 'refuse a change to a file named in protect',
  },
  {
    id: 'p3-protect-only-edit-file',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: 'if (!tool.readOnly && isProtected(agent, file))',
        new: `if (tool.name === 'edit_file' && isProtected(agent, file))`,
      },
    ],
    intent: 'edit_file is the tool that changes files, so protect against it',
  },
  {
    id: 'p3-protect-reads-too',
    stage: 'p3',
    file: P3,
    edits: [{ old: 'if (!tool.readOnly && isProtected(agent, file))', new: 'if (isProtected(agent, file))' }],
    intent: 'a protected file is off limits, to every tool',
  },
  {
    id: 'p3-protect-by-basename',
    stage: 'p3',
    file: P3,
    edits: [{ old: 'minimatch(relative, glob)', new: 'minimatch(path.basename(relative), glob)' }],
    intent: 'match the file name against the globs, wherever it is',
  },
  {
    id: 'p3-path-error-swallowed',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: 'const file = await safe_path(agent.toolContext.root, requested);',
        new: 'const file = await safe_path(agent.toolContext.root, requested).catch(() => path.resolve(agent.toolContext.root, requested));',
      },
    ],
    intent: 'protection only needs the file name; a path safe_path cannot resolve is resolved by hand',
  },
  {
    id: 'p3-approve-asked-first',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: `  const input = tool.input.strict().safeParse(call.input);
  if (!input.success)`,
        new: `  const asked = await approval(agent, tool, call, signal).catch((error: unknown) => errorText(error));
  if (asked !== null) return { content: asked, isError: true };
  const input = tool.input.strict().safeParse(call.input);
  if (!input.success)`,
      },
      {
        old: `    const approved = await approval(agent, tool, call, signal);
    if (approved !== null) return { content: approved, isError: true };
`,
        new: '',
      },
    ],
    intent: 'ask the person first: they decide, the checks come after',
  },
  {
    id: 'p3-approve-asked-about-reads',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: 'if (tool.readOnly || approve === undefined) return null;',
        new: 'if (approve === undefined) return null;',
      },
    ],
    intent: 'ask before every call: the person sees everything the agent does',
  },
  {
    id: 'p3-approve-handed-the-tool',
    stage: 'p3',
    file: P3,
    edits: [
      { old: '  tool: string;\n  preview: string;', new: '  tool: Tool;\n  preview: string;' },
      { old: 'approve({ tool: tool.name, preview, signal })', new: 'approve({ tool, preview, signal })' },
    ],
    intent: 'hand the approver the tool, it can read its name and whether it is read-only',
  },
  {
    id: 'p3-approver-error-allows',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: 'const answer = await approve({ tool: tool.name, preview, signal });',
        new: 'const answer = await approve({ tool: tool.name, preview, signal }).catch(() => ({ approved: true as const }));',
      },
    ],
    intent: 'a broken approver must not stop the agent from working',
  },
  {
    id: 'p3-throwing-preview-falls-back',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: 'await tool.preview(call.input, agent.toolContext)',
        new: 'await tool.preview(call.input, agent.toolContext).catch(() => JSON.stringify(call.input))',
      },
    ],
    intent: 'a preview that fails: show the input instead, as for a tool without one',
  },
  {
    id: 'p3-silent-approver-is-yes',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: 'const answer = await approve({ tool: tool.name, preview, signal });',
        new: `const answer = await Promise.race([
    approve({ tool: tool.name, preview, signal }),
    new Promise<{ approved: true }>((resolve) => setTimeout(() => resolve({ approved: true }), 500)),
  ]);`,
      },
    ],
    intent: 'nobody answering within half a second means nobody objects',
  },
  {
    id: 'p3-approver-not-given-the-signal',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: 'approve({ tool: tool.name, preview, signal })',
        new: 'approve({ tool: tool.name, preview, signal: new AbortController().signal })',
      },
    ],
    intent: 'the approver gets a signal of its own, so Ctrl-C in the loop does not cancel a question',
  },
  {
    id: 'p3-declined-not-an-error',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: 'if (approved !== null) return { content: approved, isError: true };',
        new: 'if (approved !== null) return { content: approved, isError: false };',
      },
    ],
    intent: 'a no from the person is an answer, not an error',
  },
  {
    id: 'p3-declined-reason-dropped',
    stage: 'p3',
    file: P3,
    edits: [
      { old: "`declined by the user${answer.reason ? `: ${answer.reason}` : ''}`", new: "'declined by the user'" },
    ],
    intent: 'say that the person declined',
  },
  {
    id: 'p3-cut-off-calls-run',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: 'const decided = cutOff ? NOT_RUN : await decide(agent, call, signal);',
        new: 'const decided = await decide(agent, call, signal);',
      },
    ],
    intent: 'the schema check refuses arguments that were cut short, so cut-off calls can be decided as usual',
  },
  {
    id: 'p3-cut-off-last-call-only',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: 'const decided = cutOff ? NOT_RUN : await decide(agent, call, signal);',
        new: 'const decided = cutOff && call === calls.at(-1) ? NOT_RUN : await decide(agent, call, signal);',
      },
    ],
    intent: 'the reply was cut off at its end, so only its last call can be incomplete',
  },
  {
    id: 'p3-cut-off-reply-is-done',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: `    if (cutOff) {
      agent.messages.push({ role: 'user', content: CONTINUE });
      continue;
    }
`,
        new: '',
      },
    ],
    intent: 'a reply without calls is a claim of done, cut off or not',
  },
  {
    id: 'p3-cut-off-not-a-turn',
    stage: 'p3',
    file: P3,
    edits: [
      {
        old: `      agent.messages.push({ role: 'user', content: CONTINUE });
      continue;`,
        new: `      agent.messages.push({ role: 'user', content: CONTINUE });
      turn--;
      continue;`,
      },
    ],
    intent: 'a cut-off reply is half a turn: it should not use up one of the 25',
  },
];

const p4: Mistake[] = [
  {
    id: 'p4-estimate-messages-only',
    stage: 'p4',
    file: P4,
    edits: [
      {
        old: 'tokensOf({ ...fixed, messages: view(agent) }) <= COMPACT_AT * window',
        new: 'tokensOf(view(agent)) <= COMPACT_AT * window',
      },
    ],
    intent: 'estimate the conversation: the messages are what grows',
  },
  {
    id: 'p4-compact-at-the-window',
    stage: 'p4',
    file: P4,
    edits: [{ old: '<= COMPACT_AT * window) return;', new: '<= window) return;' }],
    intent: 'compact when the request no longer fits the window',
  },
  {
    id: 'p4-cut-in-front-of-user',
    stage: 'p4',
    file: P4,
    edits: [
      {
        old: "if (agent.messages[i]?.role !== 'assistant') continue;",
        new: "if (agent.messages[i]?.role !== 'user') continue;",
      },
    ],
    intent: 'the recent part starts where the user speaks',
  },
  {
    id: 'p4-keep-last-exchange',
    stage: 'p4',
    file: P4,
    edits: [
      {
        old: 'if (cut !== null && tokensOf(agent.messages.slice(i)) > window / 4) break;',
        new: 'if (cut !== null) break;',
      },
    ],
    intent: 'summarise as much as possible: keep only the latest exchange',
  },
  {
    id: 'p4-keep-a-sixteenth',
    stage: 'p4',
    file: P4,
    edits: [{ old: '> window / 4) break;', new: '> window / 16) break;' }],
    intent: 'keep a small recent part, so the summary frees most of the window',
  },
  {
    id: 'p4-summary-replaces-messages',
    stage: 'p4',
    file: P4,
    edits: [
      {
        old: '  agent.summary = { text: summary, from: cut };',
        new: '  agent.messages.splice(0, cut, summaryMessage(summary));',
      },
    ],
    intent: 'replace the older messages by their summary, so they are gone for good',
  },
  {
    id: 'p4-second-summary-forgets-first',
    stage: 'p4',
    file: P4,
    edits: [
      {
        old: 'const earlier = agent.summary === null ? [] : [summaryMessage(agent.summary.text)];',
        new: 'const earlier: Anthropic.MessageParam[] = [];',
      },
    ],
    intent: 'summarise the messages since the last cut; the old summary was already made',
  },
  {
    id: 'p4-summary-request-without-tools',
    stage: 'p4',
    file: P4,
    edits: [
      {
        old: "{ ...fixed, tool_choice: { type: 'none' }, messages }",
        new: '{ system: agent.system, messages }',
      },
    ],
    intent: 'a summary request needs no tools, the model must answer in text',
  },
  {
    id: 'p4-summary-without-tool-choice',
    stage: 'p4',
    file: P4,
    edits: [{ old: "{ ...fixed, tool_choice: { type: 'none' }, messages }", new: '{ ...fixed, messages }' }],
    intent: 'the question says "answer in text only"; that is enough',
  },
  {
    id: 'p4-summary-costs-a-turn',
    stage: 'p4',
    file: P4,
    edits: [
      {
        old: '    const reply = await callModel(agent, signal);\n',
        new: '    const before = agent.summary;\n    const reply = await callModel(agent, signal);\n    if (agent.summary !== before) turn++;\n',
      },
    ],
    intent: 'a summary request is a model call, and every model call is a turn',
  },
  {
    id: 'p4-question-first',
    stage: 'p4',
    file: P4,
    edits: [
      {
        old: 'const messages = [...earlier, ...agent.messages.slice(from, cut), question];',
        new: 'const messages = [question, ...earlier, ...agent.messages.slice(from, cut)];',
      },
    ],
    intent: 'ask the question first, then give the conversation to summarise',
  },
  {
    id: 'p4-question-in-transcript',
    stage: 'p4',
    file: P4,
    edits: [
      {
        old: 'const messages = [...earlier, ...agent.messages.slice(from, cut), question];',
        new: 'const messages = [...earlier, ...agent.messages.slice(from, cut), question];\n  agent.messages.push(question);',
      },
    ],
    intent: 'keep every message in the transcript, the summary question too',
  },
  {
    id: 'p4-view-skips-the-cut',
    stage: 'p4',
    file: P4,
    edits: [
      { old: '...agent.messages.slice(agent.summary.from)]', new: '...agent.messages.slice(agent.summary.from + 1)]' },
    ],
    intent: 'the messages after the cut',
  },
  {
    id: 'p4-no-cut-summarises-all',
    stage: 'p4',
    file: P4,
    edits: [{ old: '  if (cut === null) return;', new: '  if (cut === null) cut = agent.messages.length - 1;' }],
    intent: 'no assistant message to cut at: summarise all but the latest message',
  },
  {
    id: 'p4-cut-may-repeat-the-last',
    stage: 'p4',
    file: P4,
    edits: [{ old: 'i > from; i--)', new: 'i >= from; i--)' }],
    intent: 'look for a cut from the end back to the previous cut, included',
  },
  {
    id: 'p4-agents-md-not-through-safe-path',
    stage: 'p4',
    file: P4,
    edits: [{ old: "await open(await safe_path(root, 'AGENTS.md'))", new: 'await open(`${root}/AGENTS.md`)' }],
    intent: 'AGENTS.md is at the root, a fixed name: no need for safe_path',
  },
  {
    id: 'p4-agents-md-cap-in-mib',
    stage: 'p4',
    file: P4,
    edits: [{ old: 'const AGENTS_MD_MAX_BYTES = 32 * 1024;', new: 'const AGENTS_MD_MAX_BYTES = 32 * 1024 * 1024;' }],
    intent: 'cap AGENTS.md at 32 MB',
  },
  {
    id: 'p4-agents-md-link-throws',
    stage: 'p4',
    file: P4,
    edits: [
      {
        old: `  } catch {
    return '';
  }`,
        new: `  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }`,
      },
    ],
    intent: 'a missing AGENTS.md is fine; any other trouble with it should be reported',
  },
  {
    id: 'p4-sub-agent-all-tools',
    stage: 'p4',
    file: P4,
    edits: [
      { old: 'const readOnly = config.tools.filter((tool) => tool.readOnly);', new: 'const readOnly = config.tools;' },
    ],
    intent: 'the sub-agent gets the project’s tools; its prompt says it must not edit',
  },
  {
    id: 'p4-sub-agent-parent-prompt',
    stage: 'p4',
    file: P4,
    edits: [{ old: 'SUB_AGENT_PROMPT, readOnly, TASK_MAX_TURNS)', new: 'SYSTEM_PROMPT, readOnly, TASK_MAX_TURNS)' }],
    intent: 'the sub-agent is the same agent: give it the same system prompt',
  },
  {
    id: 'p4-sub-agent-parent-turn-limit',
    stage: 'p4',
    file: P4,
    edits: [{ old: 'SUB_AGENT_PROMPT, readOnly, TASK_MAX_TURNS)', new: 'SUB_AGENT_PROMPT, readOnly, MAX_TURNS)' }],
    intent: 'the sub-agent runs the same loop, with the same turn limit',
  },
  {
    id: 'p4-sub-agent-ignores-task-model',
    stage: 'p4',
    file: P4,
    edits: [{ old: 'const model = config.taskModel ?? config.model;', new: 'const model = config.model;' }],
    intent: 'the sub-agent runs on the agent’s model',
  },
  {
    id: 'p4-sub-agent-keeps-verify',
    stage: 'p4',
    file: P4,
    edits: [{ old: '{ ...config, model, verify: undefined }', new: '{ ...config, model }' }],
    intent: 'the sub-agent is a copy of the agent’s settings with its own model',
  },
  {
    id: 'p4-sub-agent-stop-is-an-error',
    stage: 'p4',
    file: P4,
    edits: [
      {
        old: 'return `[the sub-agent stopped: ${why}]\\n${said}`;',
        new: 'throw new Error(`the sub-agent stopped: ${why}`);',
      },
    ],
    intent: 'a sub-agent that did not finish has failed: its call is an error',
  },
  {
    id: 'p4-sub-agent-whole-transcript',
    stage: 'p4',
    file: P4,
    edits: [
      {
        old: "if (ended.kind === 'accepted') return said || '(the sub-agent gave no answer)';",
        new: "if (ended.kind === 'accepted')\n        return child.messages.map((m) => (typeof m.content === 'string' ? m.content : textOf(m.content))).join('\\n');",
      },
    ],
    intent: 'hand back everything the sub-agent said, so the parent has the whole story',
  },
];

export const MISTAKES: readonly Mistake[] = [...p1, ...p2, ...p3, ...p4];
