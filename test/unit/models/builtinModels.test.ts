import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { builtInModelDir, checkBuiltinModelName } from '#trainer/foundations/models/builtinModels';
import { resolveModelPath } from '#trainer/foundations/models/hub';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { BUILT_IN_RECIPES, parseRecipe, recipeHash } from '#trainer/bases/recipes/recipe';

const ROOT = path.resolve(__dirname, '../../..');

describe('built-in models (rollout-studio:<name>)', () => {
  it('resolves rollout-studio:base to the shipped base, and leaves folders alone', async () => {
    const base = builtInModelDir('base');
    assert.equal(base, path.join(ROOT, 'trainer', 'bases', 'weights', 'base'));
    assert.ok(fs.existsSync(path.join(base, 'model.safetensors')), 'the base ships in the package');
    assert.equal(await resolveModelPath('rollout-studio:base', { baseDir: os.tmpdir() }), base);
    // A folder of that spelling next to the config is still a folder.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'builtin-'));
    try {
      fs.mkdirSync(path.join(dir, 'model'));
      assert.equal(await resolveModelPath('model', { baseDir: dir }), path.join(dir, 'model'));
      await assert.rejects(
        resolveModelPath('rollout-studio:base', { baseDir: dir, revision: 'main', field: 'model.path' }),
        /model\.path: a revision \("main"\) applies to a Hugging Face repo id, and "rollout-studio:base" is a built-in model/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const [name, made] of Object.entries(BUILT_IN_RECIPES)) {
    it(`ships the rollout-studio:${name} that its recipe makes, with its loss curve`, () => {
      const dir = builtInModelDir(name);
      const recipe = parseRecipe(
        JSON.parse(fs.readFileSync(path.join(dir, 'pretrain_recipe.json'), 'utf8')),
        'pretrain_recipe.json',
      );
      assert.equal(
        recipeHash(recipe),
        recipeHash(made),
        "the repository's recipe is the one the shipped weights were made with",
      );
      const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
      assert.deepEqual(
        [config.num_hidden_layers, config.hidden_size, config.tie_word_embeddings],
        [made.model.layers, made.model.hidden, true],
      );
      const metrics = fs
        .readFileSync(path.join(dir, 'pretrain_metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { step: number });
      assert.equal(
        Math.max(...metrics.map((m) => m.step)),
        made.optimization.steps,
        'every step of the recipe is in its metrics',
      );
      assert.ok(fs.existsSync(path.join(dir, 'pretrain_curve.svg')));
    });
  }

  it('names the built-in models when a name is unknown, at config load', async () => {
    assert.throws(
      () => checkBuiltinModelName('rollout-studio:large'),
      /"rollout-studio:large" is not a built-in model \(known: rollout-studio:base, rollout-studio:base-long\)/,
    );
    checkBuiltinModelName('Qwen/Qwen3-0.6B');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'builtin-'));
    try {
      const file = path.join(dir, 'c.config.ts');
      fs.writeFileSync(
        file,
        "import { defineConfig } from 'rollout-studio';\nexport default defineConfig({ model: { path: 'rollout-studio:large' }, data: { train: 't.jsonl' }, rewards: { outcome: [] }, algorithm: { name: 'grpo' }, steps: 1 });\n",
      );
      await assert.rejects(
        loadConfig(file),
        /c\.config\.ts: model\.path: "rollout-studio:large" is not a built-in model \(known: rollout-studio:base, rollout-studio:base-long\)/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
