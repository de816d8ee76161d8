import { z } from 'zod';
import { ChatMessage } from './chatMessages';

/**
 * `rollout-studio serve-tools`: a config's tools over MCP (Streamable HTTP, at `/mcp`) and its
 * rewards over a small HTTP JSON endpoint, `POST /reward`, for a trainer elsewhere (verl) to
 * call. These are the reward endpoint's request and response; both sides validate them.
 *
 * A request scores a batch of trajectories together (as our trainer does a step: the `agent-r1`
 * combination normalises process rewards over the batch). Each item is one trajectory: the
 * dataset row it started from, as written in the dataset (its `id` set), and what the policy
 * generated — as chat `messages` (assistant turns, tool results), or as `response`, the text verl
 * decodes (the tokens after the prompt, special tokens skipped), which the server splits into
 * messages itself (trainer/bridges/verl/response.ts).
 */

export const RewardItem = z
  .object({
    row: z.record(z.string(), z.unknown()),
    messages: z.array(ChatMessage).optional(),
    response: z.string().optional(),
  })
  .refine((item) => (item.messages === undefined) !== (item.response === undefined), {
    message: 'give exactly one of "messages" (chat messages) and "response" (verl\'s decoded response text)',
  });
export type RewardItem = z.infer<typeof RewardItem>;

export const RewardRequest = z.object({ items: z.array(RewardItem).min(1) });
export type RewardRequest = z.infer<typeof RewardRequest>;

export const ServedCallReward = z.object({
  /** The assistant turn (0 = the first generated one) and the call's place in it. */
  turn: z.number().int().nonnegative(),
  index: z.number().int().nonnegative(),
  name: z.string().optional(),
  /** How the call was read: an error kind when it failed (from its observation), else none. */
  error: z.string().optional(),
  /** The call's process reward before combination (absent: no component had an opinion). */
  processReward: z.number().optional(),
  /** What entered the total: processReward · processScale. */
  scaled: z.number(),
  /** Each named part, unweighted (`tool:search`, `error_penalty`, a process reward's name). */
  components: z.record(z.string(), z.number()),
});
export type ServedCallReward = z.infer<typeof ServedCallReward>;

export const ServedTrajectoryReward = z.object({
  rowId: z.string(),
  /** outcome + process: the number a trainer elsewhere should use. */
  total: z.number(),
  outcome: z.number(),
  process: z.number(),
  /** Outcome rewards by name, and `process/<name>` sums, unweighted. */
  components: z.record(z.string(), z.number()),
  answer: z.string().optional(),
  calls: z.array(ServedCallReward),
});
export type ServedTrajectoryReward = z.infer<typeof ServedTrajectoryReward>;

export const RewardResponse = z.object({
  results: z.array(ServedTrajectoryReward),
  combine: z.enum(['weighted-sum', 'agent-r1']),
  processScale: z.number(),
});
export type RewardResponse = z.infer<typeof RewardResponse>;

/** What every failed request gets back (with a 4xx or 5xx status). */
export const ServeError = z.object({ error: z.string() });
export type ServeError = z.infer<typeof ServeError>;
