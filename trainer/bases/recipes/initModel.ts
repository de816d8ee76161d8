import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BUILT_IN_PREFIX, builtInModelDir, checkBuiltinModelName } from '../../foundations/models/builtinModels';
import { RecipeError, type Recipe } from './recipe';

/**
 * A recipe's `init`: the pretrained model a run continues from. It is copied into the run's
 * init/ folder (where a fresh run writes its random weights) once it is known to be the pinned
 * weights, with the recipe's architecture and the recipe's tokenizer — so the rest of
 * pretraining does not know the difference, and a resumed run never reads the source again.
 */

/** The folder a recipe's `init.model` names: a built-in model or a path (relative to the working folder). */
export function initModelDir(model: string): string {
  if (model.startsWith(BUILT_IN_PREFIX)) {
    checkBuiltinModelName(model);
    return builtInModelDir(model.slice(BUILT_IN_PREFIX.length));
  }
  return path.resolve(model);
}

export function fileSha256(file: string): string {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** The config.json fields each of the recipe's model settings must equal. */
function expectedConfig(recipe: Recipe): Array<[recipeField: string, configField: string, value: unknown]> {
  const m = recipe.model;
  return [
    ['model.family', 'model_type', m.family],
    ['model.layers', 'num_hidden_layers', m.layers],
    ['model.hidden', 'hidden_size', m.hidden],
    ['model.heads', 'num_attention_heads', m.heads],
    ['model.kvHeads', 'num_key_value_heads', m.kvHeads],
    ['model.intermediate', 'intermediate_size', m.intermediate],
    ['model.tieEmbeddings', 'tie_word_embeddings', m.tieEmbeddings],
    ['model.ropeTheta', 'rope_theta', m.ropeTheta],
    ['model.maxPositionEmbeddings', 'max_position_embeddings', m.maxPositionEmbeddings],
  ];
}

function readJson(file: string, what: string): Record<string, unknown> {
  if (!fs.existsSync(file)) throw new RecipeError(`${what}: ${file} is missing`);
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new RecipeError(`${what}: ${file} is not valid JSON (${(error as Error).message})`);
  }
}

/**
 * Checks `recipe.init` against the model it names and copies that model's files (not its
 * pretrain_* records) into `outDir`. `tokenizerDir` holds the recipe's own truncated tokenizer,
 * which the init model's must equal token for token.
 */
export function copyInitModel(recipe: Recipe, tokenizerDir: string, outDir: string): { source: string } {
  const init = recipe.init;
  if (!init) throw new RecipeError('copyInitModel: the recipe has no init');
  const what = `init.model "${init.model}"`;
  const source = initModelDir(init.model);
  const weights = path.join(source, 'model.safetensors');
  if (!fs.existsSync(weights)) throw new RecipeError(`${what}: ${weights} is missing`);
  const actual = fileSha256(weights);
  if (actual !== init.sha256)
    throw new RecipeError(
      `${what}: model.safetensors has SHA-256 ${actual}, and init.sha256 pins ${init.sha256}: not the weights this recipe starts from`,
    );
  const config = readJson(path.join(source, 'config.json'), what);
  for (const [recipeField, configField, value] of expectedConfig(recipe)) {
    if (config[configField] !== value)
      throw new RecipeError(
        `${what}: config.json's ${configField} is ${JSON.stringify(config[configField])}, and the recipe's ${recipeField} is ${JSON.stringify(value)}`,
      );
  }
  const theirs = readJson(path.join(source, 'tokenizer.json'), what).model as
    { vocab?: unknown; merges?: unknown } | undefined;
  const ours = readJson(path.join(tokenizerDir, 'tokenizer.json'), "the recipe's tokenizer").model as {
    vocab?: unknown;
    merges?: unknown;
  };
  if (
    JSON.stringify(theirs?.vocab) !== JSON.stringify(ours.vocab) ||
    JSON.stringify(theirs?.merges) !== JSON.stringify(ours.merges)
  ) {
    throw new RecipeError(`${what}: its tokenizer is not the one tokenizer.merges ${recipe.tokenizer.merges} makes`);
  }
  fs.mkdirSync(outDir, { recursive: true });
  for (const file of fs.readdirSync(source)) {
    if (file.startsWith('pretrain_') || !fs.statSync(path.join(source, file)).isFile()) continue;
    fs.copyFileSync(path.join(source, file), path.join(outDir, file));
  }
  return { source };
}
