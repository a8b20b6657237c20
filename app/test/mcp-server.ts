// A small MCP server for the tests, made with the protocol's own SDK: `add` (marked read-only), `note` (appends to
// notes.txt in its folder: a change), `fail` (answers an error), `picture` (answers an image). Run as a program it
// serves stdio; with the argument `--hang` it starts and never answers, to try the start-up timeout. `calcServer()`
// is the same server for a test to serve over HTTP.

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { appendFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const numbers = {
  type: 'object',
  properties: { a: { type: 'number' }, b: { type: 'number' } },
  required: ['a', 'b'],
  additionalProperties: false,
} as const;

/** The server, answering its tools' calls; `note` writes in `folder`. */
export function calcServer(folder = '.'): Server {
  const server = new Server(
    { name: 'calc', title: 'Sums and notes, for the tests', version: '1.0.0' },
    { capabilities: { tools: {} } },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      { name: 'add', description: 'adds two numbers', inputSchema: numbers, annotations: { readOnlyHint: true } },
      {
        name: 'note',
        description: 'appends a line to notes.txt',
        inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      },
      { name: 'fail', description: 'always fails', inputSchema: { type: 'object' } },
      {
        name: 'picture',
        description: 'a tiny image',
        inputSchema: { type: 'object' },
        annotations: { readOnlyHint: true },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, ({ params }) => {
    const args = (params.arguments ?? {}) as Record<string, unknown>;
    if (params.name === 'add') return { content: [{ type: 'text', text: String(Number(args.a) + Number(args.b)) }] };
    if (params.name === 'note') {
      appendFileSync(`${folder}/notes.txt`, `${String(args.text)}\n`);
      return { content: [{ type: 'text', text: 'noted' }] };
    }
    if (params.name === 'picture') return { content: [{ type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }] };
    return { content: [{ type: 'text', text: 'it went wrong, as it always does' }], isError: true };
  });
  return server;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv.includes('--hang')) setInterval(() => {}, 1_000);
  else await calcServer().connect(new StdioServerTransport());
}
