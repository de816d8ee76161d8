/**
 * Training config of the deep-search example: the long pretrained base (its trajectories run
 * 660–840 tokens, past the 512 the base was trained on), a supervised warm start on imperfect
 * demonstrations, then GRPO with the `search` and `atlas` tools, evaluated on held-out questions
 * before, during and after RL. `npm run bench:rl -- --task deep-search` trains it with every
 * algorithm (README.md).
 */
import { defineConfig } from 'rollout-studio';
import { rewards } from './rewards';
import { DeepSearchFields, SYSTEM_PROMPT } from './rows';
import { tools } from './tools';

export default defineConfig({
  name: 'deep-search',
  model: { path: 'rollout-studio:base-long', lora: false },
  data: { train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: DeepSearchFields },
  tools,
  rewards,
  // 1,200 imperfect demonstrations (data.ts), each in a world of its own: 150 steps.
  sft: { data: 'data/sft.jsonl', epochs: 1, lr: 3e-4, batchSize: 8, warmupSteps: 5 },
  // Two passes of two mini-batches over each batch, as the multi-hop example's: an update costs far less than a rollout.
  algorithm: { name: 'grpo', groupSize: 8, epochs: 2, miniBatches: 2 },
  rollout: {
    promptsPerStep: 4,
    // A call with its template tokens is about 33 of the base's tokens; a search result about 26.
    budget: { maxTurns: 5, maxNewTokensPerTurn: 48, maxTotalTokens: 1024, maxToolResultTokens: 64 },
    // As everything that starts from the base: at 1 it garbles multi-token names too often.
    temperature: 0.7,
    systemPrompt: SYSTEM_PROMPT,
    templateKwargs: { enable_thinking: false },
  },
  // Warm-up: Adam's first step moves every weight by a full lr.
  optimization: { lr: 1e-4, warmupSteps: 3, maxGradNorm: 1, microBatchSize: 8 },
  // 8 steps: bench:rl's 8 variants and SFT-only × 3 seeds within the hour on 2 cores (at 10 steps with
  // an evaluation every 5, the run was on course for 64 minutes: a GRPO run 138 s, a PPO run 200 s).
  steps: 8,
  seed: 1,
  evaluation: { temperature: 0, every: 4 },
  output: { checkpointEvery: 8, keepCheckpoints: 1 },
});
