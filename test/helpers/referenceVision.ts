/**
 * An independent float64 reference for the vision-language models, written as plain loops from
 * the transformers definitions (modeling_qwen2_vl.py and modeling_qwen2_5_vl.py at
 * huggingface/transformers@00b676f8f0489b88652a31d70751cc540dd06305), sharing no code with
 * trainer/foundations/models except the config type: the vision tower as the reference runs it (Qwen2.5-VL's
 * window attention by reordering patches with `get_window_index`, attending per
 * `cu_seqlens` chunk and restoring the order after the merger), `get_rope_index` with its
 * `input_tokens.index` walk, `masked_scatter` of the image embeddings, and the Qwen2 decoder with
 * `apply_multimodal_rotary_pos_emb`.
 */
import type { ModelConfig } from '#trainer/foundations/models/modelConfig';
import type { VisionConfig } from '#trainer/foundations/models/vision/visionConfig';

export type Weights = Record<string, Float32Array | Float64Array>;
type Vec = Float64Array;

function matvec(w: ArrayLike<number>, x: Vec, out: number, inp: number, bias?: ArrayLike<number>): Vec {
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let acc = bias ? bias[o] : 0;
    for (let i = 0; i < inp; i++) acc += w[o * inp + i] * x[i];
    y[o] = acc;
  }
  return y;
}

function rmsNorm(x: Vec, w: ArrayLike<number>, eps: number): Vec {
  let ms = 0;
  for (const v of x) ms += v * v;
  const inv = 1 / Math.sqrt(ms / x.length + eps);
  return x.map((v, i) => v * inv * w[i]);
}

function layerNorm(x: Vec, w: ArrayLike<number>, b: ArrayLike<number>, eps: number): Vec {
  let mean = 0;
  for (const v of x) mean += v;
  mean /= x.length;
  let variance = 0;
  for (const v of x) variance += (v - mean) ** 2;
  variance /= x.length;
  const inv = 1 / Math.sqrt(variance + eps);
  return x.map((v, i) => (v - mean) * inv * w[i] + b[i]);
}

