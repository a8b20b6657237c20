// npm run test:acp: MCP servers through one tool (app/mcp.ts), against a real stdio server (mcp-server.ts) that each
// test starts: the tool's description, a listing, the harness's validation against the server's schema, read-only
// tools approved unasked, a server that hangs or dies at start; then the terminal's --mcp and the editor's servers.

import * as acp from '@agentclientprotocol/sdk';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { approveAll, type ApprovalRequest } from 'reference-harness';
import { reply, text, toolUse } from 'reference-harness/scripted-model';
import { schemaProblem } from 'reference-harness/tools';
import { tempProject, within } from '../../test/helpers.ts';
import { readMcpFile, readsUnasked, startMcpServers, type McpServerSpec } from '../mcp.ts';
import { agentTextOf, rawClient, startAcp, updatesIn } from './acp-wire.ts';
import { calcServer } from './mcp-server.ts';
import { processesNaming } from './helpers.ts';
import { containedRunner, guardedDisk } from 'reference-harness/hardening';

const SERVER = path.join(import.meta.dirname, 'mcp-server.ts');
const TSX = import.meta.resolve('tsx');
/** The test server, started for `root`: its command line names the folder, so the test can find its process. */
const calc = (root: string, name = 'calc', ...args: string[]): Extract<McpServerSpec, { command: string }> => ({
  name,
  command: process.execPath,
  args: ['--import', TSX, SERVER, `--for=${root}`, ...args],
  env: {},
});
const bearer = (token: string) => ({ name: 'Authorization', value: `Bearer ${token}` });
const serversOf = (root: string) => processesNaming(`--for=${root}`);

