import * as fs from 'node:fs';
import * as path from 'node:path';
import { resolveModelPath } from '../../../foundations/models/hub/index';
import { checkpointDirName, type TrajectorySet } from '../../../contract/protocol/runStore';
import { RunStoreReader } from '../../../contract/runstore/reader';
import { resolveConfigModel } from '../config/modelSource';
import type { LoadedConfig } from '../config/trainingConfig';

/**
 * Which weights a re-roll generates with, from what the user asked:
 *   (nothing)     the weights that generated the parent: a training step S's rollouts came from the
 *                 policy after step S−1 (`checkpoints/step-(S−1)`), an evaluation after step S from
 *                 `checkpoints/step-S`
 *   best          `checkpoints/best`
 *   warm-start    `checkpoints/step-000000` (the model after the SFT warm start), or the config's
 *                 model when the run kept no such checkpoint
 *   N, step-N     `checkpoints/step-N`
 *   anything else a model folder (relative to the current folder) or a Hub repo id
 */
export async function rerollCheckpoint(
  runDir: string,
  loaded: LoadedConfig,
  spec: string | undefined,
  parent: { set: TrajectorySet; step: number },
): Promise<{ spec: string; path: string }> {
  const inRun = (relative: string, asked: string) => {
    const dir = path.join(runDir, relative);
    if (fs.existsSync(dir)) return { spec: asked, path: dir };
    const kept = new RunStoreReader(runDir).checkpoints();
    const best = fs.existsSync(path.join(runDir, 'checkpoints', 'best')) ? ['best'] : [];
    throw new Error(
      `${runDir}: no ${relative} (${asked}); the run keeps ${[...kept.map((k) => path.basename(k)), ...best].join(', ') || 'no checkpoints'} — pass --checkpoint with one of them, warm-start, or a model folder`,
    );
  };
  if (spec === undefined) {
    const step = parent.set === 'train' ? parent.step - 1 : parent.step;
    return inRun(checkpointDirName(step), `step-${step}`);
  }
  if (spec === 'best') return inRun('checkpoints/best', 'best');
  if (spec === 'warm-start') {
    const dir = path.join(runDir, checkpointDirName(0));
    return fs.existsSync(dir) ? { spec, path: dir } : { spec, path: await resolveConfigModel(loaded) };
  }
  const step = /^(?:step-)?(\d+)$/.exec(spec);
  if (step) return inRun(checkpointDirName(Number(step[1])), spec);
  return { spec, path: await resolveModelPath(spec, { baseDir: process.cwd(), field: '--checkpoint' }) };
}
