import type { Tensor } from '../../engine/graph';
import * as op from '../../engine/ops';
import { linear } from './linear';

export interface MlpWeights {
  gate: Tensor;
  up: Tensor;
  down: Tensor;
}

/** SwiGLU: down(silu(gate(x)) ⊙ up(x)), with silu(z) = z·sigmoid(z). */
export function swiGlu(x: Tensor, w: MlpWeights): Tensor {
  const g = x.graph;
  const gate = g.withScope('gate_proj', () => linear(x, w.gate));
  const up = g.withScope('up_proj', () => linear(x, w.up));
  const hidden = op.mul(op.mul(gate, op.sigmoid(gate)), up);
  return g.withScope('down_proj', () => linear(hidden, w.down));
}
