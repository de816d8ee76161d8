import { pruneCheckpoints, saveCheckpoint } from './checkpoint';
import type { StepContext } from '../run/runParts';

/**
 * Save the run at `step` (the policy's weights and optimizer, the reference policy when there is
 * a KL term, a separate critic's optimizer, the data position and random state), keep the newest
 * few, and mark the step complete with it.
 */
export async function saveRunCheckpoint(at: StepContext): Promise<void> {
  const { parts, position, step } = at;
  parts.report.progress(step, 'checkpoint', 0, 1);
  const relative = await writeRunCheckpoint(at);
  pruneCheckpoints(position.writer.dir, parts.config.output.keepCheckpoints);
  position.writer.completeStep(step, relative);
  parts.report.progress(step, 'checkpoint', 1, 1);
}

/** Write the run's state at `step` as a checkpoint folder: `checkpoints/step-NNNNNN`, or `relative` (the best checkpoint). */
export async function writeRunCheckpoint(
  { parts, position, learners, step }: StepContext,
  relative?: string,
): Promise<string> {
  const reference = learners.policy.hasReference ? await parts.model.referenceState() : undefined;
  const critic = learners.critic ? await learners.critic.optimizer.state() : undefined;
  return saveCheckpoint(
    position.writer.dir,
    parts.model,
    learners.policy.optimizer,
    {
      step,
      random: position.random.state() as [number, number, number, number],
      data: { epoch: position.cursor.epoch, position: position.cursor.position },
      consecutiveNonFinite: position.consecutiveNonFinite,
      configHash: parts.loaded.hash,
      processNormalizer: position.processNormalizer.state(),
      ...(position.lrScale !== 1 ? { lrScale: position.lrScale } : {}),
    },
    { ...(reference ? { reference } : {}), ...(critic ? { critic } : {}) },
    relative,
  );
}
