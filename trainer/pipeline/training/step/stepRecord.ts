import type { CriticMetrics } from '../../rl/critic';
import type { UpdateMetrics } from '../../rl/policyTrainer';
import type { PreparedBatch } from '../../rl/prepareBatch';
import { scalarAdvantage } from '../../rl/advantageEstimators';
import type { Tokenizer } from '../../../foundations/models/text/tokenizer';
import { toTrajectoryRecord } from './trajectoryRecord';
import type { SampledStep } from './dynamicSampling';
import type { MetricsRecord, TrajectoryRecord } from '../../../contract/protocol/runStore';
import { zeroSignalShare } from '../health/health';
import { finiteValues, rolloutMetrics } from './rolloutMetrics';
import { formatScore, scoreKey } from './taskMetric';
import { definedFields } from '../../../contract/definedFields';

/**
 * What a training step records: one trajectory record per trajectory (with its rewards and
 * advantages), and one metrics record — the batch's rollout statistics, the update's losses, and
 * the time and tokens per second of each phase — plus the line a terminal shows.
 */

/** What a step's update did: the policy's optimizer steps (none in a critic warm-up) and a separate critic's. */
export interface StepUpdate {
  policy?: UpdateMetrics;
  critic?: CriticMetrics;
}

/** Optimizer steps taken and skipped as non-finite, policy and critic together. */
export function updateCounts(update: StepUpdate): { steps: number; skipped: number } {
  return {
    steps: (update.policy?.steps ?? 0) + (update.critic?.steps ?? 0),
    skipped: (update.policy?.skipped ?? 0) + (update.critic?.skipped ?? 0),
  };
}

/** The policy's metrics (absent during a critic warm-up) and the critic's. */
function updateValues({ policy: p, critic: c }: StepUpdate): Record<string, number> {
  const policy =
    p &&
    definedFields({
      'loss/total': p.loss,
      'loss/policy': p.policyLoss,
      'clip/fraction': p.clipFraction,
      'kl/approx_update': p.approxKl,
      'grad/norm': p.gradNorm,
      'loss/kl': p.klLoss,
      'loss/entropy': p.entropy,
      'loss/value': p.valueLoss,
    });
  // A separate critic's value loss replaces the policy's.
  return { ...policy, ...definedFields({ 'loss/value': c?.valueLoss, 'critic/grad_norm': c?.gradNorm }) };
}

/** Seconds each phase of the step took, and the tokens each processed. */
export interface StepTimes {
  rolloutSeconds: number;
  rewardSeconds: number;
  updateSeconds: number;
  generatedTokens: number;
  /** Tokens the update ran forward and backward (all passes). */
  trainedTokens: number;
}

/** One record per rollout of the step, every round: the trained ones with their advantages, the dropped ones marked why. */
export function stepTrajectoryRecords(
  step: number,
  rollouts: SampledStep['rollouts'],
  prepared: PreparedBatch,
  tokenizer: Tokenizer,
): TrajectoryRecord[] {
  let trained = 0;
  return rollouts.trajectories.map((t, i) => {
    const dropped = rollouts.dropped[i];
    if (dropped !== undefined) return { ...toTrajectoryRecord(t, rollouts.rewards[i], { step, tokenizer }), dropped };
    const advantages = prepared.advantages.advantages[trained++];
    const advantage = scalarAdvantage(advantages, t.mask);
    return toTrajectoryRecord(t, rollouts.rewards[i], definedFields({ step, tokenizer, advantages, advantage }));
  });
}

/** What a step's metrics record is made of. */
export interface StepRecordInputs {
  sampled: SampledStep;
  prepared: PreparedBatch;
  update: StepUpdate;
  lr: number;
  times: StepTimes;
  metric: string | undefined;
  logprobAfterUpdate?: number;
}

/**
 * The step's metrics record. The rollout statistics (reward, score, tools, lengths, entropy)
 * describe the first round's groups, dropped ones included (dynamicSampling.ts SampledStep);
 * what describes the update (losses, KL, tokens in the loss) covers the trained groups only;
 * `health/dropped_groups` and `rollout/*` say what dynamic sampling did.
 */

