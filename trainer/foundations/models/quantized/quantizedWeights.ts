import type { ExpectedTensor } from '../expectedTensor';
import { isVisionWeight } from '../vision/visionWeights';
import type { Quantization } from './blockQuantize';

/**
 * Which of a model's weights a quantized base stores quantized, and under which state names.
 *
 * Rule: every matrix of the language model — the layers' projections, the token embedding and the
 * LM head, all at the chosen bits (llama.cpp's "pure" mode) — provided its rows split into whole
 * blocks. Norms, biases and the vision tower stay float32: they are a small share of the bytes.
 * One width everywhere keeps one accuracy level everywhere (quantizedAccuracyLevel), which is what
 * makes a 4-bit policy sample exactly what it trains.
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
  /** Scoring and the update read the codes unpacked (Quantization.lowMemory, resolved). */
  lowMemory: boolean;
}

/** The two state tensors that replace a quantized weight on the device. */
export function quantizedStateNames(name: string): { data: string; scales: string } {
  return { data: `${name}.qdata`, scales: `${name}.qscales` };
}

/** The state tensors' shapes: codes uint8 [rows, blocks, bytes per block], scales float32 [rows, blocks]. */
export function quantizedShapes(layout: QuantizedLayout): { data: number[]; scales: number[] } {
  const blocks = layout.columns / layout.blockSize;
  return { data: [layout.rows, blocks, (layout.blockSize * layout.bits) / 8], scales: [layout.rows, blocks] };
}

export function quantizedLayouts(tensors: readonly ExpectedTensor[], q: Quantization): Map<string, QuantizedLayout> {
  const layouts = new Map<string, QuantizedLayout>();
  for (const t of tensors) {
    if (isVisionWeight(t.name) || t.shape.length !== 2) continue;
    if (t.role !== 'embedding' && t.role !== 'linear') continue;
    const [rows, columns] = t.shape as [number, number];
    if (columns % q.blockSize !== 0) continue;
    layouts.set(t.name, { rows, columns, bits: q.bits, blockSize: q.blockSize });
  }
  return layouts;
}

/**
 * The accuracy level the graphs ask MatMulNBits for. Rule: every session that computes the policy
 * multiplies the same way, so the sampler's log-probs are the trained policy's.
 *
 * - By default every session bakes the codes in (ModelRuntime.packedInputs) and the kernel packs
 *   them for level 4: int8 products, llama.cpp's q4_0/q8_0 dot product, the fastest on the CPU.
 * - With `lowMemory`, scoring and the update read the codes as inputs, which the kernel
 *   dequantizes and multiplies in float32 whatever the level. 4 bits then use level 0 (float32
 *   products on packed codes) in generation too, the same numbers again. 8 bits keep level 4:
 *   onnxruntime packs 8-bit codes for that level only, and at any other it dequantizes the whole
 *   matrix at every call; the sampler then differs from the scored policy by the activations'
 *   rounding to 8 bits (measured in quantized/README.md).
 */
export function quantizedAccuracyLevel(bits: 4 | 8, lowMemory: boolean): number {
  return lowMemory && bits === 4 ? 0 : 4;
}
