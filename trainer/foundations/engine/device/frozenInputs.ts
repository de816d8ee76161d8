import type * as ort from 'onnxruntime-node';
import { onnx } from 'onnx-proto';
import { ONNX_DTYPE, type DType } from '../dtype';

/** One graph input that becomes an initializer: the state tensor whose memory it reads. */
export interface FrozenInput {
  input: string;
  state: string;
  tensor: ort.Tensor;
}

/** onnxruntime's in-memory external data: the file name an initializer names, and its bytes. */
export interface ExternalDataBuffer {
  path: string;
  data: Uint8Array;
}

/**
 * Rewrites a serialised model so that the named inputs are initializers whose data is the given
 * state tensors' memory, passed to onnxruntime as in-memory external data (no copy on our side).
 *
 * Why: onnxruntime's CPU MatMul and Gemm pack a constant weight once, when the session is created;
 * a weight fed as an input is packed again at every run. For a decoding step, which multiplies
 * one to a few rows by every weight, that packing is most of the work (test/bench/README.md,
 * weightFeeds.ts). Each input's declared type must match its tensor's dtype and shape.
 */
export function freezeInputs(
  modelBytes: Uint8Array,
  frozen: readonly FrozenInput[],
): { bytes: Uint8Array; externalData: ExternalDataBuffer[] } {
  const model = onnx.ModelProto.decode(modelBytes);
  const graph = model.graph!;
  const inputs = new Map((graph.input ?? []).map((i) => [i.name!, i]));
  const externalData: ExternalDataBuffer[] = [];
  const initializers: onnx.ITensorProto[] = [];
  frozen.forEach(({ input, state, tensor }, index) => {
    const declared = inputs.get(input);
    if (!declared) throw new Error(`frozen input ${input}: the graph ${graph.name} has no input of that name`);
    const dtype = tensor.type as DType;
    const type = declared.type?.tensorType;
    const dims = type?.shape?.dim ?? [];
    const fits =
      type?.elemType === ONNX_DTYPE[dtype] &&
      dims.length === tensor.dims.length &&
      dims.every((d, i) =>
        d.dimValue === undefined || d.dimValue === null ? true : Number(d.dimValue) === tensor.dims[i],
      );
    if (!fits)
      throw new Error(
        `frozen input ${input}: the graph declares ${describe(type)}, but state "${state}" is ${dtype}[${tensor.dims.join(', ')}]`,
      );
    if (tensor.location !== 'cpu') throw new Error(`frozen input ${input}: state "${state}" is not in host memory`);
    const data = tensor.data as unknown as ArrayBufferView;
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const path = `frozen-${index}.bin`;
    externalData.push({ path, data: bytes });
    initializers.push({
      name: input,
      dataType: ONNX_DTYPE[dtype],
      dims: [...tensor.dims],
      dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
      externalData: [
        { key: 'location', value: path },
        { key: 'offset', value: '0' },
        { key: 'length', value: String(bytes.byteLength) },
      ],
    });
    inputs.delete(input);
  });
  graph.input = [...inputs.values()];
  graph.initializer = [...(graph.initializer ?? []), ...initializers];
  return { bytes: onnx.ModelProto.encode(model).finish(), externalData };
}

function describe(type: onnx.TypeProto.ITensor | null | undefined): string {
  if (!type) return 'no tensor type';
  const dtype = Object.entries(ONNX_DTYPE).find(([, v]) => v === type.elemType)?.[0] ?? `type ${type.elemType}`;
  const dims = (type.shape?.dim ?? []).map((d) => d.dimParam || String(d.dimValue));
  return `${dtype}[${dims.join(', ')}]`;
}
