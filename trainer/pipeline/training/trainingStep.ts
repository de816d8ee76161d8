import { recordedDrawSchedule, type MetricsRecord, type TrajectoryRecord } from '../../contract/protocol/runStore';
import { lossMasks, prepareBatch, scoresNeeded, sequenceImages, type PreparedBatch } from '../rl/prepareBatch';
import { toRlSample } from '../rl/rewardPlacement';
import type { RlSample } from '../rl/samples';
import { groupsWithSignal } from '../rl/groupSignal';
import type { DatasetRow } from '../../foundations/data/row';
import { scoreTrajectories, type BatchRewards } from '../rewards/score';
import type { Episode, Trajectory } from '../rollout/trajectory';
import {
  batchSettings,
  criticSchedule,
  optimizerStepsPerRlStep,
  policyUpdates,
  rlSchedule,
} from './config/configOptions';
import { carryOut, type CollapsePlan } from './health/collapseResponse';
import { GroupSelection, sampledStep, type SampledStep, type ScoredRound } from './step/dynamicSampling';
import { reviewTrainingStep } from './health/healthReview';
import { saveRunCheckpoint } from './checkpoints/runCheckpoint';
import { LiveSnapshot } from './run/liveSnapshot';
import { seedFor, type StepContext } from './run/runParts';
import { optimizerStepRates } from './step/schedule';
import { divergedMessage, logprobAfterUpdate } from './step/divergence';
import {
  stepLogLine,
  stepMetricsRecord,
  stepTrajectoryRecords,
  type StepRecordInputs,
  type StepTimes,
  type StepUpdate,
} from './step/stepRecord';
import { taskMetric } from './step/taskMetric';
import { definedFields } from '../../contract/definedFields';

/**
 * One RL step, top to bottom: roll out the step's prompts → score the trajectories (with dynamic
 * sampling, in rounds: groups without signal are dropped and fresh prompts rolled out in their
 * place) → prepare the batch (KL, advantages, training sequences) → update the policy → record
 * the step with its health checks (healthReview.ts) → respond to a collapse
 * (collapseResponse.ts) → checkpoint (or apply the non-finite rule). Each stage is a function
 * below; the step's state flows from one to the next as values.
 */

export type StepOutcome = 'ok' | 'failed' | 'stopped';

export async function trainingStep(at: StepContext): Promise<StepOutcome> {
  const { parts } = at;
  const sampled = await sampleStage(at);
  // The generation graphs hold a packed copy of the weights: freed before scoring and the update
  // (at Qwen2.5-0.5B it would add 2 GB to the update's peak), loaded again by the next rollout.
  await parts.loop.releasePolicy();
  if (sampled === 'stopped') return 'stopped';
  const prepared = await prepareStage(at, sampled.trained.trajectories, sampled.trained.samples);
  const updated = await updateStage(at, prepared);
  const times: StepTimes = {
    rolloutSeconds: sampled.rolloutSeconds,
    rewardSeconds: sampled.rewardSeconds,
    updateSeconds: updated.seconds,
    generatedTokens: sampled.generatedTokens,
    trainedTokens: prepared.sequences.reduce((n, s) => n + s.ids.length, 0) * parts.config.algorithm.epochs,
  };
  const recorded = recordStage(at, {
    sampled,
    prepared,
    update: updated.metrics,
    lr: updated.lr,
    times,
    ...definedFields({ logprobAfterUpdate: updated.probe }),
  });
  if (updated.probe !== undefined && !Number.isFinite(updated.probe)) return failDiverged(at, updated.lr);
  // A collapse's response comes before the checkpoint: the checkpoint saves what the run goes on from.
  if (recorded.plan) await carryOut(recorded.plan, at);
  const outcome = await finishStage(at, updated.metrics, recorded);
  return outcome === 'ok' && recorded.plan?.kind === 'stop' ? 'stopped' : outcome;
}

/**
 * Roll out and score the step's `promptsPerStep` rows; with dynamic sampling, more rounds of the
 * data cursor's next rows while groups lack signal (dynamicSampling.ts). A stop drops the step.
 */
async function sampleStage(at: StepContext): Promise<SampledStep | 'stopped'> {
  const { parts, position } = at;
  const { rollout, algorithm } = parts.config;
  const selection = new GroupSelection(rollout.promptsPerStep, algorithm.dynamicSampling);
  const rounds: ScoredRound[] = [];
  for (let prompts = selection.nextPrompts(); prompts > 0; prompts = selection.nextPrompts()) {
    const rows = position.cursor.take(prompts).map((i) => parts.train.rows[i]);
    const first = { group: selection.groupCount, index: rounds.reduce((n, r) => n + r.trajectories.length, 0) };
    const rolled = await rolloutStage(at, rounds.length, rows, first);
    if (rolled === 'stopped') return 'stopped';
    const scored = await scoreStage(at, rolled.trajectories);
    if (scored === 'stopped') return 'stopped';
    selection.add([...groupsWithSignal(scored.samples)].map(([group, signal]) => ({ group, signal })));
    rounds.push({ ...rolled, ...scored, rolloutSeconds: rolled.seconds, rewardSeconds: scored.seconds });
  }
  return sampledStep(rounds, selection.dropped());
}

