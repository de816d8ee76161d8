/**
 * Training config of the multi-hop search example: the pretrained base, a supervised warm start
 * on imperfect demonstrations, then GRPO with the search tool, evaluated on held-out questions
 * before and after RL. `npm run demo` generates the data, then runs this (see README.md).
 */
import { defineConfig } from 'rollout-studio';
import { rewards } from './rewards';
import { MultihopFields, SYSTEM_PROMPT } from './rows';
import { tools } from './tools';

export default defineConfig({
  name: 'multihop-search',
  model: { path: 'rollout-studio:base', lora: false },
  data: { train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: MultihopFields },
  tools,
  rewards,
  // Imperfect demonstrations (three in four stop one search early, see data.ts), each in a world of its own.
  sft: { data: 'data/sft.jsonl', epochs: 3, lr: 3e-4, batchSize: 8, warmupSteps: 5 },
  // Two passes of two mini-batches over each batch: an update costs far less than a rollout here.
  algorithm: { name: 'grpo', groupSize: 8, epochs: 2, miniBatches: 2 },
  rollout: {
    promptsPerStep: 4,
    budget: { maxTurns: 4, maxNewTokensPerTurn: 64, maxTotalTokens: 1024, maxToolResultTokens: 160 },
    // At 1 the base miscopies names of several words too often; 0.7 keeps the choice of how far to search open.
    temperature: 0.7,
    systemPrompt: SYSTEM_PROMPT,
    templateKwargs: { enable_thinking: false },
  },
  // Warm-up: Adam's first step moves every weight by a full lr.
  optimization: { lr: 1e-4, warmupSteps: 3, maxGradNorm: 1, microBatchSize: 8 },
  steps: 16,
  seed: 1,
  evaluation: { temperature: 0 },
  output: { checkpointEvery: 10, keepCheckpoints: 2 },
});
