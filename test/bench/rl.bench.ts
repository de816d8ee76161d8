/**
 * npm run bench:rl — our version of Agent-R1's main table, on examples/multihop-search: held-out
 * exact match after PPO, GRPO, REINFORCE++, REINFORCE++ with baseline and RLOO, each from the
 * same warm start with the same budget (steps × prompts × samples), plus two GRPO ablations —
 * the loss mask off (the policy loss also trains on tool results and template text) and process
 * rewards off (only the outcome reward) — with mean tool calls per trajectory and throughput per
 * phase (generated tokens/s in rollout, trained tokens/s in update, seconds per phase).
 *
 *   npm run bench:rl [-- --steps N] [--only grpo,ppo,…]
 *
 * The warm start is the demo's (`npm run demo` makes the same data and model): SFT on imperfect
 * demonstrations, saved as the run's step-0 checkpoint, which every variant then loads. Runs go
 * to test-output/bench-rl/; the table is printed and written to test-output/bench-rl/table.md.
 * Not part of CI: about 10 minutes on two cores (the warm start about 4, each variant under 1).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { prepareData } from '../../examples/multihop-search/demo';
import { type LoadedConfig, type TrainingConfig } from '../../trainer/training/trainingConfig';
import { TrainingRun, type EvaluationResult } from '../../trainer/training/trainingRun';
import { RunStoreReader } from '../../trainer/shared/runstore';
import { loadConfig } from "../../trainer/usercode/loadConfig";

const EXAMPLE_CONFIG = path.resolve(__dirname, '../../examples/multihop-search/config.ts');
const OUT = path.resolve(__dirname, '../../test-output/bench-rl');

interface Variant {
  name: string;
  /** What changes against the example's config (GRPO, process rewards on, loss mask on). */
  change: (c: TrainingConfig) => void;
}

const algorithm = (name: TrainingConfig['algorithm']['name']) => (c: TrainingConfig) => {
  c.algorithm.name = name;
};

const VARIANTS: Variant[] = [
  { name: 'ppo', change: (c) => Object.assign(c.algorithm, { name: 'ppo', criticWarmupSteps: 0 }) },
  { name: 'grpo', change: algorithm('grpo') },
  { name: 'reinforce++', change: algorithm('reinforce++') },
  { name: 'reinforce++-baseline', change: algorithm('reinforce++-baseline') },
  { name: 'rloo', change: algorithm('rloo') },
  { name: 'grpo, loss mask off', change: (c) => (c.algorithm.lossMask = 'response') },
  { name: 'grpo, process rewards off', change: (c) => (c.rewards = { ...c.rewards, toolRewards: false }) },
];

interface Row {
  variant: string;
  emBefore: number;
  emAfter: number;
  toolCallsAfter: number;
  rewardLast: number;
  /** Tool calls per trajectory in the training batches of the last three steps (sampled at the rollout temperature). */
  toolCallsTraining: number;
  rolloutTokensPerS: number;
  updateTokensPerS: number;
  rolloutS: number;
  rewardS: number;
  updateS: number;
}

function mean(values: number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN;
}

/** The run's per-phase throughput and time, averaged over its RL steps. */
function phases(runDir: string): Pick<Row, 'rolloutTokensPerS' | 'updateTokensPerS' | 'rolloutS' | 'rewardS' | 'updateS' | 'rewardLast' | 'toolCallsTraining'> {
  const train = new RunStoreReader(runDir).metrics().records.filter((m) => m.kind === 'train');
  const of = (key: string) => mean(train.map((m) => m.values[key]).filter((v): v is number => typeof v === 'number'));
  const last = train.at(-1)?.values;
  return {
    rolloutTokensPerS: of('throughput/rollout_tokens_per_s'),
    updateTokensPerS: of('throughput/update_tokens_per_s'),
    rolloutS: of('time/rollout_s'),
    rewardS: of('time/reward_s'),
    updateS: of('time/update_s'),
    rewardLast: typeof last?.['reward/mean'] === 'number' ? last['reward/mean'] : NaN,
    toolCallsTraining: mean(train.slice(-3).map((m) => m.values['tools/calls_per_trajectory']).filter((v): v is number => typeof v === 'number')),
  };
}

