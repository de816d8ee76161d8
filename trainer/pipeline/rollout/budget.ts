import { z } from 'zod';
import { describeIssues } from '../../contract/protocol/parse';

/**
 * The one length budget of a rollout. Four numbers, each with one meaning:
 *
 * - `maxTurns`: assistant turns (generations) per trajectory. Calls made in the last allowed
 *   turn still run (their results and process rewards are recorded) but nothing more is generated.
 * - `maxNewTokensPerTurn`: tokens one generation may add. A turn that reaches it is cut and ends
 *   the trajectory (`max_turn_tokens`): its tool calls are incomplete and are not run.
 * - `maxTotalTokens`: the whole sequence — prompt, generated turns, tool results, template text.
 *   A turn gets min(maxNewTokensPerTurn, what is left); tool results that would leave no room to
 *   generate end the trajectory (`max_total_tokens`) instead of being appended.
 * - `maxToolResultTokens`: one observation's tokens; longer ones are cut, with a visible marker.
 *
 * Checked before the run: the numbers themselves here, and every prompt against them in
 * `prepareEpisodes` (a prompt must leave room for one full turn), with the row named.
 */
export const LengthBudget = z
  .object({
    maxTurns: z.number().int().min(1),
    maxNewTokensPerTurn: z.number().int().min(1),
    maxTotalTokens: z.number().int().min(2),
    maxToolResultTokens: z
      .number()
      .int()
      .min(16, 'must be at least 16 (the truncation marker alone takes about 10 tokens)'),
    /**
     * Vision-language models: the largest image (width × height, as decoded) a row or a tool may
     * give; a larger one is an error naming the row or the call. Images are also resized to the
     * processor's max_pixels, and their tokens count against maxTotalTokens. Default: sharp's own
     * limit (16383 × 16383).
     */
    maxImagePixels: z.number().int().min(1).optional(),
  })
  .strict()
  .superRefine((budget, ctx) => {
    if (budget.maxNewTokensPerTurn >= budget.maxTotalTokens) {
      ctx.addIssue({
        code: 'custom',
        path: ['maxNewTokensPerTurn'],
        message: `must be less than maxTotalTokens (${budget.maxTotalTokens}): the prompt needs room too`,
      });
    }
    if (budget.maxToolResultTokens >= budget.maxTotalTokens) {
      ctx.addIssue({
        code: 'custom',
        path: ['maxToolResultTokens'],
        message: `must be less than maxTotalTokens (${budget.maxTotalTokens})`,
      });
    }
  });
export type LengthBudget = z.infer<typeof LengthBudget>;

export class BudgetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BudgetError';
  }
}

/** Validates a budget; the error names each bad field ("budget.maxTurns: …"). */
export function checkBudget(budget: unknown, what = 'budget'): LengthBudget {
  const parsed = LengthBudget.safeParse(budget);
  if (!parsed.success) {
    throw new BudgetError(
      describeIssues(parsed.error.issues.map((issue) => ({ ...issue, path: [what, ...issue.path] }))),
    );
  }
  return parsed.data;
}
