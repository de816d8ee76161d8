import type { Graph, Tensor } from '../../engine/graph';
import * as op from '../../engine/ops';
import { maskBias } from '../layers/attention';
import { linear } from '../layers/linear';
import { layerNorm, rmsNorm } from '../layers/norm';
import type { WeightInputs } from '../decoder';
import type { VisionActivation, VisionConfig } from './visionConfig';

/**
 * The vision tower as graph nodes (Qwen2VisionTransformerPretrainedModel and
 * Qwen2_5_VisionTransformerPretrainedModel of modeling_qwen2_vl.py / modeling_qwen2_5_vl.py at
 * huggingface/transformers@00b676f8f0489b88652a31d70751cc540dd06305), over the patches of every
 * image of a batch at once:
 *
 * - patch embedding: the Conv3d whose kernel equals its stride is one MatMul of the flattened
 *   patches with the flattened kernel;
 * - 2-D rotary embeddings: half of each head's frequencies turn with the patch's row, half with
 *   its column (`rot_pos_emb`);
 * - blocks: pre-norm attention and MLP — LayerNorm and fc1/QuickGELU/fc2 (Qwen2-VL), RMSNorm and
 *   a gated SiLU MLP (Qwen2.5-VL);
 * - attention within each image (Qwen2-VL; Qwen2.5-VL's `fullatt_block_indexes`) or within
 *   windows of window_size pixels (Qwen2.5-VL's other blocks). The reference reorders patches
 *   so that each window is contiguous, attends per window, and restores the order after the
 *   merger; attention restricted by a mask gives the same result without the reordering;
 * - the patch merger: norm, then each merge_size × merge_size group of neighbouring patches
 *   (contiguous in the processor's order) concatenated and passed through Linear, GELU, Linear.
 *
 * Inputs: pixel_patches [N, C·T·P·P]; patch_positions int64 [N, 2] (row, column in its
 * image's patch grid); patch_frames int64 [N] (which image frame a patch belongs to);
 * patch_windows int64 [N] (which window, for windowed blocks). Output: [N / merge², out size].
 */
export interface VisionInputs {
  patches: Tensor;
  positions: Tensor;
  frames: Tensor;
  windows?: Tensor;
}

export const VISION_INPUTS = {
  patches: 'pixel_patches',
  positions: 'patch_positions',
  frames: 'patch_frames',
  windows: 'patch_windows',
} as const;

/** Whether the tower has windowed blocks (and so needs `patch_windows`). */
export function hasWindowedBlocks(v: VisionConfig): boolean {
  return v.fullAttentionBlocks.length < v.depth;
}

export function visionGraphInputs(g: Graph, v: VisionConfig, dtype: 'float32' | 'float64'): VisionInputs {
  const width = v.inChannels * v.temporalPatchSize * v.patchSize * v.patchSize;
  return {
    patches: g.input(VISION_INPUTS.patches, dtype, ['patches', width]),
    positions: g.input(VISION_INPUTS.positions, 'int64', ['patches', 2]),
    frames: g.input(VISION_INPUTS.frames, 'int64', ['patches']),
    ...(hasWindowedBlocks(v) ? { windows: g.input(VISION_INPUTS.windows, 'int64', ['patches']) } : {}),
  };
}

/** The rotary frequencies of the vision tower: 1/10000^(2i/(headDim/2)) for i < headDim/4, in float32 as transformers computes them. */
export function visionInverseFrequencies(v: VisionConfig): Float64Array {
  const dim = v.headDim / 2;
  return Float64Array.from({ length: dim / 2 }, (_, i) =>
    Math.fround(1 / Math.fround(Math.pow(10000, Math.fround((2 * i) / dim)))),
  );
}

function activate(x: Tensor, act: VisionActivation): Tensor {
  switch (act) {
    case 'quick_gelu':
      return op.mul(x, op.sigmoid(op.mul(x, 1.702)));
    case 'silu':
      return op.mul(x, op.sigmoid(x));
    case 'gelu':
      return gelu(x);
  }
}

/** GELU as torch.nn.GELU() computes it: 0.5·x·(1 + erf(x/√2)). */
function gelu(x: Tensor): Tensor {
  return op.mul(op.mul(x, 0.5), op.add(op.erf(op.mul(x, Math.SQRT1_2)), 1));
}

function norm(x: Tensor, name: string, v: VisionConfig, w: WeightInputs): Tensor {
  const weight = w.get(`${name}.weight`, [v.width]);
  return v.norm === 'layernorm'
    ? layerNorm(x, weight, w.get(`${name}.bias`, [v.width]), 1e-6)
    : rmsNorm(x, weight, 1e-6);
}

function dense(x: Tensor, name: string, out: number, input: number, w: WeightInputs): Tensor {
  return linear(x, w.get(`${name}.weight`, [out, input]), w.get(`${name}.bias`, [out]));
}

export function visionEncoder(
  g: Graph,
  v: VisionConfig,
  w: WeightInputs,
  inputs: VisionInputs,
  dtype: 'float32' | 'float64',
): Tensor {
  return g.withScope('visual', () => {
    let x = patchEmbedding(g, v, w, inputs.patches);
    const rotary = g.withScope('rotary', () => rotaryTables(g, v, inputs.positions, dtype));
    const sameGroup = (ids: Tensor) => maskBias(op.equal(op.unsqueeze(ids, [1]), op.unsqueeze(ids, [0])), dtype); // [N, N]
    const fullBias = g.withScope('frame_mask', () => sameGroup(inputs.frames));
    const windowBias = inputs.windows ? g.withScope('window_mask', () => sameGroup(inputs.windows!)) : undefined;

    for (let i = 0; i < v.depth; i++) {
      const bias = v.fullAttentionBlocks.includes(i) || !windowBias ? fullBias : windowBias;
      x = g.withScope(`blocks.${i}`, () => visionBlock(g, v, w, x, `${v.prefix}.blocks.${i}`, rotary, bias));
    }
    return g.withScope('merger', () => patchMerger(x, v, w));
  });
}

