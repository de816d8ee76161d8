import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RewardEvaluation } from '../../trainer/contract/protocol';
import { formatRewardEvaluation } from '../../trainer/contract/authoringReport';
import { findTrainingConfigs } from '../live/trainingConfigs';
import { workspaceRuns } from '../panels/workspaceRuns';
import { runTrainer } from '../trainerProcess';
import { saveIfDirty, showFailure, trainerLaunch, type AuthoringContext } from './authoringContext';
import { requireTrust } from '../workspaceTrust';
import type { RewardTarget } from './lensSpecs';

/**
 * Evaluate on Samples: `rollout-studio eval-reward` on the reward under the lens. The rows come
 * from a training config of the workspace (its data.train, checked with its data.fields, and its
 * tools for a RewardConfig's tool hooks) — the config nearest the reward's file, or the one the
 * user picks — or from a JSONL file the user picks; recorded trajectories from the workspace's
 * newest run of that config (else its newest run).
 */

export interface EvaluateOptions {
  /** A training config file; null: none (use `data`). Absent: find or ask. */
  config?: string | null;
  /** A JSONL dataset file (instead of the config's rows). */
  data?: string;
  /** A run directory; null: none. Absent: the workspace's newest run. */
  run?: string | null;
  samples?: number;
}

const EXCLUDED = '{**/node_modules/**,**/dist/**,**/.rollout/**,**/.git/**}';

/** How far `file` sits below the folder of `config`: 0 in the same folder, n folders below; Infinity when not below it. */
function distanceBelow(config: string, file: string): number {
  const relative = path.relative(path.dirname(config), path.dirname(file));
  if (relative === '') return 0;
  return relative.startsWith('..') || path.isAbsolute(relative) ? Infinity : relative.split(path.sep).length;
}

/** The workspace's training configs (found as Start Training finds them), nearest above `near` first. */
async function trainingConfigsNear(near: string): Promise<string[]> {
  const configs = (await findTrainingConfigs()).map((uri) => uri.fsPath);
  return configs.sort((a, b) => distanceBelow(a, near) - distanceBelow(b, near) || a.localeCompare(b));
}

/** The config nearest above the reward's file when there is exactly one such; else the user picks a config or a JSONL file. */
async function chooseDataSource(target: RewardTarget): Promise<{ config?: string; data?: string } | undefined> {
  const configs = await trainingConfigsNear(target.file);
  const nearest = configs.length ? distanceBelow(configs[0], target.file) : Infinity;
  const atNearest = configs.filter((c) => distanceBelow(c, target.file) === nearest);
  if (configs.length === 1 || (nearest !== Infinity && atNearest.length === 1)) return { config: configs[0] };
  const datasets = (await vscode.workspace.findFiles('**/*.jsonl', EXCLUDED, 200)).map((u) => u.fsPath);
  if (configs.length === 0 && datasets.length === 0) return {};
  type Item = vscode.QuickPickItem & { source: { config?: string; data?: string } };
  const items: Item[] = [
    ...configs.map((c) => ({
      label: `$(settings-gear) ${vscode.workspace.asRelativePath(c)}`,
      description: 'training config: its data.train rows and its tools',
      source: { config: c },
    })),
    ...datasets.map((d) => ({
      label: `$(file) ${vscode.workspace.asRelativePath(d)}`,
      description: 'JSONL rows',
      source: { data: d },
    })),
  ];
  const picked = await vscode.window.showQuickPick(items, {
    title: `Evaluate ${target.label} on samples from…`,
    placeHolder: 'A training config (its dataset and tools) or a JSONL dataset',
  });
  return picked?.source;
}

/** The newest run of `config` in the workspace, else the newest run. */
function newestRun(config: string | undefined): string | undefined {
  const runs = workspaceRuns().filter((r) => r.run);
  const ofConfig = config
    ? runs.find((r) => r.run?.configPath && path.resolve(r.run.configPath) === path.resolve(config))
    : undefined;
  return (ofConfig ?? runs[0])?.dir;
}

function isRewardTarget(value: unknown): value is RewardTarget {
  const t = value as RewardTarget | undefined;
  return typeof t === 'object' && t !== null && typeof t.file === 'string' && typeof t.exportPath === 'string';
}

export async function evaluateRewardCommand(
  context: AuthoringContext,
  target: unknown,
  options: EvaluateOptions = {},
): Promise<RewardEvaluation | undefined> {
  if (!isRewardTarget(target)) {
    void vscode.window.showInformationMessage(
      'Evaluate on Samples runs from the code lens above a reward (an OutcomeReward, ProcessReward or RewardConfig export).',
    );
    return undefined;
  }
  const use = { action: 'Evaluate on Samples', runs: `the reward ${target.file}` };
  if (!requireTrust(use)) return undefined;
  await saveIfDirty(target.file);
  let source: { config?: string; data?: string } | undefined;
  if (options.config !== undefined || options.data !== undefined)
    source = { ...(options.config ? { config: options.config } : {}), ...(options.data ? { data: options.data } : {}) };
  else source = await chooseDataSource(target);
  if (!source) return undefined;
  const run = options.run === undefined ? newestRun(source.config) : (options.run ?? undefined);
  const samples =
    options.samples ?? vscode.workspace.getConfiguration('rolloutStudio').get<number>('evaluate.samples', 5);

  const args = [
    'eval-reward',
    target.file,
    '--export',
    target.exportPath,
    '--kind',
    target.kind,
    '--samples',
    String(samples),
    '--ipc',
  ];
  if (source.config) args.push('--config', source.config);
  if (source.data) args.push('--data', source.data);
  if (run) args.push('--run', run);
  const { runtime, cliPath } = trainerLaunch(context);
  try {
    const messages = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: `Evaluating ${target.label}…` },
      () =>
        runTrainer({
          use: { ...use, runs: source.config ? `the reward ${target.file} and the config ${source.config}` : use.runs },
          runtime,
          cliPath,
          args,
          cwd:
            vscode.workspace.getWorkspaceFolder(vscode.Uri.file(target.file))?.uri.fsPath ?? path.dirname(target.file),
          timeoutMs: 300_000,
        }),
    );
    const message = messages.find((m) => m.type === 'reward.evaluation');
    if (!message || message.type !== 'reward.evaluation')
      throw new Error('the trainer finished without sending an evaluation');
    const evaluation = { ...message.evaluation, file: vscode.workspace.asRelativePath(message.evaluation.file) };
    await context.results.show(`${target.label} · Evaluate on Samples.txt`, formatRewardEvaluation(evaluation));
    return message.evaluation;
  } catch (error) {
    showFailure(context, 'Evaluate on Samples', error);
    return undefined;
  }
}
