import type { ExpectedTensor } from '../expectedTensor';
import { isVisionWeight } from '../vision/visionWeights';
import type { Quantization } from './blockQuantize';

/**
 * Which of a model's weights a quantized base stores quantized, and under which state names.
 *
 * Rule: every matrix of the language model — the layers' projections at the chosen bits, the
 * token embedding and the LM head at 8 bits (llama.cpp keeps its output matrix wider than the
 * layers too: the logits of every token pass through it) — provided its rows split into whole
 * blocks. Norms, biases and the vision tower stay float32: they are a small share of the bytes.
 */

/** The shape and code width of one quantized matrix. */
export interface QuantizedLayout {
  rows: number;
  columns: number;
  bits: 4 | 8;
  blockSize: number;
}

/**
 * A quantized base as graph builders see it: each quantized weight's layout by its Hugging Face
 * name, and the MatMulNBits accuracy level (4: int8 activations on the CPU).
 */
export interface QuantizedBase {
  layouts: ReadonlyMap<string, QuantizedLayout>;
  accuracyLevel: number;
}

/** The two state tensors that replace a quantized weight on the device. */
export function quantizedStateNames(name: string): { data: string; scales: string } {
  return { data: `${name}.qdata`, scales: `${name}.qscales` };
}

export function quantizedLayouts(tensors: readonly ExpectedTensor[], q: Quantization): Map<string, QuantizedLayout> {
  const layouts = new Map<string, QuantizedLayout>();
  for (const t of tensors) {
    if (isVisionWeight(t.name) || t.shape.length !== 2) continue;
    const head = t.role === 'embedding' || t.name === 'lm_head.weight';
    if (!head && t.role !== 'linear') continue;
    const [rows, columns] = t.shape as [number, number];
    if (columns % q.blockSize !== 0) continue;
    layouts.set(t.name, { rows, columns, bits: head ? 8 : q.bits, blockSize: q.blockSize });
  }
  return layouts;
}

/**
 * The accuracy level the graphs ask MatMulNBits for. 8-bit weights need level 4 (int8 activations):
 * onnxruntime's CPU kernel packs them for that level only, and at level 0 it dequantizes the whole
 * matrix at every call. 4-bit weights use it too, for the same integer dot products llama.cpp uses.
 */
export const QUANTIZED_ACCURACY_LEVEL = 4;
