import type { Device, Feed, OutputTarget } from './device/device';
import type { Graph, Tensor } from './graph';
import {
  addGradientAccumulation,
  addTrainStep,
  buildApplyGraph,
  gradName,
  momentName,
  nextName,
  type AdamWConfig,
  type TrainableParameter,
} from './optimizer';
import { disposeSerialized, serializeGraph } from './serialize';
import type { GraphOptimization } from './runtime/ortSession';
import type { HostTensor } from './runtime/tensors';

/**
 * Runs AdamW training on a Device. Trainable parameters, their moments and (when gradients
 * are accumulated) their accumulators live on the device as state; a step sends only the
 * batch and two scalars and gets back the loss, the gradient norm, whether the update was
 * applied, and any metric outputs the loss graph declares.
 *
 * One micro-batch per step uses a fused graph (forward, backward, clipping and AdamW in one
 * run). Several micro-batches per step use an accumulate graph per micro-batch and an apply
 * graph once per step; the loss must then be normalised over the whole step (pass the totals
 * as inputs) so the accumulated gradient is exactly the full batch's.
 */
export interface LossGraph {
  graph: Graph;
  loss: Tensor;
  /** Trainable parameters: graph inputs whose names are their state names. */
  params: TrainableParameter[];
  /** Metric tensors (scalars) to output, by name. */
  metrics?: Record<string, Tensor>;
}

export interface OptimizerRuntimeOptions {
  /**
   * Builds a fresh loss graph for a variant (called once per variant). Variants compute the same
   * loss over the same parameters in different layouts (e.g. with and without a shared prefix).
   */
  build: (variant: string) => LossGraph;
  /** The graph variants micro-batches may use (accumulating optimizers only); default one, "default". */
  variants?: readonly string[] | undefined;
  adamw: AdamWConfig;
  /** Initial values of the trainable parameters (omit ones already on the device). */
  initial?: Record<string, HostTensor> | undefined;
  /** Non-trainable graph inputs already on the device (frozen weights), fed by state. */
  resident: readonly string[];
  /**
   * Resident inputs baked into the loss graphs' sessions as initializers (device `frozenInputs`),
   * so that their kernels pack them once: a quantized base's codes, which MatMulNBits otherwise
   * dequantizes at every run. Each session holds its own packed copy.
   */
  frozen?: readonly string[] | undefined;
  /** Use accumulate + apply graphs (several micro-batches per step). */
  accumulate: boolean;
  optimization?: GraphOptimization | undefined;
  /**
   * onnxruntime's CPU memory arena for the optimizer's sessions (default on). Each session's arena
   * keeps its largest run's blocks for good; off, the update's activations go back after each run.
   */
  memoryArena?: boolean | undefined;
}

/** The loaded sessions: a fused step, or accumulating variants (loaded on first use) and the apply graph. */
interface OptimizerSessions {
  fused?: number;
  accumulate?: Map<string, Promise<number>>;
  loadVariant?: (variant: string) => Promise<number>;
  apply?: number;
}

export interface OptimizerStep {
  loss: number;
  gradNorm: number;
  applied: boolean;
  metrics: Record<string, number>;
}

type FloatDtype = 'float32' | 'float64';

function scalar(dtype: FloatDtype, v: number): HostTensor {
  return { dtype, shape: [], data: dtype === 'float64' ? Float64Array.of(v) : Float32Array.of(v) };
}

/**
 * Whether the accumulators are zeroed by the device (setZeros) rather than by the apply graph. Where
 * state lives in host memory, the graph's zeros were an output: written once by onnxruntime and once
 * more into the copy JavaScript receives, every page of both, each step (1 GB at SmolLM2-135M fully
 * fine-tuned); fresh zeroed pages cost nothing until the next micro-batch writes its gradient. On
 * WebGPU the state lives in GPU buffers and the graph's zeros never leave the device.
 */
function zeroOnDevice(device: Device): boolean {
  return device.provider !== 'webgpu';
}

export class OptimizerRuntime {
  private stepCount = 0;
  private pendingMicroBatches = 0;
  private readonly metricNames: string[];

  private constructor(
    private readonly device: Device,
    private readonly options: OptimizerRuntimeOptions,
    private readonly params: ReadonlyArray<{ name: string; shape: number[]; decay: boolean }>,
    private readonly sessions: OptimizerSessions,
    metricNames: string[],
    private readonly dtype: FloatDtype,
    private readonly twins: ReadonlyMap<string, string>,
  ) {
    this.metricNames = metricNames;
  }

