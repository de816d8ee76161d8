/**
 * Training config of the deep-search example: a supervised warm start on imperfect
 * demonstrations, then GRPO with the `search` and `atlas` tools, evaluated on held-out questions
 * before, during and after RL. `npm run bench:rl` trains it with every algorithm (README.md).
 */
import { defineConfig } from 'rollout-studio';
import { rewards } from './rewards';
import { DeepSearchFields, SYSTEM_PROMPT } from './rows';
import { tools } from './tools';

export default defineConfig({
  name: 'deep-search',
  model: { path: 'model', lora: false },
  data: { train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: DeepSearchFields },
  tools,
  rewards,
  // A curriculum: reading names back first, then the task's imperfect demonstrations (data.ts).
  sft: { data: ['data/reading.jsonl', 'data/sft.jsonl'], epochs: 1, lr: 1e-3, batchSize: 8, warmupSteps: 10 },
  algorithm: { name: 'grpo', groupSize: 8 },
  rollout: {
    promptsPerStep: 8,
    budget: { maxTurns: 5, maxNewTokensPerTurn: 40, maxTotalTokens: 1024, maxToolResultTokens: 64 },
    temperature: 1,
    systemPrompt: SYSTEM_PROMPT,
    templateKwargs: { enable_thinking: false },
  },
  optimization: { lr: 1e-4, maxGradNorm: 1, microBatchSize: 8 },
  steps: 12,
  seed: 1,
  evaluation: { temperature: 0, every: 6 },
  output: { checkpointEvery: 12, keepCheckpoints: 1 },
});
