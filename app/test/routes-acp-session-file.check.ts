// Route 1 of issue 28 under an editor: --acp sessions are stored like the terminal's (.agent/sessions, inside the
// project, where the check may write), so they get the same guard. The program is started with --acp as an editor
// would, and its check (with --no-sandbox, so nothing but the writer stands in the way) swaps the session file for a
// link to a fake ~/.bashrc; not a byte may reach it, and the editor is told why the writing stopped.

import * as acp from '@agentclientprotocol/sdk';
import assert from 'node:assert/strict';
import { lstatSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { say } from 'reference-harness/scripted-model';
import { tempProject, within } from '../../test/helpers.ts';
import { startAcp, updatesIn } from './acp-wire.ts';

const BASHRC = '# the person\'s shell start-up\nexport PATH="$HOME/bin:$PATH"\n';

test('an --acp check that swaps the session file for a link to ~/.bashrc gets nothing appended there, and the editor hears why', async (t) => {
  const root = await tempProject(t, { 'script.json': JSON.stringify([say('Done.'), say('Done.')]) });
  const home = await tempProject(t, { '.bashrc': BASHRC });
  const bashrc = path.join(home, '.bashrc');
  const swap = `for f in .agent/sessions/*.jsonl; do rm "$f" && ln -s '${bashrc}' "$f"; done`;
  const agent = startAcp(t, root, ['--script', 'script.json', '--no-sandbox', '--verify', swap]);
  const stream = acp.ndJsonStream(Writable.toWeb(agent.child.stdin), agent.output);
  await acp.client({ name: 'test editor' }).connectWith(stream, async (editor) => {
    await editor.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
    });
    const { sessionId } = await editor.request(acp.methods.agent.session.new, { cwd: root, mcpServers: [] });
    const prompt = [{ type: 'text' as const, text: 'go' }];
    await within(editor.request(acp.methods.agent.session.prompt, { sessionId, prompt }), 'the prompt turn', 20_000);
  });
  agent.child.stdin.end();
  await within(agent.exited, 'the exit after stdin closed', 5_000);
  const sessions = path.join(root, '.agent', 'sessions');
  const [name = ''] = readdirSync(sessions);
  assert.ok(lstatSync(path.join(sessions, name)).isSymbolicLink(), 'the check did swap the file for a link');
  assert.equal(await readFile(bashrc, 'utf8'), BASHRC, 'not a byte reached the file the link names');
  const told = `${JSON.stringify(updatesIn(agent.messages))}\n${agent.stderr()}`;
  assert.match(told, /the session file \S+ was replaced; no longer writing to it/);
  assert.deepEqual(agent.problems, []);
});
