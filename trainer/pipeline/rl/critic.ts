import type { Device, StateRef } from '../../foundations/engine/device/device';
import type { AdamWConfig } from '../../foundations/engine/optimizer';
import { OptimizerRuntime } from '../../foundations/engine/optimizerRuntime';
import type { HostTensor } from '../../foundations/engine/runtime/tensors';
import { disposeSerialized, serializeGraph } from '../../foundations/engine/serialize';
import { readModelWeights } from '../../foundations/models/loadWeights';
import { initLoraWeights, loraModules, loraScale, type LoraConfig } from '../../foundations/models/lora';
import type { QuantizedBase } from '../../foundations/models/quantized/quantizedWeights';
import type { ModelConfig } from '../../foundations/models/modelConfig';
import { openModelFolder } from '../../foundations/models/modelFolder';
import { checkpointsLayers, type ModelRuntime } from '../../foundations/models/runtime';
import { mergeLoraWeight } from '../../foundations/models/files/save';
import { packForScoring } from '../../foundations/models/batch';
import { buildValueGraph, VALUE_HEAD } from '../../foundations/models/scoring';
import { addVisionFeeds } from '../../foundations/models/vision/visionBatch';
import { isVisionWeight } from '../../foundations/models/vision/visionWeights';
import { Random } from '../../foundations/models/random';
import { miniBatchSteps, stepTotals, valueBatchFeeds, type TrainingSequence } from './batching';
import { valueLoss, type ValueLossConfig } from './losses';
import { rateAt, type LearningRates } from './policyTrainer';

/**
 * PPO's critic as a network of its own, as verl and Agent-R1 run it: its weights live on the same
 * device as the policy's under `critic/…`, it has its own AdamW (learning rate, weight decay,
 * gradient clipping) and its own choice of LoRA or full training, and nothing it does touches a
 * policy weight. It starts as the policy stands when RL starts (the warm start, adapters merged
 * into its weights when the critic trains every weight) or from a named model folder, plus a
 * fresh value head.
 *
 * Three layouts, by what the critic trains and where it starts:
 *   - adapters, from a LoRA policy: the policy's frozen base weights are shared (they never
 *     change); the critic's adapters start as a copy of the policy's; trainable: adapters + head;
 *   - every weight, from the policy: a copy of the policy's weights (LoRA merged); trainable: all;
 *   - from a named folder: its weights under `critic/…`, adapters fresh or every weight trained.
 * What a checkpoint must save is exactly the critic optimizer's state (trainable tensors and
 * their moments): the frozen parts come back from the model folders on resume.
 */
export const CRITIC_PREFIX = 'critic/';

export interface CriticOptions {
  /** A model folder to start from instead of the policy (same tokenizer). */
  modelDir?: string;
  /** Adapters on frozen weights; undefined: every weight trains. */
  lora?: LoraConfig;
  adamw: AdamWConfig;
  value: ValueLossConfig;
  /** Optimizer steps per batch and passes over it (the policy's). */
  miniBatches: number;
  epochs: number;
  microBatchSize: number;
  /** Seeds the value head (and fresh adapters). */
  seed: number;
  /** Recompute each layer's activations in the backward (ModelRuntime.checkpointsLayers); unset: by the critic's size. */
  gradientCheckpointing?: boolean | undefined;
}

export interface CriticMetrics {
  valueLoss: number;
  gradNorm: number;
  /** Optimizer steps taken and skipped (non-finite loss or gradient). */
  steps: number;
  skipped: number;
}

interface Layout {
  config: ModelConfig;
  /** Graph input name (= device state name) of each weight the critic's graph reads. */
  inputName: (name: string) => string;
  /** State names the critic trains. */
  trainable: string[];
  /** State names it reads but never changes. */
  frozen: string[];
  /** The policy's quantized base, when the critic's adapters sit on it. */
  quantized?: QuantizedBase | undefined;
  /**
   * Frozen inputs the critic's sessions bake in, as the policy's do (ModelRuntime.packedInputs):
   * that base's codes, packed once per session instead of dequantized at every run. None under
   * `lowMemory`, where one copy of the base is the point.
   */
  packed: string[];
}