/**
 * Roll out one round: each row sampled `groupSize` times. Groups and trajectories are numbered on
 * from the step's earlier rounds; each round samples with its own seed (the first with the seed
 * a step without dynamic sampling uses).
 */
async function rolloutStage(
  { parts, position, step }: StepContext,
  round: number,
  rows: readonly DatasetRow[],
  first: { group: number; index: number },
): Promise<{ trajectories: Trajectory[]; seconds: number; generatedTokens: number } | 'stopped'> {
  const { config: c, report } = parts;
  const started = performance.now();
  const episodes: Episode[] = rows.flatMap((row, g) =>
    Array.from({ length: c.algorithm.groupSize }, (_, k) => ({ row, group: first.group + g, sample: k })),
  );
  report.progress(step, 'rollout', 0, episodes.length);
  parts.live.snapshot = new LiveSnapshot(step, parts.model.tokenizer);
  let trajectories: Trajectory[];
  try {
    trajectories = await parts.loop.run(episodes, {
      seed: seedFor(c.seed, step, round === 0 ? 1 : 1000 + round),
      signal: parts.control.signal,
      drawSchedule: recordedDrawSchedule(position.writer.record),
    });
  } catch (error) {
    // The steps before this one stay complete in the run store.
    if (parts.control.stopping) return 'stopped';
    throw error;
  } finally {
    parts.live.snapshot = undefined;
  }
  // The loop numbers a round's trajectories from 0 (its sequences); the step numbers them across rounds.
  for (const t of trajectories) t.index += first.index;
  const seconds = (performance.now() - started) / 1000;
  const generatedTokens = trajectories.reduce((n, t) => n + t.mask.reduce((a, m) => a + m, 0), 0);
  report.progress(step, 'rollout', episodes.length, episodes.length, generatedTokens / seconds);
  return { trajectories, seconds, generatedTokens };
}

/** Score: outcome and process rewards per trajectory, placed on its tokens for the RL side; a stop drops the step. */
async function scoreStage(
  { parts, position, step }: StepContext,
  trajectories: Trajectory[],
): Promise<{ rewards: BatchRewards; samples: RlSample[]; seconds: number } | 'stopped'> {
  const started = performance.now();
  parts.report.progress(step, 'reward', 0, trajectories.length);
  let rewards: BatchRewards;
  try {
    // A stop ends scoring at once, even while a reward spins in its worker: the step is dropped, as a stop during rollout drops it.
    rewards = await scoreTrajectories(trajectories, parts.config.rewards, parts.tools, {
      normalizer: position.processNormalizer,
      signal: parts.control.signal,
    });
  } catch (error) {
    if (parts.control.stopping) return 'stopped';
    throw error;
  }
  const samples = trajectories.map((t, i) => toRlSample(t, rewards.trajectories[i]));
  return { rewards, samples, seconds: (performance.now() - started) / 1000 };
}

/** Prepare the batch: the models score what the batch needs (reference log-probs, the critic's values), then rl/ turns it into training sequences. */
async function prepareStage(
  { parts, learners }: StepContext,
  trajectories: Trajectory[],
  samples: RlSample[],
): Promise<PreparedBatch> {
  const settings = batchSettings(parts.config);
  const masks = lossMasks(trajectories, settings.lossMask, parts.model.config.vision?.imageTokenId);
  const sequences = trajectories.map((t, i) => ({
    ids: t.ids,
    mask: masks[i],
    ...sequenceImages(t),
    ...definedFields({ constraints: t.constrained }),
  }));
  const needed = scoresNeeded(settings);
  const scores = await learners.policy.scoreReferenceAndValues(sequences, {
    ...needed,
    values: needed.values && !learners.critic,
  });
  if (needed.values && learners.critic) scores.values = await learners.critic.values(sequences);
  return prepareBatch(trajectories, samples, masks, scores, settings);
}

/**
 * Update: the policy's optimizer steps over the batch, each at its own learning rate (the schedule
 * counts optimizer steps: schedule.ts) — except in a separate critic's warm-up, when the policy is
 * not touched at all — then the critic's, on its own schedule of the same shape; then a check that
 * the updated policy did not diverge. The recorded `lr` is that of the step's last planned
 * optimizer step.
 */
