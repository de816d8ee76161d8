/**
 * `npm run bench:new-task`: tool tasks that are in no example and not in the pretraining corpus,
 * trained from the pretrained base as a new user would, with the currency-agent tutorial's settings:
 * ≤ 300 imperfect demonstrations, a warm start, 40 GRPO steps, and (unless `--no-baseline`) the
 * SFT-only baseline given the same extra time: more SFT on the same imperfect demonstrations, so
 * it answers "was RL's gain just more training?" and is not a strong rival (more imitation of
 * rounded answers cannot learn exact ones; `npm run bench:rl` has the equal-budget arms: RFT and
 * SFT on correct demonstrations).
 *
 *   unit-conversion (default)  one tool; numeric arguments copied from the question, a numeric
 *                              result copied into the answer (unit-conversion/data.ts)
 *   shipping-quote             two tools in a chain (a distance, then a price for it), held-out
 *                              questions outside the training range (shipping-quote/data.ts)
 *   forecast                   one tool with two enum arguments; the answer is the high or the
 *                              low of its result, whichever the question asks for, where the
 *                              demonstrations report the high three times in four (forecast/data.ts)
 *
 * Prints, per seed,
 *   RESULT task=… seed=… em_before=… em_after=… best_step=… best_em=… collapse_warnings=… …
 *   RESULT baseline=sft_only seed=… em_after=… …
 *   RESULT curve=… (training-batch exact match per GRPO step)
 * and over the seeds `RESULT task=… seeds=… gain_mean=… gain_min=…`.
 *
 *   npm run bench:new-task [-- --task shipping-quote] [--seeds 1,2,3] [--steps N] [--no-baseline]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { rlSeconds, sftBaseline, SFT_BASELINE_MEANING } from '../../trainer/pipeline/training/warmStart/sftBaseline';
import { TrainingRun, type TrainResult } from '../../trainer/pipeline/training/trainingRun';
import { RunStoreReader } from '../../trainer/contract/runstore';
import { loadConfig } from '../../trainer/bridges/usercode/loadConfig';
import * as unitConversion from './unit-conversion/data';
import * as shippingQuote from './shipping-quote/data';
import * as forecast from './forecast/data';

const TASKS = {
  'unit-conversion': {
    dir: 'unit-conversion',
    generate: () =>
      unitConversion.generateDataset({
        ...unitConversion.DEFAULTS,
        out: path.join(__dirname, 'unit-conversion', 'data'),
      }),
  },
  'shipping-quote': {
    dir: 'shipping-quote',
    generate: () =>
      shippingQuote.generateDataset({ ...shippingQuote.DEFAULTS, out: path.join(__dirname, 'shipping-quote', 'data') }),
  },
  forecast: {
    dir: 'forecast',
    generate: () => forecast.generateDataset({ ...forecast.DEFAULTS, out: path.join(__dirname, 'forecast', 'data') }),
  },
} as const;

const pct = (x: number | undefined) => (x === undefined ? 'n/a' : (100 * x).toFixed(1));

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      task: { type: 'string', default: 'unit-conversion' },
      seeds: { type: 'string', default: '1' },
      steps: { type: 'string' },
      'no-baseline': { type: 'boolean', default: false },
    },
  });
  const task = TASKS[values.task as keyof typeof TASKS];
  if (!task) throw new Error(`--task: expected one of ${Object.keys(TASKS).join(', ')}, got ${values.task}`);
  const seeds = values.seeds!.split(',').map(Number);
  const started = Date.now();
  const log = (line: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(5)} s] ${line}`);
  task.generate();
  const taskDir = path.join(__dirname, task.dir);
  const gains: number[] = [];
  for (const seed of seeds) {
    const loaded = await loadConfig(path.join(taskDir, 'config.ts'));
    loaded.config.seed = seed;
    if (values.steps) loaded.config.steps = Number(values.steps);
    const runDir = path.join(
      process.cwd(),
      '.rollout',
      'runs',
      `new-task-${values.task}-seed${seed}-${new Date().toISOString().replace(/[:.]/g, '-')}`,
    );
    const result = await new TrainingRun(loaded, { runDir, log }).run();
    if (result.run.status !== 'finished')
      throw new Error(`the run ${result.run.status}: ${result.run.error?.message ?? ''} (${result.runDir})`);
    report(values.task!, seed, loaded.config.steps, taskDir, result);
    if (result.evalBefore?.score !== undefined && result.evalAfter?.score !== undefined)
      gains.push(100 * (result.evalAfter.score - result.evalBefore.score));
    if (!values['no-baseline']) {
      const seconds = rlSeconds(result.runDir);
      const baseline = await sftBaseline(loaded, {
        from: path.join(result.runDir, 'checkpoints', 'step-000000'),
        seconds,
        outDir: path.join(result.runDir, 'sft-only-baseline'),
        log,
      });
      console.log(
        `RESULT baseline=sft_only seed=${seed} em_before=${pct(result.evalBefore?.score)} em_after=${pct(baseline.evaluation.score)} tool_calls_after=${baseline.evaluation.toolCallsPerTrajectory.toFixed(2)} ` +
          `extra_sft_steps=${baseline.steps} sft_seconds=${baseline.seconds.toFixed(0)} seconds=${((Date.now() - started) / 1000).toFixed(0)}`,
      );
      console.log(SFT_BASELINE_MEANING);
    }
  }
  if (gains.length)
    console.log(
      `RESULT task=${values.task} seeds=${seeds.join(',')} gain_mean=${(gains.reduce((a, b) => a + b, 0) / gains.length).toFixed(1)} gain_min=${Math.min(...gains).toFixed(1)} gain_max=${Math.max(...gains).toFixed(1)} seconds=${((Date.now() - started) / 1000).toFixed(0)}`,
    );
}

function report(task: string, seed: number, steps: number, taskDir: string, result: TrainResult): void {
  const reader = new RunStoreReader(result.runDir);
  const records = reader.metrics().records;
  const warnings = records.flatMap((r) => r.warnings ?? []);
  const collapses = warnings.filter((w) => w.severity === 'critical').length;
  const curve = records
    .filter((r) => r.kind === 'train')
    .map((r) => (100 * ((r.values['score/exact_match'] as number | undefined) ?? 0)).toFixed(0));
  const parseErrors = records.filter((r) => r.kind === 'train').map((r) => r.values['tools/parse_error_rate'] ?? 0);
  const demos = fs
    .readFileSync(path.join(taskDir, 'data', 'sft.jsonl'), 'utf8')
    .trim()
    .split('\n').length;
  console.log(
    `RESULT task=${task} seed=${seed} demonstrations=${demos} grpo_steps=${steps} ` +
      `em_before=${pct(result.evalBefore?.score)} em_after=${pct(result.evalAfter?.score)} tool_calls_before=${result.evalBefore?.toolCallsPerTrajectory.toFixed(2)} tool_calls_after=${result.evalAfter?.toolCallsPerTrajectory.toFixed(2)} ` +
      `best_step=${result.best?.step ?? 'n/a'} best_em=${pct(result.best?.value)} critical_warnings=${collapses} warnings=${warnings.length} ` +
      `max_parse_error_rate=${Math.max(0, ...(parseErrors as number[])).toFixed(3)} heldout_rows=${result.evalAfter?.rows} grpo_seconds=${rlSeconds(result.runDir).toFixed(0)}`,
  );
  console.log(`RESULT seed=${seed} curve=${curve.join(',')}`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(`bench:new-task failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
