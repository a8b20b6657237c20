// A small MCP server on stdio for the tests, made with the protocol's own SDK: `add` (marked read-only), `note` (appends
// to notes.txt in its folder: a change), `fail` (answers an error), `picture` (answers an image). With the argument
// `--hang` it starts and never answers, to try the start-up timeout.

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { appendFileSync } from 'node:fs';

if (process.argv.includes('--hang')) {
  setInterval(() => {}, 1_000);
} else {
  const server = new Server(
    { name: 'calc', title: 'Sums and notes, for the tests', version: '1.0.0' },
    {
      capabilities: { tools: {} },
    },
  );
  const numbers = {
    type: 'object',
    properties: { a: { type: 'number' }, b: { type: 'number' } },
    required: ['a', 'b'],
    additionalProperties: false,
  } as const;
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
      appendFileSync('notes.txt', `${String(args.text)}\n`);
      return { content: [{ type: 'text', text: 'noted' }] };
    }
    if (params.name === 'picture') return { content: [{ type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }] };
    return { content: [{ type: 'text', text: 'it went wrong, as it always does' }], isError: true };
  });
  await server.connect(new StdioServerTransport());
}
