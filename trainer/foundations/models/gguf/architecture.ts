import { ropeInverseFrequencies, type ModelConfig, type ModelFamily } from '../modelConfig';
import { ModelConfigError } from '../modelErrors';
import { meta, type MetadataValue } from './format';

/**
 * How each family maps onto llama.cpp's architectures (convert_hf_to_gguf.py's LlamaModel,
 * Qwen2Model, Qwen3Model and gguf-py's tensor names): the hyperparameter keys, the tensor names,
 * and the one layout change — llama.cpp's `llama` architecture rotates adjacent pairs of
 * dimensions, Hugging Face's Llama rotates halves, so q and k rows are permuted per head.
 * Qwen2 and Qwen3 use the half-rotation (NEOX) layout in llama.cpp too and are written as is.
 */

const GGUF_ARCHITECTURE: Record<ModelFamily, string> = { llama: 'llama', qwen2: 'qwen2', qwen3: 'qwen3' };

/**
 * llama.cpp's architecture name for the config's family. Vision-language models are refused:
 * llama.cpp keeps their vision tower in a separate mmproj file, which this export does not write.
 */
export function ggufArchitecture(config: ModelConfig): string {
  const family = config.family;
  if (!Object.hasOwn(GGUF_ARCHITECTURE, family)) {
    throw new ModelConfigError(
      `${config.configPath}: ${config.architecture} is a vision-language model; GGUF export writes text-only decoders (${Object.keys(GGUF_ARCHITECTURE).join(', ')}), and llama.cpp's vision tower would need a separate mmproj file`,
    );
  }
  return GGUF_ARCHITECTURE[family as ModelFamily];
}

/** The GGUF tensor name of a Hugging Face tensor, or undefined when the GGUF file has no place for it. */
export function ggufTensorName(hfName: string): string | undefined {
  const fixed: Record<string, string> = {
    'model.embed_tokens.weight': 'token_embd.weight',
    'model.norm.weight': 'output_norm.weight',
    'lm_head.weight': 'output.weight',
  };
  if (fixed[hfName]) return fixed[hfName];
  const m = /^model\.layers\.(\d+)\.(.+)\.(weight|bias)$/.exec(hfName);
  if (!m) return undefined;
  const [, layer, module, kind] = m;
  const modules: Record<string, string> = {
    input_layernorm: 'attn_norm',
    'self_attn.q_proj': 'attn_q',
    'self_attn.k_proj': 'attn_k',
    'self_attn.v_proj': 'attn_v',
    'self_attn.o_proj': 'attn_output',
    'self_attn.q_norm': 'attn_q_norm',
    'self_attn.k_norm': 'attn_k_norm',
    post_attention_layernorm: 'ffn_norm',
    'mlp.gate_proj': 'ffn_gate',
    'mlp.up_proj': 'ffn_up',
    'mlp.down_proj': 'ffn_down',
  };
  const gguf = modules[module];
  return gguf ? `blk.${layer}.${gguf}.${kind}` : undefined;
}

/**
 * convert_hf_to_gguf's LlamaModel.permute for q_proj/k_proj weights and biases ([heads·hd, …]):
 * within each head, row (half j, index i) moves to row 2i + j, so llama.cpp's pairwise rotation
 * of rows (2i, 2i+1) rotates what Hugging Face's rotate_half paired (i, i + hd/2).
 */
export function permuteForPairwiseRope(values: Float32Array, heads: number, rowLength: number): Float32Array {
  const rows = values.length / rowLength;
  const headDim = rows / heads;
  const half = headDim / 2;
  const out = new Float32Array(values.length);
  for (let h = 0; h < heads; h++) {
    for (let j = 0; j < 2; j++) {
      for (let i = 0; i < half; i++) {
        const from = (h * headDim + j * half + i) * rowLength;
        const to = (h * headDim + 2 * i + j) * rowLength;
        out.set(values.subarray(from, from + rowLength), to);
      }
    }
  }
  return out;
}

/** Whether (and with how many heads) this tensor is permuted for llama.cpp's `llama` rotary layout. */
export function permutationHeads(config: ModelConfig, hfName: string): number | undefined {
  if (config.family !== 'llama') return undefined;
  if (/self_attn\.q_proj\.(weight|bias)$/.test(hfName)) return config.numHeads;
  if (/self_attn\.k_proj\.(weight|bias)$/.test(hfName)) return config.numKvHeads;
  return undefined;
}

/** The `{arch}.*` hyperparameters llama.cpp reads for this family. */
export function architectureMetadata(config: ModelConfig): Array<[string, MetadataValue]> {
  const arch = ggufArchitecture(config);
  if (config.family === 'qwen3' && (config.qkvBias || config.oProjBias)) {
    throw new ModelConfigError(
      `${config.configPath}: attention_bias is true; llama.cpp's qwen3 architecture has no attention biases, so this model cannot be exported to GGUF`,
    );
  }
  const entries: Array<[string, MetadataValue]> = [
    [`${arch}.context_length`, meta.u32(config.maxPositionEmbeddings)],
    [`${arch}.embedding_length`, meta.u32(config.hiddenSize)],
    [`${arch}.block_count`, meta.u32(config.numLayers)],
    [`${arch}.feed_forward_length`, meta.u32(config.intermediateSize)],
    [`${arch}.attention.head_count`, meta.u32(config.numHeads)],
    [`${arch}.attention.head_count_kv`, meta.u32(config.numKvHeads)],
    [`${arch}.rope.freq_base`, meta.f32(config.ropeTheta)],
    [`${arch}.attention.layer_norm_rms_epsilon`, meta.f32(config.rmsNormEps)],
    [`${arch}.attention.key_length`, meta.u32(config.headDim)],
    [`${arch}.attention.value_length`, meta.u32(config.headDim)],
  ];
  if (config.family === 'llama') {
    entries.push([`${arch}.vocab_size`, meta.u32(config.vocabSize)]);
    entries.push([`${arch}.rope.dimension_count`, meta.u32(config.headDim)]);
  }
  const scaling = config.ropeScaling;
  if (scaling.type === 'linear') {
    entries.push([`${arch}.rope.scaling.type`, meta.str('linear')]);
    entries.push([`${arch}.rope.scaling.factor`, meta.f32(scaling.factor)]);
  } else if (scaling.type === 'llama3' && config.family !== 'llama') {
    throw new ModelConfigError(
      `${config.configPath}: llama3 rope scaling on a ${config.family} model has no GGUF form (llama.cpp reads rope_freqs only for llama)`,
    );
  }
  return entries;
}

/**
 * Llama 3.1's rope scaling as llama.cpp takes it: a `rope_freqs.weight` tensor of per-frequency
 * divisors (unscaled ÷ scaled inverse frequency), as convert_hf_to_gguf's generate_extra_tensors.
 */
export function ropeFrequencyFactors(config: ModelConfig): Float32Array | undefined {
  if (config.ropeScaling.type !== 'llama3') return undefined;
  const scaled = ropeInverseFrequencies(config);
  const plain = ropeInverseFrequencies({ ...config, ropeScaling: { type: 'default' } });
  return Float32Array.from(plain, (f, i) => f / scaled[i]);
}
