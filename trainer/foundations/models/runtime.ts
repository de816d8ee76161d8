import type { Device, StateRef } from '../engine/device/device';
import type { HostTensor } from '../engine/runtime/tensors';
import { Random } from './random';
import type { WeightInputs } from './decoder';
import { uploadModelWeights } from './loadWeights';
import { initLoraWeights, loraModules, loraScale, type LoraConfig } from './lora';
import { openModelFolder, type ModelFolder } from './modelFolder';
import { VALUE_HEAD } from './scoring';
import { isVisionWeight } from './vision/visionWeights';
import { LOW_MEMORY_ABOVE, lowMemoryFor, type Quantization } from './quantized/blockQuantize';
import type { ModelConfig } from './modelConfig';
import {
  quantizedAccuracyLevel,
  quantizedLayouts,
  quantizedStateNames,
  type QuantizedBase,
} from './quantized/quantizedWeights';
import { expectedTensors } from './weights';

/** State-name prefix of the frozen reference copy of the weights. */
export const REFERENCE_PREFIX = 'reference/';

export interface ModelRuntimeOptions {
  lora?: LoraConfig | undefined;
  /** Add a value head (PPO's critic), initialised small. */
  valueHead?: boolean | undefined;
  /** Seeds adapter and value-head initialisation. */
  seed?: number | undefined;
  /** Vision-language models: train the vision tower too (it is frozen by default; LoRA adapts the language model only). */
  trainVision?: boolean | undefined;
  /**
   * Keep the frozen base quantized (QLoRA): its matrices become block-quantized codes and scales
   * as they are read (quantized/quantizedWeights.ts says which). LoRA only: a quantized weight
   * cannot be trained.
   */
  quantize?: Quantization | undefined;
}

/**
 * A model loaded onto a device: its folder (config, tokenizer, chat template) and its weights
 * as device state under their Hugging Face names — read once, shared by every graph of the
 * run (scoring, training, generation, the reference policy).
 */
export class ModelRuntime {
  /** Weights with a frozen reference copy (`keepReferenceCopy`). */
  private readonly referenceCopies = new Set<string>();

  private constructor(
    readonly device: Device,
    readonly folder: ModelFolder,
    readonly options: ModelRuntimeOptions,
    /** Names of the frozen base weights on the device. */
    readonly baseWeights: readonly string[],
    /** Names of adapter / value-head tensors (trainable with LoRA). */
    readonly extraWeights: readonly string[],
    /** Each weight's parameter shape by state name (a quantized weight's under its codes' name; its scales count none). */
    private readonly shapes: ReadonlyMap<string, readonly number[]>,
    /** The quantized base, for the graph builders; undefined when the base is float. */
    readonly quantized: QuantizedBase | undefined,
  ) {}

  /**
   * The weights an update trains: the adapters (and value head), or with full fine-tuning every
   * weight — the vision tower only when `trainVision` asks for it.
   */
  trainableWeights(fullFineTuning: boolean): string[] {
    const vision = this.baseWeights.filter(isVisionWeight);
    if (!fullFineTuning) return [...this.extraWeights, ...(this.options.trainVision ? vision : [])];
    return [...this.baseWeights.filter((n) => this.options.trainVision || !isVisionWeight(n)), ...this.extraWeights];
  }

  /**
   * The state tensors of a quantized base (codes and scales) among `names`: the inputs the
   * scoring and update sessions bake in as initializers, so that MatMulNBits packs them once
   * instead of dequantizing every matrix at every run (quantized/README.md, "Where the time goes").
   */
  packedInputs(names: Iterable<string>): string[] {
    if (!this.quantized || this.quantized.lowMemory) return [];
    const quantized = new Set(
      [...this.quantized.layouts.keys()].flatMap((name) => Object.values(quantizedStateNames(name))),
    );
    return [...names].filter((name) => quantized.has(name));
  }

  /**
   * Whether updates recompute each decoder layer's activations in the backward pass (gradient
   * checkpointing, DecoderOptions.checkpointLayers): as `setting` says, else for a base of more
   * than LOW_MEMORY_ABOVE parameters — where the activations of one sequence, not the base, are
   * most of an update's memory (quantized/README.md).
   */
  checkpointsLayers(setting: boolean | undefined): boolean {
    return checkpointsLayers(this.config, setting);
  }

  /** Total elements of the named weights. */
  parameterCount(names: readonly string[]): number {
    return names.reduce((n, name) => n + (this.shapes.get(name)?.reduce((a, b) => a * b, 1) ?? 0), 0);
  }

