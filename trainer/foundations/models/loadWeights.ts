import type { DeviceApi } from '../engine/device/deviceApi';
import type { HostTensor } from '../engine/runtime/tensors';
import type { CheckpointReader } from './files/checkpointReader';
import type { ModelConfig } from './modelConfig';
import { expectedTensors } from './weights';
import { quantizeMatrix } from './quantized/blockQuantize';
import { quantizedShapes, quantizedStateNames, type QuantizedLayout } from './quantized/quantizedWeights';

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

/**
 * A weight as the device keeps it: as read, or — where `quantized` lists it — its codes and scales
 * under quantizedStateNames, the float32 values dropped as soon as they are quantized.
 */
function* deviceTensors(
  tensors: Iterable<[string, HostTensor]>,
  quantized: ReadonlyMap<string, QuantizedLayout> | undefined,
): Generator<[string, HostTensor]> {
  for (const [name, tensor] of tensors) {
    const layout = quantized?.get(name);
    if (!layout) {
      yield [name, tensor];
      continue;
    }
    const q = quantizeMatrix(tensor.data as Float32Array, layout.rows, layout.columns, layout);
    const names = quantizedStateNames(name);
    const shapes = quantizedShapes(layout);
    yield [names.data, { dtype: 'uint8', shape: shapes.data, data: q.data }];
    yield [names.scales, { dtype: 'float32', shape: shapes.scales, data: q.scales }];
  }
}

/** Bytes of host float32 weights a load hands to the device at once (see uploadModelWeights). */
export const WEIGHT_UPLOAD_BYTES = 256 * 2 ** 20;

/**
 * Reads the model's weights (as readModelWeights) and puts them on the device as state, a batch of
 * at most `maxBytes` at a time (a tensor larger than that goes alone). Read whole, a Qwen2.5-0.5B
 * load held every float32 weight three times at once — this thread's copy, the copy a device worker
 * receives and the device's own — and peaked at 5.8 GB for 2 GB of weights; in batches the host
 * side holds one batch. A quantized base (`quantized`) is quantized tensor by tensor on the way, so
 * its float32 weights are never all in memory. Returns each state tensor's shape, by name.
 */
export async function uploadModelWeights(
  device: Pick<DeviceApi, 'setState' | 'deleteState'>,
  checkpoint: CheckpointReader,
  config: ModelConfig,
  options: { maxBytes?: number; quantized?: ReadonlyMap<string, QuantizedLayout> | undefined } = {},
): Promise<Map<string, readonly number[]>> {
  const maxBytes = options.maxBytes ?? WEIGHT_UPLOAD_BYTES;
  const shapes = new Map<string, readonly number[]>();
  let batch: Record<string, HostTensor> = {};
  let bytes = 0;
  try {
    for (const [name, tensor] of deviceTensors(modelTensors(checkpoint, config), options.quantized)) {
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