/** erf to double precision (W. J. Cody's rational approximations, as in most libms). */
export function erf(x: number): number {
  // Abramowitz–Stegun 7.1.26 is too coarse; use the series / continued fraction instead.
  const ax = Math.abs(x);
  if (ax < 2.5) {
    // Maclaurin series: erf x = 2/√π Σ (−1)^n x^(2n+1) / (n! (2n+1))
    let term = ax;
    let sum = ax;
    for (let n = 1; n < 200; n++) {
      term *= (-ax * ax) / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * sum;
  }
  // Continued fraction for erfc (Lentz), accurate for |x| ≥ 2.5.
  let f = ax;
  let c = ax;
  let d = 0;
  for (let n = 1; n < 300; n++) {
    const an = n / 2;
    d = ax + an * d;
    d = 1 / d;
    c = ax + an / c;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / f;
  return Math.sign(x) * (1 - erfc);
}

const gelu = (x: number) => 0.5 * x * (1 + erf(x / Math.SQRT2));
const quickGelu = (x: number) => x / (1 + Math.exp(-1.702 * x));
const silu = (x: number) => x / (1 + Math.exp(-x));

function act(name: VisionConfig['act'], x: number): number {
  return name === 'quick_gelu' ? quickGelu(x) : name === 'silu' ? silu(x) : gelu(x);
}

function rotateHalfApply(x: Vec, cos: Vec, sin: Vec): Vec {
  const half = x.length / 2;
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const rotated = i < half ? -x[i + half] : x[i - half];
    out[i] = x[i] * cos[i] + rotated * sin[i];
  }
  return out;
}

export interface ReferenceImage {
  grid: [number, number, number];
  patches: Float32Array;
}

/** Qwen2VisionTransformerPretrainedModel.forward / Qwen2_5_VisionTransformerPretrainedModel.forward over all images. */
export function referenceVisionEncoder(v: VisionConfig, w: Weights, images: readonly ReferenceImage[]): Vec[] {
  const p = 'visual';
  const m = v.spatialMergeSize;
  const unit = m * m;
  const patchWidth = v.inChannels * v.temporalPatchSize * v.patchSize * v.patchSize;
  // patch_embed: Conv3d with kernel = stride over a patch is a dot product with each filter.
  let hs: Vec[] = [];
  for (const image of images) {
    const n = image.grid[0] * image.grid[1] * image.grid[2];
    for (let i = 0; i < n; i++)
      hs.push(
        matvec(
          w[`${p}.patch_embed.proj.weight`],
          Float64Array.from(image.patches.subarray(i * patchWidth, (i + 1) * patchWidth)),
          v.width,
          patchWidth,
        ),
      );
  }
  // rot_pos_emb
  const dim = v.headDim / 2;
  const invFreq = Array.from({ length: dim / 2 }, (_, i) =>
    Math.fround(1 / Math.fround(Math.pow(10000, Math.fround((2 * i) / dim)))),
  );
  let rotary: Vec[] = [];
  for (const image of images) {
    const [t, h, ww] = image.grid;
    const hpos: number[] = [];
    const wpos: number[] = [];
    for (let a = 0; a < h / m; a++)
      for (let b = 0; b < ww / m; b++)
        for (let c = 0; c < m; c++)
          for (let d = 0; d < m; d++) {
            hpos.push(a * m + c);
            wpos.push(b * m + d);
          }
    for (let f = 0; f < t; f++)
      for (let i = 0; i < hpos.length; i++) {
        const row = new Float64Array(dim);
        for (let k = 0; k < dim / 2; k++) {
          row[k] = hpos[i] * invFreq[k];
          row[dim / 2 + k] = wpos[i] * invFreq[k];
        }
        rotary.push(row);
      }
  }
  // cu_seqlens: one chunk per frame.
  const cuSeqlens = [0];
  for (const image of images)
    for (let f = 0; f < image.grid[0]; f++)
      cuSeqlens.push(cuSeqlens[cuSeqlens.length - 1] + image.grid[1] * image.grid[2]);
  // Qwen2.5-VL: get_window_index, and the reordering of merged units.
  let windowIndex: number[] | undefined;
  let cuWindow: number[] | undefined;
  if (v.family === 'qwen2_5_vl') {
    windowIndex = [];
    cuWindow = [0];
    let offset = 0;
    const vws = v.windowSize! / m / v.patchSize;
    for (const image of images) {
      const [t, h, ww] = image.grid;
      const lh = h / m;
      const lw = ww / m;
      const padH = vws - (lh % vws);
      const padW = vws - (lw % vws);
      const nh = (lh + padH) / vws;
      const nw = (lw + padW) / vws;
      for (let f = 0; f < t; f++) {
        for (let wh = 0; wh < nh; wh++)
          for (let wwi = 0; wwi < nw; wwi++) {
            let count = 0;
            for (let a = 0; a < vws; a++)
              for (let b = 0; b < vws; b++) {
                const r = wh * vws + a;
                const c = wwi * vws + b;
                if (r < lh && c < lw) {
                  windowIndex.push(offset + f * lh * lw + r * lw + c);
                  count++;
                }
              }
            cuWindow.push(cuWindow[cuWindow.length - 1] + count * unit);
          }
      }
      offset += t * lh * lw;
    }
    cuWindow = cuWindow.filter((c, i) => i === 0 || c !== cuWindow![i - 1]); // unique_consecutive
    const reorder = <T>(rows: T[]) => windowIndex!.flatMap((u) => rows.slice(u * unit, (u + 1) * unit));
    hs = reorder(hs);
    rotary = reorder(rotary);
  }
  const cos = rotary.map((r) => Float64Array.from([...r, ...r], Math.cos));
  const sin = rotary.map((r) => Float64Array.from([...r, ...r], Math.sin));
  const norm = (x: Vec, name: string) =>
    v.norm === 'layernorm'
      ? layerNorm(x, w[`${name}.weight`], w[`${name}.bias`], 1e-6)
      : rmsNorm(x, w[`${name}.weight`], 1e-6);
  for (let layer = 0; layer < v.depth; layer++) {
    const b = `${p}.blocks.${layer}`;
    const chunks = v.family === 'qwen2_vl' || v.fullAttentionBlocks.includes(layer) ? cuSeqlens : cuWindow!;
    const normed = hs.map((x) => norm(x, `${b}.norm1`));
    const qkv = normed.map((x) => matvec(w[`${b}.attn.qkv.weight`], x, 3 * v.width, v.width, w[`${b}.attn.qkv.bias`]));
    const head = (i: number, part: number, hh: number) =>
      qkv[i].slice(part * v.width + hh * v.headDim, part * v.width + (hh + 1) * v.headDim);
    const out = hs.map(() => new Float64Array(v.width));
    for (let c = 0; c + 1 < chunks.length; c++) {
      const [s, e] = [chunks[c], chunks[c + 1]];
      for (let hh = 0; hh < v.numHeads; hh++) {
        const q = Array.from({ length: e - s }, (_, i) => rotateHalfApply(head(s + i, 0, hh), cos[s + i], sin[s + i]));
        const k = Array.from({ length: e - s }, (_, i) => rotateHalfApply(head(s + i, 1, hh), cos[s + i], sin[s + i]));
        for (let i = 0; i < e - s; i++) {
          const scores = k.map((kk) => kk.reduce((a, x, d) => a + x * q[i][d], 0) / Math.sqrt(v.headDim));
          const max = Math.max(...scores);
          const ex = scores.map((x) => Math.exp(x - max));
          const sum = ex.reduce((a, x) => a + x, 0);
          for (let j = 0; j < e - s; j++) {
            const value = head(s + j, 2, hh);
            for (let d = 0; d < v.headDim; d++) out[s + i][hh * v.headDim + d] += (ex[j] / sum) * value[d];
          }
        }
      }
    }
    hs = hs.map((x, i) => {
      const attn = matvec(w[`${b}.attn.proj.weight`], out[i], v.width, v.width, w[`${b}.attn.proj.bias`]);
      return x.map((y, d) => y + attn[d]);
    });
    hs = hs.map((x) => {
      const h2 = norm(x, `${b}.norm2`);
      let mlp: Vec;
      if (v.family === 'qwen2_vl') {
        const hidden = matvec(w[`${b}.mlp.fc1.weight`], h2, v.mlpSize, v.width, w[`${b}.mlp.fc1.bias`]).map((y) =>
          act(v.act, y),
        );
        mlp = matvec(w[`${b}.mlp.fc2.weight`], hidden, v.width, v.mlpSize, w[`${b}.mlp.fc2.bias`]);
      } else {
        const gate = matvec(w[`${b}.mlp.gate_proj.weight`], h2, v.mlpSize, v.width, w[`${b}.mlp.gate_proj.bias`]);
        const up = matvec(w[`${b}.mlp.up_proj.weight`], h2, v.mlpSize, v.width, w[`${b}.mlp.up_proj.bias`]);
        mlp = matvec(
          w[`${b}.mlp.down_proj.weight`],
          gate.map((g, i) => act(v.act, g) * up[i]),
          v.width,
          v.mlpSize,
          w[`${b}.mlp.down_proj.bias`],
        );
      }
      return x.map((y, d) => y + mlp[d]);
    });
  }
  // merger
  const normed = hs.map((x) => norm(x, `${p}.merger.ln_q`));
  const merged = v.width * unit;
  let out: Vec[] = [];
  for (let u = 0; u < normed.length / unit; u++) {
    const x = new Float64Array(merged);
    for (let k = 0; k < unit; k++) x.set(normed[u * unit + k], k * v.width);
    const hidden = matvec(w[`${p}.merger.mlp.0.weight`], x, merged, merged, w[`${p}.merger.mlp.0.bias`]).map(gelu);
    out.push(matvec(w[`${p}.merger.mlp.2.weight`], hidden, v.outSize, merged, w[`${p}.merger.mlp.2.bias`]));
  }
  if (windowIndex) {
    // reverse_indices = argsort(window_index)
    const restored: Vec[] = new Array(out.length);
    windowIndex.forEach((u, i) => (restored[u] = out[i]));
    out = restored;
  }
  return out;
}

/** get_rope_index for one unpadded sequence: [3][T]. */
export function referenceRopeIndex(
  config: ModelConfig,
  ids: readonly number[],
  grids: readonly [number, number, number][],
): number[][] {
  const v = config.vision!;
  const positions: number[][] = [[], [], []];
  let st = 0;
  let image = 0;
  const visionStarts = ids.flatMap((id, i) => (id === v.visionStartTokenId ? [i] : []));
  const imageNums = visionStarts.filter((i) => ids[i + 1] === v.imageTokenId).length;
  let last = -1;
  const push = (t: number, h: number, w: number) => {
    positions[0].push(t);
    positions[1].push(h);
    positions[2].push(w);
    last = Math.max(last, t, h, w);
  };
  for (let k = 0; k < imageNums; k++) {
    const ed = ids.indexOf(v.imageTokenId, st);
    const [t, h, w] = grids[image++];
    const [lt, lh, lw] = [t, h / v.spatialMergeSize, w / v.spatialMergeSize];
    const textLen = ed - st;
    const stIdx = last + 1;
    for (let i = 0; i < textLen; i++) push(stIdx + i, stIdx + i, stIdx + i);
    for (let a = 0; a < lt; a++)
      for (let b = 0; b < lh; b++)
        for (let c = 0; c < lw; c++) push(a + textLen + stIdx, b + textLen + stIdx, c + textLen + stIdx);
    st = ed + lt * lh * lw;
  }
  if (st < ids.length) {
    const stIdx = last + 1;
    for (let i = 0; i < ids.length - st; i++) push(stIdx + i, stIdx + i, stIdx + i);
  }
  return positions;
}

/** Log-softmax at every position of one sequence with images (Qwen2VLForConditionalGeneration.forward). */
export function referenceVisionLanguageLogProbs(
  config: ModelConfig,
  w: Weights,
  ids: readonly number[],
  images: readonly ReferenceImage[],
  options: { lora?: { scale: number; rank: number; targets: string[] } } = {},
): Vec[] {
  const c = config;
  const H = c.hiddenSize;
  const hd = c.headDim;
  const embeds = images.length ? referenceVisionEncoder(c.vision!, w, images) : [];
  let next = 0;
  let hs: Vec[] = ids.map((id) =>
    id === c.vision!.imageTokenId
      ? Float64Array.from(embeds[next++])
      : Float64Array.from(w['model.embed_tokens.weight'].subarray(id * H, (id + 1) * H)),
  );
  if (next !== embeds.length) throw new Error(`reference: ${embeds.length} image features for ${next} image tokens`);
  const positions = referenceRopeIndex(
    c,
    ids,
    images.map((im) => im.grid),
  );
  // Qwen2VLRotaryEmbedding: inv_freq = 1 / θ^(2i/hd) in float32, then per axis; sections pick the axis.
  const invFreq = Array.from({ length: hd / 2 }, (_, i) => Math.fround(1 / Math.pow(c.ropeTheta, (2 * i) / hd)));
  const section = [...c.mropeSection!, ...c.mropeSection!];
  const axisOf: number[] = [];
  section.forEach((size, k) => {
    for (let j = 0; j < size; j++) axisOf.push(k % 3);
  });
  const cosSin = ids.map((_, t) => {
    const cos = new Float64Array(hd);
    const sin = new Float64Array(hd);
    for (let i = 0; i < hd; i++) {
      const angle = positions[axisOf[i]][t] * invFreq[i % (hd / 2)];
      cos[i] = Math.cos(angle);
      sin[i] = Math.sin(angle);
    }
    return { cos, sin };
  });
  const proj = (x: Vec, name: string, out: number, inp: number, bias: boolean) => {
    const y = matvec(w[`${name}.weight`], x, out, inp, bias ? w[`${name}.bias`] : undefined);
    const target = name.split('.').pop()!;
    if (options.lora && options.lora.targets.includes(target)) {
      const a = w[`base_model.model.${name}.lora_A.weight`];
      const b = w[`base_model.model.${name}.lora_B.weight`];
      const delta = matvec(b, matvec(a, x, options.lora.rank, inp), out, options.lora.rank);
      for (let i = 0; i < out; i++) y[i] += options.lora.scale * delta[i];
    }
    return y;
  };
  const group = c.numHeads / c.numKvHeads;
  for (let l = 0; l < c.numLayers; l++) {
    const p = `model.layers.${l}`;
    const normed = hs.map((h) => rmsNorm(h, w[`${p}.input_layernorm.weight`], c.rmsNormEps));
    const heads = (y: Vec, n: number) => Array.from({ length: n }, (_, i) => y.slice(i * hd, (i + 1) * hd));
    const qs = normed.map((x, t) =>
      heads(proj(x, `${p}.self_attn.q_proj`, c.numHeads * hd, H, true), c.numHeads).map((q) =>
        rotateHalfApply(q, cosSin[t].cos, cosSin[t].sin),
      ),
    );
    const ks = normed.map((x, t) =>
      heads(proj(x, `${p}.self_attn.k_proj`, c.numKvHeads * hd, H, true), c.numKvHeads).map((k) =>
        rotateHalfApply(k, cosSin[t].cos, cosSin[t].sin),
      ),
    );
    const vs = normed.map((x) => heads(proj(x, `${p}.self_attn.v_proj`, c.numKvHeads * hd, H, true), c.numKvHeads));
    const attn = hs.map((_, t) => {
      const merged = new Float64Array(c.numHeads * hd);
      for (let h = 0; h < c.numHeads; h++) {
        const kvh = Math.floor(h / group);
        const scores = Array.from(
          { length: t + 1 },
          (_, s) => qs[t][h].reduce((a, x, i) => a + x * ks[s][kvh][i], 0) / Math.sqrt(hd),
        );
        const max = Math.max(...scores);
        const e = scores.map((x) => Math.exp(x - max));
        const sum = e.reduce((a, b) => a + b, 0);
        for (let s = 0; s <= t; s++) for (let i = 0; i < hd; i++) merged[h * hd + i] += (e[s] / sum) * vs[s][kvh][i];
      }
      return proj(merged, `${p}.self_attn.o_proj`, H, c.numHeads * hd, false);
    });
    hs = hs.map((h, t) => h.map((x, i) => x + attn[t][i]));
    hs = hs.map((h) => {
      const x = rmsNorm(h, w[`${p}.post_attention_layernorm.weight`], c.rmsNormEps);
      const gate = proj(x, `${p}.mlp.gate_proj`, c.intermediateSize, H, false);
      const up = proj(x, `${p}.mlp.up_proj`, c.intermediateSize, H, false);
      const down = proj(
        gate.map((g, i) => silu(g) * up[i]),
        `${p}.mlp.down_proj`,
        H,
        c.intermediateSize,
        false,
      );
      return h.map((x2, i) => x2 + down[i]);
    });
  }
  const head = c.tieWordEmbeddings ? w['model.embed_tokens.weight'] : w['lm_head.weight'];
  return hs.map((h) => {
    const logits = matvec(head, rmsNorm(h, w['model.norm.weight'], c.rmsNormEps), c.vocabSize, H);
    let max = -Infinity;
    for (const x of logits) max = Math.max(max, x);
    const lse = max + Math.log(logits.reduce((a, x) => a + Math.exp(x - max), 0));
    return logits.map((x) => x - lse);
  });
}
