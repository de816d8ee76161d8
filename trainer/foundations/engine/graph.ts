import { asHostArray, BYTES_PER_ELEMENT, type DType, type HostArray } from './dtype';
import { formatShape, type Dim } from './shape';

/** An attribute value of an ONNX node. */
export type AttributeValue =
  number | string | readonly number[] | { float: number } | { floats: readonly number[] } | { tensor: ConstantData };

export interface ConstantData {
  dtype: DType;
  shape: readonly number[];
  data: HostArray;
}

/** Where an initializer's bytes live when they are not embedded in the model. */
export interface ExternalData {
  /** Absolute path of the file holding the bytes (e.g. a .safetensors checkpoint). */
  file: string;
  offset: number;
  length: number;
}

/** A shape or dtype mistake caught while building, naming the op, the scope and the shapes. */
export class GraphBuildError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GraphBuildError';
  }
}

/** What an input twin's name adds to its input's (Graph.inputTwin). */
export const INPUT_TWIN_SUFFIX = '#twin';

export type TensorKind = 'input' | 'initializer' | 'node';

/** A value in a graph: a graph input, an initializer, or the output of a node. */
export class Tensor {
  constructor(
    readonly graph: Graph,
    readonly name: string,
    readonly dtype: DType,
    readonly shape: readonly Dim[],
    readonly kind: TensorKind,
    readonly producer?: Node,
    /** The value, when it is a constant known at build time (small constants only). */
    readonly value?: HostArray,
  ) {}

  get rank(): number {
    return this.shape.length;
  }

  toString(): string {
    return `${this.name}: ${this.dtype}${formatShape(this.shape)}`;
  }
}

export class Node {
  constructor(
    readonly index: number,
    readonly opType: string,
    readonly domain: string,
    readonly name: string,
    readonly scope: string,
    readonly inputs: ReadonlyArray<Tensor | undefined>,
    readonly outputs: readonly Tensor[],
    readonly attributes: Readonly<Record<string, AttributeValue>>,
  ) {}

  int(name: string, fallback: number): number {
    const v = this.attributes[name];
    return typeof v === 'number' ? v : fallback;
  }

  float(name: string, fallback: number): number {
    const v = this.attributes[name];
    return typeof v === 'object' && v !== null && 'float' in v ? v.float : typeof v === 'number' ? v : fallback;
  }

  string(name: string, fallback: string): string {
    const v = this.attributes[name];
    return typeof v === 'string' ? v : fallback;
  }

  ints(name: string): readonly number[] | undefined {
    const v = this.attributes[name];
    return Array.isArray(v) ? (v as readonly number[]) : undefined;
  }
}

export interface Initializer {
  tensor: Tensor;
  data?: ConstantData;
  external?: ExternalData;
}

/**
 * A computation graph under construction. Ops (trainer/foundations/engine/ops) add nodes; `grad` adds the
 * backward pass; `serializeGraph` turns it into an ONNX model. Names are deterministic, so the
 * same model code yields the same bytes and the same session-cache hash.
 */
export class Graph {
  readonly nodes: Node[] = [];
  readonly inputs: Tensor[] = [];
  readonly initializers: Initializer[] = [];
  readonly outputs: Tensor[] = [];
  /** Tensors whose gradient must not flow (stop-gradient points, frozen parameters). */
  readonly noGradient = new Set<Tensor>();
  /** Inputs fed as another input is (inputTwin): twin name → that input's name. */
  readonly twins = new Map<string, string>();
  /**
   * Ranges of `nodes` [start, end) whose activations the backward pass recomputes instead of
   * keeping (Graph.checkpoint), in the order they were built.
   */
  readonly checkpoints: Array<{ start: number; end: number }> = [];
  private readonly twinOf = new Map<Tensor, Tensor>();
  private inCheckpoint = false;
  private readonly names = new Set<string>();
  private readonly counters = new Map<string, number>();
  private readonly constantCache = new Map<string, Tensor>();
  private readonly scopes: string[] = [];

  constructor(readonly name = 'graph') {}

