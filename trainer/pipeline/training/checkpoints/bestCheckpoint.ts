import * as fs from 'node:fs';
import * as path from 'node:path';
import { checkpointDirName, type RunRecord } from '../../../contract/protocol/runStore';
import { copyCheckpoint, readTrainerState } from './checkpoint';
import type { EvaluationResult } from '../evaluation/evaluation';
import { writeRunCheckpoint } from './runCheckpoint';
import type { StepContext } from '../run/runParts';
import { formatScore } from '../step/taskMetric';

/**
 * The best weights of a run, kept: after each held-out evaluation whose task metric beats every
 * one before it (the evaluation before RL counts, so a run that never beats its warm start keeps
 * the warm start), the weights just evaluated are saved as `checkpoints/best/` — a full
 * checkpoint, as loadable by `eval`, `chat`, `export gguf` as any other — and run.json's `best`
 * names it. Step pruning (`output.keepCheckpoints`) never touches it. A tie keeps the earlier
 * step: as good, and closer to where RL started.
 */
export const BEST_CHECKPOINT = 'checkpoints/best';

/** Whether an evaluation beats the run's best so far (any evaluation with a score beats no best). */
export function beatsBest(best: RunRecord['best'], evaluation: Pick<EvaluationResult, 'metric' | 'score'>): boolean {
  if (evaluation.metric === undefined || evaluation.score === undefined || !Number.isFinite(evaluation.score))
    return false;
  return best === undefined || best.metric !== evaluation.metric || evaluation.score > best.value;
}

/**
 * Keep the weights evaluated at `step` as the best when they beat it: linked from the step's own
 * checkpoint when that one holds them (saved at this step), written anew otherwise. Returns
 * whether they did.
 */
export async function keepBest(at: StepContext, evaluation: EvaluationResult): Promise<boolean> {
  const { parts, step } = at;
  const { writer } = at.position;
  if (!beatsBest(writer.record.best, evaluation)) return false;
  const own = checkpointDirName(step);
  if (holdsStep(writer.dir, own, step)) copyCheckpoint(writer.dir, own, BEST_CHECKPOINT);
  else await writeRunCheckpoint(at, BEST_CHECKPOINT);
  writer.update({ best: { step, metric: evaluation.metric!, value: evaluation.score!, checkpoint: BEST_CHECKPOINT } });
  parts.report.log(`new best: ${describeBest(writer.record.best!)}`);
  return true;
}

/** "step 24, exact_match 0.610 (checkpoints/best)". */
export function describeBest(best: NonNullable<RunRecord['best']>): string {
  return `step ${best.step}, ${formatScore(best.metric, best.value)}${best.checkpoint ? ` (${best.checkpoint})` : ''}`;
}

function holdsStep(runDir: string, relative: string, step: number): boolean {
  const dir = path.join(runDir, relative);
  if (!fs.existsSync(dir)) return false;
  try {
    return readTrainerState(dir).step === step;
  } catch {
    return false;
  }
}