async function updateStage(
  { parts, position, learners, step }: StepContext,
  prepared: PreparedBatch,
): Promise<{ metrics: StepUpdate; lr: number; seconds: number; probe?: number }> {
  const started = performance.now();
  parts.report.progress(step, 'update', 0, 1);
  const perStep = optimizerStepsPerRlStep(parts.config);
  const scheduled = optimizerStepRates(rlSchedule(parts.config), step, parts.totalSteps, perStep);
  // lrScale: halved by each rollback after a collapse (collapseResponse.ts).
  const rates = (i: number) => scheduled(i) * position.lrScale;
  const lr = rates(perStep - 1);
  const metrics: StepUpdate = {};
  if (policyUpdates(parts.config, step))
    metrics.policy = await learners.policy.update(prepared.sequences, rates, position.random);
  if (learners.critic)
    metrics.critic = await learners.critic.update(
      prepared.sequences,
      optimizerStepRates(criticSchedule(parts.config), step, parts.totalSteps, perStep),
      position.random,
    );
  const probe =
    metrics.policy && metrics.policy.skipped < metrics.policy.steps
      ? await logprobAfterUpdate(learners.policy, prepared)
      : undefined;
  return definedFields({ metrics, lr, seconds: (performance.now() - started) / 1000, probe });
}

/** A diverged update: the run fails at once, its step recorded, no checkpoint of the diverged weights. */
function failDiverged({ parts, position, step }: StepContext, lr: number): StepOutcome {
  const message = divergedMessage(step, lr, position.writer.record.lastCheckpoint);
  position.writer.completeStep(step);
  parts.report.emit({ type: 'step.completed', step });
  position.writer.finish('failed', { message, step });
  parts.report.log(message);
  return 'failed';
}

/** What the record stage leaves for the step's end: the step's records and metrics, and the response to a collapse when one is due. */
interface RecordedStep {
  trajectories: TrajectoryRecord[];
  metrics: MetricsRecord;
  plan?: CollapsePlan;
}

/** Record: the trajectories (dropped ones marked) and the metrics in the run store, announced live, one line to the terminal. */
function recordStage({ parts, position, step }: StepContext, inputs: Omit<StepRecordInputs, 'metric'>): RecordedStep {
  const metric = taskMetric(parts.config);
  const trajectories = stepTrajectoryRecords(step, inputs.sampled.rollouts, inputs.prepared, parts.model.tokenizer);
  // The images first: a record never points at an image file that is not there.
  position.writer.writeImages(
    inputs.sampled.rollouts.trajectories.flatMap((t) => (t.images ?? []).map(({ image }) => image)),
  );
  position.writer.appendTrajectories(step, trajectories);
  const { record: metrics, plan } = reviewTrainingStep(parts, position, stepMetricsRecord(step, { ...inputs, metric }));
  parts.report.metrics(metrics);
  parts.report.progress(step, 'update', 1, 1, inputs.times.trainedTokens / inputs.times.updateSeconds);
  parts.report.log(stepLogLine(metrics, parts.totalSteps, metric, inputs.update));
  parts.report.stepWarnings(step, metrics.warnings ?? []);
  return { trajectories, metrics, ...definedFields({ plan }) };
}

/**
 * Finish the step: too many non-finite steps in a row fail the run (the last good checkpoint
 * stays); otherwise checkpoint when due (never after a step whose every update of the policy or
 * of the critic was skipped),
 * mark the step complete, and hold at the debugger's `update` point.
 */
async function finishStage(at: StepContext, update: StepUpdate, recorded: RecordedStep): Promise<StepOutcome> {
  const { parts, position, step } = at;
  const { config: c, report } = parts;
  // A learner whose every update this step was skipped is stuck, even while the other learns (a
  // separate critic has its own learning rate): the step counts as non-finite.
  const stuck = (m: { steps: number; skipped: number } | undefined) =>
    m !== undefined && m.steps > 0 && m.skipped === m.steps;
  const allSkipped = stuck(update.policy) || stuck(update.critic);
  position.consecutiveNonFinite = allSkipped ? position.consecutiveNonFinite + 1 : 0;
  if (position.consecutiveNonFinite >= c.nonFinite.maxConsecutive) {
    const message = `${position.consecutiveNonFinite} steps in a row had only non-finite losses or gradients; stopped. The last good checkpoint is ${position.writer.record.lastCheckpoint ?? 'none'}.`;
    position.writer.completeStep(step);
    report.emit({ type: 'step.completed', step });
    position.writer.finish('failed', { message, step });
    report.log(message);
    return 'failed';
  }
  const due = c.output.checkpointEvery > 0 && (step % c.output.checkpointEvery === 0 || step === parts.totalSteps);
  if (due && !allSkipped) await saveRunCheckpoint(at);
  else position.writer.completeStep(step);
  report.emit({ type: 'step.completed', step });
  // The debugger's `update` point: the step is done and recorded; it sees the scored records (without their token arrays) and the metrics.
  const light = recorded.trajectories.map((r) => ({
    ...r,
    tokens: { ids: '', pieces: [], mask: r.tokens.mask, logprobs: '' },
  }));
  await parts.control.point({ step, trajectory: 0, kind: 'update' }, () => ({
    trajectories: light,
    metrics: recorded.metrics,
  }));
  return 'ok';
}
