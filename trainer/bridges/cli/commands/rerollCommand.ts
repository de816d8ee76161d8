import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { RunStoreReader } from '../../../contract/runstore/reader';
import { renderTranscript } from '../../../contract/transcript';
import { reroll, type RerollRequest, type RerollResult } from '../../../pipeline/training/reroll/reroll';
import { loadConfig } from '../../usercode/loadConfig';
import { resolveDevice } from '../resolveDevice';
import { UsageError } from '../usage';
import { recordedConfigFile } from './recordedConfig';

export const rerollUsage = `rollout-studio reroll <run-dir> --step S --trajectory T --turn K [options]

Re-generates a recorded trajectory from a point: its tokens before the point are kept as they
are, the rest is generated again (N times), scored with the run's rewards and saved in the run
under branches/ (never training data). Prints the branches' transcripts and rewards.
  --step S            the training step (or, with --eval, the evaluation after step S)
  --eval              the trajectory is from an evaluation, not a training step
  --trajectory T      its index in the step
  --turn K            the generated turn to cut at (0 = the first)
  --at start|call     before turn K is generated (default), or after it, before its calls' results
  --edit-result FILE  replace the result of a call of turn K with FILE's text (implies --at call)
  --call I            which call --edit-result/--edit-arguments replace (default 0)
  --edit-arguments JSON  run call I with these arguments instead (implies --at call)
  --insert-user TEXT  insert a user message before turn K (at start; after turn K-1's results)
  --insert-assistant TEXT  insert an assistant message there instead
  --checkpoint C      step-N, best, warm-start, or a model folder (default: the parent's weights)
  -n N                branches to generate (default 1)
  --temperature T     sampling temperature (default: the run's)
  --seed S            sampling seed (default: the parent's; branch 0 then draws its numbers)
  --tools live|cassette  call tools live or answer from the run's cassette (default: cassette if recorded)
  --on-miss error|live   with the cassette, a call it lacks (default error)
  --config FILE       the training config (default: the one the run recorded, if its file is
                      unchanged since the run: run.json's configPath and configSha256)
  --device NAME       cpu, webgpu, cuda or auto
  --json              print the branch set as JSON`;

