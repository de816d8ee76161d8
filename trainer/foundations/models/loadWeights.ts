import type { HostTensor } from '../engine/runtime/tensors';
import type { CheckpointReader } from './checkpointReader';
import type { ModelConfig } from './modelConfig';
import { expectedTensors } from './weights';

/**
 * The model's weights as float32 host tensors, read one tensor at a time from the checkpoint
 * (float16/bfloat16 widened on read). `only` restricts to some names (the rest stay on disk).
 */
export function readModelWeights(
  checkpoint: CheckpointReader,
  config: ModelConfig,
  only?: ReadonlySet<string>,
): Record<string, HostTensor> {
  const weights: Record<string, HostTensor> = {};
  for (const t of expectedTensors(config)) {
    if (only && !only.has(t.name)) continue;
    weights[t.name] = { dtype: 'float32', shape: t.shape, data: checkpoint.read(t.name, t.shape) };
  }
  return weights;
}