  /** The current scope path, e.g. `model/layers.3/attn`. */
  get scope(): string {
    return this.scopes.join('/');
  }

  /** Run `build` with node names prefixed by `name` (scopes nest), so a dump reads like the model. */
  withScope<T>(name: string, build: () => T): T {
    this.scopes.push(name);
    try {
      return build();
    } finally {
      this.scopes.pop();
    }
  }

  /**
   * Build a checkpointed segment (gradient checkpointing, PyTorch's `torch.utils.checkpoint`): a
   * backward pass (`grad`) keeps only the values the segment reads from before it and recomputes
   * the rest from them, just before it differentiates the segment. Rule: wrap one repeated block
   * (a decoder layer), so that the backward holds one block's activations at a time, at the price
   * of a second forward pass through it. Graphs without a backward ignore it.
   */
  checkpoint<T>(build: () => T): T {
    if (this.inCheckpoint) throw new GraphBuildError(`checkpoint: segments do not nest (scope "${this.scope}")`);
    const start = this.nodes.length;
    this.inCheckpoint = true;
    try {
      return build();
    } finally {
      this.inCheckpoint = false;
      if (this.nodes.length > start) this.checkpoints.push({ start, end: this.nodes.length });
    }
  }

  /** A unique name under the current scope. */
  freshName(base: string): string {
    const stem = this.scope ? `${this.scope}/${base}` : base;
    let n = this.counters.get(stem) ?? 0;
    let name = n === 0 ? stem : `${stem}_${n}`;
    while (this.names.has(name)) name = `${stem}_${++n}`;
    this.counters.set(stem, n + 1);
    this.names.add(name);
    return name;
  }

  private claim(name: string): string {
    if (this.names.has(name)) throw new GraphBuildError(`the name "${name}" is already used in graph "${this.name}"`);
    this.names.add(name);
    return name;
  }

  input(name: string, dtype: DType, shape: readonly Dim[]): Tensor {
    const tensor = new Tensor(this, this.claim(name), dtype, [...shape], 'input');
    this.inputs.push(tensor);
    return tensor;
  }

  /**
   * A second graph input that the caller feeds exactly as `input` (twins: twin name → input name).
   * Rule: a backward rule that needs a frozen weight's value in a form other than the forward's
   * reads it through a twin. A caller may bake the forward's input into the session as an
   * initializer (packed for its kernel, device `frozenInputs`), and onnxruntime would then fold the
   * backward's transformation of it into a second constant of its own — a float32 copy of a whole
   * quantized matrix per session. The twin stays an input, so nothing is folded.
   */
  inputTwin(input: Tensor): Tensor {
    if (input.kind !== 'input' || input.graph !== this)
      throw new GraphBuildError(`inputTwin: ${input.name} is not an input of graph "${this.name}"`);
    let twin = this.twinOf.get(input);
    if (!twin) {
      twin = this.input(`${input.name}${INPUT_TWIN_SUFFIX}`, input.dtype, input.shape);
      this.twinOf.set(input, twin);
      this.twins.set(twin.name, input.name);
    }
    return twin;
  }

  /** A constant embedded in the model. Small ones are shared, and their values kept for folding. */
  constant(data: ArrayLike<number> | HostArray, dtype: DType, shape: readonly number[], name?: string): Tensor {
    const values = asHostArray(dtype, data);
    const count = shape.reduce((a, b) => a * b, 1);
    if (values.length !== count)
      throw new GraphBuildError(`constant of shape ${formatShape(shape)} needs ${count} values, got ${values.length}`);
    const small = count <= 64;
    const key =
      small && !name
        ? `${dtype}|${shape.join(',')}|${Array.from(values as ArrayLike<number | bigint>).join(',')}`
        : undefined;
    if (key) {
      const hit = this.constantCache.get(key);
      if (hit) return hit;
    }
    const tensor = new Tensor(
      this,
      name ? this.claim(name) : this.freshName('const'),
      dtype,
      [...shape],
      'initializer',
      undefined,
      small ? values : undefined,
    );
    this.initializers.push({ tensor, data: { dtype, shape: [...shape], data: values } });
    if (key) this.constantCache.set(key, tensor);
    return tensor;
  }

