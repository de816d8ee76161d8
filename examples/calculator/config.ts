/**
 * Training config of the calculator example: the pretrained base, a warm start on imperfect
 * demonstrations (three in four answer without the calculator, one digit off), then GRPO with
 * the calculator tool, evaluated on held-out problems before and after RL (README.md: the curve).
 *
 *   npx tsx examples/calculator/data.ts
 *   npx rollout-studio train examples/calculator/config.ts
 */
import { defineConfig } from 'rollout-studio';
import { rewards } from './rewards';
import { CalculatorFields, SYSTEM_PROMPT } from './rows';
import { tools } from './tools';

export default defineConfig({
  name: 'calculator',
  model: { path: 'rollout-studio:base', lora: false },
  data: { train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: CalculatorFields },
  tools,
  rewards,
  sft: { data: 'data/sft.jsonl', epochs: 3, lr: 3e-4, batchSize: 8, warmupSteps: 5 },
  // Two passes of two mini-batches over each batch: an update costs far less than a rollout here.
  algorithm: { name: 'grpo', groupSize: 8, epochs: 2, miniBatches: 2 },
  rollout: {
    promptsPerStep: 4,
    budget: { maxTurns: 3, maxNewTokensPerTurn: 64, maxTotalTokens: 768, maxToolResultTokens: 32 },
    // The base copies long numbers less reliably when sampled at 1.
    temperature: 0.7,
    systemPrompt: SYSTEM_PROMPT,
    templateKwargs: { enable_thinking: false },
  },
  // Warm-up: Adam's first step moves every weight by a full lr.
  optimization: { lr: 1e-4, warmupSteps: 3, maxGradNorm: 1, microBatchSize: 8 },
  steps: 30,
  seed: 1,
  evaluation: { temperature: 0 },
  output: { checkpointEvery: 10, keepCheckpoints: 2 },
});
