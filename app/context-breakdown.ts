// /context, in the terminal and the editor: where the model's window goes, estimated as the harness
// estimates a request (3.5 characters a token, an image as what it costs).

import { estimateTokens } from 'reference-harness';
import { estimateMessages } from 'reference-harness/hardening';
import type { Agent } from './harness.ts';

/** The window, split into the system prompt, the tools, AGENTS.md, the messages shown and what is
 *  free. After a summary the model is shown the summary and the messages from `keptFrom` on. */
export function contextBreakdown(agent: Agent) {
  const window = agent.contextWindow;
  const projectFiles = agent.contextFiles.reduce((sum, file) => sum + estimateTokens(file.text), 0);
  const systemPrompt = estimateTokens(agent.system[0]?.text ?? '') - projectFiles;
  const toolDefinitions = estimateTokens(agent.toolDefinitions);
  const { compaction } = agent;
  const shown = compaction === null ? agent.messages : agent.messages.slice(compaction.keptFrom);
  const summary = compaction === null ? 0 : estimateTokens(compaction.summary);
  const messages = summary + estimateMessages(shown);
  const free = Math.max(window - systemPrompt - projectFiles - toolDefinitions - messages, 0);
  return { window, systemPrompt, toolDefinitions, projectFiles, messages, free };
}
