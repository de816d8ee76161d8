/**
 * An independent reference for the model graphs: the Hugging Face decoder (Qwen2/2.5, Qwen3,
 * Llama) written as plain float64 loops over one unpadded sequence, straight from the
 * transformers modelling code — no graph, no batching, no shared code with trainer/foundations/models
 * except the config type and the rotary frequencies (checked against Python in their own test).
 */
import { ropeInverseFrequencies, type ModelConfig } from '#trainer/foundations/models/modelConfig';

export type Weights = Record<string, Float32Array | Float64Array>;

function matvec(
  w: ArrayLike<number>,
  x: Float64Array,
  out: number,
  inp: number,
  bias?: ArrayLike<number>,
): Float64Array {
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let acc = bias ? bias[o] : 0;
    const row = o * inp;
    for (let i = 0; i < inp; i++) acc += w[row + i] * x[i];
    y[o] = acc;
  }
  return y;
}

function rms(x: Float64Array, w: ArrayLike<number>, eps: number): Float64Array {
  let ms = 0;
  for (const v of x) ms += v * v;
  const inv = 1 / Math.sqrt(ms / x.length + eps);
  return x.map((v, i) => v * inv * w[i]);
}

function rotate(x: Float64Array, position: number, invFreq: Float64Array): Float64Array {
  const half = x.length / 2;
  const out = new Float64Array(x.length);
  for (let i = 0; i < half; i++) {
    const angle = position * invFreq[i];
    const c = Math.cos(angle);
    const s = Math.sin(angle);
    out[i] = x[i] * c - x[i + half] * s;
    out[i + half] = x[i + half] * c + x[i] * s;
  }
  return out;
}

/** Log-softmax of the logits at every position of `ids` (positions 0..n−1), one sequence. */
export function referenceLogProbs(
  config: ModelConfig,
  w: Weights,
  ids: number[],
  options: { invTemperature?: number; lora?: { scale: number; rank: number; targets: string[] } } = {},
): Float64Array[] {
  const c = config;
  const H = c.hiddenSize;
  const hd = c.headDim;
  const invFreq = Float64Array.from(ropeInverseFrequencies(c), (f) => Math.fround(f));
  const proj = (x: Float64Array, name: string, out: number, inp: number, bias: boolean) => {
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
  let hs: Float64Array[] = ids.map((id) =>
    Float64Array.from(w['model.embed_tokens.weight'].subarray(id * H, (id + 1) * H)),
  );
  for (let l = 0; l < c.numLayers; l++) {
    const p = `model.layers.${l}`;
    const normed = hs.map((h) => rms(h, w[`${p}.input_layernorm.weight`], c.rmsNormEps));
    const qs: Float64Array<ArrayBufferLike>[][] = [];
    const ks: Float64Array<ArrayBufferLike>[][] = [];
    const vs: Float64Array<ArrayBufferLike>[][] = [];
    normed.forEach((x, t) => {
      const q = proj(x, `${p}.self_attn.q_proj`, c.numHeads * hd, H, c.qkvBias);
      const k = proj(x, `${p}.self_attn.k_proj`, c.numKvHeads * hd, H, c.qkvBias);
      const v = proj(x, `${p}.self_attn.v_proj`, c.numKvHeads * hd, H, c.qkvBias);
      const heads = (y: Float64Array, n: number): Float64Array<ArrayBufferLike>[] =>
        Array.from({ length: n }, (_, i) => y.slice(i * hd, (i + 1) * hd));
      let qh = heads(q, c.numHeads);
      let kh = heads(k, c.numKvHeads);
      if (c.qkNorm) {
        qh = qh.map((x) => rms(x, w[`${p}.self_attn.q_norm.weight`], c.rmsNormEps));
        kh = kh.map((x) => rms(x, w[`${p}.self_attn.k_norm.weight`], c.rmsNormEps));
      }
      qs.push(qh.map((x) => rotate(x, t, invFreq)));
      ks.push(kh.map((x) => rotate(x, t, invFreq)));
      vs.push(heads(v, c.numKvHeads));
    });
    const group = c.numHeads / c.numKvHeads;
    const attnOut = hs.map((_, t) => {
      const merged = new Float64Array(c.numHeads * hd);
      for (let h = 0; h < c.numHeads; h++) {
        const kvh = Math.floor(h / group);
        const scores = Array.from({ length: t + 1 }, (_, s) => {
          let acc = 0;
          for (let i = 0; i < hd; i++) acc += qs[t][h][i] * ks[s][kvh][i];
          return acc / Math.sqrt(hd);
        });
        const max = Math.max(...scores);
        const e = scores.map((x) => Math.exp(x - max));
        const sum = e.reduce((a, b) => a + b, 0);
        for (let s = 0; s <= t; s++) for (let i = 0; i < hd; i++) merged[h * hd + i] += (e[s] / sum) * vs[s][kvh][i];
      }
      return proj(merged, `${p}.self_attn.o_proj`, H, c.numHeads * hd, c.oProjBias);
    });
    hs = hs.map((h, t) => h.map((x, i) => x + attnOut[t][i]));
    hs = hs.map((h) => {
      const x = rms(h, w[`${p}.post_attention_layernorm.weight`], c.rmsNormEps);
      const gate = proj(x, `${p}.mlp.gate_proj`, c.intermediateSize, H, c.mlpBias);
      const up = proj(x, `${p}.mlp.up_proj`, c.intermediateSize, H, c.mlpBias);
      const act = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]);
      const down = proj(act, `${p}.mlp.down_proj`, H, c.intermediateSize, c.mlpBias);
      return h.map((x2, i) => x2 + down[i]);
    });
  }
  const head = c.tieWordEmbeddings ? w['model.embed_tokens.weight'] : w['lm_head.weight'];
  return hs.map((h) => {
    const x = rms(h, w['model.norm.weight'], c.rmsNormEps);
    const logits = matvec(head, x, c.vocabSize, H).map((v) => v * (options.invTemperature ?? 1));
    let max = -Infinity;
    for (const v of logits) max = Math.max(max, v);
    let sum = 0;
    for (const v of logits) sum += Math.exp(v - max);
    const lse = max + Math.log(sum);
    return logits.map((v) => v - lse);
  });
}
