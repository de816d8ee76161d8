import { z } from 'zod';
import type { ModelConfig } from './modelConfig';

/**
 * LoRA adapters as PEFT defines them: for a targeted projection y = x·Wᵀ, the adapted layer
 * computes y = x·Wᵀ + (alpha / rank)·x·Aᵀ·Bᵀ (alpha / √rank with rsLoRA), with A [rank, in] initialised like PEFT
 * (Kaiming-uniform, a = √5) and B [out, rank] zero, so a fresh adapter leaves the model unchanged.
 */
export const LORA_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type LoraTarget = (typeof LORA_TARGETS)[number];

export const LoraConfig = z.object({
  rank: z.number().int().positive(),
  alpha: z.number().positive(),
  dropout: z
    .number()
    .min(0)
    .max(0, 'LoRA dropout is not supported yet (it would make resumed runs diverge); use 0')
    .default(0),
  targets: z.array(z.enum(LORA_TARGETS)).min(1),
  /** Rank-stabilised LoRA (PEFT's `use_rslora`): the scale is alpha/√rank. */
  rslora: z.boolean().optional(),
});
export type LoraConfig = z.infer<typeof LoraConfig>;

export interface LoraModule {
  /** The base projection, e.g. `model.layers.3.self_attn.q_proj`. */
  module: string;
  target: LoraTarget;
  inFeatures: number;
  outFeatures: number;
}

/** PEFT's tensor names for a module's adapter, as stored in adapter_model.safetensors. */
export function loraTensorNames(module: string): { a: string; b: string } {
  return { a: `base_model.model.${module}.lora_A.weight`, b: `base_model.model.${module}.lora_B.weight` };
}

/** The projections the adapter touches, with their sizes, layer by layer. */
export function loraModules(config: ModelConfig, lora: LoraConfig): LoraModule[] {
  const q = config.numHeads * config.headDim;
  const kv = config.numKvHeads * config.headDim;
  const h = config.hiddenSize;
  const ffn = config.intermediateSize;
  const sizes: Record<LoraTarget, [string, number, number]> = {
    q_proj: ['self_attn', h, q],
    k_proj: ['self_attn', h, kv],
    v_proj: ['self_attn', h, kv],
    o_proj: ['self_attn', q, h],
    gate_proj: ['mlp', h, ffn],
    up_proj: ['mlp', h, ffn],
    down_proj: ['mlp', ffn, h],
  };
  const modules: LoraModule[] = [];
  for (let layer = 0; layer < config.numLayers; layer++) {
    for (const target of LORA_TARGETS) {
      if (!lora.targets.includes(target)) continue;
      const [block, inFeatures, outFeatures] = sizes[target];
      modules.push({ module: `model.layers.${layer}.${block}.${target}`, target, inFeatures, outFeatures });
    }
  }
  return modules;
}

/** What the adapters' product is multiplied by: alpha/rank, or alpha/√rank with rsLoRA (as PEFT computes it). */
export function loraScale(lora: LoraConfig): number {
  return lora.rslora ? lora.alpha / Math.sqrt(lora.rank) : lora.alpha / lora.rank;
}

/**
 * Fresh adapter weights as PEFT initialises them: A ~ U(−1/√in, 1/√in) (Kaiming-uniform with
 * a = √5), B = 0 — so the adapted model starts exactly equal to the base model.
 */
export function initLoraWeights(
  modules: readonly LoraModule[],
  lora: LoraConfig,
  random: { nextFloat(): number },
): Record<string, { shape: number[]; data: Float32Array }> {
  const out: Record<string, { shape: number[]; data: Float32Array }> = {};
  for (const m of modules) {
    const names = loraTensorNames(m.module);
    const bound = 1 / Math.sqrt(m.inFeatures);
    const a = new Float32Array(lora.rank * m.inFeatures);
    for (let i = 0; i < a.length; i++) a[i] = (random.nextFloat() * 2 - 1) * bound;
    out[names.a] = { shape: [lora.rank, m.inFeatures], data: a };
    out[names.b] = { shape: [m.outFeatures, lora.rank], data: new Float32Array(m.outFeatures * lora.rank) };
  }
  return out;
}
