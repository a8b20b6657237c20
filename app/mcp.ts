// MCP servers, reached through one tool. The servers the person gives (`--mcp FILE`, the usual `mcpServers` JSON) or
// the editor gives (`session/new`) start as processes, each within a timeout; the model is given one `mcp` tool whose
// description names each server in a line, and lists a server's tools only when it needs one, so five servers cost a
// few lines of prompt, not every schema. A call goes through the harness's hooks like any other: its arguments are
// checked against the server's schema by the tool's own input schema (the harness's validation), it is approved
// unless the server marks the tool read-only, and its result passes the output cap. Servers a project names in its
// own files are never started: only the person's and the editor's.

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { errorText } from 'reference-harness';
import { defineTool, describeCall } from 'reference-harness/tools';
import { type Approver, issuesText, type Tool } from './harness.ts';

/** A server to start: a command and its arguments, with environment variables added to a minimal environment; or
 *  one already running at a URL (streamable HTTP), sent these headers. */
export type McpServerSpec =
  | { name: string; command: string; args: string[]; env: Record<string, string> }
  | { name: string; url: string; headers: Record<string, string> };

/** How long a server may take to start and list its tools; editors' servers often start through npx. */
export const MCP_START_TIMEOUT_MS = 30_000;
/** How long one call may run. */
export const MCP_CALL_TIMEOUT_MS = 120_000;
/** Characters of a server's own words (its title or instructions) in the tool's description. */
const ABOUT_CHARS = 120;
/** Characters of a server's stderr kept, to say why it did not start. */
const STDERR_CHARS = 2_000;

const serverEntry = z.union([
  z.strictObject({
    type: z.literal('stdio').optional(),
    command: z.string().min(1),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
  }),
  z.strictObject({
    type: z.literal('http').optional(),
    url: z.url(),
    headers: z.record(z.string(), z.string()).optional(),
  }),
]);
const mcpFile = z.object({ mcpServers: z.record(z.string(), serverEntry) });

/** The servers an `mcpServers` file lists (`{"mcpServers": {"name": {"command", "args", "env"}}}`, or `{"url",
 *  "headers"}` for one over HTTP); throws, saying what is wrong, for a file that is not one. */
export async function readMcpFile(file: string): Promise<McpServerSpec[]> {
  const text = await readFile(file, 'utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`${file} is not JSON: ${errorText(error)}`);
  }
  const parsed = mcpFile.safeParse(json);
  if (!parsed.success) throw new Error(`${file} is not an mcpServers file: ${issuesText(parsed.error)}`);
  return Object.entries(parsed.data.mcpServers).map(([name, entry]) =>
    'url' in entry
      ? { name, url: entry.url, headers: entry.headers ?? {} }
      : { name, command: entry.command, args: entry.args ?? [], env: entry.env ?? {} },
  );
}

/** One tool of a server, as listed, with the check of its arguments made from its input schema. */
interface ServerTool {
  name: string;
  description: string;
  inputSchema: object;
  readOnly: boolean;
  /** What is wrong with a call's arguments, or null; fails closed for a schema that cannot be checked. */
  problem(args: unknown): string | null;
}

/** A server that started, with its tools; or why it did not. */
type Server =
  | { name: string; started: true; client: Client; about: string; tools: Map<string, ServerTool> }
  | { name: string; started: false; problem: string };

/** The running servers: the one tool that reaches them, whether a call changes nothing, and how to stop them. */
export interface McpServers {
  readonly tool: Tool;
  /** Each server's start, in a line: how many tools, or why it did not start (`failed`). */
  readonly said: { text: string; failed: boolean }[];
  /** Whether a call of the tool changes nothing: a listing, or a tool the server marks read-only. */
  readOnly(input: unknown): boolean;
  /** What a call would do, for the person asked: the tool's preview. */
  previewOf(input: unknown): string;
  close(): Promise<void>;
}

/** Starts each server in `cwd` (side by side, each within the timeout) and lists its tools. A server that fails to
 *  start is named in the description as not started, and every call to it fails. */
