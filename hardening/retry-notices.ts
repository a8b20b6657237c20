// Defends against: a wait the person cannot tell from a hang. The SDK retries 408, 409, 429 and
// 5xx by itself, with backoff, reading retry-after; this middleware says after each failed attempt
// what the SDK will do next (its own rule, shouldRetry), so "overloaded, retrying in 3 s" shows
// instead of silence.
// Tests: test/model/anthropic-model.test.ts (against the fake Messages API).

import type Anthropic from '@anthropic-ai/sdk';

/** The middleware that tells `onNotice` about each failed attempt, while `signal` is live. */
export function retryNotices(
  maxRetries: number,
  signal: AbortSignal,
  onNotice: (text: string) => void,
): Middleware {
  return async (request, next, context) => {
    const retried = Number(request.headers.get('x-stainless-retry-count') ?? 0);
    const left = (context.options?.maxRetries ?? maxRetries) - retried;
    const tell = (notice: string | null) => notice && !signal.aborted && onNotice(notice);
    const response = await next(request).catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      tell(retryNotice(`the connection failed (${message})`, null, retried, left));
      throw error;
    });
    if (!response.ok)
      tell(retryNotice(`the API answered ${response.status}`, response, retried, left));
    return response;
  };
}

type Middleware = NonNullable<Anthropic.RequestOptions['middleware']>[number];

/** What the SDK does after a failed attempt, by its own rule (shouldRetry). */
function retryNotice(what: string, response: Response | null, retried: number, left: number) {
  const header = (name: string) => response?.headers.get(name) ?? null;
  const said = header('x-should-retry');
  const status = response?.status ?? 500;
  const retryable =
    said === null ? [408, 409, 429].includes(status) || status >= 500 : said === 'true';
  if (!retryable) {
    return said === 'false' ? `${what}, and said not to retry (x-should-retry: false)` : null;
  }
  if (left <= 0) return `${what}; no retries left (${retried} made), so the call fails`;
  const seconds = Number(header('retry-after-ms') ?? NaN) / 1000 || Number(header('retry-after'));
  let when = 'shortly';
  if (seconds > 0) when = seconds < 1 ? 'in under a second' : `in ${Math.round(seconds)} s`;
  return `${what}; the SDK retries ${when} (retry ${retried + 1}, ${left - 1} more left)…`;
}
