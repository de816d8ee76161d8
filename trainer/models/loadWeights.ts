import type { HostTensor } from '../engine/runtime/tensors';
import type { CheckpointReader } from './checkpointReader';
import type { ModelConfig } from './config';
import { expectedTensors } from './weights';

/**
 * The model's weights as float32 host tensors, read one tensor at a time from the checkpoint
 * (float16/bfloat16 widened on read). `only` restricts to some names (the rest stay on disk).
 */
export function readModelWeights(checkpoint: CheckpointReader, config: ModelConfig, only?: ReadonlySet<string>): Record<string, HostTensor> {
  const weights: Record<string, HostTensor> = {};
  for (const t of expectedTensors(config)) {
    if (only && !only.has(t.name)) continue;
    weights[t.name] = { dtype: 'float32', shape: t.shape, data: checkpoint.read(t.name, t.shape) };
  }
  return weights;
}

/** float64 copies of float32 host tensors (for gradient checks). */
export function toFloat64(weights: Record<string, HostTensor>): Record<string, HostTensor> {
  return Object.fromEntries(Object.entries(weights).map(([k, v]) => [k, { dtype: 'float64', shape: v.shape, data: Float64Array.from(v.data as Float32Array) }]));
}
