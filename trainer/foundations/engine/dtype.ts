import { onnx } from 'onnx-proto';

/**
 * Element types the engine builds graphs with. float32 is the compute type; float64 exists so
 * gradients can be checked against finite differences to the last digit; float16/bfloat16
 * appear as stored weights (cast on load) and leave room for half-precision compute later.
 */
export type DType = 'float32' | 'float64' | 'float16' | 'bfloat16' | 'int64' | 'int32' | 'int8' | 'uint8' | 'bool';

export const ONNX_DTYPE: Record<DType, number> = {
  float32: onnx.TensorProto.DataType.FLOAT,
  float64: onnx.TensorProto.DataType.DOUBLE,
  float16: onnx.TensorProto.DataType.FLOAT16,
  bfloat16: onnx.TensorProto.DataType.BFLOAT16,
  int64: onnx.TensorProto.DataType.INT64,
  int32: onnx.TensorProto.DataType.INT32,
  int8: onnx.TensorProto.DataType.INT8,
  uint8: onnx.TensorProto.DataType.UINT8,
  bool: onnx.TensorProto.DataType.BOOL,
};

export const BYTES_PER_ELEMENT: Record<DType, number> = {
  float32: 4,
  float64: 8,
  float16: 2,
  bfloat16: 2,
  int64: 8,
  int32: 4,
  int8: 1,
  uint8: 1,
  bool: 1,
};

export function isFloat(dtype: DType): boolean {
  return dtype === 'float32' || dtype === 'float64' || dtype === 'float16' || dtype === 'bfloat16';
}

/** Typed array a host-side value of this dtype lives in (16-bit floats travel as raw Uint16). */
export type HostArray = Float32Array | Float64Array | BigInt64Array | Int32Array | Int8Array | Uint8Array | Uint16Array;

export function hostArray(dtype: DType, data: ArrayLike<number> | ArrayLike<bigint> | ArrayLike<boolean>): HostArray {
  switch (dtype) {
    case 'float32':
      return Float32Array.from(data as ArrayLike<number>);
    case 'float64':
      return Float64Array.from(data as ArrayLike<number>);
    case 'int64':
      return BigInt64Array.from(Array.from(data as ArrayLike<number | bigint>, (v) => BigInt(v)));
    case 'int32':
      return Int32Array.from(data as ArrayLike<number>);
    case 'int8':
      return Int8Array.from(data as ArrayLike<number>);
    case 'uint8':
      return Uint8Array.from(data as ArrayLike<number>);
    case 'bool':
      return Uint8Array.from(Array.from(data as ArrayLike<number | boolean>, (v) => (v ? 1 : 0)));
    case 'float16':
    case 'bfloat16':
      throw new Error(`constants of ${dtype} are given as raw Uint16 bits; build them in float32 and Cast`);
  }
}

/** onnxruntime-node's name for a dtype (its Tensor type strings). */
export const ORT_TYPE: Record<DType, string> = {
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

/** `data` itself when it already is the typed array `dtype` lives in, else a converted copy. */
export function asHostArray(dtype: DType, data: ArrayLike<number> | HostArray): HostArray {
  const expected: Partial<Record<DType, abstract new (...args: never[]) => HostArray>> = {
    float32: Float32Array,
    float64: Float64Array,
    int64: BigInt64Array,
    int32: Int32Array,
    int8: Int8Array,
    uint8: Uint8Array,
    bool: Uint8Array,
    float16: Uint16Array,
    bfloat16: Uint16Array,
  };
  const kind = expected[dtype];
  if (kind && data instanceof kind) return data as HostArray;
  return hostArray(dtype, data as ArrayLike<number>);
}