test(
  "one mcp tool: its description names each server in a line, a listing gives a server's tools, the harness's " +
    "validation refuses arguments off the server's schema, read-only tools are approved unasked, results come back " +
    'as text, a failing tool fails, a server that hangs or cannot start is named as not started',
  async (t) => {
    const root = await tempProject(t, {});
    const missing = { name: 'gone', command: path.join(root, 'no-such-program'), args: [], env: {} };
    const servers = await startMcpServers([calc(root), calc(root, 'slow', '--hang'), missing], root, 3_000);
    t.after(() => servers.close());
    const { tool } = servers;
    assert.equal(tool.name, 'mcp');
    const lines = tool.description.split('\n').filter((line) => line.startsWith('- '));
    assert.deepEqual(lines.slice(0, 2), [
      '- calc: 4 tool(s); Sums and notes, for the tests',
      '- slow: not started: did not start within 3 s',
    ]);
    assert.match(lines[2]!, /^- gone: not started: .*ENOENT/);
    assert.equal(lines.length, 3);
    assert.ok(!tool.description.includes('adds two numbers'), 'a schema in the prompt before anyone listed it');
    assert.deepEqual(
      servers.said.map((said) => said.failed),
      [false, true, true],
    );

    const ctx = { root, seen: new Map<string, string>(), disk: guardedDisk, runner: containedRunner };
    const listing = await tool.run({ server: 'calc', action: 'list' }, ctx);
    assert.match(listing, /^add \(read-only\): adds two numbers\n {2}input: \{"type":"object"/);
    assert.match(listing, /\nnote: appends a line to notes\.txt\n/);

    const call = (name: string, args: object) => ({ server: 'calc', action: 'call', tool: name, arguments: args });
    assert.match(String(schemaProblem(tool, call('add', { a: 2, b: '3' }))), /arguments: not add's input: b: /);
    assert.match(String(schemaProblem(tool, call('add', { a: 2 }))), /arguments: not add's input/);
    assert.match(String(schemaProblem(tool, call('sub', {}))), /tool: calc has no tool "sub"; its tools are: add, /);
    assert.match(String(schemaProblem(tool, { server: 'web', action: 'list' })), /no MCP server "web"/);
    assert.equal(schemaProblem(tool, call('add', { a: 2, b: 3 })), null);
    assert.equal(tool.describe(call('add', { a: 2, b: 3 })), 'mcp calc: add a=2 b=3');
    assert.equal(tool.describe({ server: 'calc', action: 'list' }), 'mcp calc: list');

    assert.equal(await tool.run(call('add', { a: 2, b: 3 }), ctx), '5');
    assert.equal(await tool.run(call('picture', {}), ctx), '[image image/png]');
    await assert.rejects(tool.run(call('fail', {}), ctx), (error: unknown) => {
      return error instanceof Error && /it went wrong/.test(error.message);
    });
    await assert.rejects(tool.run({ server: 'slow', action: 'list' }, ctx), /the MCP server slow is not running/);
    assert.equal(await tool.run(call('note', { text: 'hello' }), ctx), 'noted');
    assert.equal(await readFile(path.join(root, 'notes.txt'), 'utf8'), 'hello\n');

    // Approval: a listing and a read-only tool unasked; a change, or a call a hook rewrote, asked.
    const asked: string[] = [];
    const approve = readsUnasked(servers, async (request) => {
      asked.push(request.preview);
      return { approved: false };
    });
    const request = (input: object, preview = servers.previewOf(input)): ApprovalRequest => ({
      tool: 'mcp',
      preview,
      signal: new AbortController().signal,
      call: { type: 'tool_use', id: 'c', name: 'mcp', input, caller: { type: 'direct' } },
      runsLater: null,
    });
    assert.deepEqual(await approve(request({ server: 'calc', action: 'list' })), { approved: true });
    assert.deepEqual(await approve(request(call('add', { a: 1, b: 1 }))), { approved: true });
    assert.deepEqual(await approve(request(call('note', { text: 'x' }))), { approved: false });
    const rewritten = servers.previewOf(call('note', { text: 'x' }));
    assert.deepEqual(await approve(request(call('add', { a: 1, b: 1 }), rewritten)), { approved: false });
    assert.equal(asked.length, 2);
    assert.match(
      asked[0]!,
      /^call note \(it may change things\) on the MCP server calc, with:\n\{\n {2}"text": "x"\n\}$/,
    );
    assert.equal(readsUnasked(servers, approveAll) === approveAll, false);

    await servers.close();
    await within(
      (async () => {
        while (serversOf(root).length > 0) await sleep(50);
      })(),
      'every server gone after close()',
      5_000,
    );
  },
);

test('an mcpServers file is read as the editors write it; one that is not is refused, saying why', async (t) => {
  const web = { type: 'http', url: 'https://example.com/mcp', headers: { Authorization: 'Bearer t' } };
  const root = await tempProject(t, {
    'mcp.json': JSON.stringify({ mcpServers: { calc: { command: 'node', args: ['s.js'], env: { A: '1' } }, web } }),
    'bad.json': JSON.stringify({ mcpServers: { web: { url: 'not a url' } } }),
    'worse.json': JSON.stringify({ servers: {} }),
  });
  assert.deepEqual(await readMcpFile(path.join(root, 'mcp.json')), [
    { name: 'calc', command: 'node', args: ['s.js'], env: { A: '1' } },
    { name: 'web', url: 'https://example.com/mcp', headers: { Authorization: 'Bearer t' } },
  ]);
  await assert.rejects(readMcpFile(path.join(root, 'bad.json')), /not an mcpServers file: mcpServers\.web/);
  await assert.rejects(readMcpFile(path.join(root, 'worse.json')), /not an mcpServers file: mcpServers: /);
});

/** The test server over streamable HTTP for the test's time, answering only `Authorization: Bearer right`: its URL. */
async function httpCalc(t: TestContext, root: string): Promise<string> {
  const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const http = createServer((req, res) => {
    if (req.headers.authorization !== 'Bearer right') return void res.writeHead(401).end();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    void calcServer(root)
      .connect(transport)
      .then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    http.closeAllConnections(); // a client's event stream stays open otherwise
    await new Promise((resolve) => http.close(resolve));
  });
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}

test('a server over HTTP (streamable HTTP) is reached at its URL with the headers given, and one that refuses them is named as not started', async (t) => {
  const root = await tempProject(t, {});
  const url = await httpCalc(t, root);
  const servers = await startMcpServers(
    [
      { name: 'web', url, headers: { Authorization: 'Bearer right' } },
      { name: 'locked', url, headers: { Authorization: 'Bearer wrong' } },
    ],
    root,
    5_000,
  );
  t.after(() => servers.close());
  assert.deepEqual(
    servers.said.map((said) => said.failed),
    [false, true],
  );
  const ctx = { root, seen: new Map<string, string>(), disk: guardedDisk, runner: containedRunner };
  const call = { server: 'web', action: 'call', tool: 'add', arguments: { a: 20, b: 22 } };
  assert.equal(await servers.tool.run(call, ctx), '42');
  assert.match(servers.tool.description, /\n- locked: not started: /);
});

const listThenCall = (...more: object[]) =>
  JSON.stringify([
    reply(text('Listing.'), toolUse('mcp', { server: 'calc', action: 'list' })),
    reply(toolUse('mcp', { server: 'calc', action: 'call', tool: 'add', arguments: { a: 2, b: '3' } })),
    reply(toolUse('mcp', { server: 'calc', action: 'call', tool: 'add', arguments: { a: 2, b: 3 } })),
    reply(toolUse('mcp', { server: 'calc', action: 'call', tool: 'note', arguments: { text: 'from the model' } })),
    ...more,
    reply(text('Done.')),
  ]);

test('--mcp FILE at the terminal: the servers start, a read-only call runs with nobody to ask, a change is refused', async (t) => {
  const root = await tempProject(t, { 'script.json': listThenCall() });
  const { command, args } = calc(root);
  await writeFile(path.join(root, 'mcp.json'), JSON.stringify({ mcpServers: { calc: { command, args } } }));
  const run = spawnSync(
    process.execPath,
    ['--import', TSX, path.join(import.meta.dirname, '..', 'main.ts'), '--mcp', 'mcp.json', '--script', 'script.json'],
    { cwd: root, encoding: 'utf8', input: 'use the calculator\n', timeout: 30_000 },
  );
  const said = run.stdout + run.stderr;
  assert.equal(run.status, 0, said);
  assert.match(said, /MCP calc: 4 tool\(s\)/);
  assert.match(said, /mcp calc: add a=2 b=3/);
  assert.match(said, /not add's input: b: /);
  assert.match(said, /there is no terminal to ask/);
  assert.equal(existsSync(path.join(root, 'notes.txt')), false, 'a change ran with nobody to ask');
  assert.deepEqual(serversOf(root), [], 'the server outlived the program');
});

test(
  "an editor's MCP server starts with its session: calls are shown with server and tool, a read-only one runs " +
    'unasked, a change is asked with its arguments, a server that cannot start is said so, and none outlives the ' +
    'program',
  async (t) => {
    const root = await tempProject(t, {
      'script.json': listThenCall(
        reply(toolUse('mcp', { server: 'calc', action: 'call', tool: 'fail' })),
        reply(toolUse('mcp', { server: 'web', action: 'call', tool: 'add', arguments: { a: 20, b: 22 } })),
      ),
      'mcp.json': JSON.stringify({
        mcpServers: { broken: { command: process.execPath, args: ['-e', 'process.exit(3)'] } },
      }),
    });
    const agent = startAcp(t, root, ['--script', 'script.json', '--mcp', 'mcp.json']);
    const raw = rawClient(agent);
    const init = await raw.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
    assert.deepEqual((init.result as acp.InitializeResponse).agentCapabilities?.mcpCapabilities, { http: true });
    const web = { type: 'http', name: 'web', url: await httpCalc(t, root), headers: [bearer('right')] };
    const sse = { type: 'sse', name: 'old', url: 'http://127.0.0.1:1/sse', headers: [] };
    const editors = [{ ...calc(root), env: [{ name: 'NOTE', value: 'given by the editor' }] }, web, sse];
    const opened = await raw.request('session/new', { cwd: root, mcpServers: editors });
    const { sessionId } = opened.result as acp.NewSessionResponse;
    const questions: acp.RequestPermissionRequest[] = [];
    raw.onRequest('session/request_permission', (params) => {
      questions.push(params as acp.RequestPermissionRequest);
      return { outcome: { outcome: 'selected', optionId: 'allow' } };
    });
    const done = await within(
      raw.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'use it' }] }),
      'the prompt',
      30_000,
    );
    assert.deepEqual(done.result, { stopReason: 'end_turn' });
    const updates = updatesIn(agent.messages);
    const calls = updates.filter((u) => u.sessionUpdate === 'tool_call');
    assert.deepEqual(
      calls.map((u) => u.title),
      [
        'mcp calc: list',
        'mcp server=calc action=call tool=add arguments={…}', // refused: said by its arguments
        'mcp calc: add a=2 b=3',
        'mcp calc: note text="from the model"',
        'mcp calc: fail',
        'mcp web: add a=20 b=22',
      ],
    );
    const ended = (call: (typeof calls)[number]) =>
      updates.filter((u) => u.toolCallId === call.toolCallId && u.sessionUpdate === 'tool_call_update').at(-1)!;
    assert.deepEqual(
      calls.map((call) => ended(call).status),
      ['completed', 'failed', 'completed', 'completed', 'failed', 'completed'],
    );
    assert.match(JSON.stringify(ended(calls[2]!).content), /"text":"5"/);
    assert.match(JSON.stringify(ended(calls[5]!).content), /"text":"42"/);
    assert.match(agent.stderr(), /MCP old: an sse server, and this agent takes stdio and HTTP ones: not used/);
    // Asked: the tools the server does not mark read-only (note, fail); not the listing, nor add.
    assert.deepEqual(
      questions.map((question) => question.toolCall.title),
      ['mcp calc: note text="from the model"', 'mcp calc: fail'],
    );
    assert.match(
      JSON.stringify(questions[0]!.toolCall.content),
      /call note \(it may change things\) on the MCP server calc/,
    );
    assert.equal(await readFile(path.join(root, 'notes.txt'), 'utf8'), 'from the model\n');
    assert.match(agent.stderr(), /MCP broken: not started/);
    assert.match(agent.stderr(), /MCP calc: 4 tool\(s\)/);
    assert.match(agentTextOf(updates), /^Listing\./);
    assert.equal(serversOf(root).length, 1, 'the server is not running: the check below cannot fail');
    agent.child.stdin.end();
    await within(agent.exited, 'the exit', 10_000);
    await within(
      (async () => {
        while (serversOf(root).length > 0) await sleep(50);
      })(),
      'the server gone after the program',
      5_000,
    );
    assert.deepEqual(agent.problems, []);
  },
);
