import type { Tensor } from '../../engine/graph';
import * as op from '../../engine/ops';
import { selfAttention, type AttentionConfig, type AttentionWeights } from './attention';
import { swiGlu, type MlpWeights } from './mlp';
import { rmsNorm } from './norm';
import type { RotaryTables } from './rotary';

export interface DecoderBlockWeights {
  inputNorm: Tensor;
  attention: AttentionWeights;
  postAttentionNorm: Tensor;
  mlp: MlpWeights;
}

/** One pre-norm decoder layer: x + attn(norm(x)), then h + mlp(norm(h)). */
export function decoderBlock(x: Tensor, w: DecoderBlockWeights, config: AttentionConfig, rotary: RotaryTables, mask: Tensor): Tensor {
  const g = x.graph;
  const attended = g.withScope('self_attn', () => selfAttention(g.withScope('input_layernorm', () => rmsNorm(x, w.inputNorm, config.rmsNormEps)), w.attention, config, rotary, mask));
  const h = op.add(x, attended);
  const mlpOut = g.withScope('mlp', () => swiGlu(g.withScope('post_attention_layernorm', () => rmsNorm(h, w.postAttentionNorm, config.rmsNormEps)), w.mlp));
  return op.add(h, mlpOut);
}