async function train(loaded: LoadedConfig, runDir: string): Promise<{ before?: EvaluationResult; after?: EvaluationResult }> {
  fs.rmSync(runDir, { recursive: true, force: true });
  const log = (line: string) => console.log(`  ${path.basename(runDir)}: ${line}`);
  const result = await new TrainingRun(loaded, { runDir, log: (line) => (/^(eval|run|step \d+\/)/.test(line) ? log(line) : undefined) }).run();
  if (result.run.status !== 'finished') throw new Error(`${runDir}: the run ${result.run.status}: ${result.run.error?.message ?? ''}`);
  return { before: result.evalBefore, after: result.evalAfter };
}

const pct = (x: number) => (100 * x).toFixed(1);
const num = (x: number, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');

function table(rows: Row[], meta: string): string {
  const lines = [
    meta,
    '',
    '| variant | held-out EM before | after | Δ | tool calls / trajectory, held-out after (greedy) | tool calls / trajectory, training (last 3 steps) | reward, last step | rollout tok/s | update tok/s | rollout s/step | reward s/step | update s/step |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.variant} | ${pct(r.emBefore)} | ${pct(r.emAfter)} | ${(100 * (r.emAfter - r.emBefore)).toFixed(1)} | ${num(r.toolCallsAfter, 2)} | ${num(r.toolCallsTraining, 2)} | ${num(r.rewardLast, 3)} | ` +
        `${num(r.rolloutTokensPerS)} | ${num(r.updateTokensPerS)} | ${num(r.rolloutS, 2)} | ${num(r.rewardS, 3)} | ${num(r.updateS, 2)} |`,
    ),
  ];
  return lines.join('\n');
}

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { steps: { type: 'string' }, only: { type: 'string' } } });
  const only = values.only ? new Set(values.only.split(',').map((s) => s.trim())) : undefined;
  if (only) for (const name of only) if (!VARIANTS.some((v) => v.name === name)) throw new Error(`--only: no variant "${name}"; variants: ${VARIANTS.map((v) => v.name).join(', ')}`);
  prepareData(false);
  fs.mkdirSync(OUT, { recursive: true });

  // The warm start, once: SFT, the held-out evaluation, and one GRPO step (its step-0 checkpoint is the SFT model).
  console.log('warm start (SFT on the demonstrations)');
  const warmLoaded = await loadConfig(EXAMPLE_CONFIG);
  warmLoaded.config.steps = 1;
  const warmDir = path.join(OUT, 'warm-start');
  const warm = await train(warmLoaded, warmDir);
  const warmModel = path.join(warmDir, 'checkpoints', 'step-000000');
  if (!fs.existsSync(path.join(warmModel, 'config.json'))) throw new Error(`the warm start left no step-0 checkpoint in ${warmModel}`);
  const emBefore = warm.before!.score!;

  const rows: Row[] = [];
  for (const variant of VARIANTS) {
    if (only && !only.has(variant.name)) continue;
    console.log(`${variant.name}`);
    const loaded = await loadConfig(EXAMPLE_CONFIG);
    const c = loaded.config;
    c.model.path = warmModel;
    delete c.sft;
    if (values.steps !== undefined) c.steps = Number(values.steps);
    variant.change(c);
    const runDir = path.join(OUT, variant.name.replace(/[^a-z0-9+]+/gi, '-'));
    const run = await train(loaded, runDir);
    rows.push({ variant: variant.name, emBefore: run.before!.score!, emAfter: run.after!.score!, toolCallsAfter: run.after!.toolCallsPerTrajectory, ...phases(runDir) });
  }

  const c = (await loadConfig(EXAMPLE_CONFIG)).config;
  const steps = values.steps !== undefined ? Number(values.steps) : c.steps;
  const meta =
    `bench:rl on ${os.cpus().length} × ${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}. ` +
    `Every variant: ${steps} steps × ${c.rollout.promptsPerStep} prompts × ${c.algorithm.groupSize} samples from the same warm start, lr ${c.optimization.lr}, greedy evaluation on ${warm.before!.rows} held-out questions.`;
  const text = table(rows, meta);
  fs.writeFileSync(path.join(OUT, 'table.md'), `${text}\n`);
  console.log(`\n${text}\n`);
  console.log(`BENCH_RL ${JSON.stringify({ emBefore, rows: rows.map((r) => ({ variant: r.variant, emAfter: r.emAfter, toolCallsAfter: r.toolCallsAfter })) })}`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(`bench:rl failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
