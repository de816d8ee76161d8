/**
 * `npm run bench:new-task`: a tool task that is in no example and not in the pretraining corpus
 * (unit conversion: numeric arguments copied from the question, a numeric result copied into
 * the answer), trained from the pretrained base as a new user would: ≤ 300 imperfect
 * demonstrations (most round the tool's result in the answer; see unit-conversion/data.ts), a
 * warm start, 40 GRPO steps, and the
 * SFT-only baseline given the same extra time. Prints
 *   RESULT task=unit_conversion em_before=… em_after=… …
 *   RESULT baseline=sft_only em_after=… …
 *   RESULT curve=… (training-batch exact match per GRPO step)
 *
 *   npm run bench:new-task [-- --steps N]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { rlSeconds, sftBaseline } from '../../trainer/training/sftBaseline';
import { TrainingRun } from '../../trainer/training/trainingRun';
import { RunStoreReader } from '../../trainer/shared/runstore';
import { DEFAULTS, generateDataset } from './unit-conversion/data';
import { loadConfig } from "../../trainer/usercode/loadConfig";

const TASK = path.join(__dirname, 'unit-conversion');

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { steps: { type: 'string' } } });
  const started = Date.now();
  generateDataset({ ...DEFAULTS, out: path.join(TASK, 'data') });
  const loaded = await loadConfig(path.join(TASK, 'config.ts'));
  if (values.steps) loaded.config.steps = Number(values.steps);
  const runDir = path.join(process.cwd(), '.rollout', 'runs', `new-task-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  const log = (line: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`);
  const result = await new TrainingRun(loaded, { runDir, log }).run();
  if (result.run.status !== 'finished') throw new Error(`the run ${result.run.status}: ${result.run.error?.message ?? ''} (${result.runDir})`);
  const pct = (x: number | undefined) => (x === undefined ? 'n/a' : (100 * x).toFixed(1));
  const seconds = rlSeconds(result.runDir);
  console.log(
    `RESULT task=unit_conversion demonstrations=${fs.readFileSync(path.join(TASK, 'data', 'sft.jsonl'), 'utf8').trim().split('\n').length} grpo_steps=${loaded.config.steps} ` +
      `em_before=${pct(result.evalBefore?.score)} em_after=${pct(result.evalAfter?.score)} tool_calls_before=${result.evalBefore?.toolCallsPerTrajectory.toFixed(2)} tool_calls_after=${result.evalAfter?.toolCallsPerTrajectory.toFixed(2)} ` +
      `heldout_rows=${result.evalAfter?.rows} grpo_seconds=${seconds.toFixed(0)} seconds=${((Date.now() - started) / 1000).toFixed(0)}`,
  );
  const curve = new RunStoreReader(result.runDir)
    .metrics()
    .records.filter((r) => r.kind === 'train')
    .map((r) => (100 * ((r.values['score/exact_match'] as number | undefined) ?? 0)).toFixed(0));
  console.log(`RESULT curve=${curve.join(',')}`);
  const baseline = await sftBaseline(loaded, { from: path.join(result.runDir, 'checkpoints', 'step-000000'), seconds, outDir: path.join(result.runDir, 'sft-only-baseline'), log });
  console.log(
    `RESULT baseline=sft_only em_before=${pct(result.evalBefore?.score)} em_after=${pct(baseline.evaluation.score)} tool_calls_after=${baseline.evaluation.toolCallsPerTrajectory.toFixed(2)} ` +
      `extra_sft_steps=${baseline.steps} sft_seconds=${baseline.seconds.toFixed(0)} seconds=${((Date.now() - started) / 1000).toFixed(0)}`,
  );
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(`bench:new-task failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
