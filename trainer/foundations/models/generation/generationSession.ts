import type { Feed, OutputTarget } from '../../engine/device/device';
import type { HostTensor } from '../../engine/runtime/tensors';
import type {
  AllowedTokens,
  GeneratedTurn,
  Policy,
  PolicySession,
  SequenceConstraint,
  SessionOptions,
  TurnImage,
  TurnOptions,
  TurnRequest,
  UniformSource,
} from './policy';
import { Random } from '../random';
import type { ModelRuntime } from '../runtime';
import { cacheName, type SamplingMode } from './generationGraph';
import {
  GenerationGraphs,
  layerCacheName,
  layerPromptName,
  promptCacheName,
  type LoadedGenerationGraph,
} from './generationGraphs';
import { planSharedPrefill } from './sharedPrompts';
import { ImageEncoder } from '../vision/imageEncoder';
import { multimodalPositions } from '../vision/ropeIndex';
import { biasRows, biasTable } from '../constraintBias';

/**
 * When the recent cache block is folded into the base block. Each step copies the recent block
 * (the graph returns it extended) and each fold copies the base block, so folding at √(2·base)
 * recent slots balances the two: about √(2·P) slot copies per step for a cache of P slots.
 * Measured on bench:models' model at batch 32 (96 positions, one thread): 16 slots used 10 %
 * less CPU than a fixed 64.
 */
function foldThreshold(baseSlots: number): number {
  return Math.max(16, Math.ceil(Math.sqrt(2 * baseSlots)));
}

export interface GenerationSessionOptions {
  /** Fold the recent cache block at this many slots instead of foldThreshold's (tests use small ones). */
  recentLimit?: number;
  /** Keep the whole next-token log-distribution of the last step (tests compare it with a full forward pass). */
  captureDistributions?: boolean;
  /**
   * Prefill a prompt that several rows start with once, and copy its cache to those rows
   * (sharedPrompts.ts). On by default; off, every row prefills its own copy (tests, bench:step).
   */
  sharePrompts?: boolean;
  /** Rows × padded width one run may prefill (default PREFILL_TOKENS; tests use small ones). */
  prefillTokens?: number | undefined;
}

/**
 * The most tokens (rows × padded width) one run prefills. A longer first turn is fed in slices
 * of the prompts, as vLLM's chunked prefill does: a run's activations and attention scores grow
 * with rows × width × cache, and onnxruntime's arena keeps the largest run's blocks for the
 * session's life, so slicing bounds the resident memory without changing the samples. The
 * measurements: test/bench/README.md.
 */
export const PREFILL_TOKENS = 8192;

function int64(rows: number[][], width: number): HostTensor {
  const data = new BigInt64Array(rows.length * width);
  rows.forEach((row, b) => row.forEach((v, t) => (data[b * width + t] = BigInt(v))));
  return { dtype: 'int64', shape: [rows.length, width], data };
}

function scalar(v: number): HostTensor {
  return { dtype: 'float32', shape: [], data: Float32Array.of(v) };
}

/** The sampling graph's inputs besides the tokens, cache and weights: temperature, top-p, one uniform per row. */
function samplingFeeds(options: TurnOptions, uniforms: Float32Array): Record<string, HostTensor> {
  return {
    inv_temperature: scalar(options.temperature > 0 ? 1 / options.temperature : 1),
    top_p: scalar(options.topP),
    uniforms: { dtype: 'float32', shape: [uniforms.length], data: uniforms },
  };
}

export function samplingMode(options: Pick<TurnOptions, 'temperature' | 'topK' | 'topP'>, vocab: number): SamplingMode {
  if (options.temperature === 0) return { kind: 'greedy' };
  if (options.topK > 0 || options.topP < 1)
    return { kind: 'sorted', candidates: Math.min(options.topK > 0 ? options.topK : vocab, vocab) };
  return { kind: 'full' };
}

/**
 * The model as a Policy: sessions generate turns with a KV cache kept on the device. The graphs
 * they run are loaded once per policy and shared by all its sessions (generationGraphs.ts): a
 * training run keeps one policy and starts a session per rollout.
 */
export class ModelPolicy implements Policy {
  private sessionCount = 0;
  private readonly graphs: GenerationGraphs;
  constructor(
    private readonly model: ModelRuntime,
    private readonly sessionOptions: GenerationSessionOptions = {},
  ) {
    this.graphs = new GenerationGraphs(model, { captureDistributions: sessionOptions.captureDistributions });
  }

