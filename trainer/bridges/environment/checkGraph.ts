import { onnx } from 'onnx-proto';

/**
 * The small graph every provider check runs: softmax(x·w + b) · 2 − 1, on fixed inputs.
 * It touches the ops the trainer leans on most (MatMul, broadcast Add, Softmax, Mul, Sub)
 * and is small enough to run in milliseconds on any device. Built with onnx-proto directly
 * so the check depends on nothing but onnxruntime-node itself.
 */
export const CHECK_ROWS = 4;
export const CHECK_INNER = 8;
export const CHECK_COLS = 6;

export interface CheckInputs {
  x: Float32Array;
  w: Float32Array;
  b: Float32Array;
}

export function checkInputs(): CheckInputs {
  // Deterministic, non-trivial values: distinct per element, mixed signs.
  const x = Float32Array.from({ length: CHECK_ROWS * CHECK_INNER }, (_, i) => Math.sin(i * 0.7) * 1.5);
  const w = Float32Array.from({ length: CHECK_INNER * CHECK_COLS }, (_, i) => Math.cos(i * 0.3) * 0.5);
  const b = Float32Array.from({ length: CHECK_COLS }, (_, i) => (i - 2.5) * 0.1);
  return { x, w, b };
}

/** The same computation in float64 JavaScript: the numbers every provider must reproduce. */
export function expectedCheckOutput({ x, w, b }: CheckInputs): Float64Array {
  const out = new Float64Array(CHECK_ROWS * CHECK_COLS);
  for (let r = 0; r < CHECK_ROWS; r++) {
    const logits = new Float64Array(CHECK_COLS);
    for (let c = 0; c < CHECK_COLS; c++) {
      let acc = b[c];
      for (let k = 0; k < CHECK_INNER; k++) acc += x[r * CHECK_INNER + k] * w[k * CHECK_COLS + c];
      logits[c] = acc;
    }
    const max = Math.max(...logits);
    let sum = 0;
    for (let c = 0; c < CHECK_COLS; c++) sum += Math.exp(logits[c] - max);
    for (let c = 0; c < CHECK_COLS; c++) out[r * CHECK_COLS + c] = (Math.exp(logits[c] - max) / sum) * 2 - 1;
  }
  return out;
}

function valueInfo(name: string, dims: number[]): onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: { elemType: onnx.TensorProto.DataType.FLOAT, shape: { dim: dims.map((d) => ({ dimValue: d })) } },
    },
  };
}

function scalar(name: string, value: number): onnx.ITensorProto {
  return { name, dataType: onnx.TensorProto.DataType.FLOAT, dims: [], floatData: [value] };
}

export function checkGraphBytes(): Uint8Array {
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: 'rollout-studio-environment-check',
    opsetImport: [{ domain: '', version: 18 }],
    graph: {
      name: 'environment_check',
      input: [
        valueInfo('x', [CHECK_ROWS, CHECK_INNER]),
        valueInfo('w', [CHECK_INNER, CHECK_COLS]),
        valueInfo('b', [CHECK_COLS]),
      ],
      output: [valueInfo('y', [CHECK_ROWS, CHECK_COLS])],
      initializer: [scalar('two', 2), scalar('one', 1)],
      node: [
        { opType: 'MatMul', input: ['x', 'w'], output: ['xw'], name: 'matmul' },
        { opType: 'Add', input: ['xw', 'b'], output: ['logits'], name: 'add_bias' },
        {
          opType: 'Softmax',
          input: ['logits'],
          output: ['p'],
          name: 'softmax',
          attribute: [{ name: 'axis', type: onnx.AttributeProto.AttributeType.INT, i: -1 }],
        },
        { opType: 'Mul', input: ['p', 'two'], output: ['p2'], name: 'scale' },
        { opType: 'Sub', input: ['p2', 'one'], output: ['y'], name: 'shift' },
      ],
    },
  });
  return onnx.ModelProto.encode(model).finish();
}
