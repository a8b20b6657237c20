import { createServer } from 'node:http';
import { serverOptions } from './options.js';

/** Starts the server; resolves with the port it listens on. */
export function start(handler, given) {
  const { port, timeoutMs } = serverOptions(given);
  const server = createServer(handler);
  server.requestTimeout = timeoutMs;
  return new Promise((resolve) =>
    server.listen(port, '127.0.0.1', () => resolve({ server, port: server.address().port })),
  );
}