  async startSession(sequences: number, seed: number, options: SessionOptions = {}): Promise<GenerationSession> {
    const session = new GenerationSession(
      this.model,
      this.graphs,
      sequences,
      options.uniforms ?? seed,
      `gen${this.sessionCount++}`,
      this.sessionOptions,
    );
    await session.init();
    return session;
  }

  /** Releases the loaded generation graphs (closing the device releases them too); a later session loads them again. */
  release(): Promise<void> {
    return this.graphs.release();
  }
}

interface Row {
  /** Rotary position of the row's next real token. */
  position: number;
  /** Sampled but not yet fed tokens (the last token of the previous turn). */
  unfed: number[];
}

/**
 * One batch of sequences on one timeline. Each call to `generate` first extends the requested
 * rows by their unfed and appended tokens (one chunk, rows left-padded to the longest), then
 * decodes one token per step for the rows still generating; every other row gets a masked
 * padding slot so the cache stays aligned.
 */
export class GenerationSession implements PolicySession {
  private readonly rows: Row[];
  private readonly baseMask: number[][];
  private readonly recentMask: number[][];
  /** One uniform per row per step, in row order: the seeded stream, or a re-roll's (UniformSource). */
  private readonly uniforms: UniformSource;
  /** The allowed sets whose bias table is on the device now (constrained turns). */
  private biasSets: AllowedTokens[] | undefined;
  /** With captureDistributions: each extend step's [B, V] log-distribution, in order. */
  readonly distributions: Float32Array[] = [];
  /** Vision-language models: the vision tower, encoding each distinct image once per session. */
  readonly images: ImageEncoder | undefined;

  constructor(
    private readonly model: ModelRuntime,
    private readonly graphs: GenerationGraphs,
    readonly size: number,
    seed: number | UniformSource,
    private readonly prefix: string,
    private readonly options: GenerationSessionOptions = {},
  ) {
    this.rows = Array.from({ length: size }, () => ({ position: 0, unfed: [] }));
    this.baseMask = Array.from({ length: size }, () => []);
    this.recentMask = Array.from({ length: size }, () => []);
    if (typeof seed === 'number') {
      const random = Random.fromSeed(seed);
      this.uniforms = { next: () => random.nextFloat() };
    } else this.uniforms = seed;
    this.images = model.config.vision ? new ImageEncoder(model) : undefined;
  }

  private state(block: 'base' | 'recent', kind: 'key' | 'value', layer: number): string {
    return `${this.prefix}/${cacheName(block, kind, layer)}`;
  }

  async init(): Promise<void> {
    await this.resetBlock('base');
    await this.resetBlock('recent');
  }

  /**
   * A block holding one masked slot: a key nothing attends to. Never empty, because a MatMul over
   * zero keys (inner dimension 0) crashes the WebGPU provider (measured: onnxruntime-node 1.30 on
   * lavapipe, a segmentation fault in the first decoding step); the slot costs one masked score.
   */
  private async resetBlock(block: 'base' | 'recent'): Promise<void> {
    const { numKvHeads, headDim, numLayers } = this.model.config;
    const slot: HostTensor = {
      dtype: 'float32',
      shape: [this.size, numKvHeads, 1, headDim],
      data: new Float32Array(this.size * numKvHeads * headDim),
    };
    const values: Record<string, HostTensor> = {};
    for (let l = 0; l < numLayers; l++)
      for (const kind of ['key', 'value'] as const) values[this.state(block, kind, l)] = slot;
    await this.model.device.setState(values);
    const masks = block === 'base' ? this.baseMask : this.recentMask;
    for (const m of masks) m.splice(0, m.length, 0);
  }

  /**
   * The constrained graph's inputs for this step. The bias table (K × V floats: 15 MB at 151k
   * tokens and 25 sets) is device state, sent again only when the step's sets differ from the
   * last step's — consecutive steps mostly see the same ones (rows inside a string keep one state).
   */
  private async biasFeeds(allowed: readonly (AllowedTokens | undefined)[]): Promise<Record<string, Feed>> {
    const { sets, rows } = biasRows(allowed);
    const name = `${this.prefix}/logit_bias`;
    if (!this.biasSets || this.biasSets.length !== sets.length || this.biasSets.some((s, i) => s !== sets[i])) {
      await this.model.device.setState({ [name]: biasTable(sets, this.model.config.vocabSize) });
      this.biasSets = sets;
    }
    return { logit_bias: { state: name }, bias_row: rows };
  }

