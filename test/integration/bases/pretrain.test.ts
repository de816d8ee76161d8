/**
 * The pretraining recipe on a tiny model: reruns are identical (every step's data is a function
 * of seed and step, and the engine's CPU kernels are deterministic — the embedding gradient's
 * race, which only showed on batches large enough for onnxruntime to split across threads, is
 * test/unit/engine/scatterAddDeterminism.test.ts's), a stopped run resumes
 * to exactly the losses of an uninterrupted one (and refuses checkpoints of another recipe or other
 * corpus rows), and the result is a model folder the trainer
 * loads, with its recipe and held-out numbers. (The real recipe runs for hours: never in CI.)
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { openModelFolder } from '#trainer/foundations/models/modelFolder';
import { SKILLS } from '#trainer/bases/recipes/corpus/episode';
import { fileSha256 } from '#trainer/bases/recipes/initModel';
import { pretrain, type PretrainResult } from '#trainer/bases/recipes/pretrain';
import { BASE_RECIPE, parseRecipe, type Recipe } from '#trainer/bases/recipes/recipe';

const TINY: Recipe = parseRecipe(
  {
    ...BASE_RECIPE,
    name: 'tiny',
    tokenizer: { merges: 2000 },
    model: { ...BASE_RECIPE.model, layers: 2, hidden: 32, heads: 2, kvHeads: 2, intermediate: 64 },
    data: {
      ...BASE_RECIPE.data,
      openingMix: { steps: 2, mix: { repeat: 1 } },
      mix: { repeat: 1, lookup: 1, chat: 1 },
      rows: 2,
      length: 256,
    },
    optimization: { ...BASE_RECIPE.optimization, steps: 4, warmupSteps: 1, microBatchSize: 2 },
    evaluation: { ...BASE_RECIPE.evaluation, every: 2, episodesPerSet: 2 },
    checkpoint: { every: 1, keep: 2 },
  },
  'tiny recipe',
);

let root: string;
before(() => (root = fs.mkdtempSync(path.join(os.tmpdir(), 'pretrain-'))));
after(() => fs.rmSync(root, { recursive: true, force: true }));

const run = (
  name: string,
  options: { recipe?: Recipe; stopAfter?: number; noEvaluation?: boolean } = {},
): Promise<PretrainResult> =>
  pretrain({ recipe: options.recipe ?? TINY, outDir: path.join(root, name), inProcessDevice: true, ...options });

describe('pretraining recipe', () => {
  let full: PretrainResult;

  it('runs to a model folder the trainer loads, with its recipe and held-out numbers', async () => {
    full = await run('full');
    assert.equal(full.steps, 4);
    assert.equal(full.losses.length, 4);
    assert.ok(full.losses.every((l) => Number.isFinite(l) && l > 0));
    const folder = openModelFolder(full.modelDir!);
    try {
      assert.ok(folder.chatTemplate, 'the chat template survives the tokenizer cut');
      assert.equal(folder.config.numLayers, 2);
    } finally {
      folder.close();
    }
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(full.modelDir!, 'pretrain_recipe.json'), 'utf8')), TINY);
    const summary = JSON.parse(fs.readFileSync(path.join(root, 'full', 'summary.json'), 'utf8'));
    assert.equal(summary.steps, 4);
    assert.ok(
      summary.heldout.loss > 0 && Object.keys(summary.heldout.exactMatch).length === SKILLS.length,
      JSON.stringify(summary.heldout),
    );
    // Per skill, the share of target tokens right and their loss; the overall target loss is a mean of the per-skill ones.
    const { tokenAccuracy, targetLossBySkill, targetLoss } = summary.heldout as {
      tokenAccuracy: Record<string, number>;
      targetLossBySkill: Record<string, number>;
      targetLoss: number;
    };
    assert.deepEqual(Object.keys(tokenAccuracy).sort(), Object.keys(summary.heldout.exactMatch).sort());
    assert.ok(
      Object.values(tokenAccuracy).every((a) => a >= 0 && a <= 1),
      JSON.stringify(tokenAccuracy),
    );
    const bySkill = Object.values(targetLossBySkill);
    assert.equal(bySkill.length, SKILLS.length);
    assert.ok(
      Math.min(...bySkill) <= targetLoss + 1e-9 && targetLoss <= Math.max(...bySkill) + 1e-9,
      `${targetLoss} outside ${JSON.stringify(targetLossBySkill)}`,
    );
    const records = fs
      .readFileSync(path.join(root, 'full', 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      records.filter((r) => r.kind === 'heldout').map((r) => r.step),
      [0, 2, 4],
    );
    assert.deepEqual(
      records.filter((r) => r.kind === 'train').map((r) => r.loss),
      full.losses,
    );
  });

  it('gives identical losses when run again from scratch', async () => {
    const again = await run('again', { stopAfter: 3, noEvaluation: true });
    assert.deepEqual(again.losses, full.losses.slice(0, 3));
  });

  it('resumes a stopped run from its last checkpoint to exactly the uninterrupted losses', async () => {
    const first = await run('resumed', { stopAfter: 2 });
    assert.deepEqual(first.losses, full.losses.slice(0, 2));
    assert.equal(first.modelDir, undefined, 'no final model before the last step');
    const rest = await run('resumed');
    assert.deepEqual(rest.losses, full.losses.slice(2));
    assert.equal(rest.heldout!.loss, full.heldout!.loss);
    // The checkpoint it resumed from was pruned on the way (keep 2); the final folder is still whole.
    assert.ok(
      !fs.existsSync(path.join(root, 'resumed', 'checkpoints', 'step-000002')),
      'the resumed-from checkpoint was pruned',
    );
    for (const file of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json']) {
      assert.equal(
        fs.readFileSync(path.join(rest.modelDir!, file), 'utf8'),
        fs.readFileSync(path.join(full.modelDir!, file), 'utf8'),
        file,
      );
      assert.ok(fs.existsSync(path.join(root, 'resumed', 'checkpoints', 'step-000004', file)), `step-000004/${file}`);
    }
    assert.deepEqual(
      fs.readFileSync(path.join(rest.modelDir!, 'model.safetensors')),
      fs.readFileSync(path.join(full.modelDir!, 'model.safetensors')),
    );
  });

  it('refuses to resume checkpoints of another run hash (another recipe or other corpus rows), naming both', async () => {
    await run('stale', { stopAfter: 1, noEvaluation: true });
    const checkpoints = path.join(root, 'stale', 'checkpoints');
    for (const c of fs.readdirSync(checkpoints)) {
      const state = path.join(checkpoints, c, 'trainer_state.json');
      fs.writeFileSync(
        state,
        fs.readFileSync(state, 'utf8').replace(/"configHash": "[0-9a-f]+"/, '"configHash": "0000000000000000"'),
      );
    }
    await assert.rejects(
      run('stale', { noEvaluation: true }),
      /step-000001 was written under run hash 0000000000000000, this run's is [0-9a-f]{16}: another recipe, or corpus generators that now write other rows for it/,
    );
  });

  it('continues from a finished model when the recipe names it as init: the same weights, then new steps', async () => {
    const sha256 = fileSha256(path.join(full.modelDir!, 'model.safetensors'));
    const longer = parseRecipe(
      {
        ...TINY,
        name: 'tiny-long',
        init: { model: full.modelDir!, sha256 },
        data: { ...TINY.data, openingMix: undefined, mix: { chat: 1, fact_chain: 1 }, length: 512 },
        optimization: { ...TINY.optimization, steps: 2 },
      },
      'tiny-long',
    );
    const continued = await run('continued', { recipe: longer });
    assert.equal(continued.steps, 2);
    const heldout = fs
      .readFileSync(path.join(root, 'continued', 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((r) => r.kind === 'heldout');
    // Before its first step the run evaluates the init model itself: the finished run's last numbers.
    assert.equal(heldout[0].step, 0);
    assert.equal(heldout[0].loss, full.heldout!.loss);
    assert.notDeepEqual(
      fs.readFileSync(path.join(continued.modelDir!, 'model.safetensors')),
      fs.readFileSync(path.join(full.modelDir!, 'model.safetensors')),
      'it trained',
    );
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(continued.modelDir!, 'pretrain_recipe.json'), 'utf8')).init, {
      model: full.modelDir,
      sha256,
    });
  });

  it('refuses to continue a folder with another recipe', async () => {
    await assert.rejects(run('resumed', { recipe: { ...TINY, seed: 2 } }), /holds a run of another recipe/);
  });
});
