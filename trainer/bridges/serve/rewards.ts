import { datasetFromRows } from '../../foundations/data/dataset';
import type { RewardRequest, RewardResponse } from '../../contract/protocol/serve';
import { scoreTrajectories } from '../../pipeline/rewards/score';
import { HermesFormat } from '../../pipeline/rollout/formats/hermes';
import type { TrainingConfig } from '../../pipeline/training/config/trainingConfig';
import type { ToolSet } from '../../foundations/tools/toolSet';
import { splitVerlResponse } from '../verl/response';
import { trajectoryFromMessages } from './trajectoryFromMessages';

/** A request the reward endpoint cannot score; the message names the item and the field. */
export class RewardRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RewardRequestError';
  }
}

/**
 * The reward endpoint's work: each item's row read as the dataset loader reads rows (the
 * config's `fields` schema checked), its generated part rebuilt as a trajectory, and the batch
 * scored by the config's rewards with the same `scoreTrajectories` a training step uses.
 */
export async function scoreRewardRequest(
  config: TrainingConfig,
  tools: ToolSet,
  request: RewardRequest,
  dataFor?: (name: string, args: unknown) => unknown,
): Promise<RewardResponse> {
  const format = config.rollout.format ?? new HermesFormat();
  const trajectories = request.items.map((item, i) => {
    let row;
    try {
      [row] = datasetFromRows(`items[${i}].row`, [item.row], { fields: config.data.fields }).rows;
    } catch (error) {
      throw new RewardRequestError((error as Error).message.replace(/^items\[(\d+)\]\.row:1: /, 'items[$1].row: '));
    }
    const generated = item.messages ?? splitVerlResponse(item.response!);
    return trajectoryFromMessages(row, generated, { format, tools, index: i, ...(dataFor ? { dataFor } : {}) });
  });
  const scored = await scoreTrajectories(trajectories, config.rewards, tools);
  return {
    combine: scored.combine,
    processScale: scored.processScale,
    results: scored.trajectories.map((r, i) => ({
      rowId: trajectories[i].rowId,
      total: r.total,
      outcome: r.outcome,
      process: r.process,
      components: r.components,
      ...(r.answer !== undefined ? { answer: r.answer } : {}),
      calls: trajectories[i].calls.map((call, k) => ({
        turn: call.turn,
        index: call.index,
        ...(call.name !== undefined ? { name: call.name } : {}),
        ...(call.error ? { error: call.error.kind } : {}),
        ...(r.calls[k].processReward !== undefined ? { processReward: r.calls[k].processReward } : {}),
        scaled: r.calls[k].scaled,
        components: r.calls[k].components,
      })),
    })),
  };
}
