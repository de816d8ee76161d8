import type { SerializedModel } from '../serialize';
import type { SessionSettings } from '../runtime/ortSession';
import type { HostTensor } from '../runtime/tensors';
import type { DType } from '../dtype';

/** A reference to a tensor kept on the device between runs, by name. */
export interface StateRef {
  state: string;
}

export type Feed = HostTensor | StateRef;
/** What to do with a graph output: send it back, or keep it on the device under a state name. */
export type OutputTarget = 'return' | StateRef;

export interface LoadRequest {
  model: SerializedModel;
  settings: Omit<SessionSettings, 'provider' | 'outputLocations'>;
  /** Outputs that will be kept as state: left on the device (WebGPU) instead of copied back. */
  residentOutputs?: readonly string[];
  /**
   * Inputs that read the same state for many runs (a frozen base model's weights), by input name:
   * the state's name. On the CPU they become initializers read from the state's memory, which
   * onnxruntime packs once instead of at every run; a run still names them among its feeds (the
   * device skips them). A session whose frozen state has been replaced since it was built is built
   * again at its next run, so it never reads stale values. Other providers feed them as inputs.
   */
  frozenInputs?: Readonly<Record<string, string>>;
}

export function isStateRef(feed: Feed | OutputTarget): feed is StateRef {
  return typeof feed === 'object' && feed !== null && 'state' in feed;
}

/** The operations a device offers; the worker protocol is these calls as messages. */
export interface DeviceApi {
  load(request: LoadRequest): Promise<number>;
  run(
    session: number,
    feeds: Record<string, Feed>,
    outputs: Record<string, OutputTarget>,
  ): Promise<Record<string, HostTensor>>;
  setState(values: Record<string, HostTensor>): Promise<void>;
  getState(names: readonly string[]): Promise<Record<string, HostTensor>>;
  copyState(pairs: Record<string, string>): Promise<void>;
  /**
   * Sets each named state tensor to zeros of the dtype and shape given, made where the device
   * lives: on the CPU a fresh zeroed buffer costs no memory until a run writes over it (a graph
   * that outputs zeros, or zeros sent from another thread, write every page of it).
   */
  setZeros(tensors: Record<string, { dtype: DType; shape: readonly number[] }>): Promise<void>;
  deleteState(names: readonly string[]): Promise<void>;
  stateNames(): Promise<string[]>;
  /** Where each named state tensor lives ('cpu' or 'gpu-buffer'), its dtype and shape. */
  stateInfo(names: readonly string[]): Promise<Record<string, { location: string; dtype: string; shape: number[] }>>;
  release(session: number): Promise<void>;
  close(): Promise<void>;
}
