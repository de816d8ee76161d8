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
  // The currency-agent tutorial's settings from here on (examples/currency-agent/config.ts, its README
  // has the reasons): 12 epochs of warm start, sampling at temperature 1, RL's learning rate 3e-5.
  sft: { data: 'data/sft.jsonl', epochs: 12, lr: 3e-4, batchSize: 8, warmupSteps: 5 },
  algorithm: { name: 'grpo', groupSize: 8, epochs: 2, miniBatches: 2 },
  rollout: {
    promptsPerStep: 4,
    budget: { maxTurns: 3, maxNewTokensPerTurn: 96, maxTotalTokens: 768, maxToolResultTokens: 32 },
    temperature: 1,
    stop: ['</answer>'],
    systemPrompt: SYSTEM_PROMPT,
    templateKwargs: { enable_thinking: false },
  },
  optimization: { lr: 3e-5, warmupSteps: 3 },
  steps: 40,
  seed: 1,
  evaluation: { temperature: 0 },
  // A checkpoint every 8 steps: a run killed part-way resumes near where it stopped (`train --resume RUN_DIR`).
  output: { checkpointEvery: 8, keepCheckpoints: 1000 },
});