  static async load(device: Device, dir: string, options: ModelRuntimeOptions = {}): Promise<ModelRuntime> {
    const folder = openModelFolder(dir);
    try {
      if (options.trainVision && !folder.config.vision)
        throw new Error(`${dir}: trainVision is set, but ${folder.config.architecture} has no vision tower`);
      if (options.quantize && !options.lora)
        throw new Error(`${dir}: a quantized base is frozen; quantize needs LoRA adapters to train`);
      const quantized = options.quantize && quantizedBase(folder.config, options.quantize);
      const stored = await uploadModelWeights(device, folder.checkpoint, folder.config, {
        quantized: quantized?.layouts,
      });
      // Parameters count as the model's: a quantized weight's [rows, columns] under its codes' name, its scales none.
      const parameterShapes = new Map(stored);
      for (const [name, layout] of quantized?.layouts ?? []) {
        const names = quantizedStateNames(name);
        parameterShapes.set(names.data, [layout.rows, layout.columns]);
        parameterShapes.delete(names.scales);
      }
      const extra: Record<string, HostTensor> = {};
      const random = Random.fromSeed(options.seed ?? 0);
      if (options.lora) {
        for (const [name, t] of Object.entries(
          initLoraWeights(loraModules(folder.config, options.lora), options.lora, random),
        ))
          extra[name] = { dtype: 'float32', ...t };
      }
      if (options.valueHead) {
        const w = new Float32Array(folder.config.hiddenSize);
        random.fillNormal(w, 0, 1 / Math.sqrt(folder.config.hiddenSize + 1));
        extra[VALUE_HEAD.weight] = { dtype: 'float32', shape: [1, folder.config.hiddenSize], data: w };
        extra[VALUE_HEAD.bias] = { dtype: 'float32', shape: [1], data: new Float32Array(1) };
      }
      await device.setState(extra);
      const shapes = new Map([
        ...parameterShapes,
        ...Object.entries(extra).map(([name, t]) => [name, t.shape] as const),
      ]);
      return new ModelRuntime(device, folder, options, [...stored.keys()], Object.keys(extra), shapes, quantized);
    } catch (error) {
      folder.close();
      throw error;
    }
  }

  get config() {
    return this.folder.config;
  }
  get tokenizer() {
    return this.folder.tokenizer;
  }

  /**
   * State references for every weight a graph reads (its WeightInputs), checking they exist.
   * With `frozenCopy`, a weight that has a reference copy comes from it (see `keepReferenceCopy`).
   */
  weightFeeds(weights: WeightInputs, options: { frozenCopy?: boolean } = {}): Record<string, StateRef> {
    const feeds: Record<string, StateRef> = {};
    const known = new Set([...this.baseWeights, ...this.extraWeights]);
    for (const name of weights.used.keys()) {
      if (!known.has(name))
        throw new Error(`the graph reads ${name}, which this model does not have (LoRA or value head not loaded?)`);
      feeds[name] = {
        state: options.frozenCopy && this.referenceCopies.has(name) ? `${REFERENCE_PREFIX}${name}` : name,
      };
    }
    return feeds;
  }

  /**
   * Freeze a copy of the named weights — the ones the policy trains, as RL starts — as the
   * reference policy of the KL term: the warm start when there was one (its LoRA adapters, or
   * every weight when fully fine-tuning), else the model as loaded.
   */
  async keepReferenceCopy(names: readonly string[]): Promise<void> {
    await this.device.copyState(Object.fromEntries(names.map((n) => [n, `${REFERENCE_PREFIX}${n}`])));
    for (const n of names) this.referenceCopies.add(n);
  }

  /** The reference copies, by weight name (for a checkpoint). */
  async referenceState(): Promise<Record<string, HostTensor>> {
    const names = [...this.referenceCopies];
    const state = await this.device.getState(names.map((n) => `${REFERENCE_PREFIX}${n}`));
    return Object.fromEntries(names.map((n) => [n, state[`${REFERENCE_PREFIX}${n}`]]));
  }

  /** Put back reference copies a checkpoint saved (resume: the warm start is not run again). */
  async restoreReference(tensors: Record<string, HostTensor>): Promise<void> {
    for (const n of Object.keys(tensors))
      if (!this.referenceCopies.has(n))
        throw new Error(`reference policy: the checkpoint has ${n}, which this run's reference does not`);
    for (const n of this.referenceCopies)
      if (!tensors[n]) throw new Error(`reference policy: the checkpoint lacks ${n}`);
    await this.device.setState(
      Object.fromEntries(Object.entries(tensors).map(([n, t]) => [`${REFERENCE_PREFIX}${n}`, t])),
    );
  }

  /** The `lora_scale` feed: alpha/rank with the adapters on, 0 for the base model alone. */
  loraScaleFeed(adapters: boolean): Record<string, HostTensor> {
    if (!this.options.lora) return {};
    return {
      lora_scale: { dtype: 'float32', shape: [], data: Float32Array.of(adapters ? loraScale(this.options.lora) : 0) },
    };
  }

  close(): void {
    this.folder.close();
  }
}

/** The parameters of a model of `config`: every weight its checkpoint holds. */
function parameterCountOf(config: ModelConfig): number {
  return expectedTensors(config).reduce((n, t) => n + t.shape.reduce((a, b) => a * b, 1), 0);
}

/** ModelRuntime.checkpointsLayers for a network of `config` (a critic of its own, say). */
export function checkpointsLayers(config: ModelConfig, setting: boolean | undefined): boolean {
  return setting ?? parameterCountOf(config) > LOW_MEMORY_ABOVE;
}

/** The graph builders' view of a quantized base, `lowMemory` resolved by the base's size when unset. */
function quantizedBase(config: ModelConfig, q: Quantization): QuantizedBase {
  const tensors = expectedTensors(config);
  const lowMemory = lowMemoryFor(q, parameterCountOf(config));
  return {
    layouts: quantizedLayouts(tensors, q),
    accuracyLevel: quantizedAccuracyLevel(q.bits, lowMemory),
    lowMemory,
  };
}
