// Defends against: a reply stream that stops sending and never ends. The SDK's `timeout` covers
// only the wait for the response's headers; once the stream has begun, nothing stops a silent
// one. This watch aborts it after `idleMs` without an event, and says so; it is armed when the
// answer arrives, so the SDK's waits between retries are no stall.
// Tests: test/loop/sessions.test.ts ("a stream that stalls mid-reply").

import type { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';

/** A signal for the stream's request, and `watch`, which awaits the stream's final message. */
export function stallWatch(idleMs: number) {
  const stall = new AbortController();
  const stalled = new Error(`the response stream stalled: no data for ${idleMs / 1000} s`);
  return {
    signal: stall.signal,
    async watch(stream: MessageStream) {
      let timer: NodeJS.Timeout | undefined;
      stream.on('connect', () => {
        (timer ??= setTimeout(() => stall.abort(stalled), idleMs)).refresh();
      });
      stream.on('streamEvent', () => timer?.refresh());
      try {
        return await stream.finalMessage();
      } catch (error) {
        throw stall.signal.aborted ? stalled : error;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
