import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ModelRuntime } from '../../foundations/models/runtime';
import { Random } from '../../foundations/models/random';
import type { SftTrainer } from '../../pipeline/rl/sft';
import { pruneCheckpoints, saveCheckpoint } from '../../pipeline/training/checkpoints/checkpoint';
import { learningRate } from '../../pipeline/training/step/schedule';
import { appendJsonl } from '../../contract/runstore/jsonl';
import type { HeldoutMetrics, TrainMetrics } from './pretrainMetrics';
import type { CorpusContext } from './corpus/corpusContext';
import { packStep } from './corpus/mix';
import { pretrainChart } from './pretrainCurve';
import type { HeldoutEvaluator, HeldoutResult } from './heldout';
import { dataForStep, type Recipe } from './recipe';

/**
 * The steps of a pretraining run (pretrain.ts): each step's rows packed from the corpus, one
 * trainer step, its metrics record, the checkpoints and the held-out evaluations on the way.
 */

/** What the steps of one run share, opened by `pretrain`. */
export interface PretrainRun {
  recipe: Recipe;
  outDir: string;
  metricsFile: string;
  /** Date.now() when the run started: the records' wall_seconds count from here. */
  started: number;
  log: (line: string) => void;
  model: ModelRuntime;
  trainer: SftTrainer;
  corpus: CorpusContext;
  /** The recipe with its corpus's fingerprint (runHash.ts): what the run's checkpoints are tied to. */
  runHash: string;
  evaluator: HeldoutEvaluator | undefined;
}

export interface StepsDone {
  /** The last step trained (the first step's predecessor when none was). */
  step: number;
  /** Each trained step's loss, in order. */
  losses: number[];
  /** The last held-out evaluation during these steps, if any. */
  heldout: HeldoutResult | undefined;
}

type PackedRows = ReturnType<typeof packStep>;

/** Step `s`'s rows: a pure function of the recipe's seed and the step. */
function rowsOf(run: PretrainRun, s: number): PackedRows {
  const { recipe } = run;
  const { mix, rows, length } = dataForStep(recipe, s);
  return packStep(run.corpus, mix, recipe.data.weights, rows, length, recipe.seed, s);
}

/** Redraws curve.svg from every record in metrics.jsonl so far. */
function writeChart(run: PretrainRun): void {
  const { recipe } = run;
  const records = fs
    .readFileSync(run.metricsFile, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as TrainMetrics | HeldoutMetrics);
  fs.writeFileSync(
    path.join(run.outDir, 'curve.svg'),
    pretrainChart(
      records,
      `${recipe.name}: ${recipe.model.family} ${recipe.model.layers}×${recipe.model.hidden}, ${recipe.data.rows}×${recipe.data.length} tokens per step, seed ${recipe.seed}`,
    ) + '\n',
  );
}

/** Evaluates the held-out sets after step `s`: a metrics record, the redrawn chart and a log line. */
export async function evaluateHeldout(run: PretrainRun, s: number): Promise<HeldoutResult> {
  const result = await run.evaluator!.evaluate();
  const record: HeldoutMetrics = {
    kind: 'heldout',
    step: s,
    loss: result.loss,
    target_loss: result.targetLoss,
    text_loss: result.textLoss,
    exact_match: result.exactMatch as Record<string, number>,
    token_accuracy: result.tokenAccuracy as Record<string, number>,
    target_loss_by_skill: result.targetLossBySkill as Record<string, number>,
    wall_seconds: (Date.now() - run.started) / 1000,
  };
  appendJsonl(run.metricsFile, [record]);
  writeChart(run);
  run.log(
    `held-out at step ${s}: loss ${result.loss.toFixed(4)} (target ${result.targetLoss.toFixed(3)}, text ${result.textLoss.toFixed(3)}); exact match ${Object.entries(
      result.exactMatch,
    )
      .map(([k, v]) => `${k} ${(100 * v).toFixed(0)}%`)
      .join(', ')}; target tokens right ${Object.entries(result.tokenAccuracy)
      .map(([k, v]) => `${k} ${(100 * v).toFixed(0)}%`)
      .join(', ')}`,
  );
  return result;
}

/**
 * Trains step `step` on `rows` and writes its metrics record; returns its loss and the next
 * step's rows, which are generated while the device works on this one.
 */
async function trainStep(
  run: PretrainRun,
  step: number,
  rows: PackedRows,
  lastStep: number,
): Promise<{ loss: number; nextRows: PackedRows }> {
  const o = run.recipe.optimization;
  const t0 = performance.now();
  const schedule = { lr: o.lr, warmupSteps: o.warmupSteps, schedule: 'cosine' as const, minLrRatio: o.minLrRatio };
  const lr = learningRate(schedule, step - 1, o.steps);
  const sequences = rows.map((r) => ({
    ids: r.ids,
    mask: Uint8Array.from(r.weights, (w) => (w > 0 ? 1 : 0)),
    weights: r.weights,
  }));
  const pending = run.trainer.step(sequences, lr);
  const nextRows = step < lastStep ? rowsOf(run, step + 1) : [];
  const result = await pending;
  const seconds = (performance.now() - t0) / 1000;
  const tokens = sequences.reduce((n, s) => n + s.ids.length, 0);
  const record: TrainMetrics = {
    kind: 'train',
    step,
    loss: result.loss,
    grad_norm: result.gradNorm,
    lr,
    tokens,
    scored_tokens: sequences.reduce((n, s) => n + s.mask.reduce((a, m) => a + m, 0), 0),
    seconds,
    wall_seconds: (Date.now() - run.started) / 1000,
    tokens_per_second: tokens / seconds,
  };
  appendJsonl(run.metricsFile, [record]);
  if (!result.applied) run.log(`step ${step}: non-finite loss or gradient, update skipped`);
  if (step % 10 === 0 || step === 1)
    run.log(
      `step ${step}/${o.steps}: loss ${result.loss.toFixed(4)}, grad norm ${result.gradNorm.toFixed(3)}, lr ${lr.toExponential(2)}, ${Math.round(record.tokens_per_second)} tokens/s`,
    );
  return { loss: result.loss, nextRows };
}

/** Saves step `step`'s checkpoint and prunes the older ones past the recipe's `keep`. */
async function checkpointStep(run: PretrainRun, step: number): Promise<void> {
  const { recipe, outDir } = run;
  await saveCheckpoint(outDir, run.model, run.trainer.optimizer, {
    step,
    random: Random.fromSeed(recipe.seed).state() as [number, number, number, number],
    data: { epoch: 0, position: step },
    consecutiveNonFinite: 0,
    configHash: run.runHash,
  });
  pruneCheckpoints(outDir, recipe.checkpoint.keep);
}

/** Trains the steps after `firstStep` up to `lastStep`, checkpointing and evaluating as the recipe says. */
export async function trainSteps(run: PretrainRun, firstStep: number, lastStep: number): Promise<StepsDone> {
  const { recipe } = run;
  const losses: number[] = [];
  let heldout: HeldoutResult | undefined;
  let step = firstStep;
  let rows = step < lastStep ? rowsOf(run, step + 1) : [];
  while (step < lastStep) {
    step++;
    const trained = await trainStep(run, step, rows, lastStep);
    rows = trained.nextRows;
    losses.push(trained.loss);
    if (step % recipe.checkpoint.every === 0 || step === lastStep) await checkpointStep(run, step);
    if (run.evaluator && (step % recipe.evaluation.every === 0 || step === recipe.optimization.steps))
      heldout = await evaluateHeldout(run, step);
  }
  return { step, losses, heldout };
}
