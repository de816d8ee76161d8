import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { Tokenizer } from '../../../foundations/models/text/tokenizer';
import { Algorithm } from '../../../contract/protocol/runStore';
import { VerlImport } from '../../verl/import';
import { UsageError } from '../usage';

export const importUsage = `rollout-studio import verl <rollout_data_dir> [--metrics FILE] [options]

Turns a verl run into a run of this workspace's run store, for the Runs view, the Trajectories
and Metrics panels and the replay debugger: verl's per-step rollout dumps (trainer.rollout_data_dir,
<step>.jsonl) and its file logger's metrics (VERL_FILE_LOGGER_PATH).
  --metrics FILE      verl's file-logger JSONL (export verl's launch.sh writes verl-run/metrics.jsonl)
  --runs-dir DIR      where runs go (default .rollout/runs); the run is <time>-verl-<name>
  --run-dir DIR       the run directory itself instead
  --name NAME         the run's name (default: the folder above rollout_data_dir)
  --algorithm NAME    what verl ran: grpo (default), ppo, rloo, reinforce++, reinforce++-baseline
  --tokenizer DIR     a Hugging Face model folder whose tokenizer gives the token view (else none)
  --follow            keep importing while verl writes; Ctrl-C ends it
  --interval S        seconds between looks with --follow (default 2)`;

function stamp(): string {
  return new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
}

export async function importCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      metrics: { type: 'string' },
      'runs-dir': { type: 'string', default: '.rollout/runs' },
      'run-dir': { type: 'string' },
      name: { type: 'string' },
      algorithm: { type: 'string', default: 'grpo' },
      tokenizer: { type: 'string' },
      follow: { type: 'boolean', default: false },
      interval: { type: 'string', default: '2' },
    },
    strict: true,
  });
  const [target, dir, ...rest] = positionals;
  if (target !== 'verl')
    throw new UsageError(
      target === undefined
        ? 'say what to import: rollout-studio import verl <rollout_data_dir>'
        : `cannot import from "${target}"; the one source is verl`,
    );
  if (dir === undefined || rest.length) throw new UsageError('expected exactly one rollout_data_dir');
  const algorithm = Algorithm.safeParse(values.algorithm);
  if (!algorithm.success || algorithm.data === 'sft')
    throw new UsageError(
      `--algorithm: expected grpo, ppo, rloo, reinforce++ or reinforce++-baseline, got "${values.algorithm}"`,
    );
  const interval = Number(values.interval);
  if (!(interval > 0))
    throw new UsageError(`--interval: expected a positive number of seconds, got "${values.interval}"`);
  const source = path.resolve(dir);
  const name = values.name ?? path.basename(path.dirname(source));
  const runDir = path.resolve(
    values['run-dir'] ??
      path.join(
        values['runs-dir'],
        `${stamp()}-verl-${
          name
            .toLowerCase()
            .replace(/[^a-z0-9]+/g, '-')
            .replace(/^-|-$/g, '') || 'run'
        }`,
      ),
  );
  const run = new VerlImport({
    rolloutDataDir: source,
    ...(values.metrics ? { metricsFile: path.resolve(values.metrics) } : {}),
    runDir,
    name,
    algorithm: algorithm.data,
    ...(values.tokenizer ? { tokenizer: Tokenizer.load(path.resolve(values.tokenizer)) } : {}),
  });
  const say = (steps: number[]) =>
    process.stdout.write(`imported step${steps.length > 1 ? 's' : ''} ${steps.join(', ')} into ${runDir}\n`);
  try {
    if (!values.follow) {
      const steps = run.importNew();
      run.finish('finished');
      process.stdout.write(`imported ${steps.length} steps into ${runDir}\n`);
      return 0;
    }
    process.stdout.write(`following ${source} into ${runDir} (Ctrl-C ends it)\n`);
    const controller = new AbortController();
    process.once('SIGINT', () => controller.abort());
    process.once('SIGTERM', () => controller.abort());
    await run.follow(controller.signal, interval * 1000, say);
    return 0;
  } catch (error) {
    // A bad dump fails the import; the run says so instead of staying `running`.
    run.fail(error as Error);
    throw error;
  }
}
