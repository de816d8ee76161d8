import type * as ort from 'onnxruntime-node';
import { Graph } from '../graph';
import type { DType } from '../dtype';
import { serializeGraph } from '../serialize';
import { createSession, releaseSession, type ExecutionProviderName } from '../runtime/ortSession';
import { fromOrtTensor, toOrtTensor, zeroHostTensor, type HostTensor } from '../runtime/tensors';
import { isStateRef, type DeviceApi, type Feed, type LoadRequest, type OutputTarget } from './deviceApi';
import { freezeInputs, type FrozenInput } from './frozenInputs';

interface LoadedSession {
  session: ort.InferenceSession;
  key: string;
  users: number;
  /** Set when inputs were made initializers from state: what to build the session again from. */
  frozen?: { request: LoadRequest; inputs: FrozenInput[] } | undefined;
}

/**
 * The device as seen from the thread that owns onnxruntime: sessions, cached by model hash,
 * and named state tensors (parameters, optimizer moments, accumulators) that stay where the
 * provider keeps them — host memory on the CPU, GPU buffers on WebGPU — between runs.
 */
export class DeviceCore implements DeviceApi {
  private readonly sessions = new Map<number, LoadedSession>();
  private readonly byKey = new Map<string, number>();
  private readonly state = new Map<string, ort.Tensor>();
  private readonly readers = new Map<string, ort.InferenceSession>();
  private nextId = 1;

  constructor(
    readonly provider: ExecutionProviderName,
    /** Intra-op threads of sessions whose settings name none (default: every core). */
    private readonly threads?: number,
  ) {}

  async load(request: LoadRequest): Promise<number> {
    const { settings, resident } = this.placement(request);
    const frozen = this.freezes(request) ? request.frozenInputs : {};
    const key = JSON.stringify([request.model.hash, settings, resident, frozen]);
    const existing = this.byKey.get(key);
    if (existing !== undefined) {
      this.sessions.get(existing)!.users++;
      return existing;
    }
    const built = await this.build(request);
    const id = this.nextId++;
    this.sessions.set(id, { ...built, key, users: 1 });
    this.byKey.set(key, id);
    return id;
  }

  /** Frozen inputs become initializers on the CPU only, and only for a model held in memory. */
  private freezes(request: LoadRequest): boolean {
    return (
      this.provider === 'cpu' && request.model.kind === 'bytes' && Object.keys(request.frozenInputs ?? {}).length > 0
    );
  }

  /** The session settings a request gets here, and the outputs it leaves on the device (WebGPU). */
  private placement(request: LoadRequest) {
    const resident = this.provider === 'webgpu' ? [...(request.residentOutputs ?? [])].sort() : [];
    const settings = { ...request.settings, threads: request.settings.threads ?? this.threads };
    return { settings, resident };
  }

  private async build(
    request: LoadRequest,
  ): Promise<{ session: ort.InferenceSession; frozen?: LoadedSession['frozen'] }> {
    const { settings, resident } = this.placement(request);
    const outputLocations = resident.length
      ? Object.fromEntries(resident.map((name) => [name, 'gpu-buffer' as const]))
      : undefined;
    const sessionSettings = { ...settings, provider: this.provider, ...(outputLocations ? { outputLocations } : {}) };
    if (!this.freezes(request) || request.model.kind !== 'bytes')
      return { session: await createSession(request.model, sessionSettings) };
    const inputs = Object.entries(request.frozenInputs!).map(([input, state]) => {
      const tensor = this.state.get(state);
      if (!tensor) throw new Error(`frozen input ${input}: no state named "${state}" on the device`);
      return { input, state, tensor };
    });
    const { bytes, externalData } = freezeInputs(request.model.bytes, inputs);
    const session = await createSession({ ...request.model, bytes }, sessionSettings, externalData);
    return { session, frozen: { request, inputs } };
  }

  /** A session built on frozen state that has been replaced since is built again from the current state. */
  private async current(loaded: LoadedSession): Promise<LoadedSession> {
    if (!loaded.frozen || loaded.frozen.inputs.every((f) => this.state.get(f.state) === f.tensor)) return loaded;
    // Released first: the old session's packed weights are freed before the new ones are made.
    await releaseSession(loaded.session);
    let rebuilt: Awaited<ReturnType<DeviceCore['build']>>;
    try {
      rebuilt = await this.build(loaded.frozen.request);
    } catch (error) {
      // Its old session is gone: the id is no longer loaded.
      for (const [id, s] of this.sessions) if (s === loaded) this.sessions.delete(id);
      this.byKey.delete(loaded.key);
      throw error;
    }
    loaded.session = rebuilt.session;
    loaded.frozen = rebuilt.frozen;
    return loaded;
  }

