// The bench row of a trip as a real run pays it, with what the program hangs on the events: the session file and
// the terminal printer (the harness's bare trip is test/bench/loop.ts's).

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import type { AgentEvent } from 'reference-harness';
import {
  benchAgent,
  type Measurement,
  median,
  noopScript,
  readPath,
  runChecked,
  SESSIONS,
  SMALL_FILES,
  spreadOf,
  withProject,
} from '../../../test/bench/loop.ts';
import { callsReply, ReplayModel, textReply } from '../../../test/bench/replay-model.ts';
import { TOOLS } from 'reference-harness/tools';
import { SESSION_VERSION, sessionRecorder } from '../../session-file.ts';
import { terminalPrinter } from '../../terminal.ts';

const REALISTIC_TRIPS = 1000;

/** A trip as a real run pays it: a read_file call on a small file, its session file line, the terminal printer. */
export async function realisticTrip(): Promise<Measurement> {
  return withProject(SMALL_FILES, async (root) => {
    const session = async (n: number) => {
      const replies = [
        ...noopScript(REALISTIC_TRIPS).map((i) => callsReply(i + 1, 'read_file', [{ path: readPath(i) }])),
        textReply(REALISTIC_TRIPS + 1, 'done'),
      ];
      const header = { type: 'session' as const, version: SESSION_VERSION, model: 'replay', root, startedAt: '' };
      const record = sessionRecorder(path.join(root, '.agent', `trips-${n}.jsonl`), header, []);
      const print = terminalPrinter(new Writable({ write: (_chunk, _encoding, done) => done() }));
      const requests: number[] = [];
      const results: AgentEvent[] = [];
      const agent = await benchAgent(root, new ReplayModel(replies), TOOLS, REALISTIC_TRIPS + 1, (event) => {
        if (event.type === 'request') requests.push(performance.now());
        if (event.type === 'result') results.push(event);
        record(event);
        print(event);
      });
      await runChecked(agent, 'read the four files, over and over', results);
      return median(requests.slice(1).map((t, i) => t - requests[i]!));
    };
    await session(0); // warm-up
    const medians: number[] = [];
    for (let i = 1; i <= SESSIONS; i++) medians.push(await session(i));
    return {
      ...spreadOf(medians),
      note:
        `read_file on one of four small files per trip (TOOLS, safe_path, hashing for read-before-edit), every ` +
        `event to the session file (sessionRecorder, synchronous appends) and to the terminal printer; ` +
        `ReplayModel; median of ${REALISTIC_TRIPS.toLocaleString('en')} trips, ${SESSIONS} sessions after a warm-up`,
    };
  });
}
