import * as path from 'node:path';
import type { HostTensor } from '../engine/runtime/tensors';
import { CheckpointReader } from '../models/checkpointReader';
import { REFERENCE_PREFIX } from '../models/runtime';
import { checkpointDirName } from '../shared/protocol/runStore';
import type { RunParts } from './runParts';
import type { TrainingConfig } from './trainingConfig';

/**
 * The KL reference of a fully fine-tuned run is the policy RL started from: after a supervised
 * warm start, the warm-started weights — which only the run has, in its checkpoint of step 0
 * (the model folder holds the weights before the warm start). That checkpoint is therefore kept
 * however many newer ones there are, and a resumed run takes its reference from it. With LoRA
 * the reference is the base model with the adapters off, and without a warm start it is the
 * model folder itself: a resume finds both where the first run did.
 */

/** The checkpoint that holds the KL reference, when the run needs one kept (see above). */
export function referenceCheckpoint(config: TrainingConfig): string | undefined {
  return config.model.lora === false && config.algorithm.kl.coef > 0 && config.sft ? checkpointDirName(0) : undefined;
}

/** A resumed run's KL reference: the frozen copy of the base weights, read from the reference checkpoint. */
export async function restoreReference(parts: RunParts, runDir: string): Promise<void> {
  const relative = referenceCheckpoint(parts.config);
  if (!relative) return;
  const reader = CheckpointReader.open(path.join(runDir, relative));
  const state: Record<string, HostTensor> = {};
  try {
    for (const name of parts.model.baseWeights) {
      const info = reader.info(name);
      state[`${REFERENCE_PREFIX}${name}`] = { dtype: 'float32', shape: [...info.shape], data: reader.read(name) };
    }
  } catch (error) {
    throw new Error(`${path.join(runDir, relative)}: the KL reference (the warm-started weights) cannot be read: ${(error as Error).message}`, { cause: error });
  } finally {
    reader.close();
  }
  await parts.device.setState(state);
}
