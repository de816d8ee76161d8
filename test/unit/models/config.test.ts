import { describe, it, before, after } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  loadModelConfig,
  ModelConfigError,
  ropeInverseFrequencies,
  type ModelConfig,
} from '#trainer/foundations/models';

// config.json files as released on the Hugging Face Hub (copied field for field).
const QWEN25_05B_INSTRUCT = {
  architectures: ['Qwen2ForCausalLM'],
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  hidden_act: 'silu',
  hidden_size: 896,
  initializer_range: 0.02,
  intermediate_size: 4864,
  max_position_embeddings: 32768,
  max_window_layers: 21,
  model_type: 'qwen2',
  num_attention_heads: 14,
  num_hidden_layers: 24,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  sliding_window: 32768,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.43.1',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

const QWEN3_06B = {
  architectures: ['Qwen3ForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: 'silu',
  hidden_size: 1024,
  initializer_range: 0.02,
  intermediate_size: 3072,
  max_position_embeddings: 40960,
  max_window_layers: 28,
  model_type: 'qwen3',
  num_attention_heads: 16,
  num_hidden_layers: 28,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: null,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.51.0',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

const LLAMA32_1B_INSTRUCT = {
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 128000,
  eos_token_id: [128001, 128008, 128009],
  head_dim: 64,
  hidden_act: 'silu',
  hidden_size: 2048,
  initializer_range: 0.02,
  intermediate_size: 8192,
  max_position_embeddings: 131072,
  mlp_bias: false,
  model_type: 'llama',
  num_attention_heads: 32,
  num_hidden_layers: 16,
  num_key_value_heads: 8,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_scaling: {
    factor: 32.0,
    high_freq_factor: 4.0,
    low_freq_factor: 1.0,
    original_max_position_embeddings: 8192,
    rope_type: 'llama3',
  },
  rope_theta: 500000.0,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.45.0.dev0',
  use_cache: true,
  vocab_size: 128256,
};

const SMOLLM2_135M_INSTRUCT = {
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 1,
  eos_token_id: 2,
  hidden_act: 'silu',
  hidden_size: 576,
  initializer_range: 0.041666666666666664,
  intermediate_size: 1536,
  is_llama_config: true,
  max_position_embeddings: 8192,
  mlp_bias: false,
  model_type: 'llama',
  num_attention_heads: 9,
  num_hidden_layers: 30,
  num_key_value_heads: 3,
  pad_token_id: 2,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_interleaved: false,
  rope_scaling: null,
  rope_theta: 100000,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.42.3',
  use_cache: true,
  vocab_size: 49152,
};

let root: string;
let counter = 0;

/** Writes `json` as config.json in a fresh folder and loads it. */
function load(json: unknown): ModelConfig {
  const dir = path.join(root, `m${counter++}`);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'config.json'), typeof json === 'string' ? json : JSON.stringify(json));
  return loadModelConfig(dir);
}

function loadError(json: unknown): string {
  try {
    load(json);
  } catch (error) {
    assert.ok(error instanceof ModelConfigError, `expected a ModelConfigError, got ${error}`);
    assert.match(error.message, /config\.json: /);
    return error.message;
  }
  assert.fail('expected loading to fail');
}

describe('loadModelConfig', () => {
  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'rs-config-'));
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it('normalises Qwen2.5-0.5B-Instruct: q/k/v bias, no o_proj bias, tied embeddings', () => {
    const config = load(QWEN25_05B_INSTRUCT);
    const { configPath, ...rest } = config;
    assert.match(configPath, /config\.json$/);
    assert.deepEqual(rest, {
      family: 'qwen2',
      architecture: 'Qwen2ForCausalLM',
      vocabSize: 151936,
      hiddenSize: 896,
      intermediateSize: 4864,
      numLayers: 24,
      numHeads: 14,
      numKvHeads: 2,
      headDim: 64,
      rmsNormEps: 1e-6,
      ropeTheta: 1000000,
      ropeScaling: { type: 'default' },
      maxPositionEmbeddings: 32768,
      tieWordEmbeddings: true,
      qkvBias: true,
      oProjBias: false,
      mlpBias: false,
      qkNorm: false,
      bosTokenId: 151643,
      eosTokenIds: [151645],
      padTokenId: undefined,
      torchDtype: 'bfloat16',
    });
  });

  it('normalises Qwen3-0.6B: q/k norms, head_dim 128 though hidden/heads is 64, no bias', () => {
    const config = load(QWEN3_06B);
    assert.equal(config.family, 'qwen3');
    assert.equal(config.headDim, 128);
    assert.equal(config.hiddenSize / config.numHeads, 64);
    assert.equal(config.qkNorm, true);
    assert.equal(config.qkvBias, false);
    assert.equal(config.oProjBias, false);
    assert.equal(config.numKvHeads, 8);
    assert.equal(config.maxPositionEmbeddings, 40960);
  });

  it('applies Qwen3 attention_bias to q, k, v and o', () => {
    const config = load({ ...QWEN3_06B, attention_bias: true });
    assert.equal(config.qkvBias, true);
    assert.equal(config.oProjBias, true);
  });

  it('normalises Llama 3.2-1B-Instruct with llama3 rope scaling and several eos ids', () => {
    const config = load(LLAMA32_1B_INSTRUCT);
    assert.equal(config.family, 'llama');
    assert.deepEqual(config.ropeScaling, {
      type: 'llama3',
      factor: 32,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositionEmbeddings: 8192,
    });
    assert.equal(config.ropeTheta, 500000);
    assert.deepEqual(config.eosTokenIds, [128001, 128008, 128009]);
    assert.equal(config.rmsNormEps, 1e-5);
    assert.equal(config.headDim, 64);
  });

  it('normalises SmolLM2-135M-Instruct (Llama architecture, 9 heads over 3 kv heads)', () => {
    const config = load(SMOLLM2_135M_INSTRUCT);
    assert.equal(config.family, 'llama');
    assert.equal(config.headDim, 64);
    assert.equal(config.numHeads / config.numKvHeads, 3);
    assert.equal(config.padTokenId, 2);
    assert.equal(config.tieWordEmbeddings, true);
  });

  it('reads Llama attention_bias and mlp_bias, and the older rope_scaling "type" key', () => {
    const config = load({
      ...SMOLLM2_135M_INSTRUCT,
      attention_bias: true,
      mlp_bias: true,
      rope_scaling: { type: 'linear', factor: 2 },
    });
    assert.equal(config.qkvBias, true);
    assert.equal(config.oProjBias, true);
    assert.equal(config.mlpBias, true);
    assert.deepEqual(config.ropeScaling, { type: 'linear', factor: 2 });
  });

  it('reads transformers 5 rope_parameters and dtype', () => {
    const { rope_theta: _theta, rope_scaling: _scaling, torch_dtype: _dtype, ...rest } = LLAMA32_1B_INSTRUCT;
    const config = load({
      ...rest,
      dtype: 'float32',
      rope_parameters: { ...LLAMA32_1B_INSTRUCT.rope_scaling, rope_theta: 500000 },
    });
    assert.equal(config.ropeTheta, 500000);
    assert.equal(config.ropeScaling.type, 'llama3');
    assert.equal(config.torchDtype, 'float32');
  });

  it("fills absent fields with the family config class's defaults", () => {
    const minimal = {
      model_type: 'llama',
      vocab_size: 100,
      hidden_size: 32,
      intermediate_size: 64,
      num_hidden_layers: 2,
      num_attention_heads: 4,
    };
    const config = load(minimal);
    assert.equal(config.architecture, 'LlamaForCausalLM');
    assert.equal(config.numKvHeads, 4);
    assert.equal(config.headDim, 8);
    assert.equal(config.ropeTheta, 10000);
    assert.equal(config.rmsNormEps, 1e-6);
    assert.equal(config.tieWordEmbeddings, false);
    assert.equal(config.maxPositionEmbeddings, 2048);
    assert.deepEqual(config.eosTokenIds, []);
    // Qwen3Config's head_dim defaults to 128 whatever hidden/heads is.
    assert.equal(load({ ...minimal, model_type: 'qwen3' }).headDim, 128);
  });

  describe('rejects what it cannot run, naming config.json, the field and the supported values', () => {
    it('an unsupported architecture', () => {
      const message = loadError({ ...QWEN3_06B, architectures: ['MistralForCausalLM'] });
      assert.match(
        message,
        /architectures\[0\] is "MistralForCausalLM".*supported: "Qwen2ForCausalLM", "Qwen3ForCausalLM", "LlamaForCausalLM"/,
      );
    });

    it('an unsupported model_type', () => {
      assert.match(
        loadError({ ...QWEN3_06B, model_type: 'qwen3_moe' }),
        /model_type is "qwen3_moe".*supported: "qwen2", "qwen3", "llama"/,
      );
    });

    it('an architecture that disagrees with model_type', () => {
      assert.match(
        loadError({ ...QWEN3_06B, model_type: 'qwen2' }),
        /architectures\[0\] is "Qwen3ForCausalLM" but model_type is "qwen2"/,
      );
    });

    it('an activation other than silu', () => {
      assert.match(
        loadError({ ...SMOLLM2_135M_INSTRUCT, hidden_act: 'gelu' }),
        /hidden_act is "gelu", which is not supported; supported: "silu"/,
      );
    });

    it('sliding-window attention in use', () => {
      assert.match(
        loadError({ ...QWEN25_05B_INSTRUCT, use_sliding_window: true }),
        /use_sliding_window is true, which is not supported; supported: false/,
      );
      assert.match(
        loadError({ ...QWEN3_06B, layer_types: ['full_attention', 'sliding_attention'] }),
        /layer_types is "sliding_attention"/,
      );
    });

    it('a rope scaling type other than default, linear and llama3', () => {
      assert.match(
        loadError({
          ...QWEN25_05B_INSTRUCT,
          rope_scaling: { type: 'yarn', factor: 4, original_max_position_embeddings: 32768 },
        }),
        /rope_scaling\.rope_type is "yarn".*supported: "default", "linear", "llama3"/,
      );
    });

    it('llama3 scaling with a missing field', () => {
      const { low_freq_factor: _low, ...scaling } = LLAMA32_1B_INSTRUCT.rope_scaling;
      assert.match(
        loadError({ ...LLAMA32_1B_INSTRUCT, rope_scaling: scaling }),
        /rope_scaling\.low_freq_factor is required for rope type "llama3"/,
      );
    });

    it('interleaved rotary, partial rotary, dropout and quantization', () => {
      assert.match(loadError({ ...SMOLLM2_135M_INSTRUCT, rope_interleaved: true }), /rope_interleaved is true/);
      assert.match(
        loadError({ ...SMOLLM2_135M_INSTRUCT, partial_rotary_factor: 0.5 }),
        /partial_rotary_factor is 0\.5/,
      );
      assert.match(
        loadError({ ...SMOLLM2_135M_INSTRUCT, attention_dropout: 0.1 }),
        /attention_dropout is 0\.1, which is not supported; supported: 0/,
      );
      assert.match(
        loadError({ ...QWEN3_06B, quantization_config: { quant_method: 'awq' } }),
        /quantization_config is set/,
      );
    });

    it('heads that do not group over the kv heads, and an odd head dimension', () => {
      assert.match(
        loadError({ ...SMOLLM2_135M_INSTRUCT, num_key_value_heads: 4 }),
        /num_attention_heads \(9\) must be a multiple of num_key_value_heads \(4\)/,
      );
      assert.match(loadError({ ...SMOLLM2_135M_INSTRUCT, head_dim: 63 }), /head_dim is 63/);
    });

    it('a missing or mistyped field, and a file that is not JSON', () => {
      const { hidden_size: _h, ...noHidden } = QWEN3_06B;
      assert.match(loadError(noHidden), /hidden_size: Invalid input: expected number, received undefined/);
      assert.match(
        loadError({ ...QWEN3_06B, num_hidden_layers: '28' }),
        /num_hidden_layers: Invalid input: expected number, received string/,
      );
      assert.match(loadError('{"model_type": "qwen3",'), /config\.json: not valid JSON/);
    });

    it('a missing config.json', () => {
      const dir = path.join(root, 'empty');
      fs.mkdirSync(dir);
      assert.throws(() => loadModelConfig(dir), /empty\/config\.json: file not found/);
    });
  });
});