export class Critic {
  private scoring?: { id: number; feeds: Record<string, StateRef> };

  private constructor(
    private readonly device: Device,
    private readonly layout: Layout,
    private readonly options: CriticOptions,
    readonly optimizer: OptimizerRuntime,
  ) {}

  /** Put the critic's weights on the device next to `policy`'s and build its optimizer. */
  static async create(policy: ModelRuntime, options: CriticOptions): Promise<Critic> {
    const layout = await placeWeights(policy, options);
    const noDecay = new Set(layout.trainable.filter((n) => /norm\.weight$|\.bias$/.test(n)));
    const optimizer = await OptimizerRuntime.create(policy.device, {
      variants: ['shared', 'plain'],
      build: (variant) => {
        const built = buildValueGraph(
          layout.config,
          {
            dtype: 'float32',
            lora: options.lora,
            quantized: layout.quantized,
            sharedPrefix: variant === 'shared',
            inputName: layout.inputName,
            checkpointLayers: checkpointsLayers(layout.config, options.gradientCheckpointing),
          },
          `critic_${variant}`,
        );
        const g = built.graph;
        const perToken = (name: string) => g.input(name, 'float32', ['B', 'T']);
        const totals = {
          tokenTotal: g.input('token_total', 'float32', []),
          sequenceTotal: g.input('sequence_total', 'float32', []),
        };
        const loss = valueLoss(
          built.values,
          perToken('old_values'),
          perToken('returns'),
          perToken('loss_mask'),
          options.value,
          totals,
        );
        const byName = new Map([...built.weights.used.values()].map((t) => [t.name, t]));
        const params = layout.trainable.map((name) => {
          const tensor = byName.get(name);
          if (!tensor) throw new Error(`the critic's graph does not read ${name}; it cannot be trained`);
          return { tensor, decay: !noDecay.has(name) };
        });
        return { graph: g, loss, params, metrics: { value_loss: loss } };
      },
      adamw: options.adamw,
      resident: layout.frozen,
      frozen: layout.packed,
      accumulate: true,
    });
    return new Critic(policy.device, layout, options, optimizer);
  }

  /** The frozen inputs its sessions bake in (Layout.packed): a quantized base's codes, or none. */
  get packedInputs(): readonly string[] {
    return this.layout.packed;
  }

  private loraFeed(): Record<string, HostTensor> {
    return this.options.lora
      ? { lora_scale: { dtype: 'float32', shape: [], data: Float32Array.of(loraScale(this.options.lora)) } }
      : {};
  }