  /** A weight whose bytes stay in a file (for example a safetensors checkpoint): nothing is copied at build time. */
  externalInitializer(name: string, dtype: DType, shape: readonly number[], external: ExternalData): Tensor {
    const expected = shape.reduce((a, b) => a * b, 1) * BYTES_PER_ELEMENT[dtype];
    if (expected !== external.length) {
      throw new GraphBuildError(
        `${name}: ${dtype}${formatShape(shape)} needs ${expected} bytes but ${external.file} holds ${external.length} at offset ${external.offset}`,
      );
    }
    const tensor = new Tensor(this, this.claim(name), dtype, [...shape], 'initializer');
    this.initializers.push({ tensor, external });
    return tensor;
  }

  scalar(value: number, dtype: DType): Tensor {
    return this.constant([value], dtype, []);
  }

  /** A 1-D int64 constant (axes, shapes, starts/ends). */
  int64s(values: readonly number[]): Tensor {
    return this.constant(values, 'int64', [values.length]);
  }

  /** Add a node; outputs get fresh names under the current scope unless `outputNames` says otherwise. */
  addNode(
    opType: string,
    inputs: ReadonlyArray<Tensor | undefined>,
    outputs: ReadonlyArray<{ dtype: DType; shape: readonly Dim[] }>,
    attributes: Record<string, AttributeValue> = {},
    options: { domain?: string; outputNames?: readonly string[] } = {},
  ): Tensor[] {
    for (const t of inputs) {
      if (t && t.graph !== this)
        throw new GraphBuildError(`${opType}: input ${t.name} belongs to graph "${t.graph.name}", not "${this.name}"`);
    }
    const nodeName = this.freshName(opType);
    const outTensors: Tensor[] = [];
    const node = new Node(
      this.nodes.length,
      opType,
      options.domain ?? '',
      nodeName,
      this.scope,
      inputs,
      outTensors,
      attributes,
    );
    outputs.forEach((spec, i) => {
      const name =
        options.outputNames?.[i] !== undefined
          ? this.claim(options.outputNames[i])
          : outputs.length === 1
            ? nodeName
            : `${nodeName}:${i}`;
      if (options.outputNames?.[i] === undefined && outputs.length > 1) this.names.add(name);
      outTensors.push(new Tensor(this, name, spec.dtype, [...spec.shape], 'node', node));
    });
    this.nodes.push(node);
    return outTensors;
  }

  /**
   * Mark `tensor` as a graph output under `name`. A tensor that is already an output, an input
   * or an initializer is passed through an Identity so every output has its own name.
   */
  output(tensor: Tensor, name: string): Tensor {
    if (tensor.graph !== this)
      throw new GraphBuildError(`output ${name}: tensor ${tensor.name} belongs to another graph`);
    const [out] = this.addNode(
      'Identity',
      [tensor],
      [{ dtype: tensor.dtype, shape: tensor.shape }],
      {},
      { outputNames: [name] },
    );
    this.outputs.push(out);
    return out;
  }

  /** `tensor`, with no gradient flowing back through it. */
  stopGradient(tensor: Tensor): Tensor {
    const [out] = this.addNode('Identity', [tensor], [{ dtype: tensor.dtype, shape: tensor.shape }]);
    this.noGradient.add(out);
    return out;
  }

  /** A readable listing: one line per node with scope, op, inputs and output shapes. */
  dump(): string {
    const lines = this.inputs.map((t) => `input  ${t}`);
    for (const node of this.nodes) {
      lines.push(
        `${node.name.padEnd(40)} ${node.opType.padEnd(18)} (${node.inputs.map((t) => t?.name ?? '∅').join(', ')}) -> ${node.outputs.map((t) => `${t.dtype}${formatShape(t.shape)}`).join(', ')}`,
      );
    }
    lines.push(...this.outputs.map((t) => `output ${t}`));
    return lines.join('\n');
  }
}
