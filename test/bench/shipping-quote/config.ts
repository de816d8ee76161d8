/**
 * The shipping-quote task (two tools in a chain, held-out questions outside the training range),
 * trained from the pretrained base with the currency-agent tutorial's settings. `npm run bench:new-task --
 * --task shipping-quote` runs it.
 */
import { defineConfig, z } from 'rollout-studio';
import { rewards } from './rewards';
import { SYSTEM_PROMPT } from './data';
import { tools } from './tools';

export default defineConfig({
  name: 'shipping-quote',
  model: { path: 'rollout-studio:base', lora: false },
  data: { train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: z.object({ answer: z.string() }) },
  tools,
  rewards,
  sft: { data: 'data/sft.jsonl', epochs: 3, lr: 3e-4, batchSize: 8, warmupSteps: 5 },
  algorithm: { name: 'grpo', groupSize: 8, epochs: 2, miniBatches: 2 },
  rollout: {
    promptsPerStep: 4,
    budget: { maxTurns: 4, maxNewTokensPerTurn: 96, maxTotalTokens: 1024, maxToolResultTokens: 32 },
    // Constrained calls cannot garble a name, so the base samples at 1 (more groups with signal).
    temperature: 1,
    systemPrompt: SYSTEM_PROMPT,
    templateKwargs: { enable_thinking: false },
  },
  optimization: { lr: 3e-5, warmupSteps: 3, maxGradNorm: 1, microBatchSize: 8 },
  steps: 40,
  seed: 1,
  evaluation: { temperature: 0 },
  // A checkpoint every 8 steps: a run killed part-way resumes near where it stopped (`train --resume RUN_DIR`).
  output: { checkpointEvery: 8, keepCheckpoints: 1000 },
});
