import { grad } from './autodiff';
import { Graph, GraphBuildError, type Tensor } from './graph';
import * as op from './ops';

/**
 * AdamW as graph nodes: the update happens inside the same onnxruntime run as the backward
 * pass, so parameters and moments never travel to JavaScript between steps.
 *
 * Naming convention (shared with the Device that keeps them resident): a trainable parameter
 * is a graph input `P`; its moments are inputs `P.m` and `P.v`; the updated values are outputs
 * `P.next`, `P.m.next`, `P.v.next`. Accumulated gradients are `P.grad` / `P.grad.next`.
 */
export interface AdamWConfig {
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** Clip the global gradient norm to this value; 0 or undefined: no clipping. */
  maxGradNorm?: number;
}

export const DEFAULT_ADAMW: AdamWConfig = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01, maxGradNorm: 1 };

export interface TrainableParameter {
  tensor: Tensor;
  /** Decoupled weight decay applies (false for norms and biases, by convention). */
  decay: boolean;
}

export const momentName = (param: string, which: 'm' | 'v') => `${param}.${which}`;
export const nextName = (name: string) => `${name}.next`;
export const gradName = (param: string) => `${param}.grad`;

/** sqrt(Σ ‖g‖²) over every gradient. */
export function globalNorm(grads: readonly Tensor[]): Tensor {
  const squares = grads.map((gr) => op.reduceSumSquare(gr, undefined, false));
  return op.sqrt(squares.reduce((a, b) => op.add(a, b)));
}

/** True when x (a scalar) is finite: x − x is 0 for finite x and NaN for NaN and ±Inf. */
export function isFinite(x: Tensor): Tensor {
  return op.equal(op.sub(x, x), 0);
}

interface UpdateInputs {
  step: Tensor;
  lr: Tensor;
}

/**
 * Add the AdamW update for `params` given their gradients and their global `norm`. Gradients
 * are clipped by global norm first (PyTorch's clip_grad_norm_: coefficient min(1, max/(norm + 1e-6))). When
 * `guard` is given (a bool scalar), a false guard leaves every parameter and moment unchanged
 * — this is how a non-finite loss or gradient skips the update in-graph. An update whose new
 * parameters are not finite, or so large that the sum of their squares overflows (a learning
 * rate that diverges: 1e30 makes every weight about 1e30, and the next forward pass NaN), is
 * skipped the same way, before it can poison the next rollout. Returns the guard the update
 * obeyed: true when it was applied.
 */
export function addAdamWUpdate(
  g: Graph,
  params: readonly TrainableParameter[],
  grads: readonly Tensor[],
  config: AdamWConfig,
  inputs: UpdateInputs,
  norm: Tensor,
  guard?: Tensor,
): Tensor {
  return g.withScope('adamw', () => {
    const dtype = params[0].tensor.dtype;
    let scale: Tensor | undefined;
    if (config.maxGradNorm && config.maxGradNorm > 0) {
      scale = op.minimum(op.div(g.scalar(config.maxGradNorm, dtype), op.add(norm, 1e-6)), 1);
    }
    const bc1 = op.sub(1, op.pow(g.scalar(config.beta1, dtype), inputs.step));
    const bc2 = op.sub(1, op.pow(g.scalar(config.beta2, dtype), inputs.step));
    const stepSize = op.div(inputs.lr, bc1);
    const sqrtBc2 = op.sqrt(bc2);
    const updated = params.map(({ tensor: p, decay }, i) =>
      g.withScope(p.name, () => {
        const m = g.input(momentName(p.name, 'm'), dtype, p.shape);
        const v = g.input(momentName(p.name, 'v'), dtype, p.shape);
        const gr = scale ? op.mul(grads[i], scale) : grads[i];
        const m1 = op.add(op.mul(m, config.beta1), op.mul(gr, 1 - config.beta1));
        const v1 = op.add(op.mul(v, config.beta2), op.mul(op.mul(gr, gr), 1 - config.beta2));
        const denom = op.add(op.div(op.sqrt(v1), sqrtBc2), config.eps);
        const decayed =
          decay && config.weightDecay > 0 ? op.mul(p, op.sub(1, op.mul(inputs.lr, config.weightDecay))) : p;
        const p1 = op.sub(decayed, op.mul(op.div(m1, denom), stepSize));
        return { p, m, v, p1, m1, v1 };
      }),
    );
    const weightsFinite = isFinite(
      updated.map(({ p1 }) => op.reduceSumSquare(p1, undefined, false)).reduce((a, b) => op.add(a, b)),
    );
    const applied = guard ? op.and(guard, weightsFinite) : weightsFinite;
    for (const { p, m, v, p1, m1, v1 } of updated) {
      g.withScope(p.name, () => {
        g.output(op.where(applied, p1, p), nextName(p.name));
        g.output(op.where(applied, m1, m), nextName(m.name));
        g.output(op.where(applied, v1, v), nextName(v.name));
      });
    }
    return applied;
  });
}