export async function startMcpServers(
  specs: readonly McpServerSpec[],
  cwd: string,
  timeoutMs = MCP_START_TIMEOUT_MS,
): Promise<McpServers> {
  const servers = await Promise.all(specs.map((spec) => startServer(spec, cwd, timeoutMs)));
  const byName = new Map(servers.map((server) => [server.name, server]));
  const toolOf = (input: McpInput) => {
    const server = byName.get(input.server);
    return server?.started && input.tool !== undefined ? server.tools.get(input.tool) : undefined;
  };
  const previewOf = (input: unknown) => {
    const parsed = mcpInput.safeParse(input);
    if (!parsed.success) return JSON.stringify(input);
    const call = parsed.data;
    if (call.action === 'list') return `list the tools of the MCP server ${call.server}`;
    const changes = toolOf(call)?.readOnly ? 'read-only' : 'it may change things';
    const args = JSON.stringify(call.arguments ?? {}, null, 2);
    return `call ${call.tool} (${changes}) on the MCP server ${call.server}, with:\n${args}`;
  };
  return {
    tool: mcpTool(servers, byName, toolOf, previewOf),
    previewOf,
    said: servers.map((server) => ({
      text: `MCP ${server.name}: ${server.started ? `${server.tools.size} tool(s)` : server.problem}`,
      failed: !server.started,
    })),
    readOnly: (input) => {
      const parsed = mcpInput.safeParse(input);
      return parsed.success && (parsed.data.action === 'list' || toolOf(parsed.data)?.readOnly === true);
    },
    close: async () => {
      await Promise.allSettled(servers.map((server) => (server.started ? server.client.close() : undefined)));
    },
  };
}

/** Prevents a server that hangs or dies at start from holding the session up: it gets `timeoutMs` to start and list
 *  its tools, and is stopped (its process killed) if it does not. */
async function startServer(spec: McpServerSpec, cwd: string, timeoutMs: number): Promise<Server> {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  let stderr = '';
  const keep = (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_CHARS));
  const transport = await transportOf(spec, cwd, keep);
  const client = new Client({ name: 'reference-harness', version: '1' });
  const timer = new AbortController();
  const timeout = setTimeout(() => timer.abort(), timeoutMs);
  try {
    const options = { signal: timer.signal, timeout: timeoutMs };
    const starting = (async () => {
      await client.connect(transport, options);
      return await listTools(client, options);
    })();
    const stopped = new Promise<never>((_, reject) =>
      timer.signal.addEventListener('abort', () => reject(new Error(`did not start within ${timeoutMs / 1000} s`))),
    );
    const tools = await Promise.race([starting, stopped]);
    const version = client.getServerVersion();
    const about = oneLine(version?.title ?? client.getInstructions() ?? '');
    return { name: spec.name, started: true, client, about, tools };
  } catch (error) {
    await client.close().catch(() => {});
    const said = stderr.trim() === '' ? '' : ` (its stderr: ${oneLine(stderr.trim().split('\n').at(-1)!)})`;
    return { name: spec.name, started: false, problem: `not started: ${errorText(error)}${said}` };
  } finally {
    clearTimeout(timeout);
  }
}

/** How a server is reached: its process's stdio (its stderr kept), or its URL. */
async function transportOf(spec: McpServerSpec, cwd: string, stderr: (chunk: Buffer) => void) {
  if ('url' in spec) {
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    return new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers } });
  }
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const transport = new StdioClientTransport({ ...spec, cwd, stderr: 'pipe' });
  transport.stderr?.on('data', stderr);
  return transport;
}

/** A server's words in one short line. */
const oneLine = (text: string) => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= ABOUT_CHARS ? line : `${line.slice(0, ABOUT_CHARS - 1)}…`;
};

/** Every tool a server lists, page by page, each with the check of its arguments. */
async function listTools(client: Client, options: { signal: AbortSignal; timeout: number }) {
  const tools = new Map<string, ServerTool>();
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, options);
    for (const listed of page.tools) {
      tools.set(listed.name, {
        name: listed.name,
        description: listed.description ?? listed.annotations?.title ?? '',
        inputSchema: listed.inputSchema,
        readOnly: listed.annotations?.readOnlyHint === true,
        problem: argumentsCheck(listed.inputSchema),
      });
    }
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

/** The check of a call's arguments against a tool's JSON Schema; one that cannot be made refuses every call. */
function argumentsCheck(schema: object): (args: unknown) => string | null {
  try {
    const check = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
    return (args) => {
      const parsed = check.safeParse(args);
      return parsed.success ? null : issuesText(parsed.error);
    };
  } catch (error) {
    return () => `its input schema cannot be checked (${errorText(error)}), so it is not called`;
  }
}

const mcpInput = z.strictObject({
  server: z.string().describe('the server, as this description names it'),
  action: z.enum(['list', 'call']).describe("list: the server's tools and their input schemas; call: run one"),
  tool: z.string().optional().describe('for call: the tool, as list names it'),
  arguments: z.record(z.string(), z.unknown()).optional().describe('for call: its arguments, as its schema says'),
});
type McpInput = z.infer<typeof mcpInput>;

/** The one tool for every server. Its input schema checks a call against the server's own (so the harness's
 *  validation refuses bad arguments before anyone is asked); its description names each server in a line. */
