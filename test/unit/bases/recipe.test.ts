import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { builtInModelDir, BUILT_IN_MODEL_NAMES } from '#trainer/foundations/models/builtinModels';
import { fileSha256 } from '#trainer/bases/recipes/initModel';
import {
  BASE_LONG_RECIPE,
  BASE_RECIPE,
  BUILT_IN_RECIPES,
  loadRecipe,
  dataForStep,
  parseRecipe,
  recipeHash,
} from '#trainer/bases/recipes/recipe';

describe('pretraining recipe', () => {
  it('names the field and what was expected', () => {
    assert.throws(
      () => parseRecipe({ ...BASE_RECIPE, optimization: { ...BASE_RECIPE.optimization, lr: -1 } }, 'r.json'),
      /r\.json: optimization\.lr/,
    );
    assert.throws(
      () => parseRecipe({ ...BASE_RECIPE, data: { ...BASE_RECIPE.data, mix: { poems: 1 } } }, 'r.json'),
      /r\.json: data\.mix/,
    );
    assert.throws(
      () => parseRecipe({ ...BASE_RECIPE, data: { ...BASE_RECIPE.data, mix: { repeat: 0 } } }, 'r.json'),
      /at least one episode kind/,
    );
    assert.throws(
      () => parseRecipe({ ...BASE_RECIPE, model: { ...BASE_RECIPE.model, kvHeads: 3 } }, 'r.json'),
      /multiple of model\.kvHeads/,
    );
    assert.throws(() => parseRecipe({ ...BASE_RECIPE, extra: 1 }, 'r.json'), /extra/);
    assert.throws(
      () =>
        parseRecipe(
          { ...BASE_RECIPE, data: { ...BASE_RECIPE.data, openingMix: { steps: 5000, mix: { repeat: 1 } } } },
          'r.json',
        ),
      /data\.openingMix\.steps \(5000\) must be fewer than optimization\.steps/,
    );
    assert.throws(
      () =>
        parseRecipe(
          { ...BASE_RECIPE, data: { ...BASE_RECIPE.data, openingMix: { steps: 5, mix: { repeat: 1 }, length: 4096 } } },
          'r.json',
        ),
      /data\.openingMix\.length 4096 is longer than model\.maxPositionEmbeddings 2048/,
    );
  });

  it('uses the opening mix and row shape for its first steps, then the main ones', () => {
    const opening = BASE_RECIPE.data.openingMix!;
    const { rows, length, mix } = BASE_RECIPE.data;
    const openingData = { mix: opening.mix, rows: opening.rows ?? rows, length: opening.length ?? length };
    assert.deepEqual(dataForStep(BASE_RECIPE, 1), openingData);
    assert.deepEqual(dataForStep(BASE_RECIPE, opening.steps), openingData);
    assert.deepEqual(dataForStep(BASE_RECIPE, opening.steps + 1), { mix, rows, length });
    assert.ok(!('tool' in opening.mix) && 'tool' in mix, 'copying first, chats after');
    // A shape of its own, or the main one when the opening names none.
    const shaped = {
      ...BASE_RECIPE,
      data: { ...BASE_RECIPE.data, openingMix: { steps: 3, mix: { repeat: 1 }, rows: 32, length: 128 } },
    };
    assert.deepEqual(dataForStep(shaped, 3), { mix: { repeat: 1 }, rows: 32, length: 128 });
    assert.deepEqual(dataForStep(shaped, 4), { mix, rows, length });
    const unshaped = { ...BASE_RECIPE, data: { ...BASE_RECIPE.data, openingMix: { steps: 3, mix: { repeat: 1 } } } };
    assert.deepEqual(dataForStep(unshaped, 1), { mix: { repeat: 1 }, rows, length });
    const { openingMix: _none, ...data } = BASE_RECIPE.data;
    assert.deepEqual(dataForStep({ ...BASE_RECIPE, data }, 1), { mix, rows, length });
  });

  it('loads from JSON, and hashes what decides the model', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recipe-'));
    try {
      const file = path.join(dir, 'r.json');
      fs.writeFileSync(file, JSON.stringify(BASE_RECIPE));
      assert.deepEqual(loadRecipe(file), BASE_RECIPE);
      assert.equal(recipeHash(loadRecipe(file)), recipeHash(BASE_RECIPE));
      assert.notEqual(recipeHash({ ...BASE_RECIPE, seed: 2 }), recipeHash(BASE_RECIPE));
      assert.notEqual(
        recipeHash({ ...BASE_RECIPE, data: { ...BASE_RECIPE.data, length: 256 } }),
        recipeHash(BASE_RECIPE),
      );
      // What changes no weight does not change the hash.
      assert.equal(
        recipeHash({
          ...BASE_RECIPE,
          name: 'renamed',
          evaluation: { ...BASE_RECIPE.evaluation, every: 7 },
          checkpoint: { every: 3, keep: 9 },
        }),
        recipeHash(BASE_RECIPE),
      );
      fs.writeFileSync(file, '{ nope');
      assert.throws(() => loadRecipe(file), /r\.json: not valid JSON/);
      assert.throws(() => loadRecipe(path.join(dir, 'missing.json')), /missing\.json: not found/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("has a recipe for every built-in model, and the long base's continues the shipped base", () => {
    assert.deepEqual(Object.keys(BUILT_IN_RECIPES).sort(), [...BUILT_IN_MODEL_NAMES].sort());
    assert.equal(BASE_LONG_RECIPE.init?.model, 'rollout-studio:base');
    assert.equal(
      BASE_LONG_RECIPE.init?.sha256,
      fileSha256(path.join(builtInModelDir('base'), 'model.safetensors')),
      'the weights it pins are the ones that ship',
    );
    // The base's architecture and tokenizer, its mix plus the chains of facts, on longer rows.
    assert.deepEqual([BASE_LONG_RECIPE.model, BASE_LONG_RECIPE.tokenizer], [BASE_RECIPE.model, BASE_RECIPE.tokenizer]);
    assert.deepEqual(BASE_LONG_RECIPE.data.mix, { ...BASE_RECIPE.data.mix, fact_chain: 0.12 });
    assert.equal(BASE_LONG_RECIPE.data.length, 2 * BASE_RECIPE.data.length);
  });
});