  /** The critic's value of each masked token's state, per sequence, zero elsewhere. */
  async values(sequences: ReadonlyArray<Pick<TrainingSequence, 'ids' | 'mask' | 'images'>>): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let start = 0; start < sequences.length; start += this.options.microBatchSize) {
      const chunk = sequences.slice(start, start + this.options.microBatchSize);
      // Without a shared prefix: values are read once per step, so one plain session is enough.
      const packed = packForScoring(
        chunk.map((s) => s.ids),
        chunk.map((s) => s.mask),
      );
      if (this.layout.config.vision) addVisionFeeds(packed, chunk, this.layout.config.vision);
      const { id, feeds } = await this.scoringSession();
      const result = await this.device.run(
        id,
        {
          ...packed.feeds,
          ...feeds,
          ...this.loraFeed(),
          inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
        },
        { values: 'return' },
      );
      const data = result.values.data as Float32Array;
      chunk.forEach((s, b) =>
        out.push(Float32Array.from(data.subarray(b * packed.length, b * packed.length + s.ids.length))),
      );
    }
    return out;
  }

  private async scoringSession(): Promise<{ id: number; feeds: Record<string, StateRef> }> {
    if (!this.scoring) {
      const built = buildValueGraph(
        this.layout.config,
        {
          dtype: 'float32',
          lora: this.options.lora,
          quantized: this.layout.quantized,
          inputName: this.layout.inputName,
        },
        'critic_values',
      );
      built.graph.output(built.values, 'values');
      const model = serializeGraph(built.graph);
      try {
        const used = new Set(built.weights.used.keys());
        const id = await this.device.load({
          model,
          settings: {},
          frozenInputs: Object.fromEntries(this.layout.packed.filter((n) => used.has(n)).map((n) => [n, n])),
        });
        this.scoring = {
          id,
          feeds: Object.fromEntries([...built.weights.used.values()].map((t) => [t.name, { state: t.name }])),
        };
      } finally {
        disposeSerialized(model);
      }
    }
    return this.scoring;
  }

  /** `epochs` passes over the batch, each shuffled into `miniBatches` optimizer steps of the value loss (`lr`: as PolicyTrainer.update's). */
  async update(
    sequences: readonly TrainingSequence[],
    lr: number | LearningRates,
    random: Random,
  ): Promise<CriticMetrics> {
    let valueLossSum = 0;
    let gradNormSum = 0;
    let steps = 0;
    let skipped = 0;
    for (const stepSequences of miniBatchSteps(sequences, this.options.epochs, this.options.miniBatches, random)) {
      const totals = stepTotals(stepSequences);
      for (let m = 0; m < stepSequences.length; m += this.options.microBatchSize) {
        const packed = valueBatchFeeds(
          stepSequences.slice(m, m + this.options.microBatchSize),
          totals,
          this.layout.config.vision,
        );
        valueLossSum += (
          await this.optimizer.accumulate(
            {
              ...packed.feeds,
              ...this.loraFeed(),
              inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
            },
            packed.shared ? 'shared' : 'plain',
          )
        ).loss;
      }
      const applied = await this.optimizer.apply(rateAt(lr, steps));
      gradNormSum += applied.gradNorm;
      steps++;
      if (!applied.applied) skipped++;
    }
    return { valueLoss: valueLossSum / Math.max(steps, 1), gradNorm: gradNormSum / Math.max(steps, 1), steps, skipped };
  }

  async release(): Promise<void> {
    await this.optimizer.release();
    if (this.scoring) await this.device.release(this.scoring.id);
  }
}

/** A fresh value head [1, hidden] (and bias), as the policy's shared one is initialised. */
function freshValueHead(config: ModelConfig, random: Random): Record<string, HostTensor> {
  const w = new Float32Array(config.hiddenSize);
  random.fillNormal(w, 0, 1 / Math.sqrt(config.hiddenSize + 1));
  return {
    [VALUE_HEAD.weight]: { dtype: 'float32', shape: [1, config.hiddenSize], data: w },
    [VALUE_HEAD.bias]: { dtype: 'float32', shape: [1], data: new Float32Array(1) },
  };
}

/**
 * Whether a model weight belongs in the critic: everything but an untied LM head (a critic has a
 * value head instead; its graph never reads `lm_head.weight`).
 */
const inCritic = (name: string) => !name.startsWith('lm_head.weight');

const prefixed = (tensors: Record<string, HostTensor>) =>
  Object.fromEntries(Object.entries(tensors).map(([n, t]) => [`${CRITIC_PREFIX}${n}`, t]));

