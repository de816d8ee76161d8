/**
 * A recipe's `init`: continuing from a pretrained model only when it is the pinned weights, with
 * the recipe's architecture and tokenizer — each mismatch named, nothing copied.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { builtInModelDir } from '#trainer/foundations/models/builtinModels';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { copyInitModel, fileSha256 } from '#trainer/bases/recipes/initModel';
import { BASE_RECIPE, parseRecipe, recipeHash, type Recipe } from '#trainer/bases/recipes/recipe';
import { qwen3TokenizerDir } from '#trainer/bases/recipes/tokenizerSource';

let dir: string;
let tokenizerDir: string;
let baseSha: string;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'init-model-'));
  tokenizerDir = path.join(dir, 'tokenizer');
  truncateBpeTokenizer(qwen3TokenizerDir(), BASE_RECIPE.tokenizer.merges, tokenizerDir);
  baseSha = fileSha256(path.join(builtInModelDir('base'), 'model.safetensors'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const continued = (changes: Partial<Recipe> = {}): Recipe =>
  parseRecipe({ ...BASE_RECIPE, init: { model: 'rollout-studio:base', sha256: baseSha }, ...changes }, 'r.json');

describe("a recipe's init model", () => {
  it('is validated as a model name and a SHA-256, and joins the hash only when present', () => {
    assert.throws(
      () => parseRecipe({ ...BASE_RECIPE, init: { model: 'rollout-studio:base', sha256: 'abc' } }, 'r.json'),
      /r\.json: init\.sha256: expected the 64 hex digits of a SHA-256/,
    );
    assert.throws(
      () => parseRecipe({ ...BASE_RECIPE, init: { model: '', sha256: baseSha } }, 'r.json'),
      /r\.json: init\.model/,
    );
    assert.notEqual(recipeHash(continued()), recipeHash(BASE_RECIPE));
    assert.notEqual(
      recipeHash(continued()),
      recipeHash(continued({ init: { model: 'rollout-studio:base', sha256: '0'.repeat(64) } })),
    );
    // The shipped base's recipe, written before `init` existed, keeps its hash.
    const shipped = parseRecipe(
      JSON.parse(fs.readFileSync(path.join(builtInModelDir('base'), 'pretrain_recipe.json'), 'utf8')),
      'pretrain_recipe.json',
    );
    assert.equal(recipeHash(shipped), recipeHash(BASE_RECIPE));
  });

  it('copies the pinned model, without its pretraining records', () => {
    const out = path.join(dir, 'ok');
    const { source } = copyInitModel(continued(), tokenizerDir, out);
    assert.equal(source, builtInModelDir('base'));
    assert.equal(fileSha256(path.join(out, 'model.safetensors')), baseSha);
    assert.deepEqual(fs.readdirSync(out).sort(), [
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
  });

  it('refuses other weights, another shape and another tokenizer, naming what differs', () => {
    const other = '0'.repeat(64);
    assert.throws(
      () =>
        copyInitModel(
          continued({ init: { model: 'rollout-studio:base', sha256: other } }),
          tokenizerDir,
          path.join(dir, 'a'),
        ),
      new RegExp(
        `init\\.model "rollout-studio:base": model\\.safetensors has SHA-256 ${baseSha}, and init\\.sha256 pins ${other}`,
      ),
    );
    assert.throws(
      () => copyInitModel(continued({ model: { ...BASE_RECIPE.model, layers: 6 } }), tokenizerDir, path.join(dir, 'b')),
      /config\.json's num_hidden_layers is 4, and the recipe's model\.layers is 6/,
    );
    assert.throws(
      () =>
        copyInitModel(
          continued({ model: { ...BASE_RECIPE.model, maxPositionEmbeddings: 4096 } }),
          tokenizerDir,
          path.join(dir, 'c'),
        ),
      /max_position_embeddings is 2048, and the recipe's model\.maxPositionEmbeddings is 4096/,
    );
    const smaller = path.join(dir, 'tokenizer-900');
    truncateBpeTokenizer(qwen3TokenizerDir(), 900, smaller);
    assert.throws(
      () => copyInitModel(continued({ tokenizer: { merges: 900 } }), smaller, path.join(dir, 'd')),
      /its tokenizer is not the one tokenizer\.merges 900 makes/,
    );
    assert.throws(
      () =>
        copyInitModel(
          continued({ init: { model: path.join(dir, 'nowhere'), sha256: baseSha } }),
          tokenizerDir,
          path.join(dir, 'e'),
        ),
      /nowhere[/\\]model\.safetensors is missing/,
    );
    assert.throws(
      () =>
        copyInitModel(
          continued({ init: { model: 'rollout-studio:large', sha256: baseSha } }),
          tokenizerDir,
          path.join(dir, 'f'),
        ),
      /"rollout-studio:large" is not a built-in model/,
    );
    for (const refused of ['a', 'b', 'c', 'd', 'e', 'f'])
      assert.ok(!fs.existsSync(path.join(dir, refused)), `nothing copied for ${refused}`);
  });
});