  /**
   * Extend every row by its chunk (left-padded to one width) and sample each row's next token;
   * `allowed` (constrained turns) restricts what each row may sample.
   */
  private async extend(
    chunks: number[][],
    mode: SamplingMode,
    options: TurnOptions,
    chunkImages: (readonly TurnImage[])[] = [],
    allowed?: (AllowedTokens | undefined)[],
    prefillOnly = false,
  ): Promise<{ tokens: number[]; logprobs: number[]; entropies: number[] }> {
    const width = Math.max(1, ...chunks.map((c) => c.length));
    const ids: number[][] = [];
    const positions: number[][] = [];
    const mask: number[][] = [];
    const vision = this.model.config.vision;
    const slots: number[] = [];
    const imageRows: TurnImage[] = [];
    chunks.forEach((chunk, b) => {
      const pad = width - chunk.length;
      ids.push([...new Array(pad).fill(0), ...chunk]);
      mask.push([...new Array(pad).fill(0), ...chunk.map(() => 1)]);
      if (vision) {
        // M-RoPE: three positions per token, continuing the row; an image's tokens take its grid.
        const images = chunkImages[b] ?? [];
        const mrope = multimodalPositions(chunk, images, vision, this.rows[b].position);
        if (mrope.imagesUsed !== images.length)
          throw new Error(`sequence ${b}: ${images.length} image(s) given for ${mrope.imagesUsed} image token run(s)`);
        positions.push([...new Array(pad * 3).fill(0), ...mrope.positions]);
        this.rows[b].position = mrope.next;
        chunk.forEach((id, i) => {
          if (id === vision.imageTokenId) slots.push(b * width + pad + i);
        });
        imageRows.push(...images);
      } else {
        positions.push([...new Array(pad).fill(0), ...chunk.map((_, i) => this.rows[b].position + i)]);
        this.rows[b].position += chunk.length;
      }
    });
    const { numLayers } = this.model.config;
    const { id, weights }: LoadedGenerationGraph = await this.graphs.samplingGraph(mode);
    const feeds: Record<string, Feed> = {
      ...weights,
      ...(await this.biasFeeds(allowed ?? chunks.map(() => undefined))),
      ...this.model.loraScaleFeed(true),
      ids: int64(ids, width),
      positions: vision ? { ...int64(positions, width * 3), shape: [this.size, width, 3] } : int64(positions, width),
      ...(vision ? await this.imageFeeds(imageRows, slots) : {}),
      new_mask: int64(mask, width),
      base_mask: int64(this.baseMask, this.baseMask[0].length),
      recent_mask: int64(this.recentMask, this.recentMask[0].length),
      // A slice of a prefill samples nothing: it draws no uniforms, so the stream is as unsliced.
      ...samplingFeeds(
        options,
        prefillOnly
          ? new Float32Array(this.size)
          : Float32Array.from({ length: this.size }, (_, b) => this.uniforms.next(b, chunks[b].length > 0)),
      ),
    };
    const outputs: Record<string, OutputTarget> = prefillOnly
      ? {}
      : { token: 'return', logprob: 'return', entropy: 'return' };
    if (this.options.captureDistributions && !prefillOnly) outputs.distribution = 'return';
    for (let l = 0; l < numLayers; l++) {
      for (const block of ['base', 'recent'] as const)
        for (const kind of ['key', 'value'] as const)
          feeds[cacheName(block, kind, l)] = { state: this.state(block, kind, l) };
      for (const kind of ['key', 'value'] as const)
        outputs[`${cacheName('recent', kind, l)}.next`] = { state: this.state('recent', kind, l) };
    }
    const out = await this.model.device.run(id, feeds, outputs);
    if (out.distribution) this.distributions.push(out.distribution.data as Float32Array);
    mask.forEach((m, b) => this.recentMask[b].push(...m));
    if (this.recentMask[0].length >= (this.options.recentLimit ?? foldThreshold(this.baseMask[0].length)))
      await this.foldRecentIntoBase();
    if (prefillOnly) return { tokens: [], logprobs: [], entropies: [] };
    return {
      tokens: Array.from(out.token.data as BigInt64Array, Number),
      logprobs: Array.from(out.logprob.data as Float32Array),
      entropies: Array.from(out.entropy.data as Float32Array),
    };
  }