export function stepMetricsRecord(step: number, inputs: StepRecordInputs): MetricsRecord {
  const { update, times, prepared, sampled } = inputs;
  const stepSeconds = times.rolloutSeconds + times.rewardSeconds + times.updateSeconds;
  const rewards = sampled.firstRound.rewards;
  const values: Record<string, number> = {
    ...rolloutMetrics(sampled.firstRound.trajectories, rewards, inputs.metric),
    // Of the groups the update trains on (after dynamic sampling, if any, dropped its silent ones).
    'health/zero_signal_groups': zeroSignalShare(
      sampled.trained.trajectories.map((t) => t.group),
      prepared.advantages.advantages,
    ),
    'health/dropped_groups': sampled.droppedGroups / sampled.groups,
    'rollout/rounds': sampled.rounds,
    'rollout/groups': sampled.groups,
    ...updateValues(update),
    lr: inputs.lr,
    // Tokens the policy loss covers (the loss mask's ones): the generated tokens, or every response token in the ablation.
    'tokens/in_loss': prepared.sequences.reduce((n, s) => n + s.mask.reduce((a, m) => a + m, 0), 0),
    'throughput/rollout_tokens_per_s': times.generatedTokens / times.rolloutSeconds,
    'throughput/update_tokens_per_s': times.trainedTokens / times.updateSeconds,
    'time/rollout_s': times.rolloutSeconds,
    'time/reward_s': times.rewardSeconds,
    'time/update_s': times.updateSeconds,
    'time/step_s': stepSeconds,
    ...definedFields({
      'kl/mean': prepared.klMean,
      'rft/kept_fraction': prepared.keptFraction,
      'reward/process_scale': rewards.processMagnitude !== undefined ? rewards.processScale : undefined,
      'reward/process_magnitude': rewards.processMagnitude,
      'logprob/after_update': inputs.logprobAfterUpdate,
    }),
  };
  const { steps, skipped } = updateCounts(update);
  return {
    step,
    time: new Date().toISOString(),
    kind: 'train',
    ...finiteValues(values),
    ...(skipped
      ? {
          skipped: {
            reason: `${skipped} of ${steps} updates had a non-finite loss or gradient, or would have made the weights non-finite, and were skipped`,
          },
        }
      : {}),
  };
}

/** "step 3/12: reward 0.412, exact_match 0.375, 1.20 calls/trajectory, loss 0.0123, 8.1 s". */
export function stepLogLine(
  record: MetricsRecord,
  totalSteps: number,
  metric: string | undefined,
  update: StepUpdate,
): string {
  const value = (name: string) => record.values[name] ?? Number.NaN;
  const score =
    metric !== undefined && typeof record.values[scoreKey(metric)] === 'number'
      ? `, ${formatScore(metric, value(scoreKey(metric)))}`
      : '';
  return (
    `step ${record.step}/${totalSteps}: reward ${value('reward/mean').toFixed(3)}${score}` +
    `, ${value('tools/calls_per_trajectory').toFixed(2)} calls/trajectory, ` +
    droppedNote(record) +
    (update.policy
      ? `loss ${update.policy.loss.toFixed(4)}`
      : `critic warm-up, value loss ${update.critic?.valueLoss.toFixed(4)}`) +
    `, ${value('time/step_s').toFixed(1)} s` +
    (updateCounts(update).skipped ? ` — ${updateCounts(update).skipped} non-finite update(s) skipped` : '')
  );
}

/** "5 of 12 groups dropped (no signal), 2 rounds, " when dynamic sampling dropped any; else nothing. */
function droppedNote(record: MetricsRecord): string {
  const groups = record.values['rollout/groups'] ?? 0;
  const dropped = Math.round((record.values['health/dropped_groups'] ?? 0) * groups);
  if (!dropped) return '';
  const rounds = record.values['rollout/rounds'] ?? 1;
  return `${dropped} of ${groups} groups dropped, ${rounds} round${rounds === 1 ? '' : 's'}, `;
}
