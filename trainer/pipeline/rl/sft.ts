import * as op from '../../foundations/engine/ops';
import type { AdamWConfig } from '../../foundations/engine/optimizer';
import { OptimizerRuntime } from '../../foundations/engine/optimizerRuntime';
import type { HostTensor } from '../../foundations/engine/runtime/tensors';
import type { PackedBatch } from '../../foundations/models/batch';
import type { ModelRuntime } from '../../foundations/models/runtime';
import { buildScoringGraph, VALUE_HEAD } from '../../foundations/models/scoring';
import type { BatchImage } from '../../foundations/models/vision/visionBatch';
import { packSequences } from './batching';
import type { Random } from '../../foundations/models/random';

/**
 * Supervised training on token sequences: maximise the weighted log-likelihood of chosen tokens,
 * Σ wₜ · log p(tokenₜ) / Σ wₜ. The warm start trains the assistant's tokens of demonstration
 * trajectories (weight 1, laid out as the agent loop lays them out), so a model that cannot yet
 * follow the tool format learns it before RL; pretraining gives every token a weight (copy
 * targets 1, ordinary text lower), which is how a small model learns to copy at all.
 */
export interface SftSequence {
  ids: readonly number[];
  /** 1 on tokens the model should learn to produce (the assistant's turns). */
  mask: Uint8Array;
  /**
   * Per-token loss weights (≥ 0), instead of the mask's 1s: a token with weight 0 is not scored
   * at all (its vocabulary row is never computed). Default: the mask.
   */
  weights?: Float32Array;
  /** Vision-language models: the images of the demonstration's image token runs, in order. */
  images?: readonly BatchImage[];
  /**
   * Demonstrations: per token, the assistant turn it belongs to (from 1; 0 elsewhere), and per
   * turn whether it calls tools — what the warm start's check counts in (demonstrationCheck.ts).
   */
  turns?: { of: Uint16Array; calls: readonly boolean[] };
  /** Where the demonstration came from, for messages ("sft.jsonl:12"). */
  source?: string;
}

export interface SftOptions {
  adamw: AdamWConfig;
  /** Sequences per optimizer step. */
  batchSize: number;
  /** Sequences per forward/backward pass (a batch larger than this accumulates). */
  microBatchSize: number;
  fullFineTuning: boolean;
  /** Recompute each layer's activations in the backward (ModelRuntime.checkpointsLayers); unset: by the base's size. */
  gradientCheckpointing?: boolean | undefined;
}

/** What one optimizer step did: the loss (weighted nats per unit weight) and the gradient norm before clipping. */
export interface SftStepResult {
  loss: number;
  gradNorm: number;
  applied: boolean;
}

function weightsOf(sequence: SftSequence): Float32Array {
  if (sequence.weights) {
    if (sequence.weights.length !== sequence.ids.length)
      throw new Error(`a sequence has ${sequence.weights.length} weights for ${sequence.ids.length} tokens`);
    return sequence.weights;
  }
  return Float32Array.from(sequence.mask);
}

/** The per-token weights as the [B, T] rows of a packed batch (the shared prefix is never scored). */
function weightFeed(packed: PackedBatch, weights: readonly Float32Array[]): HostTensor {
  const T = packed.length;
  const data = new Float32Array(weights.length * T);
  weights.forEach((w, b) => data.set(w.subarray(packed.prefix), b * T));
  return { dtype: 'float32', shape: [weights.length, T], data };
}

export class SftTrainer {
  private constructor(
    private readonly model: ModelRuntime,
    readonly optimizer: OptimizerRuntime,
    private readonly options: SftOptions,
  ) {}