  static async create(device: Device, options: OptimizerRuntimeOptions): Promise<OptimizerRuntime> {
    const variants = options.variants ?? ['default'];
    if (!options.accumulate && variants.length > 1) throw new Error('graph variants need an accumulating optimizer');
    const loss = options.build(variants[0]);
    const dtype: FloatDtype = loss.loss.dtype === 'float64' ? 'float64' : 'float32';
    const params = loss.params.map((p) => ({ name: p.tensor.name, shape: p.tensor.shape.map(Number), decay: p.decay }));
    const metricNames = Object.keys(loss.metrics ?? {});
    for (const [name, t] of Object.entries(loss.metrics ?? {})) loss.graph.output(t, name);
    const sessions: OptimizerSessions = {};
    // Inputs fed as another input is (Graph.inputTwin), over every loss graph.
    const twins = new Map<string, string>();
    const frozenInputs = Object.fromEntries((options.frozen ?? []).map((name) => [name, name]));
    const load = async (graph: Graph, resident: string[], frozen: Record<string, string> = {}) => {
      const model = serializeGraph(graph);
      try {
        return await device.load({
          model,
          settings: { optimization: options.optimization ?? 'all', memoryArena: options.memoryArena },
          residentOutputs: resident,
          frozenInputs: frozen,
        });
      } finally {
        disposeSerialized(model);
      }
    };
    const names = params.map((p) => p.name);
    if (options.accumulate) {
      // The first variant now; the others when a micro-batch first asks for one (each session of a
      // quantized base holds a packed copy of it, and a run may never need the other layout).
      const loadVariant = async (variant: string, built?: LossGraph): Promise<number> => {
        const graph = built ?? options.build(variant);
        if (!built) {
          for (const [name, t] of Object.entries(graph.metrics ?? {})) graph.graph.output(t, name);
          const got = graph.params.map((p) => p.tensor.name).join(',');
          if (got !== names.join(','))
            throw new Error(`graph variant "${variant}" trains other parameters than "${variants[0]}"`);
        }
        addGradientAccumulation(graph.graph, graph.loss, graph.params);
        for (const [twin, input] of graph.graph.twins) twins.set(twin, input);
        return load(
          graph.graph,
          names.map((n) => nextName(gradName(n))),
          frozenInputs,
        );
      };
      sessions.loadVariant = loadVariant;
      sessions.accumulate = new Map([[variants[0], Promise.resolve(await loadVariant(variants[0], loss))]]);
      const apply = buildApplyGraph(params, options.adamw, dtype, !zeroOnDevice(device));
      sessions.apply = await load(
        apply,
        names.flatMap((n) => [
          nextName(n),
          nextName(momentName(n, 'm')),
          nextName(momentName(n, 'v')),
          ...(zeroOnDevice(device) ? [] : [nextName(gradName(n))]),
        ]),
      );
    } else {
      addTrainStep(loss.graph, loss.loss, loss.params, options.adamw);
      for (const [twin, input] of loss.graph.twins) twins.set(twin, input);
      sessions.fused = await load(
        loss.graph,
        names.flatMap((n) => [nextName(n), nextName(momentName(n, 'm')), nextName(momentName(n, 'v'))]),
        frozenInputs,
      );
    }
    await device.setState({ ...(options.initial ?? {}) });
    const zeroed: Record<string, { dtype: FloatDtype; shape: number[] }> = {};
    for (const p of params) {
      const names = [
        momentName(p.name, 'm'),
        momentName(p.name, 'v'),
        ...(options.accumulate ? [gradName(p.name)] : []),
      ];
      for (const n of names) zeroed[n] = { dtype, shape: p.shape };
    }
    await device.setZeros(zeroed);
    return new OptimizerRuntime(device, options, params, sessions, metricNames, dtype, twins);
  }

  /** Optimizer steps applied so far (AdamW's t). */
  get steps(): number {
    return this.stepCount;
  }

  private commonFeeds(batch: Record<string, HostTensor>): Record<string, Feed> {
    const feeds: Record<string, Feed> = { ...batch };
    for (const name of this.options.resident) feeds[name] = { state: name };
    for (const p of this.params) feeds[p.name] = { state: p.name };
    for (const [twin, input] of this.twins) feeds[twin] = feeds[input];
    return feeds;
  }

  private metricsOf(out: Record<string, HostTensor>): Record<string, number> {
    return Object.fromEntries(this.metricNames.map((n) => [n, Number(out[n].data[0])]));
  }

  /** One fused step: forward, backward and update on one batch. */
  async step(batch: Record<string, HostTensor>, lr: number): Promise<OptimizerStep> {
    if (this.sessions.fused === undefined)
      throw new Error('this optimizer accumulates gradients: call accumulate() per micro-batch, then apply()');
    const feeds = this.commonFeeds(batch);
    feeds.step = scalar(this.dtype, this.stepCount + 1);
    feeds.lr = scalar(this.dtype, lr);
    const outputs: Record<string, OutputTarget> = { loss: 'return', grad_norm: 'return', update_applied: 'return' };
    for (const n of this.metricNames) outputs[n] = 'return';
    for (const p of this.params) {
      for (const n of [momentName(p.name, 'm'), momentName(p.name, 'v')]) feeds[n] = { state: n };
      for (const n of [p.name, momentName(p.name, 'm'), momentName(p.name, 'v')]) outputs[nextName(n)] = { state: n };
    }
    const out = await this.device.run(this.sessions.fused, feeds, outputs);
    const applied = Number(out.update_applied.data[0]) === 1;
    if (applied) this.stepCount++;
    return {
      loss: Number(out.loss.data[0]),
      gradNorm: Number(out.grad_norm.data[0]),
      applied,
      metrics: this.metricsOf(out),
    };
  }

