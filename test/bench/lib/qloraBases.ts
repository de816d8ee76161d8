import type { LoraConfig } from '../../../trainer/foundations/models/lora';
import type { ModelRuntimeOptions } from '../../../trainer/foundations/models/runtime';

/**
 * bench:models' QLoRA bases, which bench:profile's --quantize profiles too: blocks of 32 and a
 * fresh rank-16 adapter on q/k/v/o (B = 0 changes no output, but a QLoRA policy computes its
 * products; quantize needs LoRA).
 */
const QLORA: LoraConfig = { rank: 16, alpha: 32, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] };
export const QLORA_BASES = {
  int4: { lora: QLORA, quantize: { bits: 4, blockSize: 32 } },
  int8: { lora: QLORA, quantize: { bits: 8, blockSize: 32 } },
} satisfies Record<string, ModelRuntimeOptions>;
