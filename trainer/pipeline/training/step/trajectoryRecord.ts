import type { Tokenizer } from '../../../foundations/models/text/tokenizer';
import { encodeFloat32, encodeInt32, encodeUint8 } from '../../../contract/protocol/tokens';
import {
  imageFileName,
  type ToolCallRecord,
  type TrajectoryImageRecord,
  type TrajectoryRecord,
  type TurnRecord,
} from '../../../contract/protocol/runStore';
import type { ToolCallResult, Trajectory, TrajectoryTurn } from '../../rollout/trajectory';
import type { CallReward, TrajectoryRewards } from '../../rewards/score';
import { definedFields } from '../../../contract/definedFields';

/**
 * The rewards of one trajectory as the record needs them: the scorer's own TrajectoryRewards
 * (rewards/score.ts) less what a record does not read (each call's scaled reward); the process
 * scale may be absent (a record written from rewards that were not scaled leaves it out).
 */
export type RecordRewards = Pick<TrajectoryRewards, 'outcome' | 'process' | 'total' | 'components' | 'answer'> &
  Partial<Pick<TrajectoryRewards, 'errors'>> &
  Partial<Pick<TrajectoryRewards, 'processScale'>> & {
    /** Aligned with `trajectory.calls`. */
    calls: readonly RecordCallReward[];
  };

/** A call's reward as its record needs it (the scorer's CallReward without the scaled value). */
type RecordCallReward = Pick<CallReward, 'processReward' | 'components'>;

export interface RecordOptions {
  step: number;
  tokenizer: Tokenizer;
  /** The trajectory's advantage when it is one number (GRPO, RLOO, REINFORCE++ with baseline). */
  advantage?: number;
  /** Per-token advantages, aligned with the ids. */
  advantages?: ArrayLike<number>;
}

/**
 * The run-store record of a trajectory: every turn with its decoded text and token range, every
 * call with its arguments, observation, error, latency, logs and process reward, the rewards and
 * their components, and the per-token arrays. Nothing is lost: turns partition the ids, and the
 * concatenated turn texts are the decoded sequence.
 */
export function toTrajectoryRecord(
  trajectory: Trajectory,
  rewards: RecordRewards,
  options: RecordOptions,
): TrajectoryRecord {
  const { tokenizer } = options;
  if (rewards.calls.length !== trajectory.calls.length) {
    throw new RangeError(
      `trajectory ${trajectory.index}: ${rewards.calls.length} call rewards for ${trajectory.calls.length} calls`,
    );
  }
  if (options.advantages && options.advantages.length !== trajectory.ids.length) {
    throw new RangeError(
      `trajectory ${trajectory.index}: ${options.advantages.length} advantages for ${trajectory.ids.length} tokens`,
    );
  }
  const callPosition = new Map(trajectory.calls.map((call, i) => [call, i]));
  const turns: TurnRecord[] = trajectory.turns.map((turn) => {
    const record = turnRecord(trajectory, turn, tokenizer);
    if (turn.assistantTurn !== undefined && turn.calls?.length)
      record.toolCalls = turn.calls.map((call) => callRecord(call, rewards.calls[callPosition.get(call)!]));
    return record;
  });
  const response = trajectory.mask.reduce((a, m) => a + m, 0);
  return {
    step: options.step,
    index: trajectory.index,
    rowId: trajectory.rowId,
    group: trajectory.group,
    sample: trajectory.sample,
    prompt: trajectory.prompt,
    turns,
    finishReason: trajectory.finishReason,
    ...definedFields({
      error: trajectory.error,
      historyRewrites: trajectory.historyRewrites.length
        ? trajectory.historyRewrites.map((r) => ({ ...r }))
        : undefined,
      answer: rewards.answer,
      agent: trajectory.agent ? { ...trajectory.agent } : undefined,
    }),
    rewards: rewardsRecord(rewards),
    ...definedFields({
      advantage: options.advantage,
      images: trajectory.images?.length ? trajectory.images.map(imageRecord) : undefined,
    }),
    lengths: { prompt: trajectory.promptLength, response, total: trajectory.ids.length },
    tokens: {
      ids: encodeInt32(trajectory.ids),
      pieces: tokenizer.pieces(trajectory.ids),
      mask: encodeUint8(trajectory.mask),
      logprobs: encodeFloat32(trajectory.logprobs),
      entropies: encodeFloat32(trajectory.entropies),
      ...definedFields({ advantages: options.advantages ? encodeFloat32(options.advantages) : undefined }),
    },
  };
}

/** The record's rewards: the totals and components, the process scale and the reward errors when there are any. */
function rewardsRecord(rewards: RecordRewards): TrajectoryRecord['rewards'] {
  return {
    outcome: rewards.outcome,
    process: rewards.process,
    total: rewards.total,
    components: rewards.components,
    ...definedFields({
      processScale: rewards.processScale,
      errors: rewards.errors?.length ? rewards.errors.map((e) => ({ ...e })) : undefined,
    }),
  };
}

/**
 * One turn's record without its calls: decoded text, token range and, for a generated turn,
 * how it finished and its log-prob and entropy statistics. Live snapshots build it too.
 */
export function turnRecord(trajectory: Trajectory, turn: TrajectoryTurn, tokenizer: Tokenizer): TurnRecord {
  const record: TurnRecord = {
    index: turn.index,
    role: turn.role,
    text: tokenizer.decode(trajectory.ids.slice(turn.tokenStart, turn.tokenEnd)),
    tokenStart: turn.tokenStart,
    tokenEnd: turn.tokenEnd,
  };
  if (turn.assistantTurn === undefined) return record; // prompt and tool turns (an assistant message in the prompt included)
  if (turn.finish) record.finish = turn.finish;
  const logprobs = trajectory.logprobs.slice(turn.tokenStart, turn.tokenEnd);
  const entropies = trajectory.entropies.slice(turn.tokenStart, turn.tokenEnd);
  if (logprobs.length) {
    record.logprob = { mean: mean(logprobs), min: Math.min(...logprobs) };
    record.entropy = { mean: mean(entropies) };
  }
  return record;
}

/** A finished call's record; `reward` is its process reward once the batch is scored. */
export function callRecord(call: ToolCallResult, reward?: RecordCallReward): ToolCallRecord {
  return definedFields({
    index: call.index,
    name: call.name,
    arguments: call.arguments,
    raw: call.raw,
    observation: call.observation,
    truncated: call.truncated,
    error: call.error ? { kind: call.error.kind, message: call.error.message } : undefined,
    latencyMs: call.latencyMs,
    processReward: reward?.processReward,
    rewardComponents: reward && Object.keys(reward.components).length ? reward.components : undefined,
    logs: call.logs.length ? call.logs : undefined,
    tokenEnd: call.tokenEnd,
    images: call.images?.length ? call.images.map((image) => image.sha256) : undefined,
  });
}

/** An image's reference in the record; the bytes go to the run directory (RunStoreWriter.writeImages). */
export function imageRecord(entry: NonNullable<Trajectory['images']>[number]): TrajectoryImageRecord {
  const { image, tokenStart, from } = entry;
  return {
    sha256: image.sha256,
    format: image.format,
    file: imageFileName(image.sha256, image.format),
    width: image.width,
    height: image.height,
    tokenStart,
    tokens: image.tokens,
    from: from.kind === 'prompt' ? { kind: 'prompt' } : { kind: 'tool', turn: from.turnIndex, call: from.call },
  };
}

function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}