  /** Forward and backward on one micro-batch (with the graph `variant`), adding its gradient to the accumulators. */
  async accumulate(
    batch: Record<string, HostTensor>,
    variant = this.options.variants?.[0] ?? 'default',
  ): Promise<{ loss: number; metrics: Record<string, number> }> {
    if (this.sessions.accumulate === undefined) throw new Error('this optimizer does not accumulate: call step()');
    let loading = this.sessions.accumulate.get(variant);
    if (loading === undefined) {
      if (!(this.options.variants ?? ['default']).includes(variant)) throw new Error(`no graph variant "${variant}"`);
      // A load that failed is not kept: the next micro-batch tries again.
      loading = this.sessions.loadVariant!(variant).catch((error: unknown) => {
        this.sessions.accumulate!.delete(variant);
        throw error;
      });
      this.sessions.accumulate.set(variant, loading);
    }
    const session = await loading;
    const feeds = this.commonFeeds(batch);
    const outputs: Record<string, OutputTarget> = { loss: 'return' };
    for (const n of this.metricNames) outputs[n] = 'return';
    for (const p of this.params) {
      feeds[gradName(p.name)] = { state: gradName(p.name) };
      outputs[nextName(gradName(p.name))] = { state: gradName(p.name) };
    }
    const out = await this.device.run(session, feeds, outputs);
    this.pendingMicroBatches++;
    return { loss: Number(out.loss.data[0]), metrics: this.metricsOf(out) };
  }

  /**
   * Apply the accumulated gradient (scaled by `gradScale`, 1 when the loss is already
   * normalised over the whole step) and zero the accumulators.
   */
  async apply(lr: number, gradScale = 1): Promise<{ gradNorm: number; applied: boolean }> {
    if (this.sessions.apply === undefined) throw new Error('this optimizer does not accumulate: call step()');
    if (this.pendingMicroBatches === 0) throw new Error('apply() without an accumulated micro-batch');
    const feeds: Record<string, Feed> = {
      step: scalar(this.dtype, this.stepCount + 1),
      lr: scalar(this.dtype, lr),
      grad_scale: scalar(this.dtype, gradScale),
    };
    const outputs: Record<string, OutputTarget> = { grad_norm: 'return', update_applied: 'return' };
    const onDevice = zeroOnDevice(this.device);
    for (const p of this.params) {
      for (const n of [p.name, momentName(p.name, 'm'), momentName(p.name, 'v'), gradName(p.name)]) {
        feeds[n] = { state: n };
        if (n !== gradName(p.name) || !onDevice) outputs[nextName(n)] = { state: n };
      }
    }
    const out = await this.device.run(this.sessions.apply, feeds, outputs);
    if (onDevice)
      await this.device.setZeros(
        Object.fromEntries(this.params.map((p) => [gradName(p.name), { dtype: this.dtype, shape: p.shape }])),
      );
    this.pendingMicroBatches = 0;
    const applied = Number(out.update_applied.data[0]) === 1;
    if (applied) this.stepCount++;
    return { gradNorm: Number(out.grad_norm.data[0]), applied };
  }

  /** Parameter names, in order. */
  get parameterNames(): string[] {
    return this.params.map((p) => p.name);
  }

  parameters(): Promise<Record<string, HostTensor>> {
    return this.device.getState(this.params.map((p) => p.name));
  }

  /** Parameters, both moments and the step count, for a checkpoint. */
  async state(): Promise<{ step: number; tensors: Record<string, HostTensor> }> {
    const names = this.params.flatMap((p) => [p.name, momentName(p.name, 'm'), momentName(p.name, 'v')]);
    return { step: this.stepCount, tensors: await this.device.getState(names) };
  }

  /** Restore what `state()` returned (resume). */
  async restore(saved: { step: number; tensors: Record<string, HostTensor> }): Promise<void> {
    for (const p of this.params) {
      for (const n of [p.name, momentName(p.name, 'm'), momentName(p.name, 'v')]) {
        if (!saved.tensors[n]) throw new Error(`optimizer state: ${n} is missing`);
      }
    }
    await this.device.setState(saved.tensors);
    this.stepCount = saved.step;
  }

  async release(): Promise<void> {
    const variants = await Promise.allSettled([...(this.sessions.accumulate?.values() ?? [])]);
    const loaded = variants.flatMap((v) => (v.status === 'fulfilled' ? [v.value] : []));
    for (const id of [this.sessions.fused, this.sessions.apply, ...loaded])
      if (id !== undefined) await this.device.release(id);
  }
}
