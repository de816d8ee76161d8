/**
 * Training config of the visual-zoom example: a tiny Qwen2-VL trained from scratch — a
 * supervised warm start (reading drills, then imperfect demonstrations: most answer without
 * zooming), then GRPO with the zoom tool, evaluated on held-out pictures every 5 steps.
 * `npx tsx examples/visual-zoom/demo.ts` creates the model and the data, then runs this.
 */
import { defineConfig } from 'rollout-studio';
import { rewards } from './rewards';
import { SYSTEM_PROMPT, ZoomFields } from './rows';
import { tools } from './tools';

export default defineConfig({
  name: 'visual-zoom',
  // From scratch, the vision tower must learn colours too: every weight trains.
  model: { path: 'model', lora: false, trainVision: true },
  data: { train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: ZoomFields },
  tools,
  rewards,
  sft: { data: ['data/reading.jsonl', 'data/sft.jsonl'], epochs: 3, lr: 2e-3, batchSize: 16, warmupSteps: 10 },
  algorithm: { name: 'grpo', groupSize: 8, clipLow: 0.2, clipHigh: 0.28 },
  rollout: {
    promptsPerStep: 8,
    budget: {
      maxTurns: 3,
      maxNewTokensPerTurn: 32,
      maxTotalTokens: 512,
      maxToolResultTokens: 32,
      maxImagePixels: 256 * 256,
    },
    temperature: 1,
    systemPrompt: SYSTEM_PROMPT,
  },
  optimization: { lr: 2e-4, maxGradNorm: 1, microBatchSize: 16 },
  steps: 20,
  seed: 1,
  evaluation: { temperature: 0, every: 5 },
  output: { checkpointEvery: 20, keepCheckpoints: 1 },
});
