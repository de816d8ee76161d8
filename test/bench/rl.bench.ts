/**
 * npm run bench:rl — on the multi-hop task, by default, the arms of rlArms.ts: does RL add value
 * over SFT, and where? Six arms with equal budgets from one warm start (more SFT, RFT, GRPO,
 * correct SFT, correct SFT then GRPO, correct SFT then more of it), scored on an in-distribution,
 * a new-world and a new-question-type test set, with paired bootstrap intervals:
 *
 *   npm run bench:rl [-- --seeds 3] [--steps N] [--eval-rows N] [--warm-start-rows N] [--warm-start-epochs N] [--reuse-warm-start] [--report-only]
 *
 * `--report-only` trains nothing and reports the finished runs in test-output/bench-rl/arms/ (the
 * seeds on which every arm finished): a run stopped part-way still gives its table.
 *
 * `--variants` (and every run of `--task deep-search`) runs the older table below instead.
 *
 * The older table — does RL beat doing nothing, and which algorithm does it best? On one task,
 * from one warm start, every variant trains with the same budget and is evaluated greedily on
 * held-out questions, over several seeds:
 *
 *   algorithms  PPO (separate critic), GRPO, Dr. GRPO, REINFORCE++, REINFORCE++-baseline, RLOO —
 *               each with its own defaults (trainer/pipeline/rl/ADVANTAGES.md); every variant keeps the
 *               task's update schedule (epochs × mini-batches)
 *   ablations   GRPO with the loss mask off (`lossMask: 'response'`), GRPO with the process
 *               rewards truly off (`withoutProcessRewards`: tool rewards and error penalty)
 *   baselines   the warm start itself; SFT-only — as many optimizer steps over as many sequences
 *               as RL makes, on correct demonstrations of the training questions instead of RL;
 *               the majority answer of each question type
 *
 * Tasks (`--task`):
 *   multihop-search  (default) the demo's task from the pretrained base (rollout-studio:base):
 *                    multi-token names, one to three searches, a warm start that stops early
 *   deep-search      chains of two to four facts over two tools, a distractor beside every fact,
 *                    from the long base (rollout-studio:base-long: the trajectories run past the
 *                    512 tokens the base was trained on; see examples/deep-search/README.md)
 *
 * It prints, per variant, `RESULT <variant>_heldout_mean=… <variant>_heldout_std=…` (held-out
 * exact match in %, mean and standard deviation over seeds), the baselines' RESULT lines, a
 * table, and draws the curves (examples/<task>/bench-rl.svg) from the runs' metrics.
 *
 *   npm run bench:rl [-- --task multihop-search|deep-search] [--seeds 3] [--steps N] [--only grpo,ppo,…] [--reuse-warm-start] [--warm-start-rows N]
 *
 * `--warm-start-rows N` trains the warm start on the first N rows of each demonstration file only:
 * a smoke run of the whole pipeline (its numbers say nothing about the algorithms).
 *
 * Runs go to test-output/bench-rl/<task>/. Not part of CI. Budget: the issue asks for at most 60
 * minutes on two cores; each task's README gives the measured wall and CPU time.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { withoutProcessRewards } from '../../trainer/pipeline/rewards';
import { RunStoreReader } from '../../trainer/contract/runstore';
import {
  AlgorithmSection,
  CriticSection,
  type LoadedConfig,
  type TrainingConfig,
} from '../../trainer/pipeline/training/config/trainingConfig';
import { TrainingRun, type EvaluationResult } from '../../trainer/pipeline/training/trainingRun';
import { loadConfig } from '../../trainer/bridges/usercode/loadConfig';
import * as deepSearch from '../../examples/deep-search/data';
import * as multihop from '../../examples/multihop-search/data';
import { knowledgeBase } from '../../examples/multihop-search/tools';
import { writeJsonl } from '../../trainer/foundations/data';
import { rlChartSvg, type ChartSeries } from './rlChart';
import { runArms } from './rlArms';

interface BenchTask {
  /** The example folder: its config.ts, its data/ (train.jsonl and heldout.jsonl rows have `type` and `answer`). */
  example: string;
  /** Writes what the task needs and is missing (data, a fresh model); returns the gold demonstrations' file. */
  prepare(out: string): string;
  /** RL steps per run when --steps is not given (default: the config's). */
  steps?: number;
}

