import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import { z } from 'zod';
import { describeIssues } from '../../contract/protocol/parse';
import { LossWeights, Mix } from './corpus/mix';

/**
 * A pretraining recipe: everything that decides the pretrained model — tokenizer, architecture,
 * corpus mix, loss weights, optimisation, evaluation — in one validated object, so that the same
 * recipe and seed give the same model. `BASE_RECIPE` is the recipe the base is being developed with
 * (no base ships yet: issue 13).
 */

const positiveInt = z.number().int().positive();

export const Recipe = z.strictObject({
  name: z.string().min(1),
  seed: z.number().int().min(0),
  /**
   * Continue from a pretrained model's weights instead of fresh ones: a model folder or a
   * built-in name (`rollout-studio:base`), pinned by its model.safetensors' SHA-256 so the same
   * recipe always starts from the same weights. Its architecture and tokenizer must be the
   * recipe's; the optimizer's moments start at zero.
   */
  init: z
    .strictObject({
      model: z.string().min(1),
      sha256: z.string().regex(/^[0-9a-f]{64}$/, 'expected the 64 hex digits of a SHA-256'),
    })
    .optional(),
  tokenizer: z.strictObject({
    /** Keep Qwen3's first N BPE merges (its chat template and special tokens stay). */
    merges: positiveInt,
  }),
  model: z.strictObject({
    family: z.enum(['llama', 'qwen3', 'qwen2']),
    layers: positiveInt,
    hidden: positiveInt,
    heads: positiveInt,
    kvHeads: positiveInt,
    intermediate: positiveInt,
    tieEmbeddings: z.boolean(),
    ropeTheta: z.number().positive(),
    maxPositionEmbeddings: positiveInt,
  }),
  data: z.strictObject({
    /**
     * The mix of the first `steps` steps, before `mix`, and optionally their own row shape.
     * Copying (an induction head) forms as a sudden phase change, and sooner on short rows of
     * plain copy episodes: at initialisation attention is near-uniform over the row, so the
     * gradient that starts an induction head shrinks as the row grows. The runs that showed it:
     * trainer/bases/README.md.
     */
    openingMix: z
      .strictObject({
        steps: z.number().int().min(0),
        mix: Mix,
        rows: positiveInt.optional(),
        length: z.number().int().min(16).optional(),
      })
      .optional(),
    mix: Mix,
    weights: LossWeights,
    /** Rows per optimizer step and tokens per row (episodes packed back to back). */
    rows: positiveInt,
    length: z.number().int().min(16),
  }),
  optimization: z.strictObject({
    steps: positiveInt,
    lr: z.number().positive(),
    warmupSteps: z.number().int().min(0),
    /** Cosine decay to this fraction of lr at the last step. */
    minLrRatio: z.number().min(0).max(1),
    weightDecay: z.number().min(0),
    beta1: z.number().min(0).max(1),
    beta2: z.number().min(0).max(1),
    eps: z.number().positive(),
    maxGradNorm: z.number().min(0),
    microBatchSize: positiveInt,
  }),
  evaluation: z.strictObject({
    /** Held-out evaluation every N steps (and at the end). */
    every: positiveInt,
    /** Episodes per held-out set (there are 9 sets). */
    episodesPerSet: positiveInt,
    /** Seed of the held-out sets: never a training step's stream. */
    seed: z.number().int().min(0),
  }),
  checkpoint: z.strictObject({ every: positiveInt, keep: positiveInt }),
  /** How the final weights are stored. */
  output: z.strictObject({ dtype: z.enum(['float32', 'bfloat16']) }),
});
export type Recipe = z.infer<typeof Recipe>;

export class RecipeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecipeError';
  }
}

export function parseRecipe(value: unknown, origin: string): Recipe {
  const result = Recipe.safeParse(value);
  if (!result.success)
    throw new RecipeError(`${origin}: ${describeIssues(result.error.issues).split('; ').join(`\n${origin}: `)}`);
  const r = result.data;
  if (r.model.heads % r.model.kvHeads !== 0)
    throw new RecipeError(
      `${origin}: model.heads (${r.model.heads}) must be a multiple of model.kvHeads (${r.model.kvHeads})`,
    );
  if (r.model.hidden % r.model.heads !== 0)
    throw new RecipeError(
      `${origin}: model.hidden (${r.model.hidden}) must be divisible by model.heads (${r.model.heads})`,
    );
  if (r.data.openingMix && r.data.openingMix.steps >= r.optimization.steps)
    throw new RecipeError(
      `${origin}: data.openingMix.steps (${r.data.openingMix.steps}) must be fewer than optimization.steps (${r.optimization.steps})`,
    );
  if (r.data.openingMix?.length && r.data.openingMix.length > r.model.maxPositionEmbeddings)
    throw new RecipeError(
      `${origin}: data.openingMix.length ${r.data.openingMix.length} is longer than model.maxPositionEmbeddings ${r.model.maxPositionEmbeddings}`,
    );
  if (r.data.length > r.model.maxPositionEmbeddings)
    throw new RecipeError(
      `${origin}: data.length ${r.data.length} is longer than model.maxPositionEmbeddings ${r.model.maxPositionEmbeddings}`,
    );
  return r;
}

export function loadRecipe(file: string): Recipe {
  if (!fs.existsSync(file)) throw new RecipeError(`${file}: not found`);
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new RecipeError(`${file}: not valid JSON (${(error as Error).message})`);
  }
  return parseRecipe(json, file);
}

