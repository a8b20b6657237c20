// The Messages API's request rules, as one function that can run on any body: the fake API (test/model/fake-api.ts)
// answers 400 to a request that breaks them, and `npm run lesson -- pN --check FILE` fails the story that sent it.
// The body is untrusted JSON, so every field is narrowed from `unknown` before use.
import type Anthropic from '@anthropic-ai/sdk';

type Json = Record<string, unknown>;

const isRecord = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const asArray = (value: unknown): unknown[] | undefined => (Array.isArray(value) ? value : undefined);

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_CACHE_CONTROL = 4;
// The SDK's MessageParam also allows role "system"; the API we target accepts only these two.
const ROLES: readonly unknown[] = ['user', 'assistant'] satisfies Anthropic.MessageParam['role'][];
const ASSISTANT_ONLY: readonly unknown[] = ['thinking', 'redacted_thinking', 'tool_use'];
const IMAGE_TYPES: readonly unknown[] = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

export function requestViolations(
  body: unknown,
  signatureOk?: (thinking: string, signature: string) => boolean,
): string[] {
  if (!isRecord(body)) return ['request body must be a JSON object'];
  const violations: string[] = [];
  const { model, max_tokens } = body;
  if (typeof model !== 'string' || model === '') violations.push('model: must be a non-empty string');
  if (typeof max_tokens !== 'number' || !Number.isInteger(max_tokens) || max_tokens < 1) {
    violations.push('max_tokens: must be a positive integer');
  }
  checkTools(body.tools, violations);
  checkSystem(body.system, violations);
  const thinking = checkThinking(body.thinking, max_tokens, violations);
  const messages = asArray(body.messages);
  if (!messages?.length) violations.push('messages: must be a non-empty array');
  else checkMessages(messages, violations, signatureOk);
  if (thinking && messages?.length) checkThinkingKept(messages, violations);
  const marks = countCacheControl(body);
  if (marks > MAX_CACHE_CONTROL) {
    violations.push(`A maximum of ${MAX_CACHE_CONTROL} blocks with cache_control may be provided. Found ${marks}.`);
  }
  return violations;
}

function checkTools(tools: unknown, violations: string[]): void {
  if (tools === undefined) return;
  const list = asArray(tools);
  if (!list) {
    violations.push('tools: must be an array');
    return;
  }
  const names = new Set<string>();
  for (const [i, tool] of list.entries()) {
    if (!isRecord(tool)) {
      violations.push(`tools.${i}: must be an object`);
      continue;
    }
    const { name, input_schema, type } = tool;
    if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
      violations.push(`tools.${i}.name: must match ${TOOL_NAME}`);
    } else if (names.has(name)) {
      violations.push(`tools: tool names must be unique, "${name}" appears twice`);
    }
    if (typeof name === 'string') names.add(name);
    // Server tools (web_search_…, bash_…) are identified by a versioned `type` and carry no schema.
    const custom = type === undefined || type === null || type === 'custom';
    if (custom && !(isRecord(input_schema) && input_schema.type === 'object')) {
      violations.push(`tools.${i}.input_schema: must be an object with type "object"`);
    }
  }
}