  static async create(model: ModelRuntime, options: SftOptions): Promise<SftTrainer> {
    // No value head here: it has nothing to learn from demonstrations.
    const trainable = model
      .trainableWeights(options.fullFineTuning)
      .filter((n) => n !== VALUE_HEAD.weight && n !== VALUE_HEAD.bias);
    if (trainable.length === 0)
      throw new Error('nothing to train: load the model with LoRA adapters, or train it fully');
    const noDecay = new Set(trainable.filter((n) => /norm\.weight$|\.bias$/.test(n)));
    const resident = [...model.baseWeights, ...model.extraWeights].filter(
      (n) => !trainable.includes(n) && n !== VALUE_HEAD.weight && n !== VALUE_HEAD.bias,
    );
    const optimizer = await OptimizerRuntime.create(model.device, {
      // Demonstrations begin with the same system prompt: the shared-prefix graph runs it once per micro-batch.
      variants: ['shared', 'plain'],
      build: (variant) => {
        const scoring = buildScoringGraph(
          model.config,
          {
            dtype: 'float32',
            lora: model.options.lora,
            quantized: model.quantized,
            sharedPrefix: variant === 'shared',
            checkpointLayers: model.checkpointsLayers(options.gradientCheckpointing),
          },
          `sft_${variant}`,
        );
        const g = scoring.graph;
        const tokenWeights = g.input('token_weights', 'float32', ['B', 'T']);
        const weightTotal = g.input('token_total', 'float32', []);
        const loss = op.neg(op.div(op.reduceSum(op.mul(scoring.logprobs, tokenWeights)), weightTotal));
        return {
          graph: g,
          loss,
          params: trainable.map((name) => ({ tensor: scoring.weights.used.get(name)!, decay: !noDecay.has(name) })),
        };
      },
      adamw: options.adamw,
      resident,
      frozen: model.packedInputs(resident),
      accumulate: true,
    });
    return new SftTrainer(model, optimizer, options);
  }

  /**
   * One optimizer step over `batch` (accumulated over micro-batches) at learning rate `lr`.
   * The loss is normalised by the batch's total weight, so the step is the same whatever the
   * micro-batch size.
   */
  async step(batch: readonly SftSequence[], lr: number): Promise<SftStepResult> {
    // Micro-batches of similar lengths pad less; the step's gradient is the same in any order.
    const sorted = [...batch].sort((a, b) => a.ids.length - b.ids.length);
    const weights = sorted.map(weightsOf);
    const total = Math.max(
      1e-12,
      weights.reduce((a, w) => a + w.reduce((x, v) => x + v, 0), 0),
    );
    let loss = 0;
    for (let m = 0; m < sorted.length; m += this.options.microBatchSize) {
      const micro = sorted.slice(m, m + this.options.microBatchSize);
      const microWeights = weights.slice(m, m + this.options.microBatchSize);
      const packed = packSequences(
        micro,
        microWeights.map((w) => Uint8Array.from(w, (v) => (v > 0 ? 1 : 0))),
        this.model.config.vision,
      );
      const feeds: Record<string, HostTensor> = {
        ...packed.feeds,
        ...this.model.loraScaleFeed(true),
        inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
        token_weights: weightFeed(packed, microWeights),
        token_total: { dtype: 'float32', shape: [], data: Float32Array.of(total) },
      };
      loss += (await this.optimizer.accumulate(feeds, packed.prefix > 0 ? 'shared' : 'plain')).loss;
    }
    const applied = await this.optimizer.apply(lr);
    return { loss, gradNorm: applied.gradNorm, applied: applied.applied };
  }

  /**
   * One pass over `sequences` (shuffled), one optimizer step per batch; `lr(step)` gives each
   * step's learning rate. Returns the mean loss (nats per trained token) of each step.
   */
  /** One pass over `sequences` in a shuffled order; `stopping` is asked before each batch (a stop ends the pass after the step in flight). */
  async epoch(
    sequences: readonly SftSequence[],
    lr: (step: number) => number,
    random: Random,
    onStep?: (step: number, loss: number) => void,
    stopping: () => boolean = () => false,
  ): Promise<number[]> {
    const order = random.shuffle(sequences.map((_, i) => i));
    const losses: number[] = [];
    for (let start = 0; start < order.length && !stopping(); start += this.options.batchSize) {
      const { loss } = await this.step(
        order.slice(start, start + this.options.batchSize).map((i) => sequences[i]),
        lr(this.optimizer.steps),
      );
      losses.push(loss);
      onStep?.(this.optimizer.steps, loss);
    }
    return losses;
  }

  async release(): Promise<void> {
    await this.optimizer.release();
  }
}
