import type { Feed } from '../../engine/device/device';
import { Graph } from '../../engine/graph';
import * as op from '../../engine/ops';
import { serializeGraph } from '../../engine/serialize';
import { fusedKernelsFor } from '../layers/fused';
import type { ModelRuntime } from '../runtime';
import { buildGenerationGraph, cacheName, type SamplingMode } from './generationGraph';

/** The state holding one layer's keys or values of the prefilled prompts. */
export const promptCacheName = (kind: 'key' | 'value', layer: number) => `prompt_${kind}_${layer}`;

/** The fold and share graphs' names for the one layer's cache block a run reads, and its prompts. */
export const layerCacheName = (block: 'base' | 'recent', kind: 'key' | 'value') => `${block}_${kind}`;
export const layerPromptName = (kind: 'key' | 'value') => `prompt_${kind}`;

/** A generation graph loaded on the device, with the weight feeds it reads. */
export interface LoadedGenerationGraph {
  id: number;
  weights: Record<string, Feed>;
}

/**
 * The graphs a policy's generation sessions run — one per sampling mode and constraint, plus the
 * cache fold and the shared prompts' copy — loaded on the device once and shared by every session
 * the policy starts. Built per session, they were created again for every rollout: serialising the
 * graph, onnxruntime's optimisation of it, and a fresh memory arena that grows page by page and is
 * handed back when the session closes (page faults cost 12–15 µs on the VMs we measure on). A graph
 * reads the weights and the KV cache as device state by name, so sessions sharing it keep their own
 * caches.
 */
export class GenerationGraphs {
  private readonly sampling = new Map<string, Promise<LoadedGenerationGraph>>();
  private fold: Promise<number> | undefined;
  private share: Promise<number> | undefined;

  constructor(
    private readonly model: ModelRuntime,
    private readonly options: { captureDistributions?: boolean | undefined } = {},
  ) {}

  /**
   * The sampling graph for `mode`. Every turn runs it, free or constrained: it applies a per-row
   * logit bias, and a free row reads the zero row (adding 0 changes no logit). One graph per mode,
   * because each loaded graph holds its own packed copy of the frozen weights (as much memory again
   * as the base weights).
   */
  samplingGraph(mode: SamplingMode): Promise<LoadedGenerationGraph> {
    const key = JSON.stringify(mode);
    let loaded = this.sampling.get(key);
    if (!loaded) {
      // A load that failed is not kept: the next session tries again.
      loaded = this.loadSampling(mode).catch((error: unknown) => {
        this.sampling.delete(key);
        throw error;
      });
      this.sampling.set(key, loaded);
    }
    return loaded;
  }

  private async loadSampling(mode: SamplingMode): Promise<LoadedGenerationGraph> {
    const { graph, weights } = buildGenerationGraph(this.model.config, {
      sampling: mode,
      lora: this.model.options.lora,
      quantized: this.model.quantized,
      returnDistribution: this.options.captureDistributions,
      fused: fusedKernelsFor(this.model.device.provider),
      constrained: true,
    });
    const resident = Array.from({ length: this.model.config.numLayers }, (_, l) => [
      `${cacheName('recent', 'key', l)}.next`,
      `${cacheName('recent', 'value', l)}.next`,
    ]).flat();
    const feeds = this.model.weightFeeds(weights);
    // The base weights as initializers (on the CPU): a decoding step multiplies a few rows by every
    // weight, and a weight fed as an input is packed again at every run. A LoRA run never changes
    // them; a full fine-tuning update replaces them, and the device builds the graph again then.
    const base = new Set(this.model.baseWeights);
    const frozenInputs = Object.fromEntries(
      Object.entries(feeds)
        .filter(([, ref]) => base.has(ref.state))
        .map(([input, ref]) => [input, ref.state]),
    );
    const id = await this.model.device.load({
      model: serializeGraph(graph),
      settings: {},
      residentOutputs: resident,
      frozenInputs,
    });
    return { id, weights: feeds };
  }

  /**
   * The graph that appends one layer's recent cache block to its base block
   * (`base_<kind>.next` ← concat(`base_<kind>`, `recent_<kind>`)), run once per layer. One layer a
   * run, because onnxruntime-node copies every output into a new JavaScript buffer: a run over the
   * whole cache held the old base, onnxruntime's new one and that copy at once — three caches (at
   * 1.5B and 32 rows, 0.8 GB each) — where a layer at a time adds two layers' worth.
   */
  foldGraph(): Promise<number> {
    this.fold ??= this.loadFold().catch((error: unknown) => {
      this.fold = undefined;
      throw error;
    });
    return this.fold;
  }

  private async loadFold(): Promise<number> {
    const { numKvHeads, headDim } = this.model.config;
    const g = new Graph('fold_cache');
    for (const kind of ['key', 'value'] as const) {
      const base = g.input(layerCacheName('base', kind), 'float32', ['B', numKvHeads, 'Pb', headDim]);
      const recent = g.input(layerCacheName('recent', kind), 'float32', ['B', numKvHeads, 'Pr', headDim]);
      g.output(op.concat([base, recent], 2), `${layerCacheName('base', kind)}.next`);
    }
    return this.model.device.load({
      model: serializeGraph(g),
      settings: {},
      residentOutputs: g.outputs.map((o) => o.name),
    });
  }

  /**
   * The graph that gives rows a prompt prefilled once (a group's shared prompt), one layer a run
   * (see foldGraph): each row's base block is extended by the prefilled slots of its prompt,
   * `base_<kind>.next` ← concat(`base_<kind>`, `prompt_<kind>`[rows]), with `prompt_<kind>`
   * [prompts, kv, P, hd] and `rows` [B] (a prompt per row).
   */
  shareGraph(): Promise<number> {
    this.share ??= this.loadShare().catch((error: unknown) => {
      this.share = undefined;
      throw error;
    });
    return this.share;
  }

  private async loadShare(): Promise<number> {
    const { numKvHeads, headDim } = this.model.config;
    const g = new Graph('share_prompt_cache');
    const rows = g.input('rows', 'int64', ['B']);
    for (const kind of ['key', 'value'] as const) {
      const base = g.input(layerCacheName('base', kind), 'float32', ['B', numKvHeads, 'Pb', headDim]);
      const prompt = g.input(layerPromptName(kind), 'float32', ['prompts', numKvHeads, 'P', headDim]);
      g.output(op.concat([base, op.gather(prompt, rows, 0)], 2), `${layerCacheName('base', kind)}.next`);
    }
    return this.model.device.load({
      model: serializeGraph(g),
      settings: {},
      residentOutputs: g.outputs.map((o) => o.name),
    });
  }

  /** Releases every loaded graph; the next session loads them again. */
  async release(): Promise<void> {
    const loaded = [...this.sampling.values()];
    const shared = [this.fold, this.share].filter((g) => g !== undefined);
    this.sampling.clear();
    this.fold = undefined;
    this.share = undefined;
    const ids = await Promise.allSettled([...loaded.map(async (g) => (await g).id), ...shared]);
    for (const id of ids) if (id.status === 'fulfilled') await this.model.device.release(id.value);
  }
}
