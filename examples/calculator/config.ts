/**
 * Training config of the calculator example: the pretrained base, a warm start on imperfect
 * demonstrations (a quarter answer without the calculator, some mistype the expression), then
 * GRPO with the calculator tool, evaluated on held-out problems before and after RL.
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
  sft: { data: 'data/sft.jsonl', epochs: 1, lr: 3e-4, batchSize: 8, warmupSteps: 5 },
  algorithm: { name: 'grpo', groupSize: 8 },
  rollout: {
    promptsPerStep: 4,
    budget: { maxTurns: 3, maxNewTokensPerTurn: 48, maxTotalTokens: 768, maxToolResultTokens: 32 },
    temperature: 1,
    systemPrompt: SYSTEM_PROMPT,
    templateKwargs: { enable_thinking: false },
  },
  optimization: { lr: 1e-4, maxGradNorm: 1, microBatchSize: 8 },
  steps: 30,
  seed: 1,
  evaluation: { temperature: 0 },
  output: { checkpointEvery: 10, keepCheckpoints: 2 },
});