/** Whether the request lets the model think: `{ type: 'enabled', budget_tokens }` below max_tokens. */
function checkThinking(thinking: unknown, maxTokens: unknown, violations: string[]): boolean {
  if (thinking === undefined || (isRecord(thinking) && thinking.type === 'disabled')) return false;
  if (!isRecord(thinking) || (thinking.type !== 'enabled' && thinking.type !== 'adaptive')) {
    violations.push('thinking: must be {"type": "enabled", "budget_tokens": N}, "adaptive" or "disabled"');
    return false;
  }
  if (thinking.type === 'adaptive') return true;
  const budget = thinking.budget_tokens;
  if (typeof budget !== 'number' || !Number.isInteger(budget) || budget < 1024) {
    violations.push('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
  } else if (typeof maxTokens === 'number' && maxTokens <= budget) {
    violations.push('`max_tokens` must be greater than `thinking.budget_tokens`');
  }
  return true;
}

/** With thinking on, the API needs the thinking of the model's last tool-use turn sent back: the
 *  last assistant message, when it called tools, starts with its thinking (a changed one fails its
 *  signature instead). */
function checkThinkingKept(messages: unknown[], violations: string[]): void {
  const at = messages.findLastIndex((message) => isRecord(message) && message.role === 'assistant');
  const content = at === -1 ? undefined : asArray((messages[at] as Json).content);
  const first = content?.[0];
  const calls = content?.some((block) => isRecord(block) && block.type === 'tool_use');
  if (!calls || (isRecord(first) && (first.type === 'thinking' || first.type === 'redacted_thinking'))) return;
  const found = isRecord(first) ? String(first.type) : typeof first;
  violations.push(
    `messages.${at}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${found}\`. ` +
      'When `thinking` is enabled, a final `assistant` message must start with a thinking block ' +
      '(preceeding the lastmost set of `tool_use` and `tool_result` blocks).',
  );
}

function checkSystem(system: unknown, violations: string[]): void {
  if (system === undefined || typeof system === 'string') return;
  const blocks = asArray(system);
  if (!blocks) {
    violations.push('system: must be a string or an array of text blocks');
    return;
  }
  for (const [i, block] of blocks.entries()) {
    if (!isRecord(block) || block.type !== 'text') violations.push(`system.${i}: must be a text block`);
    else if (!hasText(block.text))
      violations.push(`system.${i}.text: text content blocks must contain non-whitespace text`);
  }
}

const hasText = (text: unknown): boolean => typeof text === 'string' && text.trim() !== '';

function checkMessages(
  messages: unknown[],
  violations: string[],
  signatureOk?: (thinking: string, signature: string) => boolean,
): void {
  const toolUseIds = new Set<string>();
  // tool_use ids of the previous assistant message, which the next message must answer first.
  let awaiting: string[] = [];

  for (const [i, message] of messages.entries()) {
    const at = `messages.${i}`;
    const { role, content } = isRecord(message) ? message : { role: undefined, content: undefined };
    if (!ROLES.includes(role))
      violations.push(`${at}.role: must be "user" or "assistant", got ${JSON.stringify(role)}`);
    if (i === 0 && role !== 'user') violations.push(`${at}: the first message must use the "user" role`);
    // A reply appended whole (its id, model, stop_reason, usage) is the usual way to get here.
    for (const key of isRecord(message) ? Object.keys(message) : []) {
      if (key !== 'role' && key !== 'content') violations.push(`${at}.${key}: Extra inputs are not permitted`);
    }

    let blocks: unknown[] = [];
    if (typeof content === 'string' || Array.isArray(content)) {
      if (typeof content === 'string' ? content.trim() === '' : content.length === 0) {
        violations.push(`${at}: all messages must have non-empty content`);
      }
      if (Array.isArray(content)) blocks = content;
    } else {
      violations.push(`${at}.content: must be a string or an array of content blocks`);
    }

    const expected = awaiting;
    awaiting = [];
    const answered = new Set<string>();
    let inLeadingResults = true;

    for (const [j, block] of blocks.entries()) {
      const path = `${at}.content.${j}`;
      if (!isRecord(block) || typeof block.type !== 'string') {
        violations.push(`${path}: must be a content block object with a string "type"`);
        inLeadingResults = false;
        continue;
      }
      if (block.type !== 'tool_result') inLeadingResults = false;
      if (ASSISTANT_ONLY.includes(block.type) && role !== 'assistant') {
        violations.push(`${path}: ${block.type} blocks may only appear in assistant messages`);
      }
      if (block.type === 'image' && role !== 'user') {
        violations.push(`${path}: image blocks may only appear in user messages`);
      }

      switch (block.type) {
        case 'text':
          if (!hasText(block.text))
            violations.push(`${path}.text: text content blocks must contain non-whitespace text`);
          break;
        case 'thinking': {
          const { thinking, signature } = block;
          if (typeof thinking !== 'string' || typeof signature !== 'string') {
            violations.push(`${path}: thinking blocks need string "thinking" and "signature" fields`);
          } else if (signatureOk && !signatureOk(thinking, signature)) {
            violations.push(`${path}: invalid signature in thinking block (thinking block was modified)`);
          }
          break;
        }
        case 'image':
          checkImage(block.source, `${path}.source`, violations);
          break;
        case 'redacted_thinking':
          if (typeof block.data !== 'string')
            violations.push(`${path}.data: redacted_thinking blocks need a string "data"`);
          break;
        case 'tool_use': {
          const { id, name, input } = block;
          if (typeof id !== 'string' || id === '') {
            violations.push(`${path}.id: tool_use blocks need a non-empty string id`);
            break;
          }
          if (toolUseIds.has(id)) violations.push(`${path}: tool_use ids must be unique, "${id}" appears twice`);
          toolUseIds.add(id);
          if (typeof name !== 'string' || name === '') violations.push(`${path}.name: tool_use blocks need a name`);
          if (!isRecord(input)) violations.push(`${path}.input: must be an object`);
          if (role === 'assistant') awaiting.push(id);
          break;
        }
        case 'tool_result': {
          const id = block.tool_use_id;
          if (role !== 'user') {
            violations.push(`${path}: tool_result blocks may only appear in user messages`);
          } else if (!inLeadingResults) {
            violations.push(`${path}: tool_result blocks must come first in the content array, before any other block`);
          } else if (typeof id !== 'string' || !expected.includes(id)) {
            violations.push(
              `${path}: unexpected tool_use_id found in tool_result blocks: ${String(id)}. ` +
                'Each tool_result block must have a corresponding tool_use block in the previous message.',
            );
          } else if (answered.has(id)) {
            violations.push(`${path}: duplicate tool_result for tool_use id ${id}`);
          } else {
            answered.add(id);
          }
          break;
        }
      }
    }

    const missing = expected.filter((id) => !answered.has(id));
    if (missing.length) violations.push(unansweredToolUse(i - 1, missing));
  }
  if (awaiting.length) violations.push(unansweredToolUse(messages.length - 1, awaiting));
}

/** An image as the API takes it: base64 bytes of one of four types, or a URL. */
function checkImage(source: unknown, at: string, violations: string[]): void {
  if (isRecord(source) && source.type === 'url') {
    if (typeof source.url !== 'string' || source.url === '') violations.push(`${at}.url: must be a non-empty string`);
    return;
  }
  if (!isRecord(source) || source.type !== 'base64') {
    violations.push(`${at}: must be a base64 or url image source`);
    return;
  }
  if (!IMAGE_TYPES.includes(source.media_type)) {
    const types = IMAGE_TYPES.map((type) => `'${String(type)}'`).join(', ');
    violations.push(`${at}.base64.media_type: Input should be one of ${types}`);
  }
  const { data } = source;
  if (typeof data !== 'string' || data === '' || !/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length % 4 !== 0) {
    violations.push(`${at}.base64.data: must be non-empty base64 (the image's bytes)`);
  }
}

const unansweredToolUse = (index: number, ids: string[]): string =>
  `messages.${index}: tool_use ids were found without tool_result blocks immediately after: ${ids.join(', ')}. ` +
  'Each tool_use block must have a corresponding tool_result block in the next message.';

// tool_result blocks can carry marked blocks of their own, and those count toward the limit too.
function countCacheControl(body: Json): number {
  const inBlocks = (blocks: unknown): number =>
    (asArray(blocks) ?? []).reduce<number>((sum, block) => {
      if (!isRecord(block)) return sum;
      const own = block.cache_control != null ? 1 : 0;
      return sum + own + (block.type === 'tool_result' ? inBlocks(block.content) : 0);
    }, 0);
  const messages = asArray(body.messages) ?? [];
  // Automatic caching (a top-level mark) takes one of the four places too.
  return (
    (body.cache_control != null ? 1 : 0) +
    inBlocks(body.tools) +
    inBlocks(body.system) +
    messages.reduce<number>((sum, message) => sum + (isRecord(message) ? inBlocks(message.content) : 0), 0)
  );
}
