import * as path from 'node:path';
import type { HealthWarning, RunRecord } from '../../../contract/protocol/runStore';
import { describeBest } from '../checkpoints/bestCheckpoint';
import { loadCheckpoint } from '../checkpoints/checkpoint';
import type { OnCollapse } from './healthSettings';
import { restoreLearners } from '../run/learners';
import type { RunContext } from '../run/runParts';

/**
 * What a run does about a collapse (a critical health warning), as `onCollapse` says:
 *
 *   warn      nothing but the warning (the default: the best weights are kept either way)
 *   rollback  the policy goes back to checkpoints/best — its weights and its optimizer's moments
 *             and step count, as saved with them — and the learning rate is halved from then on
 *             (a multiplier kept in the run position and in each checkpoint's trainer_state.json)
 *   stop      the run ends as stopped
 *
 * The optimizer state comes back with the weights rather than being reset: AdamW's moments from
 * before the collapse match those weights, while fresh moments would make the next update move
 * every weight by about a full learning rate (Adam's first step), a jolt right after a collapse.
 * The data position, the random state and the reference policy go on as they were: the rolled-back
 * policy sees new prompts, not the ones it collapsed on. After a rollback or a stop the health
 * trends start afresh, so one collapse is acted on once.
 */
export interface CollapsePlan {
  kind: OnCollapse;
  /** What the warning's `action` says (absent with `warn`). */
  action?: string;
  /** The learning-rate multiplier after it. */
  lrScale: number;
}

/** Decide the response before the warning is recorded, so that the record says what was done. */
export function planCollapseResponse(onCollapse: OnCollapse, best: RunRecord['best'], lrScale: number): CollapsePlan {
  if (onCollapse === 'warn') return { kind: 'warn', lrScale };
  const where = best ? describeBest(best) : undefined;
  if (onCollapse === 'stop')
    return {
      kind: 'stop',
      lrScale,
      action: `stopped the run (onCollapse: 'stop')${where ? `; the best weights are at ${where}` : ''}`,
    };
  const halved = lrScale / 2;
  if (!best?.checkpoint)
    return {
      kind: 'rollback',
      lrScale: halved,
      action: `no best checkpoint to roll back to yet (no held-out evaluation with a task metric); learning rate ×${halved} from now on`,
    };
  return { kind: 'rollback', lrScale: halved, action: `rolled back to ${where}; learning rate ×${halved} from now on` };
}

/** Attach the plan's action to the collapse warning. */
export function withAction(warnings: HealthWarning[], collapse: HealthWarning, plan: CollapsePlan): HealthWarning[] {
  return plan.action === undefined
    ? warnings
    : warnings.map((w) => (w === collapse ? { ...w, action: plan.action } : w));
}

/**
 * Carry the plan out: a rollback restores checkpoints/best into the learners (resume's own loader,
 * learners.ts) and lowers the learning rate; a stop asks the run to stop after this step.
 */
export async function carryOut(plan: CollapsePlan, { parts, position, learners }: RunContext): Promise<void> {
  if (plan.kind === 'warn') return;
  position.health = [];
  parts.report.log(plan.action!);
  if (plan.kind === 'stop') {
    parts.control.stop();
    return;
  }
  const best = position.writer.record.best;
  if (best?.checkpoint) {
    const dir = path.join(position.writer.dir, best.checkpoint);
    await restoreLearners(parts, learners, loadCheckpoint(dir), dir);
  }
  position.lrScale = plan.lrScale;
}
