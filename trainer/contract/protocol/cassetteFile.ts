import { z } from 'zod';
import { ToolErrorKind, TrajectorySet } from './runStore';

/**
 * `cassette.jsonl`: every tool call of a run that records its tools (`toolCassette.record`), one
 * line per call that passed its tool's schema, in the order the calls were made within each tool
 * round. A run or a re-roll can replay them instead of calling the tools (tools/cassette.ts).
 *
 * A call is found again by its origin — the trajectory set, step, the sequence's position in the
 * rollout (`trajectory`) — and its tool and canonical arguments (keys sorted): the k-th identical
 * call of a sequence gets the k-th recording. `turn` and `call` say where it was made, for people.
 */

/** A result's content part; image bytes are base64. */
export const CassetteContent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image'), data: z.string().min(1), mimeType: z.string().optional() }),
]);
export type CassetteContent = z.infer<typeof CassetteContent>;

export const CassetteEntry = z.object({
  set: TrajectorySet,
  step: z.number().int().nonnegative(),
  /** The sequence's position in its rollout (the agent loop's trajectory index). */
  trajectory: z.number().int().nonnegative(),
  turn: z.number().int().nonnegative(),
  call: z.number().int().nonnegative(),
  tool: z.string().min(1),
  /** The validated arguments, as JSON. */
  arguments: z.unknown(),
  /** What the tool returned (its `data` as JSON), or why it failed. */
  result: z.object({ content: z.array(CassetteContent), data: z.unknown().optional() }).optional(),
  error: z.object({ kind: ToolErrorKind, message: z.string(), summary: z.string().optional() }).optional(),
  latencyMs: z.number().nonnegative(),
  logs: z.array(z.string()).default([]),
});
export type CassetteEntry = z.infer<typeof CassetteEntry>;

export const CASSETTE_FILE = 'cassette.jsonl';
