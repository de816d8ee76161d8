import type { Device } from '../../foundations/engine/device/device';
import type { AdamWConfig } from '../../foundations/engine/optimizer';
import { OptimizerRuntime } from '../../foundations/engine/optimizerRuntime';
import { serializeGraph } from '../../foundations/engine/serialize';
import type { ModelRuntime } from '../../foundations/models/runtime';
import { fusedKernelsFor } from '../../foundations/models/layers/fused';
import { buildScoringGraph, VALUE_HEAD, type ScoringSession } from '../../foundations/models/scoring';
import type { Random } from '../../foundations/models/random';
import {
  constraintFeeds,
  miniBatchSteps,
  packSequences,
  policyBatchFeeds,
  stepTotals,
  type TrainingSequence,
} from './batching';
import type { PolicyLossConfig, ValueLossConfig } from './losses';
import { buildPolicyLossGraph } from './policyGraph';
import { definedFields } from '../../contract/definedFields';

export interface PolicyTrainerOptions {
  policy: PolicyLossConfig;
  value?: ValueLossConfig & { coef: number };
  adamw: AdamWConfig;
  /** Sampling temperature: the policy is softmax(logits / temperature) in training too. */
  temperature: number;
  /** Optimizer steps per rollout batch (PPO's mini-batches) and passes over it (epochs). */
  miniBatches: number;
  epochs: number;
  /** Sequences per forward/backward pass; a mini-batch larger than this accumulates gradients. */
  microBatchSize: number;
  /** Full fine-tuning (every base weight trains) instead of LoRA adapters. */
  fullFineTuning: boolean;
  /** Reference log-probs will be asked for (KL in the loss or in the reward). */
  reference?: boolean;
  /**
   * Rollouts sample tool calls under constraints (schema-constrained decoding): every scoring and
   * update graph applies each sequence's recorded allowed sets (TrainingSequence.constraints).
   */
  constrained?: boolean;
  /** Recompute each layer's activations in the update's backward (ModelRuntime.checkpointsLayers); unset: by the base's size. */
  gradientCheckpointing?: boolean | undefined;
}

/** The learning rate of the k-th (0-based) optimizer step of an update: a schedule counted in optimizer steps. */
export type LearningRates = (k: number) => number;

/** The rate of optimizer step `k`: a constant, or the schedule's. */
export function rateAt(lr: number | LearningRates, k: number): number {
  return typeof lr === 'number' ? lr : lr(k);
}

export interface UpdateMetrics {
  loss: number;
  policyLoss: number;
  clipFraction: number;
  approxKl: number;
  gradNorm: number;
  klLoss?: number;
  entropy?: number;
  valueLoss?: number;
  /** Optimizer steps taken and skipped (non-finite loss or gradient). */
  steps: number;
  skipped: number;
}

/**
 * The policy (and critic) update of one RL step over a batch of scored trajectories, plus the
 * extra forward passes some algorithms need first: reference log-probs (KL) and critic values
 * (PPO). Parameters and optimizer state stay on the device across steps.
 */
export class PolicyTrainer {
  private readonly scoringSessions = new Map<boolean, ScoringSession>();

  private constructor(
    private readonly model: ModelRuntime,
    private readonly options: PolicyTrainerOptions,
    readonly optimizer: OptimizerRuntime,
    readonly trainable: readonly string[],
  ) {}