function updateInputs(g: Graph, dtype: Tensor['dtype']): UpdateInputs {
  return { step: g.input('step', dtype, []), lr: g.input('lr', dtype, []) };
}

/**
 * Turn a graph holding a scalar `loss` into one training step: backward pass, non-finite
 * guard, global-norm clipping and AdamW. Adds inputs `step` (1-based) and `lr`, moment inputs,
 * and outputs `loss`, `grad_norm`, `update_applied` (1 or 0) and the `.next` tensors.
 */
export function addTrainStep(
  g: Graph,
  loss: Tensor,
  params: readonly TrainableParameter[],
  config: AdamWConfig = DEFAULT_ADAMW,
): void {
  if (params.length === 0) throw new GraphBuildError('addTrainStep: no trainable parameters');
  const grads = grad(
    loss,
    params.map((p) => p.tensor),
  );
  const inputs = updateInputs(g, loss.dtype);
  const norm = g.withScope('adamw', () => globalNorm(grads));
  const applied = addAdamWUpdate(g, params, grads, config, inputs, norm, op.and(isFinite(loss), isFinite(norm)));
  g.output(loss, 'loss');
  g.output(norm, 'grad_norm');
  g.output(op.cast(applied, loss.dtype), 'update_applied');
}

/**
 * For gradient accumulation over micro-batches: add the backward pass and, per parameter, an
 * accumulator input `P.grad` and output `P.grad.next = P.grad + dloss/dP`. The accumulators
 * are the one extra copy of the parameters that accumulation needs.
 */
export function addGradientAccumulation(g: Graph, loss: Tensor, params: readonly TrainableParameter[]): void {
  const grads = grad(
    loss,
    params.map((p) => p.tensor),
  );
  params.forEach(({ tensor: p }, i) => {
    const acc = g.input(gradName(p.name), p.dtype, p.shape);
    g.output(op.add(acc, grads[i]), nextName(acc.name));
  });
  g.output(loss, 'loss');
}

/**
 * The apply graph for accumulated gradients: inputs the parameters, their moments and
 * accumulators, `step`, `lr` and `grad_scale` (1/micro-batches); outputs the updated tensors,
 * zeroed accumulators (unless `zeroAccumulators` is false: the caller zeroes them),
 * `grad_norm` and `update_applied`.
 */
export function buildApplyGraph(
  params: ReadonlyArray<{ name: string; shape: readonly number[]; decay: boolean }>,
  config: AdamWConfig,
  dtype: 'float32' | 'float64' = 'float32',
  zeroAccumulators = true,
): Graph {
  const g = new Graph('apply_accumulated_gradients');
  const inputs = updateInputs(g, dtype);
  const gradScale = g.input('grad_scale', dtype, []);
  const trainables = params.map((p) => ({ tensor: g.input(p.name, dtype, p.shape), decay: p.decay }));
  const accumulators = params.map((p) => g.input(gradName(p.name), dtype, p.shape));
  const grads = accumulators.map((acc) => op.mul(acc, gradScale));
  const norm = g.withScope('adamw', () => globalNorm(grads));
  const applied = addAdamWUpdate(g, trainables, grads, config, inputs, norm, isFinite(norm));
  if (zeroAccumulators) accumulators.forEach((acc) => g.output(op.fullLike(acc, 0), nextName(acc.name)));
  g.output(norm, 'grad_norm');
  g.output(op.cast(applied, dtype), 'update_applied');
  return g;
}
