// lessons/p0.ts — the harness after lesson P0: one request per task, the whole transcript resent, no tools.
// The model remembers nothing; the array you resend is all it knows.
//
//   runTask(agent, task):
//     append the task to agent.messages
//     reply = model.complete(system prompt + agent.messages)
//     append the reply, as received
//     halt: accepted (nothing checks it yet)
//
// Its acceptance: npm run lesson -- p0 --check lessons/p0.ts. Next: lessons/p1.ts adds the loop.

import type Anthropic from '@anthropic-ai/sdk';
import type { Model } from '../agent.ts';

/** Every harness gets { root, model, tools, verify?, onEvent? }; P0 needs only the model. */
export interface Config {
  model: Model;
  onEvent?: (event: Event) => void;
}

/** Every run ends in one of these, as a value: a failed model call is a halt, never an exception. */
export type Halt = { kind: 'accepted'; verifiedBy: null } | { kind: 'error'; message: string };

/** The harness never prints; it tells whoever listens how the run ended. */
export type Event = { type: 'halt'; halt: Halt; turns: number };

export interface Agent {
  readonly config: Config;
  /** The only state the model ever sees, resent whole on every request. */
  readonly messages: Anthropic.MessageParam[];
}

export const SYSTEM_PROMPT = 'You are a helpful assistant. Answer briefly.';

export function createAgent(config: Config): Agent {
  return { config, messages: [] };
}

export async function runTask(agent: Agent, task: string, signal = new AbortController().signal): Promise<Halt> {
  agent.messages.push({ role: 'user', content: task });
  let reply: Anthropic.Message;
  try {
    reply = await agent.config.model.complete(
      { system: SYSTEM_PROMPT, messages: agent.messages },
      { signal, onText: () => {}, onNotice: () => {} },
    );
  } catch (error) {
    return halt(agent, { kind: 'error', message: `model call failed: ${errorText(error)}` });
  }
  appendReply(agent, reply);
  return halt(agent, { kind: 'accepted', verifiedBy: null });
}

/** Keeps the reply exactly as received (a thinking block whose signature no longer matches is
 *  refused by the API), dropping only empty text blocks, which the API refuses to take back. */
function appendReply(agent: Agent, reply: Anthropic.Message): void {
  const content = reply.content.filter((block) => block.type !== 'text' || block.text.trim() !== '');
  if (content.length > 0) agent.messages.push({ role: 'assistant', content });
}

function halt(agent: Agent, reached: Halt): Halt {
  agent.config.onEvent?.({ type: 'halt', halt: reached, turns: 1 });
  return reached;
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));