describe('ropeInverseFrequencies', () => {
  it('is theta^(-2i/d) without scaling', () => {
    // theta 10000, d 8: 10000^(-i/4) = 10^-i.
    const inv = ropeInverseFrequencies({ headDim: 8, ropeTheta: 10000, ropeScaling: { type: 'default' } });
    assert.equal(inv.length, 4);
    [1, 0.1, 0.01, 0.001].forEach((expected, i) =>
      assert.ok(Math.abs(inv[i]! - expected) <= 1e-15 * expected, `inv[${i}] = ${inv[i]}`),
    );
  });

  it('divides every frequency by the linear factor', () => {
    const inv = ropeInverseFrequencies({ headDim: 8, ropeTheta: 10000, ropeScaling: { type: 'linear', factor: 4 } });
    [0.25, 0.025, 0.0025, 0.00025].forEach((expected, i) =>
      assert.ok(Math.abs(inv[i]! - expected) <= 1e-15 * expected),
    );
  });

  it("applies Llama 3's scaling: high frequencies kept, low ones divided, a ramp between", () => {
    // Llama 3.2-1B: d 64, theta 500000, factor 32, low 1, high 4, original context 8192. So
    // wavelengths below 8192/4 = 2048 keep their frequency, above 8192/1 are divided by 32,
    // and between them s = (8192/wavelen - 1)/(4 - 1) blends: (1 - s) f/32 + s f.
    // Reference values computed independently in Python (float64).
    const inv = ropeInverseFrequencies({
      headDim: 64,
      ropeTheta: 500000,
      ropeScaling: {
        type: 'llama3',
        factor: 32,
        lowFreqFactor: 1,
        highFreqFactor: 4,
        originalMaxPositionEmbeddings: 8192,
      },
    });
    assert.equal(inv.length, 32);
    const expected: Record<number, number> = {
      0: 1.0, // wavelength 2π: unchanged
      14: 0.0032114459947525913, // wavelength 1956 < 2048: unchanged
      15: 0.001290547928209264, // ramp
      16: 0.00042955679655936815, // ramp: f = 1/sqrt(500000), wavelength 4443, s = 0.2813
      17: 9.70828780262767e-5, // ramp
      18: 1.9461638184831125e-5, // wavelength 10089 > 8192: f / 32
      31: 9.418306725434909e-8, // lowest frequency: f / 32
    };
    for (const [i, value] of Object.entries(expected)) {
      assert.ok(Math.abs(inv[Number(i)]! - value) <= 1e-12 * value, `inv[${i}] = ${inv[Number(i)]}, expected ${value}`);
    }
    // Hand check of i = 16 from the formula itself.
    const f = 1 / Math.sqrt(500000);
    const s = (8192 / ((2 * Math.PI) / f) - 1) / 3;
    assert.ok(Math.abs(inv[16]! - ((1 - s) * (f / 32) + s * f)) < 1e-18);
  });
});