  /**
   * Prompts that several fresh rows of this call start with (a GRPO group's samples) are prefilled
   * once, and each of those rows gets its prompt's keys and values in its base block; their chunks
   * shrink to the prompt's last token (sharedPrompts.ts). Vision-language models opt out: an image
   * prompt's M-RoPE positions and image embeddings take the ordinary path.
   */
  private async prefillSharedPrompts(chunks: number[][], mode: SamplingMode, options: TurnOptions): Promise<void> {
    if (this.model.config.vision || this.options.sharePrompts === false) return;
    const plan = planSharedPrefill(
      chunks,
      this.rows.map((r) => r.position === 0),
    );
    if (!plan) return;
    const masks = await this.prefill(plan.prefixes, mode, options);
    await this.appendPrefilled(plan.rowPrefix, masks);
    plan.rowPrefix.forEach((p, b) => {
      if (p < 0) return;
      this.rows[b].position = plan.prefixes[p].length;
      chunks[b] = chunks[b].slice(-1);
    });
  }

  private promptState(kind: 'key' | 'value', layer: number): string {
    return `${this.prefix}/${promptCacheName(kind, layer)}`;
  }

  /**
   * Runs the prefixes through the sampling graph at one row each (left-padded to one width, from
   * position 0, against an empty cache) and keeps their keys and values as prompt states; returns
   * each prefix's key mask. Nothing is sampled from it: the sampled outputs are not fetched.
   */
  private async prefill(prefixes: number[][], mode: SamplingMode, options: TurnOptions): Promise<number[][]> {
    const { numLayers, numKvHeads, headDim } = this.model.config;
    const rows = prefixes.length;
    const width = Math.max(...prefixes.map((p) => p.length));
    const padded = (p: number[], fill: (t: number) => number) => [
      ...new Array<number>(width - p.length).fill(0),
      ...p.map((_, t) => fill(t)),
    ];
    const mask = prefixes.map((p) => padded(p, () => 1));
    // One masked slot stands for both empty cache blocks (a block is never empty: see resetBlock).
    const empty = `${this.prefix}/prompt_empty`;
    await this.model.device.setState({
      [empty]: {
        dtype: 'float32',
        shape: [rows, numKvHeads, 1, headDim],
        data: new Float32Array(rows * numKvHeads * headDim),
      },
    });
    const { id, weights } = await this.graphs.samplingGraph(mode);
    const noSlots = int64(
      prefixes.map(() => [0]),
      1,
    );
    const feeds: Record<string, Feed> = {
      ...weights,
      ...this.model.loraScaleFeed(true),
      ids: int64(
        prefixes.map((p) => padded(p, (t) => p[t])),
        width,
      ),
      positions: int64(
        prefixes.map((p) => padded(p, (t) => t)),
        width,
      ),
      new_mask: int64(mask, width),
      base_mask: noSlots,
      recent_mask: noSlots,
      ...samplingFeeds(options, new Float32Array(rows)),
      ...(await this.biasFeeds(prefixes.map(() => undefined))),
    };
    const outputs: Record<string, OutputTarget> = {};
    for (let l = 0; l < numLayers; l++)
      for (const kind of ['key', 'value'] as const) {
        feeds[cacheName('base', kind, l)] = { state: empty };
        feeds[cacheName('recent', kind, l)] = { state: empty };
        outputs[`${cacheName('recent', kind, l)}.next`] = { state: this.promptState(kind, l) };
      }
    await this.model.device.run(id, feeds, outputs);
    await this.model.device.deleteState([empty]);
    return mask.map((m) => [0, ...m]);
  }

  /**
   * Feeds the chunks' heads in runs of at most `prefillTokens` rows × width (see PREFILL_TOKENS),
   * leaving each row at most one slice's width for the run that samples. A row's tokens keep their
   * order; a row with less left to feed gets masked slots in a run, as a finished row does.
   * Vision-language models opt out: an image's tokens and embeddings go in one run.
   */
  private async prefillInSlices(
    chunks: number[][],
    mode: SamplingMode,
    options: TurnOptions,
    allowed: (AllowedTokens | undefined)[] | undefined,
  ): Promise<void> {
    const budget = this.options.prefillTokens ?? PREFILL_TOKENS;
    const width = Math.max(1, Math.floor(budget / this.size));
    if (this.model.config.vision || chunks.every((c) => c.length <= width)) return;
    for (;;) {
      const slices = chunks.map((c) => c.slice(0, Math.max(0, Math.min(width, c.length - width))));
      if (slices.every((s) => s.length === 0)) return;
      // The turn's constraints, so that a slice sends no other bias table.
      await this.extend(slices, mode, options, [], allowed, true);
      slices.forEach((s, b) => chunks[b].splice(0, s.length));
    }
  }

