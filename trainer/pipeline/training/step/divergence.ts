import type { PolicyTrainer } from '../../rl/policyTrainer';
import type { PreparedBatch } from '../../rl/prepareBatch';
import { definedFields } from '../../../contract/definedFields';

/**
 * After an update: does the policy still compute finite log-probs? An update the optimizer let
 * through (its new weights finite and not absurdly large) can still leave a model whose forward
 * pass overflows — a learning rate far too high. Scoring one trajectory of the batch again (one
 * forward pass) finds it before the weights reach a rollout or a checkpoint. Returns the mean
 * log-prob of that trajectory's trained tokens under the updated policy (NaN or ±Infinity: diverged).
 */
export async function logprobAfterUpdate(trainer: PolicyTrainer, prepared: PreparedBatch): Promise<number | undefined> {
  const probe = prepared.sequences.find((s) => s.mask.some((m) => m));
  if (!probe) return undefined;
  // The whole sequence as trained, its images included (a vision-language model's image tokens need them).
  const scored = await trainer.scoreReferenceAndValues(
    [definedFields({ ids: probe.ids, mask: probe.mask, images: probe.images, constraints: probe.constraints })],
    { reference: false, values: false, policy: true },
  );
  const logprobs = scored.policy![0];
  let sum = 0;
  let count = 0;
  probe.mask.forEach((m, i) => {
    if (m) {
      sum += logprobs[i];
      count++;
    }
  });
  return sum / count;
}

/** The message of a run stopped by a diverged update. */
export function divergedMessage(step: number, lr: number, lastCheckpoint: string | undefined): string {
  return `the update of step ${step} (lr ${lr}) made the policy's log-probs non-finite: training diverged. Stopped before the weights reached a rollout or a checkpoint; lower optimization.lr. The last good checkpoint is ${lastCheckpoint ?? 'none'}.`;
}