/** Set the critic's weights on the device as its layout says; returns the layout. */
async function placeWeights(policy: ModelRuntime, options: CriticOptions): Promise<Layout> {
  const device = policy.device;
  const random = Random.fromSeed(options.seed + 1_000_003);
  const head = freshValueHead(policy.config, random);
  const prefix = (n: string) => `${CRITIC_PREFIX}${n}`;
  if (options.modelDir !== undefined) return placeFromFolder(policy, options, random);
  const policyLora = policy.options.lora;
  if (options.lora) {
    // Adapters on the policy's own frozen base: the adapters start as the policy's.
    if (!policyLora)
      throw new Error(
        'a critic with adapters that starts from the policy needs a LoRA policy (or a critic model folder)',
      );
    const adapters = policy.extraWeights.filter((n) => n.includes('lora_'));
    await device.copyState(Object.fromEntries(adapters.map((n) => [n, prefix(n)])));
    await device.setState(prefixed(head));
    const base = new Set(policy.baseWeights);
    const frozen = policy.baseWeights.filter(inCritic);
    return {
      config: policy.config,
      inputName: (n) => (base.has(n) ? n : prefix(n)),
      trainable: [...adapters, ...Object.keys(head)].map(prefix),
      frozen,
      quantized: policy.quantized,
      packed: policy.packedInputs(frozen),
    };
  }
  // Every weight trains: a copy of the policy as it stands, its adapters merged in.
  if (policy.quantized)
    throw new Error(
      'a critic that trains every weight copies the policy, whose base is quantized (frozen); give it adapters',
    );
  const copied = policy.baseWeights.filter(inCritic);
  if (policyLora) {
    const state = await device.getState([...copied, ...policy.extraWeights.filter((n) => n.includes('lora_'))]);
    const adapter = {
      lora: policyLora,
      tensors: Object.fromEntries(
        Object.entries(state)
          .filter(([n]) => n.includes('lora_'))
          .map(([n, t]) => [n, { shape: [...t.shape], data: t.data as Float32Array }]),
      ),
    };
    const merged: Record<string, HostTensor> = {};
    for (const n of copied)
      merged[n] = {
        ...state[n],
        data: mergeLoraWeight(n, state[n].data as Float32Array, adapter, policy.config) ?? state[n].data,
      };
    await device.setState(prefixed(merged));
  } else {
    await device.copyState(Object.fromEntries(copied.map((n) => [n, prefix(n)])));
  }
  await device.setState(prefixed(head));
  // A vision-language policy's vision tower trains in its critic only when it trains in the policy
  // (model.trainVision): frozen, it is the same in both, so a resumed run's copy of it is exact.
  const frozen = policy.options.trainVision ? [] : copied.filter(isVisionWeight);
  const trainable = [...copied.filter((n) => !frozen.includes(n)), ...Object.keys(head)];
  return {
    config: policy.config,
    inputName: prefix,
    trainable: trainable.map(prefix),
    frozen: frozen.map(prefix),
    packed: [],
  };
}

async function placeFromFolder(policy: ModelRuntime, options: CriticOptions, random: Random): Promise<Layout> {
  const folder = openModelFolder(options.modelDir!);
  try {
    if (folder.tokenizer.vocabSize !== policy.tokenizer.vocabSize) {
      throw new Error(
        `critic.model (${options.modelDir}): its tokenizer has ${folder.tokenizer.vocabSize} tokens, the policy's ${policy.tokenizer.vocabSize}; the critic reads the policy's token ids, so it needs the same tokenizer`,
      );
    }
    const config = folder.config;
    const weights = Object.fromEntries(
      Object.entries(readModelWeights(folder.checkpoint, config)).filter(([n]) => inCritic(n)),
    );
    const head = freshValueHead(config, random);
    const adapters: Record<string, HostTensor> = {};
    if (options.lora)
      for (const [n, t] of Object.entries(initLoraWeights(loraModules(config, options.lora), options.lora, random)))
        adapters[n] = { dtype: 'float32', ...t };
    await policy.device.setState(prefixed({ ...weights, ...adapters, ...head }));
    const prefix = (n: string) => `${CRITIC_PREFIX}${n}`;
    // Its vision tower, if it has one, trains only with model.trainVision, as the policy's.
    const frozen = Object.keys(weights).filter(
      (n) => options.lora || (isVisionWeight(n) && !policy.options.trainVision),
    );
    const trainable = [
      ...(options.lora ? Object.keys(adapters) : Object.keys(weights).filter((n) => !frozen.includes(n))),
      ...Object.keys(head),
    ];
    return { config, inputName: prefix, trainable: trainable.map(prefix), frozen: frozen.map(prefix), packed: [] };
  } finally {
    folder.close();
  }
}
