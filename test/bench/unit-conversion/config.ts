/**
 * The unit-conversion task, trained from the pretrained base: a task that is in no example and
 * not in the pretraining corpus (test/unit/bases/contamination.test.ts checks the corpus).
 * `npm run bench:new-task` runs it with the SFT-only baseline.
 */
import { defineConfig, z } from 'rollout-studio';
import { rewards } from './rewards';
import { SYSTEM_PROMPT } from './data';
import { tools } from './tools';

export default defineConfig({
  name: 'unit-conversion',
  model: { path: 'rollout-studio:base', lora: false },
  data: { train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: z.object({ answer: z.string() }) },
  tools,
  rewards,
  sft: { data: 'data/sft.jsonl', epochs: 3, lr: 3e-4, batchSize: 8, warmupSteps: 5 },
  // Two passes of two mini-batches over each batch: an update costs a tenth of a rollout here.
  algorithm: { name: 'grpo', groupSize: 8, epochs: 2, miniBatches: 2 },
  rollout: {
    promptsPerStep: 4,
    budget: { maxTurns: 3, maxNewTokensPerTurn: 96, maxTotalTokens: 768, maxToolResultTokens: 32 },
    // At 1 the base garbles multi-token unit names in 40 % of sampled calls ("kilatrs").
    temperature: 0.7,
    systemPrompt: SYSTEM_PROMPT,
    templateKwargs: { enable_thinking: false },
  },
  // Warm-up: Adam's first step moves every weight by a full lr (single tokens' log-probs moved
  // 5–7 nats in the first step's mini-batches without it; k3 then measured up to 5e4 before it
  // was bounded at 10 per token).
  optimization: { lr: 1e-4, warmupSteps: 3, maxGradNorm: 1, microBatchSize: 8 },
  steps: 40,
  seed: 1,
  evaluation: { temperature: 0 },
  // A checkpoint every 8 steps: a run killed part-way resumes near where it stopped (`train --resume RUN_DIR`).
  output: { checkpointEvery: 8, keepCheckpoints: 1000 },
});