function mcpTool(
  servers: readonly Server[],
  byName: ReadonlyMap<string, Server>,
  toolOf: (input: McpInput) => ServerTool | undefined,
  previewOf: (input: McpInput) => string,
): Tool {
  const input = mcpInput.superRefine((given, ctx) => {
    const problem = callProblem(given, byName, toolOf(given));
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
  });
  const lines = servers.map((server) =>
    server.started
      ? `- ${server.name}: ${server.tools.size} tool(s)${server.about === '' ? '' : `; ${server.about}`}`
      : `- ${server.name}: ${server.problem}`,
  );
  return defineTool({
    name: 'mcp',
    description: [
      "Reaches the MCP servers below. First list a server's tools (action list), then call one with arguments as",
      'its input schema says (action call, tool, arguments). Servers:',
      ...lines,
    ].join('\n'),
    input,
    readOnly: false, // a call may change anything; a listing and a read-only tool are approved unasked (readsUnasked)
    describe: (call) =>
      call.action === 'list'
        ? `mcp ${call.server}: list`
        : describeCall(`mcp ${call.server}: ${call.tool ?? '?'}`, call.arguments ?? {}, []),
    preview: async (call) => previewOf(call),
    run: async (call, ctx) => {
      const server = byName.get(call.server);
      if (!server?.started) throw new Error(`the MCP server ${call.server} is not running`);
      if (call.action === 'list') return listing(server.tools);
      const result = await server.client.callTool({ name: call.tool!, arguments: call.arguments ?? {} }, undefined, {
        timeout: MCP_CALL_TIMEOUT_MS,
        ...(ctx.signal && { signal: ctx.signal }),
      });
      const text = resultText(result);
      if (result.isError === true) throw new Error(text === '' ? `${call.tool} failed` : text);
      return text;
    },
  });
}

/** What is wrong with a call before it reaches a server, and where; null if nothing. */
function callProblem(
  given: McpInput,
  byName: ReadonlyMap<string, Server>,
  tool: ServerTool | undefined,
): { message: string; path: string[] } | null {
  const server = byName.get(given.server);
  if (server === undefined) {
    const names = [...byName.keys()].join(', ') || 'none';
    return { message: `no MCP server "${given.server}"; the servers are: ${names}`, path: ['server'] };
  }
  if (given.action === 'list' || !server.started) return null; // a server that did not start says so when called
  if (given.tool === undefined) return { message: 'a call names its tool', path: ['tool'] };
  if (tool === undefined) {
    const names = [...server.tools.keys()].join(', ');
    return { message: `${server.name} has no tool "${given.tool}"; its tools are: ${names}`, path: ['tool'] };
  }
  const problem = tool.problem(given.arguments ?? {});
  return problem === null ? null : { message: `not ${tool.name}'s input: ${problem}`, path: ['arguments'] };
}

/** A server's tools as the model reads them: name, whether it changes nothing, what it does, its input schema. */
function listing(tools: ReadonlyMap<string, ServerTool>): string {
  if (tools.size === 0) return 'this server has no tools';
  return [...tools.values()]
    .map((tool) => {
      const head = `${tool.name}${tool.readOnly ? ' (read-only)' : ''}: ${tool.description}`;
      return `${head}\n  input: ${JSON.stringify(tool.inputSchema)}`;
    })
    .join('\n');
}

/** A call's result as text: its text parts as they are, other parts named (an image is not read as text). */
function resultText(result: Awaited<ReturnType<Client['callTool']>>): string {
  const parts = Array.isArray(result.content) ? (result.content as Record<string, unknown>[]) : [];
  const texts = parts.map((part) => {
    if (part.type === 'text' && typeof part.text === 'string') return part.text;
    const resource = part.resource as { uri?: unknown; text?: unknown } | undefined;
    if (part.type === 'resource' && typeof resource?.text === 'string') return resource.text;
    const where = typeof part.uri === 'string' ? part.uri : typeof resource?.uri === 'string' ? resource.uri : '';
    const mime = typeof part.mimeType === 'string' ? ` ${part.mimeType}` : '';
    return `[${String(part.type)}${mime}${where && ` ${where}`}]`;
  });
  if (texts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return texts.join('\n');
}

/** Prevents asking about a call that changes nothing: a listing, or a tool its server marks read-only, is approved
 *  unasked; every other call goes to `approve`. The approver is shown the call as the model made it and the preview of
 *  the call as it will run, so a call a hook rewrote (its preview not the model's call's) is asked about too. */
export function readsUnasked(servers: McpServers, approve: Approver): Approver {
  return async (request) => {
    const { tool, call, preview } = request;
    const asMade = tool === servers.tool.name && preview === servers.previewOf(call.input);
    return asMade && servers.readOnly(call.input) ? { approved: true } : await approve(request);
  };
}