  async run(
    sessionId: number,
    feeds: Record<string, Feed>,
    outputs: Record<string, OutputTarget>,
  ): Promise<Record<string, HostTensor>> {
    const known = this.sessions.get(sessionId);
    if (!known) throw new Error(`session ${sessionId} is not loaded (released already?)`);
    const loaded = await this.current(known);
    const frozen = new Map(loaded.frozen?.inputs.map((f) => [f.input, f.state]));
    const ortFeeds: Record<string, ort.Tensor> = {};
    for (const [name, feed] of Object.entries(feeds)) {
      const frozenState = frozen.get(name);
      if (frozenState !== undefined) {
        // The session holds this input's value already; a feed naming anything else is a bug.
        if (!isStateRef(feed) || feed.state !== frozenState)
          throw new Error(
            `feed ${name}: the session reads it from state "${frozenState}" and cannot take another value`,
          );
        continue;
      }
      if (isStateRef(feed)) {
        const tensor = this.state.get(feed.state);
        if (!tensor) throw new Error(`feed ${name}: no state named "${feed.state}" on the device`);
        ortFeeds[name] = tensor;
      } else ortFeeds[name] = toOrtTensor(feed);
    }
    const result = await loaded.session.run(ortFeeds, Object.keys(outputs));
    const returned: Record<string, HostTensor> = {};
    const replaced: ort.Tensor[] = [];
    for (const [name, target] of Object.entries(outputs)) {
      const tensor = result[name];
      if (!tensor) throw new Error(`the session has no output named "${name}"`);
      if (isStateRef(target)) {
        const prior = this.state.get(target.state);
        if (prior && prior !== tensor) replaced.push(prior);
        this.state.set(target.state, tensor);
      } else returned[name] = await this.download(tensor);
    }
    // Dispose replaced GPU buffers only after the run that read them has finished.
    for (const t of replaced) if (t.location === 'gpu-buffer' && ![...this.state.values()].includes(t)) t.dispose();
    return returned;
  }

  async setState(values: Record<string, HostTensor>): Promise<void> {
    for (const [name, value] of Object.entries(values)) {
      const prior = this.state.get(name);
      const tensor = toOrtTensor(value);
      // On WebGPU, upload once so runs read it from the device.
      this.state.set(name, this.provider === 'webgpu' ? await this.upload(tensor) : tensor);
      if (prior?.location === 'gpu-buffer') prior.dispose();
    }
  }

  async getState(names: readonly string[]): Promise<Record<string, HostTensor>> {
    const out: Record<string, HostTensor> = {};
    for (const name of names) {
      const tensor = this.state.get(name);
      if (!tensor) throw new Error(`no state named "${name}" on the device`);
      const value = await this.download(tensor);
      // A copy: the caller may keep or transfer it, and the state must stay intact.
      out[name] =
        tensor.location === 'gpu-buffer' ? value : { ...value, data: value.data.slice() as typeof value.data };
    }
    return out;
  }

  async copyState(pairs: Record<string, string>): Promise<void> {
    for (const [from, to] of Object.entries(pairs)) {
      const [value] = Object.values(await this.getState([from]));
      await this.setState({ [to]: value });
    }
  }

  async setZeros(tensors: Record<string, { dtype: DType; shape: readonly number[] }>): Promise<void> {
    await this.setState(
      Object.fromEntries(Object.entries(tensors).map(([name, t]) => [name, zeroHostTensor(t.dtype, t.shape)])),
    );
  }

  async deleteState(names: readonly string[]): Promise<void> {
    for (const name of names) {
      const tensor = this.state.get(name);
      this.state.delete(name);
      if (tensor?.location === 'gpu-buffer') tensor.dispose();
    }
  }

  async stateNames(): Promise<string[]> {
    return [...this.state.keys()];
  }

  async stateInfo(
    names: readonly string[],
  ): Promise<Record<string, { location: string; dtype: string; shape: number[] }>> {
    const info: Record<string, { location: string; dtype: string; shape: number[] }> = {};
    for (const name of names) {
      const t = this.state.get(name);
      if (!t) throw new Error(`no state named "${name}" on the device`);
      info[name] = { location: t.location, dtype: t.type, shape: [...t.dims] };
    }
    return info;
  }

  async release(sessionId: number): Promise<void> {
    const loaded = this.sessions.get(sessionId);
    if (!loaded) return;
    if (--loaded.users > 0) return;
    this.sessions.delete(sessionId);
    this.byKey.delete(loaded.key);
    await releaseSession(loaded.session);
  }

  async close(): Promise<void> {
    for (const id of [...this.sessions.keys()]) {
      const loaded = this.sessions.get(id)!;
      loaded.users = 1;
      await this.release(id);
    }
    await this.deleteState([...this.state.keys()]);
    for (const reader of this.readers.values()) await releaseSession(reader);
    this.readers.clear();
  }

  /**
   * A tensor's values on the host. GPU buffers are read through a small Identity session whose
   * output lives on the CPU: calling getData() on a gpu-buffer tensor aborts onnxruntime-node 1.30.
   */
  private async download(tensor: ort.Tensor): Promise<HostTensor> {
    if (tensor.location !== 'gpu-buffer') return fromOrtTensor(tensor);
    const reader = await this.passThrough(tensor.type as DType, tensor.dims.length, 'cpu');
    const out = await reader.run({ x: tensor });
    return fromOrtTensor(out.y);
  }

  private async upload(tensor: ort.Tensor): Promise<ort.Tensor> {
    const writer = await this.passThrough(tensor.type as DType, tensor.dims.length, 'gpu-buffer');
    const out = await writer.run({ x: tensor });
    return out.y;
  }

  private async passThrough(dtype: DType, rank: number, location: 'cpu' | 'gpu-buffer'): Promise<ort.InferenceSession> {
    const key = `${dtype}/${rank}/${location}`;
    let session = this.readers.get(key);
    if (!session) {
      const g = new Graph(`pass_through_${dtype}_${rank}`);
      const x = g.input(
        'x',
        dtype,
        Array.from({ length: rank }, (_, i) => `d${i}`),
      );
      g.output(x, 'y');
      session = await createSession(serializeGraph(g), {
        provider: this.provider,
        optimization: 'disabled',
        outputLocations: { y: location },
      });
      this.readers.set(key, session);
    }
    return session;
  }
}
