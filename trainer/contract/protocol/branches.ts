import { z } from 'zod';
import { PROTOCOL_VERSION } from './protocolVersion';
import { TrajectoryRecord, TrajectorySet } from './runStore';

/**
 * `branches/<id>.json`: one re-roll of a recorded trajectory — the rest of it generated again from
 * a cut point, maybe after an edit, with a chosen checkpoint and sampling, N times. Written whole
 * by `rollout-studio reroll` (training/reroll/reroll.ts); never read by training, never in the run's
 * metrics. Listed under their parent trajectory by the panels and replayable in the debugger.
 */

/** Where the parent was cut: before generated turn `turn` (`start`), or after it and before its calls' results (`call`). */
export const BranchCut = z.object({
  turn: z.number().int().nonnegative(),
  at: z.enum(['start', 'call']),
  /** The parent's token index at the cut: the branches share its tokens before it. */
  tokenIndex: z.number().int().nonnegative(),
});
export type BranchCut = z.infer<typeof BranchCut>;

/**
 * What was changed at the cut. At a `call` cut: a call's result text, or the arguments a call
 * runs with (the policy's tokens stay as written). At a `start` cut: a user or assistant message
 * inserted before the turn (after the previous turn's tool results, or after the prompt), the
 * template text from there re-rendered by the chat template's append path.
 */
export const BranchEdit = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('result'), call: z.number().int().nonnegative(), text: z.string() }),
  z.object({
    kind: z.literal('arguments'),
    call: z.number().int().nonnegative(),
    arguments: z.record(z.string(), z.unknown()),
  }),
  z.object({ kind: z.literal('message'), role: z.enum(['user', 'assistant']), content: z.string() }),
]);
export type BranchEdit = z.infer<typeof BranchEdit>;

export const BranchSet = z.object({
  protocol: z.literal(PROTOCOL_VERSION),
  /** Also the file name: `branches/<id>.json`. */
  id: z.string().regex(/^[A-Za-z0-9._-]+$/),
  createdAt: z.string(),
  parent: z.object({
    set: TrajectorySet,
    step: z.number().int().nonnegative(),
    index: z.number().int().nonnegative(),
    rowId: z.string(),
  }),
  cut: BranchCut,
  edits: z.array(BranchEdit),
  /** The weights that generated the branches: as asked (`best`, `step-3`, a folder) and the folder used. */
  checkpoint: z.object({ spec: z.string(), path: z.string() }),
  sampling: z.object({
    temperature: z.number().min(0),
    topK: z.number().int().nonnegative(),
    topP: z.number(),
    seed: z.number().int().nonnegative(),
    /** Branch 0 sampled with the parent's own random numbers from the cut on (so it reproduces the parent when nothing else changed). */
    followsParent: z.boolean(),
  }),
  /** Tools answered from the run's cassette (with misses as `onMiss` says), or called live. */
  tools: z.object({ source: z.enum(['live', 'cassette']), onMiss: z.enum(['error', 'live']).optional() }),
  branches: z.array(
    z.object({
      trajectory: TrajectoryRecord,
      /** The first token index where the branch differs from its parent; null: identical throughout. */
      firstDivergence: z.number().int().nonnegative().nullable(),
    }),
  ),
});
export type BranchSet = z.infer<typeof BranchSet>;

export function branchFile(id: string): string {
  return `branches/${id}.json`;
}