/** The Conv3d whose kernel equals its stride, as one MatMul of the flattened patches with the flattened kernel. */
function patchEmbedding(g: Graph, v: VisionConfig, w: WeightInputs, patches: Tensor): Tensor {
  const patchWidth = v.inChannels * v.temporalPatchSize * v.patchSize * v.patchSize;
  const kernel = w.get(`${v.prefix}.patch_embed.proj.weight`, [
    v.width,
    v.inChannels,
    v.temporalPatchSize,
    v.patchSize,
    v.patchSize,
  ]);
  return g.withScope('patch_embed', () => linear(patches, op.reshape(kernel, [v.width, patchWidth])));
}

/** cos and sin of each patch's 2-D rotary angles, [1, N, headDim]. */
interface RotaryTables {
  cos: Tensor;
  sin: Tensor;
}

function rotaryTables(g: Graph, v: VisionConfig, positions: Tensor, dtype: 'float32' | 'float64'): RotaryTables {
  const inv = visionInverseFrequencies(v);
  const quarter = inv.length;
  const select = new Float64Array(2 * 2 * quarter);
  for (let i = 0; i < quarter; i++) {
    select[i] = inv[i]; // row angle → first quarter of the head
    select[2 * quarter + quarter + i] = inv[i]; // column angle → second quarter
  }
  const matrix = g.constant(dtype === 'float64' ? select : Float32Array.from(select), dtype, [2, 2 * quarter]);
  const angles = op.matmul(op.cast(positions, dtype), matrix); // [N, headDim/2]
  const both = op.unsqueeze(op.concat([angles, angles], -1), [0]); // [1, N, headDim]
  return { cos: op.cos(both), sin: op.sin(both) };
}

function rotate(t: Tensor, v: VisionConfig, { cos, sin }: RotaryTables): Tensor {
  const half = v.headDim / 2;
  const [a, b] = op.split(t, [half, half], -1);
  return op.add(op.mul(t, cos), op.mul(op.concat([op.neg(b), a], -1), sin));
}

/** One pre-norm block: attention (masked by `bias` to the patch's image or window), then the MLP. */
function visionBlock(
  g: Graph,
  v: VisionConfig,
  w: WeightInputs,
  x: Tensor,
  block: string,
  rotary: RotaryTables,
  bias: Tensor,
): Tensor {
  const h = g.withScope('norm1', () => norm(x, `${block}.norm1`, v, w));
  const attended = g.withScope('attn', () => {
    const qkv = op.transpose(
      op.reshape(dense(h, `${block}.attn.qkv`, 3 * v.width, v.width, w), [-1, 3, v.numHeads, v.headDim]),
      [1, 2, 0, 3],
    ); // [3, heads, N, hd]
    const [q, k, value] = op.split(qkv, [1, 1, 1], 0).map((t) => op.squeeze(t, [0]));
    const scores = op.mul(
      op.matmul(rotate(q, v, rotary), op.transpose(rotate(k, v, rotary), [0, 2, 1])),
      1 / Math.sqrt(v.headDim),
    ); // [heads, N, N]
    const context = op.matmul(op.softmax(op.add(scores, bias), -1), value); // [heads, N, hd]
    const merged = op.reshape(op.transpose(context, [1, 0, 2]), [-1, v.width]);
    return dense(merged, `${block}.attn.proj`, v.width, v.width, w);
  });
  const residual = op.add(x, attended);
  const h2 = g.withScope('norm2', () => norm(residual, `${block}.norm2`, v, w));
  const mlp = g.withScope('mlp', () => visionMlp(h2, block, v, w));
  return op.add(residual, mlp);
}

/** fc1/activation/fc2 (Qwen2-VL) or the gated MLP (Qwen2.5-VL). */
function visionMlp(h: Tensor, block: string, v: VisionConfig, w: WeightInputs): Tensor {
  return v.family === 'qwen2_vl'
    ? dense(
        activate(dense(h, `${block}.mlp.fc1`, v.mlpSize, v.width, w), v.act),
        `${block}.mlp.fc2`,
        v.width,
        v.mlpSize,
        w,
      )
    : dense(
        op.mul(
          activate(dense(h, `${block}.mlp.gate_proj`, v.mlpSize, v.width, w), v.act),
          dense(h, `${block}.mlp.up_proj`, v.mlpSize, v.width, w),
        ),
        `${block}.mlp.down_proj`,
        v.width,
        v.mlpSize,
        w,
      );
}

/** Norm, then each merge_size × merge_size group of neighbouring patches concatenated through Linear, GELU, Linear. */
function patchMerger(x: Tensor, v: VisionConfig, w: WeightInputs): Tensor {
  const p = v.prefix;
  const merged = v.width * v.spatialMergeSize ** 2;
  const grouped = op.reshape(norm(x, `${p}.merger.ln_q`, v, w), [-1, merged]);
  return dense(gelu(dense(grouped, `${p}.merger.mlp.0`, merged, merged, w)), `${p}.merger.mlp.2`, v.outSize, merged, w);
}
