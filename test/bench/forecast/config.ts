/**
 * The forecast task (one tool, two enum arguments; the answer is the high or the low the tool
 * returns, whichever the question asks for), trained from the pretrained base with the
 * currency-agent tutorial's settings. `npm run bench:new-task -- --task forecast` runs it.
 */
import { defineConfig, z } from 'rollout-studio';
import { rewards } from './rewards';
import { tools } from './tools';

export default defineConfig({
  name: 'forecast',
  model: { path: 'rollout-studio:base', lora: false },
  data: { train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: z.object({ answer: z.string() }) },
  tools,
  rewards,
  sft: { data: 'data/sft.jsonl', epochs: 12, lr: 3e-4, batchSize: 8, warmupSteps: 5 },
  algorithm: { name: 'grpo', groupSize: 8, epochs: 2, miniBatches: 2 },
  rollout: {
    promptsPerStep: 4,
    budget: { maxTurns: 3, maxNewTokensPerTurn: 96, maxTotalTokens: 768, maxToolResultTokens: 32 },
    temperature: 1,
    stop: ['</answer>'],
    templateKwargs: { enable_thinking: false },
  },
  optimization: { lr: 3e-5, warmupSteps: 3 },
  steps: 40,
});
