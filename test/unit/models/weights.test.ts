import { describe, it, before, after } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  CheckpointError,
  CheckpointReader,
  expectedTensors,
  parseModelConfig,
  validateCheckpoint,
  writeSafetensors,
  type ModelConfig,
} from '#trainer/foundations/models';

const base = {
  vocab_size: 11,
  hidden_size: 8,
  intermediate_size: 12,
  num_hidden_layers: 1,
  num_attention_heads: 4,
  num_key_value_heads: 2,
};
const qwen2 = parseModelConfig({ ...base, model_type: 'qwen2' }, '/m/config.json');
const qwen3 = parseModelConfig(
  { ...base, model_type: 'qwen3', head_dim: 6, tie_word_embeddings: true },
  '/m/config.json',
);
const llama = parseModelConfig(
  { ...base, model_type: 'llama', attention_bias: true, mlp_bias: true },
  '/m/config.json',
);

const list = (config: ModelConfig) => expectedTensors(config).map((t) => `${t.name} [${t.shape.join(', ')}] ${t.role}`);

describe('expectedTensors', () => {
  it('lists Qwen2 tensors in state-dict order: q/k/v biases, no o_proj bias, untied lm_head', () => {
    // head_dim 2 (8 / 4): q 4*2 = 8 rows, k/v 2*2 = 4 rows.
    assert.deepEqual(list(qwen2), [
      'model.embed_tokens.weight [11, 8] embedding',
      'model.layers.0.self_attn.q_proj.weight [8, 8] linear',
      'model.layers.0.self_attn.q_proj.bias [8] bias',
      'model.layers.0.self_attn.k_proj.weight [4, 8] linear',
      'model.layers.0.self_attn.k_proj.bias [4] bias',
      'model.layers.0.self_attn.v_proj.weight [4, 8] linear',
      'model.layers.0.self_attn.v_proj.bias [4] bias',
      'model.layers.0.self_attn.o_proj.weight [8, 8] linear',
      'model.layers.0.mlp.gate_proj.weight [12, 8] linear',
      'model.layers.0.mlp.up_proj.weight [12, 8] linear',
      'model.layers.0.mlp.down_proj.weight [8, 12] linear',
      'model.layers.0.input_layernorm.weight [8] norm',
      'model.layers.0.post_attention_layernorm.weight [8] norm',
      'model.norm.weight [8] norm',
      'lm_head.weight [11, 8] linear',
    ]);
  });

  it('lists Qwen3 tensors: q_norm/k_norm per head, head_dim apart from hidden/heads, tied lm_head omitted', () => {
    assert.deepEqual(list(qwen3), [
      'model.embed_tokens.weight [11, 8] embedding',
      'model.layers.0.self_attn.q_proj.weight [24, 8] linear',
      'model.layers.0.self_attn.k_proj.weight [12, 8] linear',
      'model.layers.0.self_attn.v_proj.weight [12, 8] linear',
      'model.layers.0.self_attn.o_proj.weight [8, 24] linear',
      'model.layers.0.self_attn.q_norm.weight [6] norm',
      'model.layers.0.self_attn.k_norm.weight [6] norm',
      'model.layers.0.mlp.gate_proj.weight [12, 8] linear',
      'model.layers.0.mlp.up_proj.weight [12, 8] linear',
      'model.layers.0.mlp.down_proj.weight [8, 12] linear',
      'model.layers.0.input_layernorm.weight [8] norm',
      'model.layers.0.post_attention_layernorm.weight [8] norm',
      'model.norm.weight [8] norm',
    ]);
  });

  it('adds Llama attention and MLP biases when configured, for every layer', () => {
    const names = expectedTensors({ ...llama, numLayers: 3 }).map((t) => t.name);
    for (const proj of [
      'self_attn.q_proj',
      'self_attn.k_proj',
      'self_attn.v_proj',
      'self_attn.o_proj',
      'mlp.gate_proj',
      'mlp.up_proj',
      'mlp.down_proj',
    ]) {
      for (const layer of [0, 1, 2])
        assert.ok(names.includes(`model.layers.${layer}.${proj}.bias`), `${layer} ${proj}`);
    }
    assert.equal(names.filter((n) => n.endsWith('.bias')).length, 21);
  });
});