  /** base ← concat(base, prompt[row's prompt]): each prefilled row's prompt slots, masked slots for the others. */
  private async appendPrefilled(rowPrefix: readonly number[], masks: readonly number[][]): Promise<void> {
    const share = await this.graphs.shareGraph();
    const rows: HostTensor = {
      dtype: 'int64',
      shape: [this.size],
      data: BigInt64Array.from(rowPrefix, (p) => BigInt(Math.max(p, 0))),
    };
    // A layer a run (see GenerationGraphs.shareGraph), each layer's prompts dropped once copied.
    for (let l = 0; l < this.model.config.numLayers; l++) {
      const feeds: Record<string, Feed> = { rows };
      const outputs: Record<string, OutputTarget> = {};
      const prompts: string[] = [];
      for (const kind of ['key', 'value'] as const) {
        feeds[layerCacheName('base', kind)] = { state: this.state('base', kind, l) };
        feeds[layerPromptName(kind)] = { state: this.promptState(kind, l) };
        outputs[`${layerCacheName('base', kind)}.next`] = { state: this.state('base', kind, l) };
        prompts.push(this.promptState(kind, l));
      }
      await this.model.device.run(share, feeds, outputs);
      await this.model.device.deleteState(prompts);
    }
    rowPrefix.forEach((p, b) => this.baseMask[b].push(...(p < 0 ? masks[0].map(() => 0) : masks[p])));
  }

  /** The chunk's image embeddings, one row per image token in slot order, and their slots. */
  private async imageFeeds(
    images: readonly TurnImage[],
    slots: readonly number[],
  ): Promise<Record<string, HostTensor>> {
    const hidden = this.model.config.hiddenSize;
    const embeddings = await this.images!.embed(images);
    const values = new Float32Array(slots.length * hidden);
    let offset = 0;
    for (const e of embeddings) {
      values.set(e, offset);
      offset += e.length;
    }
    if (offset !== values.length)
      throw new Error(`${slots.length} image tokens in the chunk but the images have ${offset / hidden} embeddings`);
    return {
      image_embeds: { dtype: 'float32', shape: [slots.length, hidden], data: values },
      image_slots: { dtype: 'int64', shape: [slots.length], data: BigInt64Array.from(slots, (v) => BigInt(v)) },
    };
  }

  /** base ← concat(base, recent); recent ← one masked slot. One copy of the cache (see foldThreshold), a layer a run. */
  private async foldRecentIntoBase(): Promise<void> {
    const fold = await this.graphs.foldGraph();
    for (let l = 0; l < this.model.config.numLayers; l++) {
      const feeds: Record<string, Feed> = {};
      const outputs: Record<string, OutputTarget> = {};
      for (const kind of ['key', 'value'] as const) {
        feeds[layerCacheName('base', kind)] = { state: this.state('base', kind, l) };
        feeds[layerCacheName('recent', kind)] = { state: this.state('recent', kind, l) };
        outputs[`${layerCacheName('base', kind)}.next`] = { state: this.state('base', kind, l) };
      }
      await this.model.device.run(fold, feeds, outputs);
    }
    this.recentMask.forEach((m, b) => {
      this.baseMask[b].push(...m);
      m.length = 0;
    });
    await this.resetBlock('recent');
  }

