import type { ExpectedTensor } from '../expectedTensor';
import type { VisionConfig } from './visionConfig';

/**
 * The vision tower's tensors as transformers names them in the released checkpoints
 * (`visual.…`, modeling_qwen2_vl.py / modeling_qwen2_5_vl.py), in state-dict order:
 *
 *   visual.patch_embed.proj.weight      Conv3d [width, C, T, P, P], no bias
 *   visual.blocks.N.norm1 / norm2       LayerNorm (weight, bias) or RMSNorm (weight)
 *   visual.blocks.N.attn.qkv / proj     Linear with bias
 *   visual.blocks.N.mlp.fc1 / fc2       Qwen2-VL: Linear with bias
 *   visual.blocks.N.mlp.gate_proj / up_proj / down_proj   Qwen2.5-VL: Linear with bias
 *   visual.merger.ln_q                  LayerNorm (Qwen2-VL) or RMSNorm (Qwen2.5-VL) over the width
 *   visual.merger.mlp.0 / mlp.2         Linear(width·m², width·m²), GELU, Linear(width·m², out)
 */
export function visionTensors(v: VisionConfig): ExpectedTensor[] {
  const tensors: ExpectedTensor[] = [];
  const linear = (name: string, out: number, input: number) => {
    tensors.push({ name: `${name}.weight`, shape: [out, input], role: 'linear' });
    tensors.push({ name: `${name}.bias`, shape: [out], role: 'bias' });
  };
  const norm = (name: string, size: number) => {
    tensors.push({ name: `${name}.weight`, shape: [size], role: 'norm' });
    if (v.norm === 'layernorm') tensors.push({ name: `${name}.bias`, shape: [size], role: 'bias' });
  };
  const p = v.prefix;
  tensors.push({
    name: `${p}.patch_embed.proj.weight`,
    shape: [v.width, v.inChannels, v.temporalPatchSize, v.patchSize, v.patchSize],
    role: 'linear',
  });
  for (let i = 0; i < v.depth; i++) {
    const block = `${p}.blocks.${i}`;
    norm(`${block}.norm1`, v.width);
    norm(`${block}.norm2`, v.width);
    linear(`${block}.attn.qkv`, 3 * v.width, v.width);
    linear(`${block}.attn.proj`, v.width, v.width);
    if (v.family === 'qwen2_vl') {
      linear(`${block}.mlp.fc1`, v.mlpSize, v.width);
      linear(`${block}.mlp.fc2`, v.width, v.mlpSize);
    } else {
      linear(`${block}.mlp.gate_proj`, v.mlpSize, v.width);
      linear(`${block}.mlp.up_proj`, v.mlpSize, v.width);
      linear(`${block}.mlp.down_proj`, v.width, v.mlpSize);
    }
  }
  const merged = v.width * v.spatialMergeSize ** 2;
  norm(`${p}.merger.ln_q`, v.width);
  linear(`${p}.merger.mlp.0`, merged, merged);
  linear(`${p}.merger.mlp.2`, v.outSize, merged);
  return tensors;
}

/** Whether a weight belongs to the vision tower (frozen unless the encoder is trained on request). */
export function isVisionWeight(name: string): boolean {
  return name.startsWith('visual.');
}

/**
 * The released layout's name for a tensor stored under the layout newer transformers versions
 * use (`model.visual.…`, `model.language_model.…`): the inverse of the conversion mapping of
 * Qwen2VLForConditionalGeneration (`^visual` → `model.visual`, `^model` → `model.language_model`).
 */
export function releasedVisionLanguageName(stored: string): string {
  if (stored.startsWith('model.visual.')) return stored.slice('model.'.length);
  if (stored.startsWith('model.language_model.')) return `model.${stored.slice('model.language_model.'.length)}`;
  return stored;
}
