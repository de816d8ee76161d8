/**
 * `npm run demo`: the multi-hop search example end to end on a CPU, in minutes.
 *
 *   1. generates the knowledge base's questions and demonstrations (data.ts) into data/
 *   2. trains config.ts from the pretrained base (rollout-studio:base): a supervised warm start
 *      on imperfect demonstrations (three in four stop one search early), an evaluation on
 *      held-out people, GRPO with the search tool, and the evaluation again
 *   3. the SFT-only baseline: from the same warm start, more SFT on the same imperfect
 *      demonstrations for as long as GRPO ran, evaluated the same way — "was RL's gain just more
 *      training?", not a strong rival (more imitation cannot fix the early stops; RFT and SFT on
 *      correct demonstrations, with equal budgets, are `npm run bench:rl`'s arms)
 *   4. prints `RESULT em_before=… em_after=…` (GRPO) and `RESULT baseline=sft_only em_after=…`
 *
 * The run stays in the run store (.rollout/runs/ of the folder you ran it from), where the
 * editor's Rollout Runs view, the panels and the replay debugger find it.
 *
 *   npm run demo [-- --steps N] [--fresh] [--no-baseline]
 *
 * --steps        GRPO steps (default: the config's)
 * --fresh        regenerate the data even when it exists
 * --no-baseline  skip the SFT-only baseline
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { rlSeconds, sftBaseline, SFT_BASELINE_MEANING } from '../../trainer/pipeline/training/warmStart/sftBaseline';
import { TrainingRun, type EvaluationResult } from '../../trainer/pipeline/training/trainingRun';
import { DEFAULTS, generateDataset } from './data';
import { loadConfig } from '../../trainer/bridges/usercode/loadConfig';

const HERE = __dirname;

export function prepareData(fresh: boolean): void {
  const out = path.join(HERE, 'data');
  if (!fresh && ['train', 'heldout', 'sft'].every((f) => fs.existsSync(path.join(out, `${f}.jsonl`)))) return;
  const written = generateDataset({ out, ...DEFAULTS });
  console.log(
    `data: ${Object.entries(written)
      .map(([name, { rows }]) => `${name} ${rows}`)
      .join(', ')} rows in ${path.relative(process.cwd(), out)}`,
  );
}

const percent = (r: Pick<EvaluationResult, 'score'> | undefined) =>
  r?.score !== undefined ? (100 * r.score).toFixed(1) : 'n/a'; // the task metric: exact_match, the config's first outcome reward

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      steps: { type: 'string' },
      fresh: { type: 'boolean', default: false },
      'no-baseline': { type: 'boolean', default: false },
    },
  });
  const started = Date.now();
  prepareData(values.fresh!);
  const loaded = await loadConfig(path.join(HERE, 'config.ts'));
  if (values.steps !== undefined) {
    const steps = Number(values.steps);
    if (!Number.isInteger(steps) || steps < 1)
      throw new Error(`--steps: expected a positive whole number, got ${JSON.stringify(values.steps)}`);
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
  if (result.run.status !== 'finished')
    throw new Error(
      `the run ${result.run.status}: ${result.run.error?.message ?? 'see its run.json'} (${result.runDir})`,
    );
  console.log(`run store: ${path.relative(process.cwd(), result.runDir)}`);
  const grpoSeconds = rlSeconds(result.runDir);
  console.log(
    `RESULT em_before=${percent(result.evalBefore)} em_after=${percent(result.evalAfter)} ` +
      `tool_calls_before=${result.evalBefore?.toolCallsPerTrajectory.toFixed(2) ?? 'n/a'} tool_calls_after=${result.evalAfter?.toolCallsPerTrajectory.toFixed(2) ?? 'n/a'} ` +
      `heldout_rows=${result.evalAfter?.rows ?? 0} grpo_steps=${loaded.config.steps} grpo_seconds=${grpoSeconds.toFixed(0)} seconds=${((Date.now() - started) / 1000).toFixed(0)}`,
  );
  if (values['no-baseline']) return;
  const baseline = await sftBaseline(loaded, {
    from: path.join(result.runDir, 'checkpoints', 'step-000000'),
    seconds: grpoSeconds,
    outDir: path.join(result.runDir, 'sft-only-baseline'),
    log,
  });
  console.log(
    `RESULT baseline=sft_only em_before=${percent(result.evalBefore)} em_after=${percent(baseline.evaluation)} ` +
      `tool_calls_after=${baseline.evaluation.toolCallsPerTrajectory.toFixed(2)} extra_sft_steps=${baseline.steps} sft_seconds=${baseline.seconds.toFixed(0)} seconds=${((Date.now() - started) / 1000).toFixed(0)}`,
  );
  console.log(SFT_BASELINE_MEANING);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