  async generate(requests: readonly TurnRequest[], options: TurnOptions): Promise<GeneratedTurn[]> {
    if (options.maxNewTokens < 1) throw new Error(`maxNewTokens must be at least 1, got ${options.maxNewTokens}`);
    const vocab = this.model.config.vocabSize;
    const mode = samplingMode(options, vocab);
    const stopIds = new Set(options.stopTokenIds);
    const turns = new Map<number, GeneratedTurn>();
    const limits = new Map<number, number>();
    const constraints = new Map<number, SequenceConstraint>();
    const chunks: number[][] = this.rows.map(() => []);
    const chunkImages: (readonly TurnImage[])[] = this.rows.map(() => []);
    for (const r of requests) {
      if (r.images?.length && !this.model.config.vision)
        throw new Error(
          `sequence ${r.sequence}: the request has ${r.images.length} image(s), but ${this.model.config.architecture} is a text-only model`,
        );
      chunkImages[r.sequence] = r.images ?? [];
      if (r.sequence < 0 || r.sequence >= this.size)
        throw new Error(`sequence ${r.sequence} is outside this session (0..${this.size - 1})`);
      if (turns.has(r.sequence)) throw new Error(`sequence ${r.sequence} is requested twice`);
      const row = this.rows[r.sequence];
      chunks[r.sequence] = [...row.unfed, ...r.append];
      row.unfed = [];
      if (chunks[r.sequence].length === 0)
        throw new Error(`sequence ${r.sequence}: nothing to condition on (append the prompt first)`);
      if (r.maxNewTokens !== undefined && !(Number.isInteger(r.maxNewTokens) && r.maxNewTokens >= 1))
        throw new Error(
          `sequence ${r.sequence}: maxNewTokens must be a whole number of at least 1, got ${r.maxNewTokens}`,
        );
      limits.set(r.sequence, Math.min(options.maxNewTokens, r.maxNewTokens ?? options.maxNewTokens));
      turns.set(r.sequence, { sequence: r.sequence, tokens: [], logprobs: [], entropies: [], finish: 'length' });
      if (r.constraint) constraints.set(r.sequence, r.constraint);
    }
    const live = new Set(turns.keys());
    // A free row gets the zero bias row.
    const allowedNow = () =>
      constraints.size ? this.rows.map((_, b) => (live.has(b) ? constraints.get(b)?.next() : undefined)) : undefined;
    await this.prefillSharedPrompts(chunks, mode, options);
    await this.prefillInSlices(chunks, mode, options, allowedNow());
    let step = await this.extend(chunks, mode, options, chunkImages, allowedNow());
    for (;;) {
      for (const b of [...live]) {
        const turn = turns.get(b)!;
        const token = step.tokens[b];
        constraints.get(b)?.accept(token);
        turn.tokens.push(token);
        turn.logprobs.push(step.logprobs[b]);
        turn.entropies.push(step.entropies[b]);
        options.onToken?.(b, token);
        let finished: GeneratedTurn['finish'] | undefined;
        if (stopIds.has(token)) finished = 'stop_token';
        else if (options.stopStrings?.length && this.endsWithStopString(turn.tokens, options.stopStrings))
          finished = 'stop_string';
        else if (turn.tokens.length >= limits.get(b)!) finished = 'length';
        if (finished) {
          turn.finish = finished;
          live.delete(b);
          // The last sampled token enters the cache with the row's next chunk.
          this.rows[b].unfed = [token];
        }
      }
      if (live.size === 0) break;
      step = await this.extend(
        this.rows.map((_, b) => (live.has(b) ? [turns.get(b)!.tokens.at(-1)!] : [])),
        mode,
        options,
        [],
        allowedNow(),
      );
    }
    return requests.map((r) => turns.get(r.sequence)!);
  }

  private endsWithStopString(tokens: readonly number[], stops: readonly string[]): boolean {
    const longest = Math.max(...stops.map((s) => s.length));
    // Decode only a tail long enough to contain any stop string (tokens are at least one character, mostly).
    const tail = this.model.tokenizer.decode(tokens.slice(-Math.max(8, longest + 4)));
    return stops.some((s) => tail.includes(s));
  }

  /**
   * The row starts over from position 0: every cache slot it had is masked (its keys stay in the
   * blocks, as a finished row's padding does, until the session closes), so its next chunk is
   * attended to as a fresh prompt would be.
   */
  resetSequence(sequence: number): void {
    if (sequence < 0 || sequence >= this.size)
      throw new Error(`sequence ${sequence} is outside this session (0..${this.size - 1})`);
    this.rows[sequence] = { position: 0, unfed: [] };
    this.baseMask[sequence].fill(0);
    this.recentMask[sequence].fill(0);
  }

  async close(): Promise<void> {
    const { numLayers } = this.model.config;
    const names: string[] = [];
    for (let l = 0; l < numLayers; l++)
      for (const block of ['base', 'recent'] as const)
        for (const kind of ['key', 'value'] as const) names.push(this.state(block, kind, l));
    // A prefill that failed half-way leaves its prompt states (deleting absent ones is harmless).
    for (let l = 0; l < numLayers; l++)
      for (const kind of ['key', 'value'] as const) names.push(this.promptState(kind, l));
    names.push(`${this.prefix}/prompt_empty`);
    if (this.biasSets) names.push(`${this.prefix}/logit_bias`);
    // The graphs stay loaded for the policy's next session (ModelPolicy.release frees them).
    await this.model.device.deleteState(names);
    await this.images?.release();
  }
}
