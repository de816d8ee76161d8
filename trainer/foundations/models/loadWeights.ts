import type { DeviceApi } from '../engine/device/deviceApi';
import type { HostTensor } from '../engine/runtime/tensors';
import type { CheckpointReader } from './files/checkpointReader';
import type { ModelConfig } from './modelConfig';
import { expectedTensors } from './weights';

/** The model's weights one float32 host tensor at a time, read as they are asked for. */
function* modelTensors(
  checkpoint: CheckpointReader,
  config: ModelConfig,
  only?: ReadonlySet<string>,
): Generator<[string, HostTensor]> {
  for (const t of expectedTensors(config)) {
    if (only && !only.has(t.name)) continue;
    yield [t.name, { dtype: 'float32', shape: t.shape, data: checkpoint.read(t.name, t.shape) }];
  }
}

/**
 * The model's weights as float32 host tensors, read one tensor at a time from the checkpoint
 * (float16/bfloat16 widened on read). `only` restricts to some names (the rest stay on disk).
 */
export function readModelWeights(
  checkpoint: CheckpointReader,
  config: ModelConfig,
  only?: ReadonlySet<string>,
): Record<string, HostTensor> {
  return Object.fromEntries(modelTensors(checkpoint, config, only));
}

/** Bytes of host float32 weights a load hands to the device at once (see uploadModelWeights). */
export const WEIGHT_UPLOAD_BYTES = 256 * 2 ** 20;

/**
 * Reads the model's weights (as readModelWeights) and puts them on the device as state, a batch of
 * at most `maxBytes` at a time (a tensor larger than that goes alone). Read whole, a Qwen2.5-0.5B
 * load held every float32 weight three times at once — this thread's copy, the copy a device worker
 * receives and the device's own — and peaked at 5.8 GB for 2 GB of weights; in batches the host
 * side holds one batch. Returns each weight's shape, by name.
 */
export async function uploadModelWeights(
  device: Pick<DeviceApi, 'setState' | 'deleteState'>,
  checkpoint: CheckpointReader,
  config: ModelConfig,
  maxBytes = WEIGHT_UPLOAD_BYTES,
): Promise<Map<string, readonly number[]>> {
  const shapes = new Map<string, readonly number[]>();
  let batch: Record<string, HostTensor> = {};
  let bytes = 0;
  try {
    for (const [name, tensor] of modelTensors(checkpoint, config)) {
      if (bytes > 0 && bytes + tensor.data.byteLength > maxBytes) {
        await device.setState(batch);
        batch = {};
        bytes = 0;
      }
      shapes.set(name, tensor.shape);
      batch[name] = tensor;
      bytes += tensor.data.byteLength;
    }
    if (bytes > 0) await device.setState(batch);
  } catch (error) {
    // A checkpoint that fails half-way leaves nothing of it on the device.
    await device.deleteState([...shapes.keys()]);
    throw error;
  }
  return shapes;
}
