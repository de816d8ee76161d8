import * as op from '../engine/ops';
import type { AdamWConfig } from '../engine/optimizer';
import { OptimizerRuntime } from '../engine/optimizerRuntime';
import type { HostTensor } from '../engine/runtime/tensors';
import type { ModelRuntime } from '../models/runtime';
import { buildScoringGraph, VALUE_HEAD } from '../models/scoring';
import type { BatchImage } from '../models/vision/visionBatch';
import { packSequences } from './batching';
import type { Random } from '../util/random';

/**
 * Supervised warm start: maximise the log-likelihood of demonstration trajectories on the
 * assistant's tokens only (mask 1), with the same token layout the agent loop produces — so a
 * model that cannot yet follow the tool format learns it before RL.
 */
export interface SftSequence {
  ids: readonly number[];
  /** 1 on tokens the model should learn to produce (the assistant's turns). */
  mask: Uint8Array;
  /** Vision-language models: the images of the demonstration's image token runs, in order. */
  images?: readonly BatchImage[];
}

export interface SftOptions {
  adamw: AdamWConfig;
  /** Sequences per optimizer step. */
  batchSize: number;
  /** Sequences per forward/backward pass (a batch larger than this accumulates). */
  microBatchSize: number;
  fullFineTuning: boolean;
}

export class SftTrainer {
  private constructor(
    private readonly model: ModelRuntime,
    readonly optimizer: OptimizerRuntime,
    private readonly options: SftOptions,
  ) {}

  static async create(model: ModelRuntime, options: SftOptions): Promise<SftTrainer> {
    // No value head here: it has nothing to learn from demonstrations.
    const trainable = model.trainableWeights(options.fullFineTuning).filter((n) => n !== VALUE_HEAD.weight && n !== VALUE_HEAD.bias);
    if (trainable.length === 0) throw new Error('nothing to train: load the model with LoRA adapters, or train it fully');
    const noDecay = new Set(trainable.filter((n) => /norm\.weight$|\.bias$/.test(n)));
    const optimizer = await OptimizerRuntime.create(model.device, {
      // Demonstrations begin with the same system prompt: the shared-prefix graph runs it once per micro-batch.
      variants: ['shared', 'plain'],
      build: (variant) => {
        const scoring = buildScoringGraph(model.config, { dtype: 'float32', lora: model.options.lora, sharedPrefix: variant === 'shared' }, `sft_${variant}`);
        const g = scoring.graph;
        const tokenTotal = g.input('token_total', 'float32', []);
        const loss = op.neg(op.div(op.reduceSum(scoring.logprobs), tokenTotal));
        return { graph: g, loss, params: trainable.map((name) => ({ tensor: scoring.weights.used.get(name)!, decay: !noDecay.has(name) })) };
      },
      adamw: options.adamw,
      resident: [...model.baseWeights, ...model.extraWeights].filter((n) => !trainable.includes(n) && n !== VALUE_HEAD.weight && n !== VALUE_HEAD.bias),
      accumulate: true,
    });
    return new SftTrainer(model, optimizer, options);
  }

  /**
   * One pass over `sequences` (shuffled), one optimizer step per batch; `lr(step)` gives each
   * step's learning rate. Returns the mean loss (nats per trained token) of each step.
   */
  async epoch(sequences: readonly SftSequence[], lr: (step: number) => number, random: Random, onStep?: (step: number, loss: number) => void): Promise<number[]> {
    const order = random.shuffle(sequences.map((_, i) => i));
    const losses: number[] = [];
    for (let start = 0; start < order.length; start += this.options.batchSize) {
      // Micro-batches of similar lengths pad less; the step's gradient is the same in any order.
      const batch = order.slice(start, start + this.options.batchSize).map((i) => sequences[i]).sort((a, b) => a.ids.length - b.ids.length);
      const tokens = Math.max(1, batch.reduce((a, s) => a + s.mask.reduce((x, m) => x + m, 0), 0));
      let loss = 0;
      for (let m = 0; m < batch.length; m += this.options.microBatchSize) {
        const micro = batch.slice(m, m + this.options.microBatchSize);
        const packed = packSequences(micro, micro.map((s) => s.mask), this.model.config.vision);
        const feeds: Record<string, HostTensor> = {
          ...packed.feeds,
          ...this.model.loraScaleFeed(true),
          inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
          token_total: { dtype: 'float32', shape: [], data: Float32Array.of(tokens) },
        };
        loss += (await this.optimizer.accumulate(feeds, packed.prefix > 0 ? 'shared' : 'plain')).loss;
      }
      await this.optimizer.apply(lr(this.optimizer.steps));
      losses.push(loss);
      onStep?.(this.optimizer.steps, loss);
    }
    return losses;
  }

  async release(): Promise<void> {
    await this.optimizer.release();
  }
}
