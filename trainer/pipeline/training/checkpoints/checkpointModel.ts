import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Device } from '../../../foundations/engine/device/device';
import { loraModules, loraTensorNames } from '../../../foundations/models/lora';
import { loadModelConfig } from '../../../foundations/models/modelConfig';
import { ModelRuntime } from '../../../foundations/models/runtime';
import { readLoraAdapter } from '../../../foundations/models/files/save';
import { quantizationOf } from '../../../foundations/models/quantized/blockQuantize';
import { resolveConfigModel, type ModelSourceReporting } from '../config/modelSource';
import type { LoadedConfig } from '../config/trainingConfig';

/**
 * A checkpoint folder as a model for generation: a full model folder as it is, or a LoRA adapter
 * folder (`adapter_config.json`) over the config's base model, its A and B put on the device.
 * (`eval` and `reroll` load checkpoints this way.)
 */
export async function loadCheckpointModel(
  loaded: LoadedConfig,
  checkpointDir: string,
  device: Device,
  report: ModelSourceReporting = {},
): Promise<ModelRuntime> {
  if (!fs.existsSync(path.join(checkpointDir, 'adapter_config.json'))) return ModelRuntime.load(device, checkpointDir);
  const modelDir = await resolveConfigModel(loaded, report);
  const adapter = readLoraAdapter(checkpointDir, loadModelConfig(modelDir));
  // The adapter says how its base was quantized while it trained; older checkpoints, the config.
  // The config's lowMemory (how the sessions multiply) applies either way.
  const configured =
    loaded.config.model.quantize === undefined ? undefined : quantizationOf(loaded.config.model.quantize);
  const stored = adapter.baseQuantization;
  const model = await ModelRuntime.load(device, modelDir, {
    lora: adapter.lora,
    quantize: stored ? { ...stored, lowMemory: configured?.lowMemory } : configured,
  });
  try {
    const state: Record<string, { dtype: 'float32'; shape: number[]; data: Float32Array }> = {};
    for (const m of loraModules(model.config, adapter.lora)) {
      for (const name of Object.values(loraTensorNames(m.module)))
        state[name] = { dtype: 'float32', ...adapter.tensors[name] };
    }
    await device.setState(state);
    return model;
  } catch (error) {
    model.close();
    throw error;
  }
}
