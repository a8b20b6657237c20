// The hardening: production defences beside the reading path, a file per threat, each plugged into
// a seam agent.ts and tools.ts define. GUARDED is createAgent's default, so a forker of the API
// never gets weaker defaults than the program; `hardening: PLAIN` (agent.ts) is the reading path
// alone, as the lessons teach it.
//
//   file                 threat                                                  seam
//   sandbox.ts           the check reads secrets, reaches the network, leaves    runner, root
//                        anything behind
//   command-output.ts    a check's megabytes of output, a child holding its      runner
//                        pipes after the kill
//   runs-later.ts        a write that runs later passes under a blanket yes      before-call hook
//   repository-data.ts   a read shows the model .git's tokens or session files   before-call hook
//   context-files.ts     an AGENTS.md that hangs the start, or is read whole     AGENTS.md
//   file-tree.ts         listings drown in ignored files, fail on one folder     disk.list
//   read-window.ts       reads that block (pipes), load 1 GB, or follow a swap   disk.read
//   atomic-write.ts      half-written files, a write through a swapped folder    disk.write
//   fingerprints.ts      a protected file changed where the gate cannot see      disk.fingerprints
//   closest-lines.ts     a model retrying a "not found" edit blind               after-call hook
//   damaged-session.ts   a session file that can never resume                    resume
//   retry-notices.ts     the SDK's retries look like a hang                      the real model
//   stalled-stream.ts    a reply stream that goes silent forever                 the real model
//   model-errors.ts      a failed call reported without what the API said       the loop
//   malformed-input.ts   a call input that breaks every later request            the loop
//   huge-messages.ts     one huge message breaks the session                     the transcript
//   frozen-transcript.ts a message changed after the model saw it                the transcript
//   pasted-images.ts     a screenshot counted by its bytes, or cut into garbage  the transcript
//   line-endings.ts      "not found" in a file with other line breaks           edit_file
//   hidden-characters.ts a call shown as something it is not                    every view
//   hung-calls.ts        a hook or a tool that never answers                     the loop
//   spending.ts          a run spends more dollars than allowed                  the loop

import type { Disk } from '../tools.ts';
import { sweepStrandedWrites, writeAtomically } from './atomic-write.ts';
import { closestLinesHint } from './closest-lines.ts';
import { listIgnoring } from './file-tree.ts';
import { fingerprintsOf } from './fingerprints.ts';
import { readWindow } from './read-window.ts';
import { repositoryDataCheck } from './repository-data.ts';
import { runsLaterCheck } from './runs-later.ts';
import { containedRunner, sandboxableRoot } from './sandbox.ts';

export const guardedDisk: Disk = {
  list: listIgnoring,
  read: readWindow,
  write: writeAtomically,
  fingerprints: fingerprintsOf,
};

/** createAgent's defaults (agent.ts types them as a Hardening; nothing here imports agent.ts). */
export const GUARDED = {
  disk: guardedDisk,
  runner: containedRunner,
  // The root vetted; what a write that died mid-way left is cleared first.
  root: async (given: string) => {
    await sweepStrandedWrites();
    return await sandboxableRoot(given);
  },
  beforeCall: [repositoryDataCheck, runsLaterCheck],
  afterCall: [closestLinesHint],
};

export { closestLines } from './closest-lines.ts';
export { walk } from './file-tree.ts';
export { globMatcher, hashProtected } from './fingerprints.ts';
export { openReadable } from './read-window.ts';
export { readablePath } from './repository-data.ts';
export { runsLaterReason } from './runs-later.ts';
export {
  containedRunner,
  lookForProgramsIn,
  sandboxableRoot,
  sandboxProblem,
  seatbeltArgs,
  trustedProgram,
} from './sandbox.ts';
export { checkedFolder } from './atomic-write.ts';
export {
  type KnownOutcome,
  type LoadedSession,
  resume,
  transcriptRepair,
} from './damaged-session.ts';
export {
  deepFreeze,
  estimateMessages,
  freezeNewMessages,
  runReadOnly,
} from './frozen-transcript.ts';
export { capStrings, pieceEnd, withinShare } from './huge-messages.ts';
export { withinGrace, withinHookTime } from './hung-calls.ts';
export {
  MAX_INPUT_DEPTH,
  nestedDeeperThan,
  UNUSABLE,
  withResendableInputs,
} from './malformed-input.ts';
export { describeModelError, isPromptTooLong } from './model-errors.ts';
export { retryNotices } from './retry-notices.ts';
export { costOf, type Price, refuseUnpricedBudget } from './spending.ts';
export { stallWatch } from './stalled-stream.ts';
