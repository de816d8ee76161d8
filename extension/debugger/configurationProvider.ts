/**
 * Launch configurations for the `rollout` debugger: the workspace's training configs offered
 * as live configurations and its recorded runs under `.rollout/runs` as replay configurations
 * (in "Run and Debug" and when launch.json is created); F5 without a launch.json debugs the
 * training config open in the editor, else replays the newest run; relative paths are resolved
 * against the workspace folder.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { listRuns } from '../../trainer/contract/runstore/reader';
import { isTrainingConfigSource } from '../live/configSource';
import { findTrainingConfigs } from '../live/trainingConfigs';

export const RUNS_FOLDER = path.join('.rollout', 'runs');

export class RolloutConfigurationProvider implements vscode.DebugConfigurationProvider {
  async provideDebugConfigurations(folder: vscode.WorkspaceFolder | undefined): Promise<vscode.DebugConfiguration[]> {
    if (!folder) return [];
    const inFolder = (uri: vscode.Uri) =>
      vscode.workspace.getWorkspaceFolder(uri)?.uri.toString() === folder.uri.toString();
    const relative = (file: string) =>
      `\${workspaceFolder}/${path.relative(folder.uri.fsPath, file).split(path.sep).join('/')}`;
    const trainings = (await findTrainingConfigs())
      .filter(inFolder)
      .slice(0, 10)
      .map((uri) => trainingLaunch(path.basename(uri.fsPath), relative(uri.fsPath)));
    const replays = recordedRuns(folder)
      .slice(0, 10)
      .map(({ dir, name }) => replayConfiguration(name, relative(dir)));
    return [...trainings, ...replays];
  }

  resolveDebugConfiguration(
    folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): vscode.DebugConfiguration | undefined {
    if (config.type || config.request || config.name)
      return { ...config, type: 'rollout', request: config.request ?? 'launch', name: config.name ?? 'Rollout Studio' };
    // F5 with no launch.json: debug the training config in the editor, else replay the newest recorded run.
    const document = vscode.window.activeTextEditor?.document;
    if (document && document.uri.scheme === 'file' && isTrainingConfigSource(document.fileName, document.getText()))
      return trainingLaunch(path.basename(document.fileName), document.fileName);
    const newest = folder ? recordedRuns(folder)[0] : undefined;
    if (!newest) {
      void vscode.window.showErrorMessage(
        `No training config open and no recorded runs under ${RUNS_FOLDER} in this workspace. Open a training config (it does export default defineConfig({ … })), or use "Rollout Studio: Open Run…" to pick a run directory.`,
      );
      return undefined;
    }
    return replayConfiguration(newest.name, newest.dir);
  }

  resolveDebugConfigurationWithSubstitutedVariables(
    folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): vscode.DebugConfiguration {
    for (const key of ['runDirectory', 'config'] as const) {
      const value = config[key];
      if (typeof value === 'string' && folder && !path.isAbsolute(value))
        config[key] = path.resolve(folder.uri.fsPath, value);
    }
    // The launch configuration's own choice wins; else the setting (the adapter checks the value).
    if (config.breakpointsDuringStep === undefined) {
      config.breakpointsDuringStep =
        vscode.workspace.getConfiguration('rolloutStudio', folder?.uri).get<string>('debugger.breakpointsDuringStep') ??
        'stepped-trajectory';
    }
    return config;
  }
}

/** Replay `runDirectory`, stopped at its first turn, or at the first turn of trajectory `startAt`. */
export function replayConfiguration(
  runName: string,
  runDirectory: string,
  startAt?: { step: number; trajectory: number },
): vscode.DebugConfiguration {
  if (startAt)
    return {
      type: 'rollout',
      request: 'launch',
      name: `Replay ${runName} · step ${startAt.step} #${startAt.trajectory}`,
      runDirectory,
      startAt,
    };
  return { type: 'rollout', request: 'launch', name: `Replay ${runName}`, runDirectory, stopOnEntry: true };
}

/** Debug training of a config (breakpoints live). */
export function trainingLaunch(name: string, config: string): vscode.DebugConfiguration {
  return { type: 'rollout', request: 'launch', name: `Debug training: ${name}`, config };
}

/** Readable runs of a workspace folder, newest first. */
export function recordedRuns(folder: vscode.WorkspaceFolder): Array<{ dir: string; name: string }> {
  return listRuns(path.join(folder.uri.fsPath, RUNS_FOLDER)).flatMap(({ dir, run }) =>
    run ? [{ dir, name: `${run.name} (${run.id})` }] : [],
  );
}