function integer(value: string | undefined, flag: string, min = 0): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${flag}: expected an integer ≥ ${min}, got "${value}"`);
  return n;
}

function oneOf<T extends string>(value: string | undefined, flag: string, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`${flag}: expected ${allowed.join(' or ')}, got "${value}"`);
  return value as T;
}

function edits(values: {
  'edit-result'?: string;
  'edit-arguments'?: string;
  call?: string;
  'insert-user'?: string;
  'insert-assistant'?: string;
}): NonNullable<RerollRequest['edits']> {
  const call = integer(values.call, '--call') ?? 0;
  const list: NonNullable<RerollRequest['edits']> = [];
  if (values['insert-user'] !== undefined) list.push({ kind: 'message', role: 'user', content: values['insert-user'] });
  if (values['insert-assistant'] !== undefined)
    list.push({ kind: 'message', role: 'assistant', content: values['insert-assistant'] });
  if (values['edit-result'] !== undefined) {
    if (!fs.existsSync(values['edit-result']))
      throw new UsageError(`--edit-result: ${values['edit-result']} does not exist`);
    list.push({ kind: 'result', call, text: fs.readFileSync(values['edit-result'], 'utf8') });
  }
  if (values['edit-arguments'] !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(values['edit-arguments']);
    } catch (error) {
      throw new UsageError(`--edit-arguments: not JSON (${(error as Error).message})`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new UsageError('--edit-arguments: expected a JSON object of arguments');
    list.push({ kind: 'arguments', call, arguments: parsed as Record<string, unknown> });
  }
  return list;
}

function parseRerollArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      step: { type: 'string' },
      eval: { type: 'boolean', default: false },
      trajectory: { type: 'string' },
      turn: { type: 'string' },
      at: { type: 'string' },
      'edit-result': { type: 'string' },
      'edit-arguments': { type: 'string' },
      'insert-user': { type: 'string' },
      'insert-assistant': { type: 'string' },
      call: { type: 'string' },
      checkpoint: { type: 'string' },
      n: { type: 'string', short: 'n' },
      temperature: { type: 'string' },
      seed: { type: 'string' },
      tools: { type: 'string' },
      'on-miss': { type: 'string' },
      config: { type: 'string' },
      device: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
}

export async function rerollCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseRerollArgs(argv);
  if (positionals.length !== 1) throw new UsageError('expected exactly one run directory');
  const runDir = path.resolve(positionals[0]);
  for (const flag of ['step', 'trajectory', 'turn'] as const)
    if (values[flag] === undefined) throw new UsageError(`--${flag} is required`);
  const edited = edits(values);
  const callEdits = edited.some((e) => e.kind !== 'message');
  const at = oneOf(values.at, '--at', ['start', 'call'] as const) ?? (callEdits ? 'call' : 'start');
  if (callEdits && at !== 'call')
    throw new UsageError(
      "--edit-result and --edit-arguments replace what happens before the calls' results: they need --at call",
    );
  if (edited.some((e) => e.kind === 'message') && at !== 'start')
    throw new UsageError(
      '--insert-user and --insert-assistant insert a message at the start of a turn: they need --at start',
    );
  const temperature = values.temperature === undefined ? undefined : Number(values.temperature);
  if (temperature !== undefined && !(temperature >= 0))
    throw new UsageError(`--temperature: expected a number ≥ 0, got "${values.temperature}"`);
  const run = new RunStoreReader(runDir).run();
  // --config is the user's own choice; the run's record is checked first (recordedConfig.ts).
  const log = (line: string) => process.stderr.write(line + '\n');
  const configFile = values.config ?? recordedConfigFile(runDir, run, log);
  const loaded = await loadConfig(configFile);
  const request: RerollRequest = {
    runDir,
    set: values.eval ? 'eval' : 'train',
    step: integer(values.step, '--step')!,
    index: integer(values.trajectory, '--trajectory')!,
    cut: { turn: integer(values.turn, '--turn')!, at },
    edits: edited,
    samples: integer(values.n, '-n', 1) ?? 1,
    log,
    device: await resolveDevice(values.device ?? loaded.config.device),
    ...(values.checkpoint !== undefined ? { checkpoint: values.checkpoint } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(values.seed !== undefined ? { seed: integer(values.seed, '--seed')! } : {}),
    ...(values.tools !== undefined ? { tools: oneOf(values.tools, '--tools', ['live', 'cassette'] as const)! } : {}),
    ...(values['on-miss'] !== undefined
      ? { onMiss: oneOf(values['on-miss'], '--on-miss', ['error', 'live'] as const)! }
      : {}),
  };
  const result = await reroll(loaded, request);
  if (values.json) {
    process.stdout.write(JSON.stringify({ file: result.file, ...result.branches }, null, 2) + '\n');
    return 0;
  }
  printBranches(result);
  return 0;
}

/** Each branch's transcript under a line with its rewards and where it left the parent. */
function printBranches(result: RerollResult): void {
  const { branches } = result;
  process.stdout.write(`parent: ${summary(result.parent)}\n`);
  for (const [k, branch] of branches.branches.entries()) {
    process.stdout.write(
      `\n──── branch ${k} · ${summary(branch.trajectory)} · ${branch.firstDivergence === null ? 'identical to the parent' : `diverges at token ${branch.firstDivergence}`} ────\n`,
    );
    process.stdout.write(renderTranscript(branch.trajectory).text);
  }
  process.stdout.write(
    `\nsaved ${branches.branches.length} branch${branches.branches.length === 1 ? '' : 'es'} in ${result.file}\n`,
  );
}

function summary(t: { rewards: { outcome: number; process: number; total: number }; finishReason: string }): string {
  return `${t.finishReason} · outcome ${t.rewards.outcome.toFixed(2)} · process ${t.rewards.process.toFixed(2)} · total ${t.rewards.total.toFixed(2)}`;
}