describe('validateCheckpoint', () => {
  let root: string;
  let n = 0;
  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'rs-weights-'));
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  /** A checkpoint folder holding `config`'s tensors, edited by `edit`. */
  function checkpoint(
    config: ModelConfig,
    edit: (tensors: { name: string; shape: number[] }[]) => { name: string; shape: number[] }[] = (t) => t,
  ): CheckpointReader {
    const dir = path.join(root, `c${n++}`);
    const tensors = edit(expectedTensors(config).map(({ name, shape }) => ({ name, shape })));
    writeSafetensors(
      path.join(dir, 'model.safetensors'),
      tensors.map((t) => ({ ...t, data: new Float32Array(t.shape.reduce((a, b) => a * b, 1)) })),
      { dtype: 'bfloat16' },
    );
    return CheckpointReader.open(dir);
  }

  it('accepts a checkpoint with exactly the expected tensors', () => {
    for (const config of [qwen2, qwen3, llama]) {
      const reader = checkpoint(config);
      const problems = validateCheckpoint(reader, config);
      assert.deepEqual(problems, {
        missing: [],
        unexpected: [],
        shapeMismatches: [],
        unsupportedDtypes: [],
        ignored: [],
      });
      reader.close();
    }
  });

  it('ignores saved rotary buffers and a tied lm_head, as transformers does', () => {
    const reader = checkpoint(qwen3, (t) => [
      ...t,
      { name: 'lm_head.weight', shape: [11, 8] },
      { name: 'model.layers.0.self_attn.rotary_emb.inv_freq', shape: [3] },
    ]);
    const problems = validateCheckpoint(reader, qwen3);
    assert.deepEqual(
      problems.ignored.map((i) => i.name),
      ['lm_head.weight', 'model.layers.0.self_attn.rotary_emb.inv_freq'],
    );
    reader.close();
  });

  it('lists missing, unexpected and misshapen tensors in one message naming the files', () => {
    const reader = checkpoint(qwen2, (t) =>
      t
        .filter((x) => x.name !== 'model.layers.0.self_attn.k_proj.bias' && x.name !== 'lm_head.weight')
        .map((x) => (x.name === 'model.embed_tokens.weight' ? { ...x, shape: [12, 8] } : x))
        .concat([{ name: 'model.layers.0.self_attn.q_norm.weight', shape: [2] }]),
    );
    const file = path.join(reader.dir, 'model.safetensors');
    assert.throws(
      () => validateCheckpoint(reader, qwen2),
      (error: unknown) => {
        assert.ok(error instanceof CheckpointError);
        assert.equal(
          error.message,
          `${reader.dir}: the checkpoint does not match /m/config.json (qwen2, 1 layers, hidden 8):\n` +
            'missing tensors (2):\n' +
            '  model.layers.0.self_attn.k_proj.bias [4]\n' +
            '  lm_head.weight [11, 8]\n' +
            'shapes that disagree with config.json (1):\n' +
            `  model.embed_tokens.weight: [12, 8] in ${file}, config needs [11, 8]\n` +
            'unexpected tensors (1):\n' +
            `  model.layers.0.self_attn.q_norm.weight in ${file}`,
        );
        return true;
      },
    );
    reader.close();
  });

  it('reports a tensor stored in a dtype it cannot read', () => {
    // An I32 norm weight, laid out by hand (our writer only writes float types).
    const dir = path.join(root, `c${n++}`);
    fs.mkdirSync(dir);
    const tensors = expectedTensors(llama);
    const header: Record<string, unknown> = {};
    let offset = 0;
    for (const t of tensors) {
      const bytes = t.shape.reduce((a, b) => a * b, 1) * 4;
      header[t.name] = {
        dtype: t.name === 'model.norm.weight' ? 'I32' : 'F32',
        shape: t.shape,
        data_offsets: [offset, offset + bytes],
      };
      offset += bytes;
    }
    const json = Buffer.from(JSON.stringify(header));
    const length = Buffer.alloc(8);
    length.writeBigUInt64LE(BigInt(json.length));
    fs.writeFileSync(path.join(dir, 'model.safetensors'), Buffer.concat([length, json, Buffer.alloc(offset)]));
    const reader = CheckpointReader.open(dir);
    assert.throws(
      () => validateCheckpoint(reader, llama),
      /unsupported dtypes \(1\):\n {2}model\.norm\.weight: I32 in .*model\.safetensors \(supported: F32, F16, BF16\)/,
    );
    reader.close();
  });
});
