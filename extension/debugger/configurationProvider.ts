/**
 * Launch configurations for the `rollout` debugger: the workspace's recorded runs under
 * `.rollout/runs` offered as replay configurations (in "Run and Debug" and when launch.json is
 * created), F5 without a launch.json replaying the newest run, and relative run directories
 * resolved against the workspace folder. Live training configurations join when the trainer
 * does.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { listRuns } from '../../trainer/runstore/reader';

export const RUNS_FOLDER = path.join('.rollout', 'runs');

export class RolloutConfigurationProvider implements vscode.DebugConfigurationProvider {
  provideDebugConfigurations(folder: vscode.WorkspaceFolder | undefined): vscode.DebugConfiguration[] {
    if (!folder) return [];
    return recordedRuns(folder)
      .slice(0, 10)
      .map(({ dir, name }) => replayConfiguration(name, `\${workspaceFolder}/${path.relative(folder.uri.fsPath, dir).split(path.sep).join('/')}`));
  }

  resolveDebugConfiguration(folder: vscode.WorkspaceFolder | undefined, config: vscode.DebugConfiguration): vscode.DebugConfiguration | undefined {
    if (config.type || config.request || config.name) return { ...config, type: 'rollout', request: config.request ?? 'launch', name: config.name ?? 'Rollout Studio' };
    // F5 with no launch.json: replay the newest recorded run.
    const newest = folder ? recordedRuns(folder)[0] : undefined;
    if (!newest) {
      void vscode.window.showErrorMessage(`No recorded runs under ${RUNS_FOLDER} in this workspace. Train first, or use "Rollout Studio: Open Run…" to pick a run directory.`);
      return undefined;
    }
    return replayConfiguration(newest.name, newest.dir);
  }

  resolveDebugConfigurationWithSubstitutedVariables(folder: vscode.WorkspaceFolder | undefined, config: vscode.DebugConfiguration): vscode.DebugConfiguration {
    for (const key of ['runDirectory', 'config'] as const) {
      const value = config[key];
      if (typeof value === 'string' && folder && !path.isAbsolute(value)) config[key] = path.resolve(folder.uri.fsPath, value);
    }
    return config;
  }
}

export function replayConfiguration(runName: string, runDirectory: string): vscode.DebugConfiguration {
  return { type: 'rollout', request: 'launch', name: `Replay ${runName}`, runDirectory, stopOnEntry: true };
}

/** Readable runs of a workspace folder, newest first. */
export function recordedRuns(folder: vscode.WorkspaceFolder): Array<{ dir: string; name: string }> {
  return listRuns(path.join(folder.uri.fsPath, RUNS_FOLDER)).flatMap(({ dir, run }) => (run ? [{ dir, name: `${run.name} (${run.id})` }] : []));
}
