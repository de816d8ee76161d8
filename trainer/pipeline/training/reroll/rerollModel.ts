import { createDevice } from '../../../foundations/engine/device/device';
import type { ExecutionProviderName } from '../../../foundations/engine/runtime/providers';
import type { ModelRuntime } from '../../../foundations/models/runtime';
import type { TrajectorySet } from '../../../contract/protocol/runStore';
import { loadCheckpointModel } from '../checkpoints/checkpointModel';
import { providerFor } from '../config/configOptions';
import { rerollCheckpoint } from './rerollCheckpoint';
import type { LoadedConfig } from '../config/trainingConfig';

/** The re-roll's weights on a device of their own (closing the model leaves the device to the caller: `model.device`). */
export async function checkpointModelFor(
  loaded: LoadedConfig,
  request: {
    runDir: string;
    set: TrajectorySet;
    step: number;
    checkpoint?: string;
    device?: ExecutionProviderName;
    log?: (line: string) => void;
  },
): Promise<{ model: ModelRuntime; checkpoint: { spec: string; path: string } }> {
  const checkpoint = await rerollCheckpoint(request.runDir, loaded, request.checkpoint, request);
  request.log?.(`re-rolling with ${checkpoint.spec} (${checkpoint.path})`);
  const device = createDevice(providerFor(loaded.config, request.device));
  try {
    return {
      model: await loadCheckpointModel(loaded, checkpoint.path, device, request.log ? { log: request.log } : {}),
      checkpoint,
    };
  } catch (error) {
    await device.close().catch(() => undefined);
    throw error;
  }
}