  static async create(model: ModelRuntime, options: PolicyTrainerOptions): Promise<PolicyTrainer> {
    const lora = model.options.lora;
    if (!lora && !options.fullFineTuning)
      throw new Error('the model has no LoRA adapters: load it with a LoRA config or train it fully (fullFineTuning)');
    if (options.value && !model.options.valueHead)
      throw new Error('PPO needs a value head: load the model with valueHead');
    const trainable = model.trainableWeights(options.fullFineTuning);
    const noDecay = new Set(trainable.filter((n) => /norm\.weight$|\.bias$/.test(n) || n === VALUE_HEAD.bias));
    // The reference policy is the policy as RL starts: the warm start, when there was one.
    if (options.reference || options.policy.klCoef > 0)
      await model.keepReferenceCopy(trainable.filter((n) => n !== VALUE_HEAD.weight && n !== VALUE_HEAD.bias));
    const resident = model.baseWeights.filter((n) => !trainable.includes(n));
    const optimizer = await OptimizerRuntime.create(model.device, {
      // Trajectories begin with the same system prompt (and a group with the same question):
      // the shared-prefix graph runs the common prefix once per micro-batch.
      variants: ['shared', 'plain'],
      build: (variant) =>
        buildPolicyLossGraph(model.config, {
          sharedPrefix: variant === 'shared',
          lora,
          quantized: model.quantized,
          trainable,
          noDecay,
          policy: options.policy,
          value: options.value,
          entropy: options.policy.entropyCoef > 0,
          constrained: !!options.constrained,
          checkpointLayers: model.checkpointsLayers(options.gradientCheckpointing),
        }),
      adamw: options.adamw,
      resident,
      frozen: model.packedInputs(resident),
      accumulate: true,
      // Two update graphs (shared prefix and plain) and the scoring graphs are each run over whole
      // micro-batches: with an arena apiece, each kept its largest run's activations for good (at
      // Qwen2.5-0.5B with LoRA, 4 GB an update graph). Off, they share what malloc hands back.
      memoryArena: false,
    });
    return new PolicyTrainer(model, options, optimizer, trainable);
  }

  /** Whether the run keeps a reference policy (a KL term). */
  get hasReference(): boolean {
    return !!this.options.reference || this.options.policy.klCoef > 0;
  }

  private get device(): Device {
    return this.model.device;
  }

  private async scoring(sharedPrefix: boolean): Promise<ScoringSession> {
    let loaded = this.scoringSessions.get(sharedPrefix);
    if (!loaded) {
      const graph = buildScoringGraph(this.model.config, {
        dtype: 'float32',
        lora: this.model.options.lora,
        quantized: this.model.quantized,
        valueHead: !!this.model.options.valueHead,
        sharedPrefix,
        fused: fusedKernelsFor(this.device.provider),
        constrained: !!this.options.constrained,
      });
      graph.graph.output(graph.logprobs, 'logprobs');
      if (graph.values) graph.graph.output(graph.values, 'values');
      loaded = {
        id: await this.device.load({
          model: serializeGraph(graph.graph),
          settings: { memoryArena: false },
          frozenInputs: Object.fromEntries(
            this.model.packedInputs(graph.weights.used.keys()).map((name) => [name, name]),
          ),
        }),
        weights: graph.weights,
      };
      this.scoringSessions.set(sharedPrefix, loaded);
    }
    return loaded;
  }

  /**
   * Per-token log-probs under the reference policy (the frozen copy of the policy as RL started),
   * under the current policy, and, when the model has a value head,
   * the critic's values — for the masked tokens of each sequence, in micro-batches.
   */
  async scoreReferenceAndValues(
    sequences: ReadonlyArray<Pick<TrainingSequence, 'ids' | 'mask' | 'images' | 'constraints'>>,
    want: { reference: boolean; values: boolean; policy?: boolean },
  ): Promise<{ reference?: Float32Array[]; values?: Float32Array[]; policy?: Float32Array[] }> {
    const out: { reference?: Float32Array[]; values?: Float32Array[]; policy?: Float32Array[] } = {};
    if (want.reference) out.reference = [];
    if (want.values) out.values = [];
    if (want.policy) out.policy = [];
    const size = this.options.microBatchSize;
    for (let start = 0; start < sequences.length; start += size) {
      const chunk = sequences.slice(start, start + size);
      const packed = packSequences(
        chunk,
        chunk.map((s) => s.mask),
        this.model.config.vision,
      );
      const { id, weights } = await this.scoring(packed.prefix > 0);
      const base = {
        ...packed.feeds,
        ...(this.options.constrained
          ? constraintFeeds(
              chunk,
              chunk.map((s) => s.mask),
              packed,
              this.model.config.vocabSize,
            )
          : {}),
        inv_temperature: { dtype: 'float32' as const, shape: [], data: Float32Array.of(1 / this.options.temperature) },
      };
      // Back to sequence coordinates: the prefix (never policy tokens) is zero.
      const unpack = (data: Float32Array) =>
        chunk.map((s, b) => {
          const full = new Float32Array(s.ids.length);
          full.set(data.subarray(b * packed.length, b * packed.length + s.ids.length - packed.prefix), packed.prefix);
          return full;
        });
      if (want.reference) {
        const ref = await this.device.run(
          id,
          { ...base, ...this.model.weightFeeds(weights, { frozenCopy: true }), ...this.model.loraScaleFeed(true) },
          { logprobs: 'return' },
        );
        out.reference!.push(...unpack(ref.logprobs.data as Float32Array));
      }
      if (want.values || want.policy) {
        const outputs = definedFields({
          values: want.values ? ('return' as const) : undefined,
          logprobs: want.policy ? ('return' as const) : undefined,
        });
        const current = await this.device.run(
          id,
          { ...base, ...this.model.weightFeeds(weights), ...this.model.loraScaleFeed(true) },
          outputs,
        );
        if (want.values) out.values!.push(...unpack(current.values.data as Float32Array));
        if (want.policy) out.policy!.push(...unpack(current.logprobs.data as Float32Array));
      }
    }
    return out;
  }

