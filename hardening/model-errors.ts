// Defends against: a failed model call reported as "[object Object]", or without what the API
// said and its request id (what its support asks for). The SDK's errors are known by their shape,
// so an offline run never loads the SDK.
// Tests: test/model/anthropic-model.test.ts.

import type { APIError } from '@anthropic-ai/sdk';

/** The SDK's API errors, known by shape, so an offline run never loads the SDK. */
export const isApiError = (error: unknown): error is APIError<number> =>
  error instanceof Error && 'status' in error && 'apiMessage' in error;

export function describeModelError(error: unknown): string {
  if (!isApiError(error))
    return `model call failed: ${error instanceof Error ? error.message : String(error)}`;
  const id = error.requestID ? ` (request id ${error.requestID})` : '';
  const said = `${error.type ?? ''}: ${error.apiMessage ?? error.message}${id}`;
  return `model call failed: HTTP ${error.status} ${said}`;
}

export const isPromptTooLong = (error: unknown) =>
  isApiError(error) && error.status === 400 && /prompt is too long/i.test(error.message);
