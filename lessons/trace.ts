// The lessons' printer: each event of a run as one line tagged with the part of the loop doing it (the parts in
// lessons/README.md), so `npm run lesson -- pN` shows the loop without the program around the harness. The
// program's `--trace` (app/terminal.ts) tells the same parts at more length.

import { type AgentEvent, textOfMessage } from '../agent.ts';

/** One line of text at most 90 characters long, whatever it held. */
const brief = (text: string) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 90 ? `${flat.slice(0, 87)}...` : flat;
};

/** What the readout makes of a reply: calls to answer, a claim of "done", or a cut-off reply, which is neither. */
function readout(calls: number, cutOff: boolean): string {
  if (cutOff)
    return calls === 0 ? 'cut off, no tool calls: not a claim of "done"' : `${calls} tool call(s), cut off: none runs`;
  return calls === 0 ? 'no tool calls: a claim of "done"' : `${calls} tool call(s) parsed`;
}

/** Prints every event to `out` as `[turn] part  what`; a sub-agent's events are indented under its id. */
export function tracePrinter(out: NodeJS.WritableStream, prefix = ''): (event: AgentEvent) => void {
  let turn = 0;
  const children = new Map<string, (event: AgentEvent) => void>();
  /** The calls a hook decided on or let through: any other call's result was refused before the hooks. */
  const gated = new Set<string>();
  const say = (part: string, what: string) => out.write(`${prefix}[${turn}] ${part.padEnd(14)} ${what}\n`);
  return (event) => {
    switch (event.type) {
      case 'request':
        turn = event.turn;
        say('state', `the model will see ${event.messages} message(s) of the transcript`);
        return say('prompt builder', `sends system prompt + tools + ${event.messages} message(s)`);
      case 'reply': {
        say('model', `replied (stop: ${event.stopReason})`);
        say('readout', readout(event.calls, event.stopReason === 'max_tokens'));
        const kept = event.content.some((block) => block.type !== 'text' || block.text.trim() !== '');
        return say(
          'fold back',
          kept ? "appended the model's reply, as received" : 'nothing to append: the reply was empty',
        );
      }
      case 'decision': {
        const { decision } = event;
        const why = decision.action === 'deny' ? `refused: ${brief(decision.reason)}` : decision.action;
        gated.add(event.call.id);
        return say('gate', `${event.call.name}: ${event.hook} ${why}`);
      }
      case 'running':
        gated.add(event.call.id);
        return say('gate', `${event.call.name}: allowed`);
      case 'result': {
        const content = typeof event.result.content === 'string' ? event.result.content : '';
        if (!gated.has(event.call.id)) say('gate', `${event.call.name}: refused: ${brief(content)}`);
        const how = event.result.is_error ? 'failed' : 'ran';
        return say('environment', `${event.call.name} ${how}: ${brief(content.split('\n')[0] ?? '')}`);
      }
      case 'message': {
        if (event.message.role === 'assistant') return; // told with the reply
        const { content } = event.message;
        const results = typeof content === 'string' ? 0 : content.filter((b) => b.type === 'tool_result').length;
        const said = brief(textOfMessage(event.message));
        if (results > 0) return say('fold back', `appended ${results} tool result(s)${said ? `, then "${said}"` : ''}`);
        return say('fold back', `appended a user message: "${said}"`);
      }
      case 'gate':
        return say('halt check', `verify \`${event.command}\` ${event.reason}: ${event.passed ? 'passed' : 'go on'}`);
      case 'compaction':
        return say('prompt builder', `compacted: a summary, then messages from #${event.keptFrom}`);
      case 'subagent': {
        let child = children.get(event.id);
        if (child === undefined) children.set(event.id, (child = tracePrinter(out, `${prefix}    ${event.id} `)));
        return child(event.event);
      }
      case 'halt':
        return say('halt check', `HALT: ${JSON.stringify(event.halt)}`);
      default:
        return;
    }
  };
}
