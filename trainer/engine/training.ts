import type { Device } from './device/device';
import type { Graph } from './graph';
import { momentName, nextName } from './optimizer';
import { serializeGraph, disposeSerialized } from './serialize';
import type { GraphOptimization } from './runtime/session';
import type { HostTensor } from './runtime/tensors';

export interface ParameterInit {
  name: string;
  value: HostTensor;
  decay: boolean;
}

export interface StepResult {
  loss: number;
  gradNorm: number;
  /** False when the loss or gradient was not finite: parameters and moments were left unchanged. */
  applied: boolean;
}

function zeros(value: HostTensor): HostTensor {
  const data = new (value.data.constructor as new (n: number) => HostTensor['data'])(value.data.length);
  return { dtype: value.dtype, shape: value.shape, data };
}

function scalar(dtype: 'float32' | 'float64', v: number): HostTensor {
  return { dtype, shape: [], data: dtype === 'float64' ? Float64Array.of(v) : Float32Array.of(v) };
}

/**
 * Runs a train-step graph (built with addTrainStep) on a Device: trainable parameters and their
 * AdamW moments live on the device as state; each step sends only the batch and two scalars
 * and receives the loss, the gradient norm and whether the update was applied.
 */
export class TrainStepRunner {
  private stepCount = 0;

  private constructor(
    private readonly device: Device,
    private readonly session: number,
    private readonly trainable: readonly string[],
    private readonly constants: readonly string[],
    private readonly dtype: 'float32' | 'float64',
  ) {}

  static async create(
    device: Device,
    graph: Graph,
    init: {
      trainable: readonly ParameterInit[];
      /** Inputs fed from the device as they are (frozen weights): uploaded from these values… */
      constants?: Record<string, HostTensor>;
      /** …or already resident on the device under these names. */
      resident?: readonly string[];
      optimization?: GraphOptimization;
    },
  ): Promise<TrainStepRunner> {
    const trainable = init.trainable.map((p) => p.name);
    const resident = trainable.flatMap((p) => [nextName(p), nextName(momentName(p, 'm')), nextName(momentName(p, 'v'))]);
    const model = serializeGraph(graph);
    try {
      const session = await device.load({ model, settings: { optimization: init.optimization ?? 'all' }, residentOutputs: resident });
      const state: Record<string, HostTensor> = { ...(init.constants ?? {}) };
      for (const p of init.trainable) {
        state[p.name] = p.value;
        state[momentName(p.name, 'm')] = zeros(p.value);
        state[momentName(p.name, 'v')] = zeros(p.value);
      }
      await device.setState(state);
      const dtype = init.trainable[0]?.value.dtype === 'float64' ? 'float64' : 'float32';
      return new TrainStepRunner(device, session, trainable, [...Object.keys(init.constants ?? {}), ...(init.resident ?? [])], dtype);
    } finally {
      disposeSerialized(model);
    }
  }

  get steps(): number {
    return this.stepCount;
  }

  /** One optimizer step on `batch` (the graph's data inputs) at learning rate `lr`. */
  async step(batch: Record<string, HostTensor>, lr: number): Promise<StepResult> {
    const feeds: Record<string, HostTensor | { state: string }> = { ...batch, step: scalar(this.dtype, this.stepCount + 1), lr: scalar(this.dtype, lr) };
    const outputs: Record<string, 'return' | { state: string }> = { loss: 'return', grad_norm: 'return', update_applied: 'return' };
    for (const name of [...this.constants]) feeds[name] = { state: name };
    for (const p of this.trainable) {
      for (const n of [p, momentName(p, 'm'), momentName(p, 'v')]) {
        feeds[n] = { state: n };
        outputs[nextName(n)] = { state: n };
      }
    }
    const result = await this.device.run(this.session, feeds, outputs);
    const applied = Number(result.update_applied.data[0]) === 1;
    if (applied) this.stepCount++;
    return { loss: Number(result.loss.data[0]), gradNorm: Number(result.grad_norm.data[0]), applied };
  }

  /** The trainable parameters' current values (read from the device). */
  parameters(): Promise<Record<string, HostTensor>> {
    return this.device.getState(this.trainable);
  }

  /** Parameters and both moments, for checkpoints. */
  optimizerState(): Promise<Record<string, HostTensor>> {
    return this.device.getState(this.trainable.flatMap((p) => [p, momentName(p, 'm'), momentName(p, 'v')]));
  }

  async release(): Promise<void> {
    await this.device.release(this.session);
  }
}

