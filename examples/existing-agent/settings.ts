import { z, type TrainingConfigInput } from 'rollout-studio';
import { rewards } from '../currency-agent/rewards';
import { tools } from '../currency-agent/tools';

/**
 * The currency tutorial's settings, shared by this folder's configs (one per agent). `tools` are
 * not what the agents call — each agent brings its own — but what the warm start's demonstrations
 * (data/sft.jsonl, made by ../currency-agent/data.ts) are rendered with: the same schema each agent
 * sends, so the warm start sees the prompts the agents will send.
 */
export const settings = {
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
} satisfies TrainingConfigInput;
