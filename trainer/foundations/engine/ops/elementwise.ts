import { ONNX_DTYPE, type DType } from '../dtype';
import type { Tensor } from '../graph';
import { broadcast, fail, lift, requireFloat, requireSameDtype, type Operand } from './common';

function binary(opType: string, a: Operand, b: Operand, resultDtype?: DType): Tensor {
  const [ta, tb] = lift(opType, a, b);
  const dtype = requireSameDtype(opType, ta, tb);
  const shape = broadcast(opType, ta, tb);
  return ta.graph.addNode(opType, [ta, tb], [{ dtype: resultDtype ?? dtype, shape }])[0];
}

function unary(opType: string, x: Tensor, float = true, attributes: Record<string, number> = {}): Tensor {
  if (float) requireFloat(opType, x);
  return x.graph.addNode(opType, [x], [{ dtype: x.dtype, shape: x.shape }], attributes)[0];
}

export const add = (a: Operand, b: Operand) => binary('Add', a, b);
export const sub = (a: Operand, b: Operand) => binary('Sub', a, b);
export const mul = (a: Operand, b: Operand) => binary('Mul', a, b);
export const div = (a: Operand, b: Operand) => binary('Div', a, b);
export const pow = (a: Operand, b: Operand) => binary('Pow', a, b);
/** Elementwise minimum / maximum of two tensors (ONNX Min/Max with two inputs). */
export const minimum = (a: Operand, b: Operand) => binary('Min', a, b);
export const maximum = (a: Operand, b: Operand) => binary('Max', a, b);

export const equal = (a: Operand, b: Operand) => binary('Equal', a, b, 'bool');
export const less = (a: Operand, b: Operand) => binary('Less', a, b, 'bool');
export const lessOrEqual = (a: Operand, b: Operand) => binary('LessOrEqual', a, b, 'bool');
export const greater = (a: Operand, b: Operand) => binary('Greater', a, b, 'bool');
export const greaterOrEqual = (a: Operand, b: Operand) => binary('GreaterOrEqual', a, b, 'bool');

export function and(a: Tensor, b: Tensor): Tensor {
  if (a.dtype !== 'bool' || b.dtype !== 'bool') fail('And', a.graph, 'expects bool operands', a, b);
  return binary('And', a, b);
}
export function or(a: Tensor, b: Tensor): Tensor {
  if (a.dtype !== 'bool' || b.dtype !== 'bool') fail('Or', a.graph, 'expects bool operands', a, b);
  return binary('Or', a, b);
}
export function not(x: Tensor): Tensor {
  if (x.dtype !== 'bool') fail('Not', x.graph, 'expects a bool operand', x);
  return unary('Not', x, false);
}

export const neg = (x: Tensor) => unary('Neg', x, false);
export const exp = (x: Tensor) => unary('Exp', x);
export const log = (x: Tensor) => unary('Log', x);
export const sqrt = (x: Tensor) => unary('Sqrt', x);
export const abs = (x: Tensor) => unary('Abs', x, false);
export const sigmoid = (x: Tensor) => unary('Sigmoid', x);
export const tanh = (x: Tensor) => unary('Tanh', x);
export const sin = (x: Tensor) => unary('Sin', x);
export const cos = (x: Tensor) => unary('Cos', x);
export const reciprocal = (x: Tensor) => unary('Reciprocal', x);

/**
 * The error function. onnxruntime's Erf kernel is float32 only, so float64 graphs (gradient
 * checks) get a composite instead: Numerical Recipes' `erfcc` Chebyshev fit, relative error
 * below 1.2e-7 everywhere — differentiated through its own ops, so its gradient is exact for
 * the function it computes.
 */
export function erf(x: Tensor): Tensor {
  if (x.dtype !== 'float64') return unary('Erf', x);
  const z = abs(x);
  const t = reciprocal(add(mul(z, 0.5), 1));
  const coefficients = [
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587, -0.82215223,
    0.17087277,
  ];
  let poly: Tensor | number = coefficients[coefficients.length - 1];
  for (let i = coefficients.length - 2; i >= 0; i--) poly = add(mul(t, poly), coefficients[i]);
  const erfcOfAbs = mul(t, exp(sub(poly as Tensor, mul(z, z))));
  return mul(sign(x), sub(1, erfcOfAbs));
}
export const identity = (x: Tensor) => x.graph.addNode('Identity', [x], [{ dtype: x.dtype, shape: x.shape }])[0];

/** `cond ? a : b`, broadcasting all three. */
export function where(cond: Tensor, a: Operand, b: Operand): Tensor {
  const [ta, tb] = lift('Where', a, b);
  if (cond.dtype !== 'bool') fail('Where', cond.graph, `the condition must be bool, got ${cond.dtype}`, cond);
  const dtype = requireSameDtype('Where', ta, tb);
  const shape = broadcast('Where', cond, ta, tb);
  return cond.graph.addNode('Where', [cond, ta, tb], [{ dtype, shape }])[0];
}

export function cast(x: Tensor, to: DType): Tensor {
  if (x.dtype === to) return x;
  return x.graph.addNode('Cast', [x], [{ dtype: to, shape: x.shape }], { to: ONNX_DTYPE[to] })[0];
}

/** Clamp to [min, max]; either bound may be omitted. */
export function clip(x: Tensor, min?: number, max?: number): Tensor {
  requireFloat('Clip', x);
  const g = x.graph;
  const lo = min === undefined ? undefined : g.scalar(min, x.dtype);
  const hi = max === undefined ? undefined : g.scalar(max, x.dtype);
  return g.addNode('Clip', [x, lo, hi], [{ dtype: x.dtype, shape: x.shape }])[0];
}

/** -1, 0 or 1 by sign (no gradient). */
export const sign = (x: Tensor) => unary('Sign', x, false);

/** The number of elements of `x`, as an int64 scalar. */
export function size(x: Tensor): Tensor {
  return x.graph.addNode('Size', [x], [{ dtype: 'int64', shape: [] }])[0];
}