const TASKS: Record<string, BenchTask> = {
  'multihop-search': {
    example: path.resolve(__dirname, '../../examples/multihop-search'),
    prepare(out) {
      const data = path.join(this.example, 'data');
      if (!['train', 'heldout', 'sft'].every((f) => fs.existsSync(path.join(data, `${f}.jsonl`))))
        multihop.generateDataset({ ...multihop.DEFAULTS, out: data });
      // Gold: a correct demonstration of every training question, in the training world.
      const questions = fs
        .readFileSync(path.join(data, 'train.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as multihop.QuestionRow);
      const gold = path.join(out, 'gold.jsonl');
      writeJsonl(gold, multihop.generateDemonstrations(knowledgeBase, questions, { seed: 1, short: 0 }));
      return gold;
    },
    // 12 of the demo's 16 steps: 8 variants and SFT-only × 3 seeds within the hour on 2 cores.
    steps: 12,
  },
  'deep-search': {
    example: path.resolve(__dirname, '../../examples/deep-search'),
    prepare() {
      const data = path.join(this.example, 'data');
      if (!['train', 'heldout', 'sft', 'gold'].every((f) => fs.existsSync(path.join(data, `${f}.jsonl`))))
        deepSearch.generateDataset({ ...deepSearch.DEFAULTS, out: data });
      return path.join(data, 'gold.jsonl');
    },
  },
};

interface Variant {
  name: string;
  /** What changes against the example's config (GRPO, process rewards on, loss mask on). */
  change: (c: TrainingConfig) => void;
}

/**
 * Switch the config to another algorithm with that algorithm's own defaults (KL, clipping,
 * aggregation, critic). The group size and the update schedule (epochs × mini-batches) stay the
 * task's, so every variant makes the same optimizer steps over the same batches.
 */
const algorithm = (name: TrainingConfig['algorithm']['name']) => (c: TrainingConfig) => {
  const { groupSize, epochs, miniBatches } = c.algorithm;
  c.algorithm = AlgorithmSection.parse({ name, groupSize, epochs, miniBatches });
  if (name === 'ppo') c.critic = CriticSection.parse({ lr: 10 * c.optimization.lr });
};

const VARIANTS: Variant[] = [
  // PPO's separate critic learns at 10× the policy's rate, as verl's defaults have it (critic 1e-5, actor 1e-6).
  { name: 'ppo', change: algorithm('ppo') },
  { name: 'grpo', change: algorithm('grpo') },
  { name: 'dr-grpo', change: algorithm('dr-grpo') },
  { name: 'reinforce++', change: algorithm('reinforce++') },
  { name: 'reinforce++-baseline', change: algorithm('reinforce++-baseline') },
  { name: 'rloo', change: algorithm('rloo') },
  { name: 'grpo-loss-mask-off', change: (c) => (algorithm('grpo')(c), (c.algorithm.lossMask = 'response')) },
  {
    name: 'grpo-process-rewards-off',
    change: (c) => (algorithm('grpo')(c), (c.rewards = withoutProcessRewards(c.rewards))),
  },
];

interface RunOutcome {
  heldout: Map<number, number>;
  training: Map<number, number>;
  toolCalls: number;
  seconds: number;
}

/**
 * One training run. Its held-out evaluations: at every `evaluation.every` steps and at the end —
 * not before RL, which for every variant is the warm start's greedy policy, evaluated once (a run
 * of 0 steps evaluates once, at step 0: the warm start, or SFT-only after its training).
 */
async function train(loaded: LoadedConfig, runDir: string, steps?: number): Promise<{ after?: EvaluationResult }> {
  fs.rmSync(runDir, { recursive: true, force: true });
  const log = (line: string) =>
    /^(eval|run |step \d+\/|sft step)/.test(line) ? console.log(`  ${path.basename(runDir)}: ${line}`) : undefined;
  const result = await new TrainingRun(loaded, {
    runDir,
    log,
    evaluateBefore: false,
    ...(steps !== undefined ? { steps } : {}),
  }).run();
  if (result.run.status !== 'finished')
    throw new Error(`${runDir}: the run ${result.run.status}: ${result.run.error?.message ?? ''}`);
  return result.evalAfter ? { after: result.evalAfter } : {};
}

/** What a run recorded: held-out accuracy by evaluation step, training-batch accuracy by step. */
function outcome(runDir: string, seconds: number, warmStartScore?: number): RunOutcome {
  const records = new RunStoreReader(runDir).metrics().records;
  const score = (m: (typeof records)[number]) => m.values['score/exact_match'];
  const heldout = new Map<number, number>(warmStartScore !== undefined ? [[0, warmStartScore]] : []);
  for (const m of records)
    if (m.kind === 'eval' && typeof score(m) === 'number') heldout.set(m.step, score(m) as number);
  const training = new Map(
    records.filter((m) => m.kind === 'train' && typeof score(m) === 'number').map((m) => [m.step, score(m) as number]),
  );
  const lastEval = records.filter((m) => m.kind === 'eval').at(-1);
  return { heldout, training, toolCalls: (lastEval?.values['tools/calls_per_trajectory'] as number) ?? NaN, seconds };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
/** Sample standard deviation (n − 1); 0 for one value. */
const std = (xs: number[]) =>
  xs.length > 1 ? Math.sqrt(xs.reduce((a, x) => a + (x - mean(xs)) ** 2, 0) / (xs.length - 1)) : 0;
const pct = (x: number) => (100 * x).toFixed(1);

/** The most common training answer of each question type, scored on the held-out questions. */
function majorityBaseline(example: string): number {
  const read = (f: string) =>
    fs
      .readFileSync(path.join(example, 'data', f), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; answer: string });
  const counts = new Map<string, Map<string, number>>();
  for (const q of read('train.jsonl')) {
    const byAnswer = counts.get(q.type) ?? new Map<string, number>();
    byAnswer.set(q.answer, (byAnswer.get(q.answer) ?? 0) + 1);
    counts.set(q.type, byAnswer);
  }
  const majority = (type: string) =>
    [...(counts.get(type) ?? new Map<string, number>())].sort(
      (a, b) => b[1] - a[1] || a[0].localeCompare(b[0]),
    )[0]?.[0];
  const heldout = read('heldout.jsonl');
  return heldout.filter((q) => majority(q.type) === q.answer).length / heldout.length;
}

async function main(argv: string[]): Promise<void> {
  const started = Date.now();
  const cpuStarted = process.cpuUsage();
  const { values } = parseArgs({
    args: argv,
    options: {
      task: { type: 'string', default: 'multihop-search' },
      seeds: { type: 'string', default: '3' },
      steps: { type: 'string' },
      only: { type: 'string' },
      'reuse-warm-start': { type: 'boolean', default: false },
      'report-only': { type: 'boolean', default: false },
      'warm-start-rows': { type: 'string' },
      'warm-start-epochs': { type: 'string' },
      variants: { type: 'boolean', default: false },
      'eval-rows': { type: 'string' },
    },
  });
  const seeds = Array.from({ length: Number(values.seeds) }, (_, i) => i + 1);
  if (values.task === 'multihop-search' && !values.variants) {
    const whole = (name: string, v: string | undefined) => {
      if (v !== undefined && !(Number.isInteger(Number(v)) && Number(v) >= 1))
        throw new Error(`--${name}: expected a whole number ≥ 1, got ${v}`);
      return v === undefined ? undefined : Number(v);
    };
    const steps = whole('steps', values.steps) ?? TASKS['multihop-search'].steps!;
    const out = path.resolve(__dirname, '../../test-output/bench-rl/arms');
    fs.mkdirSync(out, { recursive: true });
    const evalRows = whole('eval-rows', values['eval-rows']);
    const warmStartRows = whole('warm-start-rows', values['warm-start-rows']);
    await runArms({
      out,
      seeds,
      steps,
      warmStartEpochs: whole('warm-start-epochs', values['warm-start-epochs']) ?? 12,
      reuseWarmStart: values['reuse-warm-start']!,
      reportOnly: values['report-only']!,
      evaluateEvery: Math.max(1, Math.round(steps / 2)),
      ...(evalRows !== undefined ? { evalRows } : {}),
      ...(warmStartRows !== undefined ? { warmStartRows } : {}),
    });
    return;
  }
  const only = values.only ? new Set(values.only.split(',').map((s) => s.trim())) : undefined;
  const known = [...VARIANTS.map((v) => v.name), 'sft-only'];
  if (only)
    for (const name of only)
      if (!known.includes(name)) throw new Error(`--only: no variant "${name}"; variants: ${known.join(', ')}`);
  const task = TASKS[values.task!];
  if (!task) throw new Error(`--task: no task "${values.task}"; tasks: ${Object.keys(TASKS).join(', ')}`);
  const out = path.resolve(__dirname, '../../test-output/bench-rl', values.task!);
  fs.mkdirSync(out, { recursive: true });
  const gold = task.prepare(out);
  const exampleConfig = () => loadConfig(path.join(task.example, 'config.ts'));

  // The warm start, once: SFT on the imperfect demonstrations, evaluated; its step-0 checkpoint is what every variant starts from.
  const warmDir = path.join(out, 'warm-start');
  const warmModel = path.join(warmDir, 'checkpoints', 'step-000000');
  if (!(values['reuse-warm-start'] && fs.existsSync(path.join(warmModel, 'config.json')))) {
    console.log('warm start (SFT on the demonstrations)');
    const loaded = await exampleConfig();
    if (values['warm-start-rows'] !== undefined) shortenWarmStart(loaded, Number(values['warm-start-rows']), out);
    await train(loaded, warmDir, 0);
  }
  const warm = outcome(warmDir, 0);
  const warmScore = warm.heldout.get(0)!;
  const steps =
    values.steps !== undefined ? Number(values.steps) : (task.steps ?? (await exampleConfig()).config.steps);

  const results = new Map<string, RunOutcome[]>();
  /** One run per seed of a variant: the example's config from the warm start, changed as the variant says. */
  const runVariant = async (name: string, change: (c: TrainingConfig) => void, rlSteps = steps) => {
    if (only && !only.has(name)) return;
    for (const seed of seeds) {
      console.log(`${name}, seed ${seed}`);
      const loaded = await exampleConfig();
      const c = loaded.config;
      c.model.path = warmModel;
      delete c.sft;
      c.seed = seed;
      change(c);
      const runDir = path.join(out, `${name}-seed${seed}`);
      const t0 = Date.now();
      await train(loaded, runDir, rlSteps);
      results.set(name, [
        ...(results.get(name) ?? []),
        outcome(runDir, (Date.now() - t0) / 1000, rlSteps === 0 ? undefined : warmScore),
      ]);
    }
  };
  for (const v of VARIANTS) await runVariant(v.name, v.change);
  // SFT-only: as many optimizer steps over as many sequences as RL makes (steps × epochs passes
  // over promptsPerStep × groupSize sequences, miniBatches steps a pass), on correct
  // demonstrations of the training questions, at the warm start's SFT learning rate; no RL step
  // (its score is the step-0 evaluation).
  const warmStartLr = (await exampleConfig()).config.sft!.lr;
  await runVariant(
    'sft-only',
    (c) => {
      const perStep = c.rollout.promptsPerStep * c.algorithm.groupSize;
      const rows = fs.readFileSync(gold, 'utf8').trim().split('\n').length;
      const batchSize = Math.ceil(perStep / c.algorithm.miniBatches);
      c.sft = {
        data: gold,
        epochs: Math.max(1, Math.round((steps * c.algorithm.epochs * perStep) / rows)),
        lr: warmStartLr,
        batchSize,
        warmupSteps: 0,
        check: 32,
        holdOut: false,
      };
    },
    0,
  );

  report(results, {
    task: values.task!,
    example: task.example,
    out,
    warmScore,
    steps,
    seeds,
    started,
    cpu: process.cpuUsage(cpuStarted),
    smoke: values['warm-start-rows'] !== undefined,
  });
}

/** The warm start on the first `rows` rows of each of its demonstration files (copies under `out`): a smoke run. */
function shortenWarmStart(loaded: LoadedConfig, rows: number, out: string): void {
  const sft = loaded.config.sft;
  if (!sft || !Number.isInteger(rows) || rows < 1)
    throw new Error(`--warm-start-rows: expected a whole number ≥ 1, got ${rows}`);
  const dir = path.join(out, 'warm-start-data');
  fs.mkdirSync(dir, { recursive: true });
  sft.data = (typeof sft.data === 'string' ? [sft.data] : sft.data).map((file) => {
    const out = path.join(dir, path.basename(file));
    fs.writeFileSync(
      out,
      `${fs.readFileSync(loaded.resolve(file), 'utf8').trim().split('\n').slice(0, rows).join('\n')}\n`,
    );
    return out;
  });
  console.log(`warm start shortened to ${rows} rows per file (a smoke run, not the benchmark)`);
}

/** SFT-only trains in its warm start and evaluates before RL: its held-out score is the step-0 evaluation. */
function finalScore(name: string, run: RunOutcome): number {
  return name === 'sft-only' ? run.heldout.get(0)! : [...run.heldout].sort((a, b) => a[0] - b[0]).at(-1)![1];
}

function report(
  results: Map<string, RunOutcome[]>,
  info: {
    task: string;
    example: string;
    out: string;
    warmScore: number;
    steps: number;
    seeds: number[];
    started: number;
    cpu: NodeJS.CpuUsage;
    smoke: boolean;
  },
): void {
  const majority = majorityBaseline(info.example);
  const wall = (Date.now() - info.started) / 60_000;
  const cpu = (info.cpu.user + info.cpu.system) / 6e7;
  const rows = [...results].map(([name, runs]) => {
    const scores = runs.map((r) => finalScore(name, r));
    return {
      name,
      scores,
      mean: mean(scores),
      std: std(scores),
      toolCalls: mean(runs.map((r) => r.toolCalls)),
      minutes: mean(runs.map((r) => r.seconds)) / 60,
    };
  });
  const table = [
    `bench:rl --task ${info.task} on ${os.cpus().length} × ${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}: ` +
      `${info.steps} RL steps per run, seeds ${info.seeds.join(', ')}; wall ${wall.toFixed(1)} min, CPU ${cpu.toFixed(1)} min (this process's threads).`,
    '',
    '| variant | held-out exact match, mean ± std (%) | per seed (%) | tool calls / question (greedy) | minutes / run |',
    '|---|---:|---|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${pct(r.mean)} ± ${pct(r.std)} | ${r.scores.map(pct).join(', ')} | ${r.toolCalls.toFixed(2)} | ${r.minutes.toFixed(1)} |`,
    ),
    `| warm start (before RL) | ${pct(info.warmScore)} | | | |`,
    `| majority answer per question type | ${pct(majority)} | | | |`,
  ].join('\n');
  fs.writeFileSync(path.join(info.out, 'table.md'), `${table}\n`);
  fs.writeFileSync(
    path.join(info.out, 'results.json'),
    JSON.stringify({ warmStart: info.warmScore, majority, rows, wallMinutes: wall, cpuMinutes: cpu }, null, 2),
  );
  const series: ChartSeries[] = [...results]
    .filter(([name]) => name !== 'sft-only')
    .map(([name, runs]) => {
      const at = (pick: (r: RunOutcome) => Map<number, number>) =>
        [...new Set(runs.flatMap((r) => [...pick(r).keys()]))].sort((a, b) => a - b);
      return {
        name,
        heldout: at((r) => r.heldout).map((step) => ({
          step,
          mean: mean(runs.map((r) => r.heldout.get(step)!)),
          std: std(runs.map((r) => r.heldout.get(step)!)),
        })),
        training: at((r) => r.training).map((step) => ({ step, mean: mean(runs.map((r) => r.training.get(step)!)) })),
      };
    });
  const sft = rows.find((r) => r.name === 'sft-only');
  const baselines = [
    { name: 'warm start', value: info.warmScore },
    ...(sft ? [{ name: 'SFT-only', value: sft.mean }] : []),
    { name: 'majority answer', value: majority },
  ];
  const svg = rlChartSvg(series, baselines, {
    steps: info.steps,
    title: `${info.task}: RL algorithms from one warm start`,
    note: `${info.seeds.length} seeds; generated by npm run bench:rl from each run's metrics.jsonl`,
  });
  fs.writeFileSync(path.join(info.out, 'bench-rl.svg'), svg);
  // A smoke run's chart stays in test-output: the example's README shows the benchmark's only.
  if (!info.smoke) fs.writeFileSync(path.join(info.example, 'bench-rl.svg'), svg);
  console.log(`\n${table}\n`);
  for (const r of rows) console.log(`RESULT ${r.name}_heldout_mean=${pct(r.mean)} ${r.name}_heldout_std=${pct(r.std)}`);
  console.log(
    `RESULT warm_start_heldout=${pct(info.warmScore)} majority_answer_heldout=${pct(majority)} wall_minutes=${wall.toFixed(1)} cpu_minutes=${cpu.toFixed(1)}`,
  );
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(`bench:rl failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
