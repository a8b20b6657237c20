// The server's options: what the caller gave, and a default for anything left out.

export const DEFAULTS = { port: 8080, retries: 3, timeoutMs: 30_000, verbose: false };

/** The options to start the server with. Port 0 means "any free port"; retries 0 means "never retry". */
export function serverOptions(given = {}) {
  return {
    port: given.port || DEFAULTS.port,
    retries: given.retries || DEFAULTS.retries,
    timeoutMs: given.timeoutMs || DEFAULTS.timeoutMs,
    verbose: given.verbose || DEFAULTS.verbose,
  };
}
