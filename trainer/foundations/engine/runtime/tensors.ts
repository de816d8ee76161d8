import type * as ort from 'onnxruntime-node';
import { ORT_TYPE, type DType, type HostArray } from '../dtype';
import { onnxruntime } from './ortSession';

/** A host-side tensor value: dtype, shape and data, as feeds and results travel. */
export interface HostTensor {
  dtype: DType;
  shape: readonly number[];
  data: HostArray;
}

export function toOrtTensor(value: HostTensor): ort.Tensor {
  const runtime = onnxruntime();
  return new runtime.Tensor(ORT_TYPE[value.dtype] as 'float32', value.data as Float32Array, value.shape as number[]);
}

const FROM_ORT: Record<string, DType> = {
  float32: 'float32',
  float64: 'float64',
  float16: 'float16',
  bfloat16: 'bfloat16',
  int64: 'int64',
  int32: 'int32',
  int8: 'int8',
  uint8: 'uint8',
  bool: 'bool',
};

export function fromOrtTensor(tensor: ort.Tensor): HostTensor {
  const dtype = FROM_ORT[tensor.type];
  if (!dtype) throw new Error(`unsupported output type ${tensor.type}`);
  return { dtype, shape: [...tensor.dims], data: tensor.data as HostArray };
}

const ZEROED: Record<DType, (n: number) => HostArray> = {
  float32: (n) => new Float32Array(n),
  float64: (n) => new Float64Array(n),
  float16: (n) => new Uint16Array(n),
  bfloat16: (n) => new Uint16Array(n),
  int64: (n) => new BigInt64Array(n),
  int32: (n) => new Int32Array(n),
  int8: (n) => new Int8Array(n),
  uint8: (n) => new Uint8Array(n),
  bool: (n) => new Uint8Array(n),
};

/** A tensor of zeros in a fresh buffer (the allocator's zeroed pages: no memory until written). */
export function zeroHostTensor(dtype: DType, shape: readonly number[]): HostTensor {
  return { dtype, shape: [...shape], data: ZEROED[dtype](shape.reduce((a, b) => a * b, 1)) };
}
