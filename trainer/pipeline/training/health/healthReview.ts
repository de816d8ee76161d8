import type { HealthWarning, MetricsRecord } from '../../../contract/protocol/runStore';
import { planCollapseResponse, withAction, type CollapsePlan } from './collapseResponse';
import type { EvaluationResult } from '../evaluation/evaluation';
import { RunStoreReader } from '../../../contract/runstore/reader';
import { collapseOf, evaluationWarnings, healthSample, noGainWarnings, pushHealthSample, stepWarnings } from './health';
import type { RunParts, RunPosition } from '../run/runParts';
import { scoreKey, taskMetric } from '../step/taskMetric';

/**
 * The health checks (health.ts) applied to a running run: a training step's or an evaluation's
 * warnings, with the response to a collapse decided (collapseResponse.ts) so that the record says
 * what was done, and printed (warningLog.ts).
 */

export interface Review {
  warnings: HealthWarning[];
  /** Set when the warnings report a collapse and `onCollapse` acts on it. */
  plan?: CollapsePlan;
}

function metricKey(parts: RunParts): string | undefined {
  const metric = taskMetric(parts.config);
  return metric === undefined ? undefined : scoreKey(metric);
}

/** A training step's record with its warnings; the step joins the trends' history. */
export function reviewTrainingStep(
  parts: RunParts,
  position: RunPosition,
  record: MetricsRecord,
): { record: MetricsRecord; plan?: CollapsePlan } {
  const key = metricKey(parts);
  const review = respond(parts, position, stepWarnings(record.values, position.health, parts.config.health, key), true);
  pushHealthSample(position.health, healthSample(record.step, record.values, key), parts.config.health.window);
  return {
    record: review.warnings.length ? { ...record, warnings: review.warnings } : record,
    ...(review.plan ? { plan: review.plan } : {}),
  };
}

/** A held-out evaluation against the run's best so far (call it before the best is updated); the final one is only reported: the run is ending anyway. */
export function reviewEvaluation(
  parts: RunParts,
  position: RunPosition,
  step: number,
  result: EvaluationResult,
  final: boolean,
): Review {
  if (result.metric === undefined || result.score === undefined) return { warnings: [] };
  const evaluation = { step, metric: result.metric, value: result.score };
  const best = position.writer.record.best;
  const warnings = [
    ...evaluationWarnings(evaluation, best, parts.config.health),
    ...(final ? noGainWarnings(evaluation, scoreBeforeRl(position, result.metric), best, parts.config.health) : []),
  ];
  return respond(parts, position, warnings, !final);
}

/** The held-out score of the evaluation before RL, from metrics.jsonl (a resumed run has it there too). */
function scoreBeforeRl(position: RunPosition, metric: string): number | undefined {
  const record = new RunStoreReader(position.writer.dir)
    .metrics()
    .records.find((r) => r.kind === 'eval' && r.step === 0);
  return record?.values[scoreKey(metric)] ?? undefined;
}

function respond(parts: RunParts, position: RunPosition, warnings: HealthWarning[], mayAct: boolean): Review {
  const collapse = collapseOf(warnings);
  if (!collapse || !mayAct) return { warnings };
  const plan = planCollapseResponse(parts.config.onCollapse, position.writer.record.best, position.lrScale);
  return { warnings: withAction(warnings, collapse, plan), ...(plan.kind !== 'warn' ? { plan } : {}) };
}
