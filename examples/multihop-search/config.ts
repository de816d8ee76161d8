/**
 * Training config of the multi-hop search example: a supervised warm start on imperfect
 * demonstrations, then GRPO with the search tool, evaluated on held-out questions before and
 * after RL. `npm run demo` creates the model and the data, then runs this (see README.md).
 */
import { defineConfig } from 'rollout-studio';
import { rewards } from './rewards';
import { MultihopFields, SYSTEM_PROMPT } from './rows';
import { tools } from './tools';

export default defineConfig({
  name: 'multihop-search',
  model: { path: 'model', lora: false },
  data: { train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: MultihopFields },
  tools,
  rewards,
  // A curriculum: reading names back first, then the task's imperfect demonstrations (see data.ts).
  sft: { data: ['data/reading.jsonl', 'data/sft.jsonl'], epochs: 1, lr: 1e-3, batchSize: 8, warmupSteps: 10 },
  algorithm: { name: 'grpo', groupSize: 8, clipLow: 0.2, clipHigh: 0.28 },
  rollout: {
    promptsPerStep: 8,
    budget: { maxTurns: 4, maxNewTokensPerTurn: 48, maxTotalTokens: 1024, maxToolResultTokens: 160 },
    temperature: 1,
    systemPrompt: SYSTEM_PROMPT,
    templateKwargs: { enable_thinking: false },
  },
  optimization: { lr: 1e-4, maxGradNorm: 1, microBatchSize: 8 },
  steps: 12,
  seed: 1,
  evaluation: { temperature: 0 },
  output: { checkpointEvery: 10, keepCheckpoints: 2 },
});
