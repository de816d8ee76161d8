/**
 * A float64 central-difference check of the whole model: the scoring graph's log-probs (every
 * weight of a two-layer Qwen3 and a Qwen2 with LoRA and a value head) projected onto fixed
 * random weights, differentiated with respect to every parameter tensor — and a QLoRA model whose
 * matrices are 4-bit codes, differentiated with respect to everything that trains over them.
 * With each layer checkpointed (gradient checkpointing) the same checks hold, and the backward
 * pass reads none of a layer's own activations: it recomputes them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { grad } from '#trainer/foundations/engine/autodiff';
import type { Graph, Node } from '#trainer/foundations/engine/graph';
import { gradCheck } from '../../helpers/gradcheck';
import * as op from '#trainer/foundations/engine/ops';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { packForScoring } from '#trainer/foundations/models/batch';
import { parseModelConfig, type ModelConfig } from '#trainer/foundations/models/modelConfig';
import { loraModules, loraTensorNames, type LoraConfig } from '#trainer/foundations/models/lora';
import { buildScoringGraph, VALUE_HEAD } from '#trainer/foundations/models/scoring';
import { expectedTensors } from '#trainer/foundations/models/weights';
import { quantizeMatrix, type Quantization } from '#trainer/foundations/models/quantized/blockQuantize';
import {
  quantizedLayouts,
  quantizedShapes,
  quantizedStateNames,
} from '#trainer/foundations/models/quantized/quantizedWeights';
import { assertGradients, f64, seeded } from '../../helpers/engine';

function tinyConfig(family: 'qwen2' | 'qwen3', sizes = { hidden: 8, intermediate: 12 }): ModelConfig {
  const architectures = { qwen2: 'Qwen2ForCausalLM', qwen3: 'Qwen3ForCausalLM' };
  return parseModelConfig(
    {
      architectures: [architectures[family]],
      model_type: family,
      vocab_size: 23,
      hidden_size: sizes.hidden,
      intermediate_size: sizes.intermediate,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: family === 'qwen3' ? 6 : undefined,
      rms_norm_eps: 1e-6,
      rope_theta: 10000,
      max_position_embeddings: 64,
      tie_word_embeddings: family === 'qwen2',
      hidden_act: 'silu',
    },
    `${family}/config.json`,
  );
}

async function checkModel(
  config: ModelConfig,
  lora?: LoraConfig,
  valueHead = false,
  quantization?: Quantization,
  checkpointLayers = false,
): Promise<void> {
  const r = seeded(config.family.length * 31);
  const feeds: Record<string, HostTensor> = {};
  const layouts = quantization ? quantizedLayouts(expectedTensors(config), quantization) : new Map();
  for (const t of expectedTensors(config)) {
    const values = f64(t.shape, r, t.role === 'norm' ? 0.2 : 0.3, t.role === 'norm' ? 1 : 0);
    const layout = layouts.get(t.name);
    if (!layout) feeds[t.name] = values;
    else {
      // A quantized base: codes and scales, which take no gradient; the float64 graph dequantizes them.
      const q = quantizeMatrix(Float32Array.from(values.data as Float64Array), layout.rows, layout.columns, layout);
      const names = quantizedStateNames(t.name);
      const shapes = quantizedShapes(layout);
      feeds[names.data] = { dtype: 'uint8', shape: shapes.data, data: q.data };
      feeds[names.scales] = { dtype: 'float32', shape: shapes.scales, data: q.scales };
    }
  }
  const quantized = quantization ? { layouts, accuracyLevel: 0, lowMemory: true } : undefined;
  if (lora) {
    for (const m of loraModules(config, lora)) {
      const names = loraTensorNames(m.module);
      feeds[names.a] = f64([lora.rank, m.inFeatures], r, 0.3);
      feeds[names.b] = f64([m.outFeatures, lora.rank], r, 0.3);
    }
    feeds.lora_scale = { dtype: 'float64', shape: [], data: Float64Array.of(lora.alpha / lora.rank) };
  }
  if (valueHead) {
    feeds[VALUE_HEAD.weight] = f64([1, config.hiddenSize], r, 0.3);
    feeds[VALUE_HEAD.bias] = f64([1], r, 0.3);
  }
  const packed = packForScoring([
    [1, 5, 9, 2, 22, 7],
    [3, 3, 14, 0],
  ]);
  Object.assign(feeds, packed.feeds, { inv_temperature: { dtype: 'float64', shape: [], data: Float64Array.of(1.3) } });
  const projection = f64([2, packed.length], r);
  const valueProjection = f64([2, packed.length], r);
  feeds.projection = projection;
  feeds.value_projection = valueProjection;
  const build = () => {
    const scoring = buildScoringGraph(
      config,
      { dtype: 'float64', lora, entropy: true, valueHead, quantized, checkpointLayers },
      'gradcheck',
    );
    const g = scoring.graph;
    const proj = g.input('projection', 'float64', ['B', 'T']);
    let loss = op.reduceSum(op.mul(op.add(scoring.logprobs, op.mul(scoring.entropy!, 0.5)), proj));
    if (scoring.values)
      loss = op.add(loss, op.reduceSum(op.mul(scoring.values, g.input('value_projection', 'float64', ['B', 'T']))));
    const trainable = [...scoring.weights.used.values()].filter((t) => t.dtype === 'float64');
    return { loss, wrt: trainable, graph: g };
  };
  const results = await gradCheck(build, feeds, { maxElementsPerTensor: 6, step: 1e-5 });
  assertGradients(results);
}

describe('whole-model gradients (float64 finite differences)', () => {
  it('Qwen3: every weight, through log-probs and entropy', () => checkModel(tinyConfig('qwen3')));
  it('Qwen2 with tied embeddings, LoRA on q/v/down and a value head', () =>
    checkModel(
      tinyConfig('qwen2'),
      { rank: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'v_proj', 'down_proj'] },
      true,
    ));
  it('Qwen2 on a 4-bit base (QLoRA): the adapters, norms and biases through the dequantized blocks', () =>
    checkModel(
      tinyConfig('qwen2', { hidden: 16, intermediate: 32 }),
      { rank: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'v_proj', 'up_proj', 'down_proj'] },
      false,
      { bits: 4, blockSize: 16 },
    ));
  it('Qwen3 with every layer checkpointed: every weight', () =>
    checkModel(tinyConfig('qwen3'), undefined, false, undefined, true));
  it('Qwen2 on a 4-bit base with LoRA and a value head, every layer checkpointed', () =>
    checkModel(
      tinyConfig('qwen2', { hidden: 16, intermediate: 32 }),
      { rank: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'v_proj', 'up_proj', 'down_proj'] },
      true,
      { bits: 4, blockSize: 16 },
      true,
    ));
});

/**
 * The nodes of checkpointed segments (among the first `forwardEnd` nodes) that compute a layer's
 * own activations: they depend on a value made before their segment, not on weights and constants
 * alone, and give floating-point values (not shapes), and no forward node after the segment reads them (the segment's outputs, which the next
 * layer reads, are kept either way).
 */
