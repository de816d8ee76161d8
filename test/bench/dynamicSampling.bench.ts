/**
 * Dynamic sampling on or off, the rest equal: for each example task, one warm start (the config's
 * SFT), then GRPO from its weights twice — `algorithm.dynamicSampling` off and on (maxRounds 3) —
 * with the same seed, each evaluated greedily on the held-out set before and after. Prints one
 * RESULT line per run: held-out score before → after, RL wall time, and the mean share of groups
 * dynamic sampling dropped and rounds it took.
 *
 *   npx tsx test/bench/dynamicSampling.bench.ts [--tasks calculator,multihop-search] [--steps 12] [--sft-epochs N] [--eval-samples N] [--out DIR]
 *
 * --sft-epochs and --eval-samples shorten the warm start and the evaluations (default: the config's).
 *
 * A modest check on a shared CPU (one seed, short runs), not the defaults' final measurement.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { generateDataset as calculatorData, DEFAULTS as CALCULATOR } from '../../examples/calculator/data';
import { generateDataset as multihopData, DEFAULTS as MULTIHOP } from '../../examples/multihop-search/data';
import { RunStoreReader } from '../../trainer/contract/runstore';
import { TrainingRun } from '../../trainer/pipeline/training/trainingRun';
import { loadConfig } from '../../trainer/bridges/usercode/loadConfig';

const root = path.resolve(__dirname, '..', '..');
const TASKS: Record<string, () => void> = {
  calculator: () => calculatorData({ ...CALCULATOR, out: path.join(root, 'examples/calculator/data') }),
  'multihop-search': () => multihopData({ ...MULTIHOP, out: path.join(root, 'examples/multihop-search/data') }),
};

async function run(
  task: string,
  runDir: string,
  edit: (config: Awaited<ReturnType<typeof loadConfig>>['config']) => void,
) {
  const loaded = await loadConfig(path.join(root, 'examples', task, 'config.ts'));
  edit(loaded.config);
  const started = Date.now();
  const result = await new TrainingRun(loaded, {
    runDir,
    log: (line) => console.log(`  [${task} ${path.basename(runDir)}] ${line}`),
  }).run();
  if (result.run.status !== 'finished')
    throw new Error(`${runDir}: ${result.run.status} ${result.run.error?.message ?? ''}`);
  return { result, seconds: (Date.now() - started) / 1000 };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      tasks: { type: 'string', default: 'calculator,multihop-search' },
      steps: { type: 'string', default: '12' },
      'sft-epochs': { type: 'string' },
      'eval-samples': { type: 'string' },
      out: { type: 'string' },
    },
  });
  const positive = (name: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    if (!/^[1-9]\d*$/.test(value))
      throw new Error(`--${name}: expected a positive whole number, got ${JSON.stringify(value)}`);
    return Number(value);
  };
  const sftEpochs = positive('sft-epochs', values['sft-epochs']);
  const evalSamples = positive('eval-samples', values['eval-samples']);
  const steps = positive('steps', values.steps)!;
  const out = values.out ?? fs.mkdtempSync(path.join(os.tmpdir(), 'dynamic-sampling-bench-'));
  for (const task of values.tasks!.split(',')) {
    if (!(task in TASKS)) throw new Error(`--tasks: unknown task ${task}; expected ${Object.keys(TASKS).join(', ')}`);
    TASKS[task]();
    // The warm start once: one RL step after it (the run keeps its step-0 checkpoint, a full model folder).
    const warm = path.join(out, `${task}-warm`);
    await run(task, warm, (c) => {
      if (sftEpochs !== undefined && c.sft) c.sft.epochs = sftEpochs;
      c.steps = 1;
      c.evaluation.samples = 1;
    });
    const warmModel = path.join(warm, 'checkpoints', 'step-000000');
    for (const enabled of [false, true]) {
      const dir = path.join(out, `${task}-ds-${enabled ? 'on' : 'off'}`);
      const { result, seconds } = await run(task, dir, (c) => {
        c.model.path = warmModel;
        c.sft = undefined;
        c.steps = steps;
        if (evalSamples !== undefined) c.evaluation.samples = evalSamples;
        c.algorithm.dynamicSampling = { enabled, maxRounds: 3 };
      });
      const train = new RunStoreReader(dir).metrics().records.filter((m) => m.kind === 'train');
      const mean = (key: string) => train.reduce((a, m) => a + (m.values[key] ?? 0), 0) / train.length;
      const rlSeconds = train.reduce((a, m) => a + (m.values['time/step_s'] ?? 0), 0);
      console.log(
        `RESULT task=${task} dynamic_sampling=${enabled ? 'on' : 'off'} steps=${steps} heldout_before=${result.evalBefore?.score?.toFixed(3)} heldout_after=${result.evalAfter?.score?.toFixed(3)} ` +
          `rl_step_seconds=${rlSeconds.toFixed(0)} run_seconds=${seconds.toFixed(0)} dropped_groups_mean=${mean('health/dropped_groups').toFixed(3)} rounds_mean=${mean('rollout/rounds').toFixed(2)} groups_rolled=${train.reduce((a, m) => a + (m.values['rollout/groups'] ?? 0), 0)} train_score_mean=${mean(`score/${result.evalAfter?.metric}`).toFixed(3)}`,
      );
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
