// Defends against: a hook or a tool that never answers holding the run forever. A before-call or
// after-call hook has a time limit (10 s unless it sets its own; approval waits for a person), and
// a tool still running 5 s after Ctrl-C or the time budget is given up on, its call answered
// "interrupted". Tests: test/loop/guards.test.ts ("a before-call hook that never answers …", "an
// after-call hook that never answers …", and under "stopping"), test/loop/hardening.test.ts.

const HOOK_TIMEOUT_MS = 10_000;

/** A hook's check, rejected if it throws or passes the hook's time limit. */
export async function withinHookTime<T>(
  hook: { timeoutMs?: number },
  check: () => T | Promise<T>,
): Promise<T> {
  const ms = hook.timeoutMs ?? HOOK_TIMEOUT_MS;
  const checked = new Promise<T>((resolve) => resolve(check()));
  if (!Number.isFinite(ms)) return await checked;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(reject, ms, new Error(`no answer within ${ms / 1000} s`));
  });
  return await Promise.race([checked, late]).finally(() => clearTimeout(timer));
}

export const ABORT_GRACE_MS = 5_000;

/** `work`, or `late` once ABORT_GRACE_MS have passed since `signal` aborted. */
export async function withinGrace<T>(work: Promise<T>, signal: AbortSignal, late: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let start = () => {};
  const grace = new Promise<T>((resolve) => {
    start = () => void (timer = setTimeout(() => resolve(late), ABORT_GRACE_MS));
  });
  if (signal.aborted) start();
  else signal.addEventListener('abort', start, { once: true });
  try {
    return await Promise.race([work, grace]);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', start);
  }
}