function segmentActivations(g: Graph, ranges: Graph['checkpoints'], forwardEnd: number): Set<Node> {
  const activations = new Set<Node>();
  for (const { start, end } of ranges) {
    for (const node of g.nodes.slice(start, end)) {
      const reads = node.inputs.some((t) => t?.producer && (t.producer.index < start || activations.has(t.producer)));
      // Values, not shapes: the integers a Shape node gives may be kept (recompute.ts).
      if (reads && node.outputs.some((o) => o.dtype.startsWith('float'))) activations.add(node);
    }
    for (const later of g.nodes.slice(end, forwardEnd))
      for (const t of later.inputs) if (t?.producer && t.producer.index >= start) activations.delete(t.producer);
  }
  return activations;
}

describe('gradient checkpointing', () => {
  /** What the backward reads of the layers' activations; `ranges`: the layers' nodes (default: the graph's checkpoints). */
  const backwardReads = (checkpointLayers: boolean, ranges?: Graph['checkpoints']) => {
    const config = tinyConfig('qwen2', { hidden: 16, intermediate: 32 });
    const lora: LoraConfig = { rank: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'v_proj', 'down_proj'] };
    const scoring = buildScoringGraph(config, { dtype: 'float32', lora, checkpointLayers }, 'checkpointed');
    const g = scoring.graph;
    const forwardEnd = g.nodes.length;
    const wrt = [...scoring.weights.used.entries()].filter(([name]) => name.includes('lora')).map(([, t]) => t);
    grad(op.reduceSum(scoring.logprobs), wrt);
    const layers = ranges ?? g.checkpoints;
    const activations = segmentActivations(g, layers, forwardEnd);
    const read = g.nodes
      .slice(forwardEnd)
      .flatMap((n) => n.inputs)
      .filter((t) => t?.producer && activations.has(t.producer));
    return { layers, activations: activations.size, read: new Set(read).size };
  };

  it('marks each layer and recomputes its activations instead of reading them in the backward', () => {
    const checkpointed = backwardReads(true);
    assert.equal(checkpointed.layers.length, 2, 'one segment per layer');
    assert.ok(checkpointed.activations > 20, `a layer computes many activations (${checkpointed.activations})`);
    assert.equal(checkpointed.read, 0, 'the backward reads no activation of a checkpointed layer');
    // The same layers' nodes built without checkpoints: the backward reads their activations.
    const plain = backwardReads(false, checkpointed.layers);
    assert.equal(plain.activations, checkpointed.activations, 'the same forward');
    assert.ok(plain.read > 10, `without checkpoints the backward reads ${plain.read} activations`);
  });
});
