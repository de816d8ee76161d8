import * as fs from 'node:fs';
import { z } from 'zod';

/**
 * onnxruntime's profile (a session created with profiling on — ROLLOUT_ORT_PROFILE=prefix —
 * writes `prefix_<date>.json` when released): where each node ran, what it read and wrote, and
 * how long it took. Performance work reads the time per op type; the placement test reads which
 * execution provider ran each node and which tensors crossed between host and device.
 */

const TypeShapes = z.array(z.record(z.string(), z.array(z.number())));
const ProfileEvent = z.looseObject({
  cat: z.string(),
  name: z.string(),
  dur: z.number().optional(),
  args: z
    .looseObject({
      op_name: z.string().optional(),
      provider: z.string().optional(),
      input_type_shape: TypeShapes.optional(),
      output_type_shape: TypeShapes.optional(),
    })
    .optional(),
});

export interface TensorType {
  dtype: string;
  shape: number[];
}

export interface ProfiledNode {
  name: string;
  op: string;
  provider: string;
  inputs: TensorType[];
  outputs: TensorType[];
  /** Kernel time summed over every run in the profile, µs. */
  micros: number;
  runs: number;
  /** A matrix product's FLOPs summed over its runs, each run's from that run's shapes (they change between decoding steps); 0 for other ops. */
  matrixFlops: number;
  /** With `byRows`: the rows of the node's output in these runs (every dimension but the last, multiplied). */
  rows?: number;
}

function types(list: z.infer<typeof TypeShapes> | undefined): TensorType[] {
  return (list ?? []).flatMap((entry) => Object.entries(entry).map(([dtype, shape]) => ({ dtype, shape })));
}

/**
 * The nodes of one profile file, each once, with kernel times (and matrix FLOPs) summed over its
 * runs after the first `skipRuns`; `inputs`/`outputs` are its first counted run's. `byRows`: a
 * node's runs are kept apart by the rows of their output, so a decoding graph's products of one
 * row per sequence come apart from its prefill's.
 */
export function readProfile(file: string, options: { skipRuns?: number; byRows?: boolean } = {}): ProfiledNode[] {
  const parsed = z.array(ProfileEvent).safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
  if (!parsed.success) throw new Error(`${file}: not an onnxruntime profile (${parsed.error.issues[0]?.message})`);
  const nodes = new Map<string, ProfiledNode>();
  const seen = new Map<string, number>();
  for (const event of parsed.data) {
    if (event.cat !== 'Node' || !event.name.endsWith('_kernel_time') || !event.args?.provider) continue;
    const name = event.name.slice(0, -'_kernel_time'.length);
    // A node's first runs (allocations, first page faults) can be left out: steady state only.
    const count = (seen.get(name) ?? 0) + 1;
    seen.set(name, count);
    if (count <= (options.skipRuns ?? 0)) continue;
    const op = event.args.op_name ?? '?';
    const inputs = types(event.args.input_type_shape);
    const outputs = types(event.args.output_type_shape);
    const rows = options.byRows ? outputRows(outputs) : undefined;
    const key = rows === undefined ? name : `${name}#${rows}`;
    let node = nodes.get(key);
    if (!node) {
      node = { name, op, provider: event.args.provider, inputs, outputs, micros: 0, runs: 0, matrixFlops: 0 };
      if (rows !== undefined) node.rows = rows;
      nodes.set(key, node);
    }
    node.micros += event.dur ?? 0;
    node.runs++;
    node.matrixFlops += matrixFlops({ op, inputs, outputs }) ?? 0;
  }
  return [...nodes.values()];
}

function outputRows(outputs: readonly TensorType[]): number {
  const shape = outputs[0]?.shape ?? [];
  return shape.slice(0, -1).reduce((a, b) => a * b, 1);
}

export function tensorTypeElements(t: TensorType): number {
  return t.shape.reduce((a, b) => a * b, 1);
}

/** Kernel time by op type (and provider), largest first: where a graph spends its time. */
export function timeByOp(
  nodes: readonly ProfiledNode[],
): Array<{ op: string; provider: string; micros: number; nodes: number }> {
  const totals = new Map<string, { op: string; provider: string; micros: number; nodes: number }>();
  for (const n of nodes) {
    const key = `${n.op}@${n.provider}`;
    const t = totals.get(key) ?? { op: n.op, provider: n.provider, micros: 0, nodes: 0 };
    t.micros += n.micros;
    t.nodes++;
    totals.set(key, t);
  }
  return [...totals.values()].sort((a, b) => b.micros - a.micros);
}

/** Matrix-product ops whose FLOPs `matrixFlops` counts (onnxruntime fuses MatMul + Transpose/scale into FusedMatMul). */
const MATRIX_OPS = new Set(['MatMul', 'FusedMatMul', 'Gemm']);

/**
 * Floating-point operations of one run of a matrix-product node (a multiply and an add per
 * multiply-accumulate), from the shapes the profile recorded: 2·|output|·K. The profile does not
 * record a transpose flag, so K is read off the first operand: its last dimension when its
 * second-to-last is the output's row count M, its second-to-last otherwise (a transposed A). When
 * both equal M, K = M either way. Undefined for any other op or a shape it cannot read.
 */
export function matrixFlops(node: {
  op: string;
  inputs: readonly TensorType[];
  outputs: readonly TensorType[];
}): number | undefined {
  if (!MATRIX_OPS.has(node.op)) return undefined;
  const a = node.inputs[0]?.shape;
  const out = node.outputs[0]?.shape;
  if (!a || !out || a.length < 1 || out.length < 1) return undefined;
  if (a.length === 1) return 2 * tensorTypeElements(node.outputs[0]) * a[0]; // a vector times a matrix
  const m = out.length >= 2 ? out[out.length - 2] : 1;
  const k = a[a.length - 2] === m ? a[a.length - 1] : a[a.length - 2];
  return 2 * tensorTypeElements(node.outputs[0]) * k;
}