/** What a step (1-based) trains on: the opening phase's mix and row shape for its first steps, then the main ones. */
export interface PretrainStepData {
  mix: Mix;
  rows: number;
  length: number;
}

export function dataForStep(recipe: Recipe, step: number): PretrainStepData {
  const { openingMix: opening, mix, rows, length } = recipe.data;
  if (opening && step <= opening.steps)
    return { mix: opening.mix, rows: opening.rows ?? rows, length: opening.length ?? length };
  return { mix, rows, length };
}

/**
 * A stable hash of what decides the model — seed, tokenizer, architecture, data, optimisation,
 * output — so a run only resumes under the recipe it started with. The name, the evaluation and
 * the checkpoint cadence change no weight, so they are left out: a run can be renamed or
 * evaluated more often and still resume. The generators' code is not in it: a checkpoint is tied
 * to this hash and the corpus's own fingerprint together (runHash.ts).
 */
export function recipeHash(recipe: Recipe): string {
  const { seed, init, tokenizer, model, data, optimization, output } = recipe;
  // `init` joins the hash only when present, so the recipes without one keep their hashes.
  return crypto
    .createHash('sha256')
    .update(JSON.stringify({ seed, ...(init ? { init } : {}), tokenizer, model, data, optimization, output }))
    .digest('hex')
    .slice(0, 16);
}

/**
 * The base's recipe: Qwen3's first 1,000 merges, lr 2e-3, and an opening of 300 steps on 64-token
 * rows, half of them random-token spans repeated — copying starts there, on short rows, and the
 * packed 512-token rows of the main mix build on it. `plain_request` (arguments said without their
 * parameters' names) teaches copying a request's units into a call.
 *
 * A rerun is bit for bit on an x86-64 CPU with AVX-512, whatever onnxruntime's thread count; other
 * instruction sets run other kernels and give another training of the same recipe. `--stop-after N
 * --compare <the base's pretrain_metrics.jsonl>` checks the first N steps. The runs, their
 * held-out numbers and the reproduction checks: trainer/bases/README.md.
 */
export const BASE_RECIPE: Recipe = parseRecipe(
  {
    name: 'rollout-studio-base',
    seed: 1,
    tokenizer: { merges: 1000 },
    model: {
      family: 'llama',
      layers: 4,
      hidden: 256,
      heads: 4,
      kvHeads: 4,
      intermediate: 704,
      tieEmbeddings: true,
      ropeTheta: 10000,
      maxPositionEmbeddings: 2048,
    },
    data: {
      openingMix: {
        steps: 300,
        mix: { repeat_span: 0.5, repeat: 0.3, lookup: 0.1, induction: 0.1 },
        rows: 64,
        length: 64,
      },
      mix: {
        repeat: 0.22,
        induction: 0.08,
        lookup: 0.08,
        prose: 0.04,
        chat: 0.08,
        tool: 0.2,
        chain: 0.1,
        plain_request: 0.15,
        multi_turn: 0.05,
      },
      weights: { target: 1, text: 0.1, sampleBelowOne: 0.25 },
      rows: 8,
      length: 512,
    },
    optimization: {
      steps: 2000,
      lr: 2e-3,
      warmupSteps: 50,
      minLrRatio: 0.1,
      weightDecay: 0.1,
      beta1: 0.9,
      beta2: 0.95,
      eps: 1e-8,
      maxGradNorm: 1,
      microBatchSize: 8,
    },
    evaluation: { every: 100, episodesPerSet: 24, seed: 424242 },
    checkpoint: { every: 50, keep: 2 },
    output: { dtype: 'float32' },
  },
  'BASE_RECIPE',
);

/**
 * The long base's recipe (`rollout-studio:base-long`): the base, continued for 600 steps on rows of
 * 1,024 tokens instead of 512, with chains of facts (`fact_chain`: two to four calls, each reading
 * its argument out of the last result beside near misses) added to the base's mix. Why: the base
 * never saw a position past 512, so tasks whose trajectories run longer met a model that had not
 * learnt to read there, and 512-token rows dropped most two-call `chain` episodes as too long.
 * The learning rate is re-warmed to 6e-4 (below the base's 2e-3 peak); AdamW's moments start at
 * zero. The shipped run's numbers: trainer/bases/README.md.
 */
export const BASE_LONG_RECIPE: Recipe = parseRecipe(
  {
    ...BASE_RECIPE,
    name: 'rollout-studio-base-long',
    init: { model: 'rollout-studio:base', sha256: '9a46899991d226f1ccee7db00255f8ff26816faeb4c34ff13669a75024320fd6' },
    data: {
      ...BASE_RECIPE.data,
      openingMix: undefined,
      mix: { ...BASE_RECIPE.data.mix, fact_chain: 0.12 },
      length: 1024,
    },
    optimization: { ...BASE_RECIPE.optimization, steps: 600, lr: 6e-4, warmupSteps: 30 },
  },
  'BASE_LONG_RECIPE',
);

/** The recipes of the built-in models, by the name a config gives the model (`rollout-studio:<name>`). */
export const BUILT_IN_RECIPES: Readonly<Record<string, Recipe>> = { base: BASE_RECIPE, 'base-long': BASE_LONG_RECIPE };
