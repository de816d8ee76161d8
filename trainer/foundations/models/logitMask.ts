import type { Graph, Tensor } from '../engine/graph';
import type { ComputeDtype } from './decoder';
import { MASKED_SCORE } from './layers/attention';
import type { ModelConfig } from './modelConfig';

/**
 * The logits the policy never writes, masked in sampling and in scoring alike, so that training
 * scores exactly the distribution that was sampled:
 * - ids the tokenizer has no token for (ModelConfig.idsWithoutToken: the padding rows of a
 *   vocabulary rounded up). Sampled, such an id could not be decoded, and would end the rollout.
 * - a vision-language model's image and video placeholders: a generated `<|image_pad|>` would
 *   stand for an image that does not exist (transformers fails on one), and image tokens are
 *   never trained on.
 * Undefined when nothing is masked: the graph is then the model's own distribution, bit for bit.
 */
export function logitMask(g: Graph, config: ModelConfig, dtype: ComputeDtype): Tensor | undefined {
  const masked = [...(config.idsWithoutToken ?? [])];
  if (config.vision) masked.push(config.vision.imageTokenId, config.vision.videoTokenId);
  if (masked.length === 0) return undefined;
  const mask = dtype === 'float64' ? new Float64Array(config.vocabSize) : new Float32Array(config.vocabSize);
  for (const id of masked) mask[id] = MASKED_SCORE;
  return g.constant(mask, dtype, [config.vocabSize], 'logit_mask');
}
