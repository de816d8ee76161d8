import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { RewardKind, type TrajectoryRecord } from '../../../contract/protocol';
import { evaluateReward, type RecordedSamples } from '../../authoring/evaluateReward';
import { formatRewardEvaluation } from '../../../contract/authoringReport';
import { loadJsonlDataset, type FieldsSchema } from '../../../foundations/data/dataset';
import { RunStoreReader } from '../../../contract/runstore/reader';
import { loadUserModule } from '../../usercode/loadUserModule';
import { ToolSet } from '../../../foundations/tools/toolSet';
import { hasParent, sendToParent } from '../ipc';
import { UsageError } from '../usage';
import { loadConfig } from '../../usercode/loadConfig';

export const evalRewardUsage = `rollout-studio eval-reward <file.ts> --export PATH [options]

Scores one reward of a module on a few samples, without a model: dataset rows answered with
their gold answer and with no answer (does the reward tell them apart?), and trajectories a run
recorded, next to the rewards the run recorded for them.
  --export PATH    the reward: an OutcomeReward or ProcessReward (numericMatch,
                   rewards.outcome[0]), a RewardConfig (rewards), or a function
                   (trajectory, row) => number
  --kind KIND      outcome, process, config or function (default: from the value; a reward
                   under "process" in its path is a process reward)
  --config FILE    a training config: its data.train rows (checked with its data.fields) and
                   its tools (for a RewardConfig's tool reward hooks)
  --data FILE      dataset rows, JSONL (default: the config's data.train)
  --run DIR        a run directory: its newest recorded trajectories are scored too
  --samples N      rows, and recorded trajectories, to score (default 5)
  --json           print the evaluation as JSON
  --ipc            send the evaluation to the extension that started this process`;

/** The newest steps' trajectories, newest step first, until enough of them have a row here. */
function readRecorded(dir: string, wanted: number, hasRow: (id: string) => boolean): RecordedSamples {
  const reader = new RunStoreReader(dir);
  reader.run(); // a clear error when DIR is not a run directory
  const steps: number[] = [];
  const records: TrajectoryRecord[] = [];
  let matched = 0;
  for (const step of reader.steps().reverse()) {
    if (matched >= wanted) break;
    const { records: stepRecords } = reader.trajectories(step);
    steps.push(step);
    records.push(...stepRecords);
    matched += stepRecords.filter((r) => hasRow(r.rowId)).length;
  }
  return { dir, steps, records };
}

export async function evalRewardCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      export: { type: 'string' },
      kind: { type: 'string' },
      config: { type: 'string' },
      data: { type: 'string' },
      run: { type: 'string' },
      samples: { type: 'string', default: '5' },
      json: { type: 'boolean', default: false },
      ipc: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (positionals.length !== 1) throw new UsageError('expected exactly one file with the reward');
  if (!values.export)
    throw new UsageError('--export PATH is required (e.g. --export rewards or --export rewards.outcome[0])');
  const kind = values.kind === undefined ? undefined : RewardKind.safeParse(values.kind);
  if (kind && !kind.success)
    throw new UsageError(`--kind: expected one of ${RewardKind.options.join(', ')}, got "${values.kind}"`);
  const samples = Number(values.samples);
  if (!Number.isInteger(samples) || samples < 1)
    throw new UsageError(`--samples: expected a positive integer, got "${values.samples}"`);
  if (values.ipc && !hasParent())
    throw new UsageError('--ipc was given but this process has no IPC channel; it must be started by the extension');
  const file = path.resolve(positionals[0]);

  const loaded = values.config ? await loadConfig(values.config) : undefined;
  const dataFile = values.data
    ? path.resolve(values.data)
    : loaded
      ? loaded.resolve(loaded.config.data.train)
      : undefined;
  const fields = loaded?.config.data.fields as FieldsSchema | undefined;
  const dataset = dataFile ? loadJsonlDataset(dataFile, fields ? { fields } : {}) : undefined;
  const rowIds = new Set(dataset?.rows.map((r) => r.id) ?? []);
  const recorded = values.run ? readRecorded(path.resolve(values.run), samples, (id) => rowIds.has(id)) : undefined;

  const evaluation = await evaluateReward(await loadUserModule(file), {
    file,
    exportPath: values.export,
    ...(kind?.success ? { kind: kind.data } : {}),
    ...(dataset ? { data: { file: dataset.origin, rows: dataset.rows } } : {}),
    ...(recorded ? { recorded } : {}),
    samples,
    ...(loaded ? { tools: new ToolSet(loaded.config.tools) } : {}),
  });
  if (values.ipc) await sendToParent({ type: 'reward.evaluation', evaluation });
  else
    process.stdout.write(values.json ? JSON.stringify(evaluation, null, 2) + '\n' : formatRewardEvaluation(evaluation));
  return 0;
}