  /**
   * PPO-style update: `epochs` passes over the batch, each shuffled and split into `miniBatches`
   * optimizer steps, each step accumulated over micro-batches. (A separate critic's warm-up does not
   * call this at all: the policy's weights and optimizer state stay as they are.) `lr` is one rate
   * for every optimizer step, or the rate of the k-th (0-based) optimizer step of this update.
   */
  async update(
    sequences: readonly TrainingSequence[],
    lr: number | LearningRates,
    random: Random,
  ): Promise<UpdateMetrics> {
    const sums = {
      loss: 0,
      policyLoss: 0,
      clipFraction: 0,
      approxKl: 0,
      gradNorm: 0,
      klLoss: 0,
      entropy: 0,
      valueLoss: 0,
    };
    let steps = 0;
    let skipped = 0;
    for (const stepSequences of miniBatchSteps(sequences, this.options.epochs, this.options.miniBatches, random)) {
      const totals = stepTotals(stepSequences);
      let loss = 0;
      const metrics: Record<string, number> = {};
      for (let m = 0; m < stepSequences.length; m += this.options.microBatchSize) {
        const micro = stepSequences.slice(m, m + this.options.microBatchSize);
        const packed = policyBatchFeeds(micro, totals, {
          invTemperature: 1 / this.options.temperature,
          value: !!this.options.value,
          ref: this.options.policy.klCoef > 0,
          padId: 0,
          vision: this.model.config.vision,
          ...definedFields({ constrainedVocab: this.options.constrained ? this.model.config.vocabSize : undefined }),
        });
        const out = await this.optimizer.accumulate(
          { ...packed.feeds, ...this.model.loraScaleFeed(true) },
          packed.shared ? 'shared' : 'plain',
        );
        loss += out.loss;
        for (const [k, v] of Object.entries(out.metrics)) metrics[k] = (metrics[k] ?? 0) + v;
      }
      const applied = await this.optimizer.apply(rateAt(lr, steps));
      steps++;
      if (!applied.applied) skipped++;
      sums.loss += loss;
      sums.gradNorm += applied.gradNorm;
      sums.policyLoss += metrics.policy_loss ?? 0;
      sums.clipFraction += metrics.clip_fraction ?? 0;
      sums.approxKl += metrics.approx_kl ?? 0;
      sums.klLoss += metrics.kl_loss ?? 0;
      sums.entropy += metrics.entropy ?? 0;
      sums.valueLoss += metrics.value_loss ?? 0;
    }
    const mean = (x: number) => x / Math.max(steps, 1);
    return definedFields({
      loss: mean(sums.loss),
      policyLoss: mean(sums.policyLoss),
      clipFraction: mean(sums.clipFraction),
      approxKl: mean(sums.approxKl),
      gradNorm: mean(sums.gradNorm),
      klLoss: this.options.policy.klCoef > 0 ? mean(sums.klLoss) : undefined,
      entropy: this.options.policy.entropyCoef > 0 ? mean(sums.entropy) : undefined,
      valueLoss: this.options.value ? mean(sums.valueLoss) : undefined,
      steps,
      skipped,
    });
  }

  async release(): Promise<void> {
    await this.optimizer.release();
    for (const { id } of this.scoringSessions.values()) await this.device.release(id);
  }
}
