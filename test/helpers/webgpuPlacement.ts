/**
 * Which nodes of a graph may run on the CPU in a WebGPU session, and why. onnxruntime assigns
 * every node the WebGPU provider has a kernel for to the GPU and the rest to the CPU, with a copy
 * across each boundary; a node on the CPU that touches activations costs a round trip per run.
 * The allow-list below is the documented exception list: anything on the CPU that no rule allows
 * fails the placement test (test/integration/engine/webgpuPlacement.test.ts), with its op and
 * shapes. Both rules only admit index data — never a tensor with a hidden, head, vocabulary or
 * cache axis.
 */
import { tensorTypeElements, type ProfiledNode, type TensorType } from '#trainer/foundations/engine/runtime/profile';

export const WEBGPU_PROVIDER = 'WebGpuExecutionProvider';

export interface PlacementLimits {
  /** The most elements a [B, T]-sized piece of token bookkeeping has in the graphs under test. */
  indexElements: number;
}

export interface PlacementRule {
  name: string;
  why: string;
  allows(node: ProfiledNode, limits: PlacementLimits): boolean;
}

const INDEX_DTYPES = new Set(['int64', 'int32', 'bool']);
const isIndex = (t: TensorType, limit: number) => INDEX_DTYPES.has(t.dtype) && tensorTypeElements(t) <= limit;

export const CPU_ALLOW_LIST: readonly PlacementRule[] = [
  {
    name: 'shape arithmetic',
    why:
      'Shape, and the Concat/Gather/Sub/Reshape/Unsqueeze that compute target shapes from it: int64 tensors of a few elements. ' +
      'onnxruntime puts shape computations on the CPU on purpose (their values size later kernels; reading them back from the GPU would stall).',
    allows: (node) => [...node.inputs, ...node.outputs].every((t) => t.dtype === 'int64' && tensorTypeElements(t) <= 8),
  },
  {
    name: 'token bookkeeping from the host',
    why:
      'ids, positions, masks and the scored-token list arrive from the host as int64 [B, T] (or [N]); casting, reshaping, ' +
      'gathering or unsqueezing them before the upload moves the same few bytes. The sampled token [B] goes back to the host anyway.',
    allows: (node, limits) =>
      node.inputs.every((t) => isIndex(t, limits.indexElements)) &&
      node.outputs.every(
        (t) =>
          (INDEX_DTYPES.has(t.dtype) || (node.op === 'Cast' && t.dtype === 'float')) &&
          tensorTypeElements(t) <= limits.indexElements,
      ),
  },
];

export interface PlacementReport {
  webgpu: number;
  cpu: number;
  /** CPU nodes by the rule that allows them. */
  allowed: Record<string, number>;
  /** CPU nodes no rule allows: each described with its op and shapes. */
  disallowed: string[];
  /** Copies between host and device larger than token bookkeeping (onnxruntime's Memcpy nodes). */
  largeCopies: string[];
}

export function describeNode(n: ProfiledNode): string {
  const shapes = (ts: TensorType[]) => ts.map((t) => `${t.dtype}[${t.shape.join(',')}]`).join(', ');
  return `${n.op} ${n.name} (${shapes(n.inputs)}) -> (${shapes(n.outputs)})`;
}

export function checkPlacement(nodes: readonly ProfiledNode[], limits: PlacementLimits): PlacementReport {
  const report: PlacementReport = { webgpu: 0, cpu: 0, allowed: {}, disallowed: [], largeCopies: [] };
  for (const node of nodes) {
    if (node.op.startsWith('Memcpy')) {
      if ([...node.inputs, ...node.outputs].some((t) => tensorTypeElements(t) > limits.indexElements))
        report.largeCopies.push(describeNode(node));
      continue;
    }
    if (node.provider === WEBGPU_PROVIDER) {
      report.webgpu++;
      continue;
    }
    report.cpu++;
    const rule = CPU_ALLOW_LIST.find((r) => r.allows(node, limits));
    if (rule) report.allowed[rule.name] = (report.allowed[rule.name] ?? 0) + 1;
    else report.disallowed.push(`${describeNode(node)} on ${node.provider}`);
  }
  return report;
}
