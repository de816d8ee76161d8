import type { PolicyTrainer } from '../rl/policyTrainer';
import { pruneCheckpoints, saveCheckpoint } from './checkpoint';
import { referenceCheckpoint } from './referencePolicy';
import type { RunParts, RunPosition } from './runParts';

/** Save the run at `step` (weights, optimizer, data position, random state), keep the newest few, and mark the step complete with it. */
export async function saveRunCheckpoint(parts: RunParts, position: RunPosition, trainer: PolicyTrainer, step: number): Promise<void> {
  parts.report.progress(step, 'checkpoint', 0, 1);
  const relative = await saveCheckpoint(position.writer.dir, parts.model, trainer.optimizer, {
    step,
    random: position.random.state() as [number, number, number, number],
    data: { epoch: position.cursor.epoch, position: position.cursor.position },
    consecutiveNonFinite: position.consecutiveNonFinite,
    configHash: parts.loaded.hash,
  });
  pruneCheckpoints(position.writer.dir, parts.config.output.keepCheckpoints, referenceCheckpoint(parts.config));
  position.writer.completeStep(step, relative);
  parts.report.progress(step, 'checkpoint', 1, 1);
}
