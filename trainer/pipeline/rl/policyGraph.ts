import type { Tensor } from '../../foundations/engine/graph';
import * as op from '../../foundations/engine/ops';
import type { LossGraph } from '../../foundations/engine/optimizerRuntime';
import type { ModelConfig } from '../../foundations/models/modelConfig';
import type { LoraConfig } from '../../foundations/models/lora';
import type { QuantizedBase } from '../../foundations/models/quantized/quantizedWeights';
import { buildScoringGraph } from '../../foundations/models/scoring';
import { policyLoss, valueLoss, type PolicyLossConfig, type ValueLossConfig } from './losses';

/**
 * The graph one RL update step trains: the model scores the trajectories' tokens (only the
 * policy's own tokens, `score_tokens`), then the clipped policy objective (and the critic's
 * value loss for PPO) turns them into one scalar loss. Every input is [B, T] aligned with the
 * tokens unless noted:
 *   old_logprobs, advantages, loss_mask (1 on policy tokens), ref_logprobs (KL as a loss),
 *   returns and old_values (PPO), token_total / sequence_total [] (the whole step's counts, so
 *   micro-batch gradients add up exactly). With a shared-trunk critic (`value`) the value loss is
 *   added with its coefficient and trains the same weights.
 */
export interface PolicyGraphOptions {
  lora?: LoraConfig | undefined;
  /** A quantized base (ModelRuntime.quantized). */
  quantized?: QuantizedBase | undefined;
  /** Names of the parameters to train (graph inputs fed from device state). */
  trainable: readonly string[];
  /** Names among `trainable` without weight decay (norms, biases, the value head's bias). */
  noDecay?: ReadonlySet<string> | undefined;
  policy: PolicyLossConfig;
  /** PPO: a value head trained with this loss and coefficient. */
  value?: (ValueLossConfig & { coef: number }) | undefined;
  /** Compute the policy's entropy in the graph (needed when entropyCoef > 0). */
  entropy: boolean;
  /** The batch shares a prefix given once (see buildScoringGraph). */
  sharedPrefix?: boolean | undefined;
  /** Constrained positions get their sampling masks (see buildScoringGraph). */
  constrained?: boolean | undefined;
  /** Recompute each layer's activations in the backward (gradient checkpointing; DecoderOptions.checkpointLayers). */
  checkpointLayers?: boolean | undefined;
}

export function buildPolicyLossGraph(config: ModelConfig, options: PolicyGraphOptions): LossGraph {
  const scoring = buildScoringGraph(
    config,
    {
      dtype: 'float32',
      lora: options.lora,
      quantized: options.quantized,
      entropy: options.entropy,
      valueHead: !!options.value,
      sharedPrefix: options.sharedPrefix,
      constrained: options.constrained,
      checkpointLayers: options.checkpointLayers,
    },
    'policy_update',
  );
  const g = scoring.graph;
  const perToken = (name: string) => g.input(name, 'float32', ['B', 'T']);
  const oldLogprobs = perToken('old_logprobs');
  const advantages = perToken('advantages');
  const mask = perToken('loss_mask');
  const tokenTotal = g.input('token_total', 'float32', []);
  const sequenceTotal = g.input('sequence_total', 'float32', []);
  const refLogprobs = options.policy.klCoef > 0 ? perToken('ref_logprobs') : undefined;
  const policy = policyLoss(
    {
      logprobs: scoring.logprobs,
      oldLogprobs,
      advantages,
      mask,
      refLogprobs,
      entropy: scoring.entropy,
      tokenTotal,
      sequenceTotal,
    },
    options.policy,
  );
  let loss = policy.loss;
  const metrics: Record<string, Tensor> = {
    policy_loss: policy.policyLoss,
    clip_fraction: policy.clipFraction,
    approx_kl: policy.approxKl,
  };
  if (policy.klLoss) metrics.kl_loss = policy.klLoss;
  if (policy.entropy) metrics.entropy = policy.entropy;
  if (options.value) {
    const vl = valueLoss(scoring.values!, perToken('old_values'), perToken('returns'), mask, options.value, {
      tokenTotal,
      sequenceTotal,
    });
    metrics.value_loss = vl;
    loss = op.add(loss, op.mul(vl, options.value.coef));
  }
  const params = options.trainable.map((name) => {
    const tensor = scoring.weights.used.get(name);
    if (!tensor) throw new Error(`the policy graph does not read ${name}; it cannot be trained`);
    return { tensor, decay: !(options.noDecay?.has(name) ?? false) };
  });
  return { graph: g, loss, params, metrics };
}
