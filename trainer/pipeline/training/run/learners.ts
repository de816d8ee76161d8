import { Critic } from '../../rl/critic';
import { PolicyTrainer } from '../../rl/policyTrainer';
import { criticOptions, policyTrainerOptions, separateCritic } from '../config/configOptions';
import { saveRunCheckpoint } from '../checkpoints/runCheckpoint';
import type { Learners, RunParts } from './runParts';
import type { LoadedCheckpoint } from '../checkpoints/checkpoint';
import type { OpenedRun } from './runStoreOpening';
import { warmStart } from '../warmStart/warmStart';
import { CheckpointError } from '../../../foundations/models/modelErrors';

/**
 * What learns, ready for the first step: a new run warm-starts first (the warm-started policy is
 * what RL starts from: the reference policy's copy and the critic's starting point are taken
 * from it, and checkpoint 0 saves it); a resumed run restores the optimizers, the reference
 * policy and the critic from its last checkpoint instead.
 */
export async function prepareLearners(parts: RunParts, opened: OpenedRun): Promise<Learners> {
  // A resume from the checkpoint of step 0 is a resume too: the warm start is in it, and is not trained again.
  const resuming = opened.checkpoint !== undefined;
  if (!resuming && parts.config.sft) await warmStart(parts, opened.position.random);
  const learners: Learners = { policy: await PolicyTrainer.create(parts.model, policyTrainerOptions(parts.config)) };
  try {
    if (separateCritic(parts.config))
      learners.critic = await Critic.create(parts.model, criticOptions(parts.config, parts.loaded.resolve));
    if (resuming) await restoreLearners(parts, learners, opened.checkpoint!, opened.checkpointDir!);
    // A warm start cut short by a stop is not what RL starts from: no checkpoint 0 (the run ends stopped; a new run starts over).
    else if (!parts.control.stopping) await saveRunCheckpoint({ parts, position: opened.position, learners, step: 0 });
    return learners;
  } catch (error) {
    await releaseLearners(learners);
    throw error;
  }
}

/**
 * Put a checkpoint's state into the learners: the policy's trained weights with its optimizer's
 * moments and step count (the optimizer state holds the weights it trains), the reference policy,
 * a separate critic's. A resume does it once; `onCollapse: 'rollback'` with checkpoints/best.
 */
export async function restoreLearners(
  parts: RunParts,
  learners: Learners,
  saved: LoadedCheckpoint,
  checkpointDir: string,
): Promise<void> {
  await learners.policy.optimizer.restore(saved.optimizer);
  if (learners.policy.hasReference) {
    // The reference is the policy as RL started; a run that warm-started cannot rebuild it from the model folder.
    if (saved.reference) await parts.model.restoreReference(saved.reference);
    else if (parts.config.sft)
      throw new CheckpointError(
        `${checkpointDir}: reference.safetensors is missing; the reference policy (the warm start) cannot be rebuilt without it`,
      );
  }
  if (learners.critic) {
    if (!saved.critic)
      throw new CheckpointError(
        `${checkpointDir}: critic/optimizer.safetensors is missing; this run trains a separate critic`,
      );
    await learners.critic.optimizer.restore(saved.critic);
  }
}

export async function releaseLearners(learners: Partial<Learners>): Promise<void> {
  await learners.critic?.release().catch(() => undefined);
  await learners.policy?.release().catch(() => undefined);
}
