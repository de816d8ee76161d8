import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { onnx } from 'onnx-proto';
import { ONNX_DTYPE, type HostArray } from './dtype';
import type { AttributeValue, ConstantData, Graph, Initializer, Node, Tensor } from './graph';

export const DEFAULT_OPSET = 18;
const IR_VERSION = 8;
/** Embedded initializers above this total go to an external data file (protobuf caps a message at 2 GiB). */
const EMBED_LIMIT_BYTES = 512 * 2 ** 20;

/** A serialised model: in memory, or on disk when it has external data. */
export type SerializedModel =
  { kind: 'bytes'; bytes: Uint8Array; hash: string } | { kind: 'file'; path: string; dir: string; hash: string };

function bytesOf(data: HostArray): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

function attribute(name: string, value: AttributeValue): onnx.IAttributeProto {
  const A = onnx.AttributeProto.AttributeType;
  if (typeof value === 'number') {
    if (!Number.isInteger(value))
      throw new Error(`attribute ${name}: ${value} is not an integer; pass { float: ${value} } for a float attribute`);
    return { name, type: A.INT, i: value };
  }
  if (typeof value === 'string') return { name, type: A.STRING, s: new TextEncoder().encode(value) };
  if (Array.isArray(value)) return { name, type: A.INTS, ints: value as number[] };
  if ('float' in value) return { name, type: A.FLOAT, f: value.float };
  if ('floats' in value) return { name, type: A.FLOATS, floats: [...value.floats] };
  if ('tensor' in value) return { name, type: A.TENSOR, t: tensorProto(name, value.tensor) };
  throw new Error(`attribute ${name}: unsupported value ${JSON.stringify(value)}`);
}

function tensorProto(name: string, constant: ConstantData): onnx.ITensorProto {
  return { name, dataType: ONNX_DTYPE[constant.dtype], dims: [...constant.shape], rawData: bytesOf(constant.data) };
}

function valueInfo(t: Tensor): onnx.IValueInfoProto {
  return {
    name: t.name,
    type: {
      tensorType: {
        elemType: ONNX_DTYPE[t.dtype],
        shape: { dim: t.shape.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function externalProto(init: Initializer, location: string, offset: number, length: number): onnx.ITensorProto {
  return {
    name: init.tensor.name,
    dataType: ONNX_DTYPE[init.tensor.dtype],
    dims: init.tensor.shape as number[],
    dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
    externalData: [
      { key: 'location', value: location },
      { key: 'offset', value: String(offset) },
      { key: 'length', value: String(length) },
    ],
  };
}

/**
 * Serialise a graph to an ONNX model. Graphs whose weights live in files (external
 * initializers) or are too large to embed are written into a private folder, with the model
 * file next to its data (files referenced elsewhere are linked in, not copied), because
 * onnxruntime resolves external data relative to the model file.
 */
export function serializeGraph(graph: Graph, options: { opset?: number; workDir?: string } = {}): SerializedModel {
  const nodes = liveNodes(graph);
  const read = new Set(nodes.flatMap((n) => n.inputs));
  const used = graph.initializers.filter((i) => read.has(i.tensor));
  const embeddedBytes = used.reduce((n, i) => n + (i.data ? i.data.data.byteLength : 0), 0);
  const spill = embeddedBytes > EMBED_LIMIT_BYTES;
  const hasExternal = spill || used.some((i) => i.external);
  const dir = hasExternal ? fs.mkdtempSync(path.join(options.workDir ?? os.tmpdir(), 'rollout-graph-')) : undefined;
  const hash = createHash('sha256');
  const initializers: onnx.ITensorProto[] = [];
  const linked = new Map<string, string>();
  let spillFd: number | undefined;
  let spillOffset = 0;
  for (const init of used) {
    if (init.external) {
      const source = path.resolve(init.external.file);
      let link = linked.get(source);
      if (!link) {
        link = `external-${linked.size}.bin`;
        fs.symlinkSync(source, path.join(dir!, link));
        linked.set(source, link);
        const stat = fs.statSync(source);
        hash.update(`${source}|${stat.size}|${stat.mtimeMs}`);
      }
      initializers.push(externalProto(init, link, init.external.offset, init.external.length));
    } else if (spill && init.data!.data.byteLength > 4096) {
      spillFd ??= fs.openSync(path.join(dir!, 'weights.bin'), 'w');
      const bytes = bytesOf(init.data!.data);
      // Align each tensor to 64 bytes; onnxruntime may map the file.
      const aligned = Math.ceil(spillOffset / 64) * 64;
      for (let off = 0; off < bytes.length; off += 1 << 30)
        fs.writeSync(spillFd, bytes, off, Math.min(1 << 30, bytes.length - off), aligned + off);
      hash.update(bytes);
      initializers.push(externalProto(init, 'weights.bin', aligned, bytes.length));
      spillOffset = aligned + bytes.length;
    } else {
      initializers.push(tensorProto(init.tensor.name, init.data!));
    }
  }
  if (spillFd !== undefined) fs.closeSync(spillFd);
  const domains = new Set(nodes.map((n) => n.domain).filter((d) => d !== ''));
  const model = onnx.ModelProto.create({
    irVersion: IR_VERSION,
    producerName: 'rollout-studio',
    opsetImport: [
      { domain: '', version: options.opset ?? DEFAULT_OPSET },
      ...[...domains].map((domain) => ({ domain, version: 1 })),
    ],
    graph: {
      name: graph.name,
      input: graph.inputs.map(valueInfo),
      output: graph.outputs.map(valueInfo),
      initializer: initializers,
      node: nodes.map((n) => ({
        opType: n.opType,
        domain: n.domain,
        name: n.name,
        input: n.inputs.map((t) => t?.name ?? ''),
        output: n.outputs.map((t) => t.name),
        attribute: Object.entries(n.attributes).map(([k, v]) => attribute(k, v)),
      })),
    },
  });
  const bytes = onnx.ModelProto.encode(model).finish();
  hash.update(bytes);
  const digest = hash.digest('hex');
  if (!dir) return { kind: 'bytes', bytes, hash: digest };
  const file = path.join(dir, 'model.onnx');
  fs.writeFileSync(file, bytes);
  return { kind: 'file', path: file, dir, hash: digest };
}

/**
 * The nodes some graph output depends on, in build order. The others compute nothing anyone
 * reads — a recomputed node whose gradient rule needed no values (recompute.ts), say — and
 * onnxruntime would run them all the same.
 */
function liveNodes(graph: Graph): Node[] {
  const live = new Set<Node>();
  const pending = [...graph.outputs];
  while (pending.length) {
    const producer = pending.pop()!.producer;
    if (!producer || live.has(producer)) continue;
    live.add(producer);
    for (const t of producer.inputs) if (t) pending.push(t);
  }
  return graph.nodes.filter((n) => live.has(n));
}

/** Remove the folder of a model serialised to disk. */
export function disposeSerialized(model: SerializedModel): void {
  if (model.kind === 'file') fs.rmSync(model.dir, { recursive: true, force: true });
}
