/**
 * bench:gateway — what training an agent of your own costs against the built-in loop, at the
 * currency tutorial's settings (examples/currency-agent/config.ts): the same task, data, warm start,
 * GRPO settings and budget, rolled out once by the built-in loop over the config's tool and once by
 * the tutorial's agent on the `openai` SDK (examples/existing-agent/agent.ts) through the gateway.
 *
 * One warm start (the tutorial's twelve epochs of SFT) is trained first; both arms start from its
 * weights, without a warm start of their own, and train `--steps` RL steps, alternating builtin, agent, builtin, agent for `--repeats`
 * pairs so that drift in the machine's speed falls on both. The runs are in this process (their
 * devices in worker threads, as the CLI's are), alike for both arms. Each step's `time/step_s` and
 * `time/rollout_s` come from the runs' metrics.jsonl; the first step of each run (graph loading)
 * is left out. The issue's goal: the agent's step time ≤ 1.3× the built-in loop's.
 *
 * Run: npm run bench:gateway [-- --steps 8 --repeats 2]
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { RunStoreReader } from '../../trainer/contract/runstore';
import { FmaPeakProgram } from './lib/fmaPeak';
import { loadConfig } from '../../trainer/bridges/usercode/loadConfig';
import { TrainingRun } from '../../trainer/pipeline/training/trainingRun';

const root = path.resolve(__dirname, '../..');
/** tsx by its path, for the data generator: the runs' folder is outside this repository. */
const TSX = ['--require', require.resolve('tsx/cjs')];

const SETTINGS = `
  data: { train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: z.object({ answer: z.string() }) },
  tools,
  rewards,
  algorithm: { name: 'grpo', groupSize: 8, epochs: 2, miniBatches: 2 },
  rollout: {
    promptsPerStep: 4,
    budget: { maxTurns: 3, maxNewTokensPerTurn: 96, maxTotalTokens: 768, maxToolResultTokens: 32 },
    temperature: 1,
    stop: ['</answer>'],
    templateKwargs: { enable_thinking: false },
  },
  optimization: { lr: 3e-5, warmupSteps: 3 },`;

function config(dir: string, name: string, body: string): string {
  const file = path.join(dir, `${name}.config.ts`);
  const example = (f: string) => JSON.stringify(path.join(root, 'examples', f));
  fs.writeFileSync(
    file,
    `import { defineConfig, z } from 'rollout-studio';
import { rewards } from ${example('currency-agent/rewards')};
import { tools } from ${example('currency-agent/tools')};
export default defineConfig({
  name: ${JSON.stringify(name)},${SETTINGS}
  output: { runsDir: 'runs', checkpointEvery: 0, keepCheckpoints: 1 },
  ${body}
});
`,
  );
  return file;
}

/** A run in this process, its device in a worker thread as the CLI's is; both arms alike. */
async function train(file: string, runDir: string, steps: number): Promise<void> {
  const log: string[] = [];
  const result = await new TrainingRun(await loadConfig(file), { runDir, steps, log: (l) => log.push(l) }).run();
  if (result.run.status !== 'finished')
    throw new Error(`${path.basename(file)} ended ${result.run.status}:\n${log.join('\n')}`);
  process.stderr.write(`  ${path.basename(runDir)}: ${log.slice(-1)[0]}\n`);
}

/** Each step's seconds, the first (graph loading) left out. */
function stepTimes(runDir: string): { step: number[]; rollout: number[] } {
  const train = new RunStoreReader(runDir).metrics().records.filter((m) => m.kind === 'train' && m.step > 1);
  return {
    step: train.map((m) => m.values['time/step_s'] as number),
    rollout: train.map((m) => m.values['time/rollout_s'] as number),
  };
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { steps: { type: 'string', default: '8' }, repeats: { type: 'string', default: '2' } },
  });
  const steps = Number(values.steps);
  const repeats = Number(values.repeats);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-gateway-'));
  const data = spawnSync(process.execPath, [...TSX, path.join(root, 'examples/currency-agent/data.ts')], {
    cwd: dir,
  });
  if (data.status !== 0) throw new Error(`data.ts failed: ${data.stderr}`);
  const peak = FmaPeakProgram.build().measure(2);
  process.stdout.write(
    `FMA peak (${peak.isa}, fma_peak.c): ${peak.gflops.toFixed(1)} GFLOP/s on 2 threads\nwarm start (the tutorial's 12 epochs of SFT)…\n`,
  );
  const warm = path.join(dir, 'runs', 'warm');
  await train(
    config(
      dir,
      'warm',
      "model: { path: 'rollout-studio:base', lora: false },\n  sft: { data: 'data/sft.jsonl', epochs: 12, lr: 3e-4, batchSize: 8, warmupSteps: 5 },\n  evaluation: { samples: 4, every: 0 },\n  steps: 1,",
    ),
    warm,
    1,
  );
  const from = `model: { path: ${JSON.stringify(path.join(warm, 'checkpoints/best'))}, lora: false },\n  evaluation: { samples: 4, every: 0 },\n  steps: ${steps},`;
  const builtin = config(dir, 'builtin', from);
  const agent = config(
    dir,
    'agent',
    `${from}\n  agent: ${JSON.stringify(path.join(root, 'examples/existing-agent/agent.ts'))},`,
  );
  const times = {
    builtin: { step: [] as number[], rollout: [] as number[] },
    agent: { step: [] as number[], rollout: [] as number[] },
  };
  for (let r = 0; r < repeats; r++) {
    for (const [arm, file] of [
      ['builtin', builtin],
      ['agent', agent],
    ] as const) {
      const runDir = path.join(dir, 'runs', `${arm}-${r}`);
      await train(file, runDir, steps);
      const t = stepTimes(runDir);
      times[arm].step.push(...t.step);
      times[arm].rollout.push(...t.rollout);
    }
  }
  const line = (what: 'step' | 'rollout') =>
    `${what.padEnd(8)} builtin ${mean(times.builtin[what]).toFixed(2)} s  agent ${mean(times.agent[what]).toFixed(2)} s  ratio ${(mean(times.agent[what]) / mean(times.builtin[what])).toFixed(3)}`;
  const ratio = mean(times.agent.step) / mean(times.builtin.step);
  process.stdout.write(
    `mean over ${times.builtin.step.length} steps per arm (steps 2..${steps} of ${repeats} runs each):\n${line('step')}\n${line('rollout')}\n` +
      `goal (agent step ≤ 1.3× builtin): ${ratio <= 1.3 ? 'met' : 'not met'} (${ratio.toFixed(3)})\n`,
  );
  fs.rmSync(dir, { recursive: true, force: true });
}

void main().catch((error) => {
  process.stderr.write(`${(error as Error).stack ?? error}\n`);
  process.exit(1);
});
