/**
 * The hook for integration tests with a real model: roll out the multihop-search example with
 * any `Policy` (a scripted one in unit tests; the real tiny model once generation lands) and get
 * back everything the trainer would use — trajectories (checked by the loop), their rewards,
 * run-store records (validated against the protocol schema) and RL samples. An integration test
 * then only adds what needs a model: e.g. recompute the log-probs of `samples[i]` with the
 * training graph and compare them with `trajectories[i].logprobs` at the mask.
 */
import type { ChatTemplate } from '#trainer/foundations/models';
import { parseWith, TrajectoryRecord } from '#trainer/contract/protocol';
import { datasetFromRows } from '#trainer/foundations/data';
import { AgentLoop, type LengthBudget, type Policy, type Trajectory } from '#trainer/pipeline/rollout';
import { toTrajectoryRecord } from '#trainer/pipeline/training/step/trajectoryRecord';
import { scoreTrajectories, type BatchRewards } from '#trainer/pipeline/rewards';
import type { RlSample } from '#trainer/pipeline/rl/samples';
import { ToolSet } from '#trainer/foundations/tools';
import { generateQuestions, splitPeople } from '../../examples/multihop-search/data';
import { rewards as multihopRewards } from '../../examples/multihop-search/rewards';
import { MultihopFields, type MultihopRow } from '../../examples/multihop-search/rows';
import { knowledgeBase, tools } from '../../examples/multihop-search/tools';
import { toRlSample } from '#trainer/pipeline/rl/rewardPlacement';

export interface MultihopRolloutOptions {
  template: ChatTemplate;
  /** Questions (held-out ones, seeded) and samples per question. */
  questions: number;
  groupSize: number;
  seed: number;
  budget?: LengthBudget;
  templateKwargs?: Record<string, unknown>;
  temperature?: number;
}

export interface MultihopRollout {
  rows: MultihopRow[];
  trajectories: Trajectory<MultihopRow>[];
  rewards: BatchRewards;
  records: TrajectoryRecord[];
  samples: RlSample[];
}

export const SMALL_BUDGET: LengthBudget = {
  maxTurns: 4,
  maxNewTokensPerTurn: 48,
  maxTotalTokens: 1024,
  maxToolResultTokens: 160,
};

export async function rolloutMultihopExample(
  policy: Policy,
  options: MultihopRolloutOptions,
): Promise<MultihopRollout> {
  const questions = generateQuestions(knowledgeBase, splitPeople(knowledgeBase, options.seed).heldout, {
    seed: options.seed,
    count: options.questions,
    prefix: 'heldout',
  });
  const rows = datasetFromRows('multihop (generated)', questions, { fields: MultihopFields }).rows;
  const toolSet = new ToolSet(tools);
  const loop = new AgentLoop({
    policy,
    template: options.template,
    tools: toolSet,
    budget: options.budget ?? SMALL_BUDGET,
    sampling: { temperature: options.temperature ?? 1, topK: 0, topP: 1 },
    ...(options.templateKwargs ? { templateKwargs: options.templateKwargs } : {}),
  });
  loop.checkRows(rows);
  const episodes = rows.flatMap((row, group) =>
    Array.from({ length: options.groupSize }, (_, sample) => ({ row, group, sample })),
  );
  const trajectories = await loop.run(episodes, { seed: options.seed });
  const scored = await scoreTrajectories(trajectories, multihopRewards, toolSet);
  const records = trajectories.map((t, i) =>
    parseWith(
      TrajectoryRecord,
      JSON.parse(
        JSON.stringify(
          toTrajectoryRecord(t, scored.trajectories[i], { step: 0, tokenizer: options.template.tokenizer }),
        ),
      ),
      `trajectory ${i}`,
    ),
  );
  const samples = trajectories.map((t, i) => toRlSample(t, scored.trajectories[i]));
  return { rows, trajectories, rewards: scored, records, samples };
}
