/**
 * "Rollout Studio: Replay Run in Debugger…": pick a run directory (or get one from the
 * explorer's context menu on run.json) and replay it under the debugger, stopped at its first
 * turn; from the Trajectories panel's "Open in Debugger", stopped at the first turn of the
 * trajectory it shows (its step and index come with the run directory). And the
 * `${command:rolloutStudio.pickRun}` variable launch configurations use to ask for a run.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { startDebugSession } from '../../workspaceDebug';
import { OpenRunInDebuggerArgs } from '../../../trainer/contract/protocol/panels';
import { RunStoreReader } from '../../../trainer/contract/runstore/reader';
import { recordedRuns, replayConfiguration, RUNS_FOLDER } from '../configurationProvider';
import { transcriptUri } from '../transcripts/transcriptUri';

export async function openRunInDebugger(target?: vscode.Uri | unknown): Promise<boolean> {
  let dir: string | undefined;
  let startAt: { step: number; trajectory: number } | undefined;
  if (target instanceof vscode.Uri) dir = target.fsPath;
  else if (target !== undefined) {
    const args = OpenRunInDebuggerArgs.safeParse(target);
    if (!args.success) {
      void vscode.window.showErrorMessage(
        `Replay Run in Debugger: expected a run directory, got ${JSON.stringify(target)}`,
      );
      return false;
    }
    dir = args.data.runDirectory;
    startAt = { step: args.data.step, trajectory: args.data.trajectory };
  }
  if (dir && path.basename(dir) === 'run.json') dir = path.dirname(dir);
  if (!dir) {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const picked = await vscode.window.showOpenDialog({
      title: 'Open Run: choose a run directory (it holds run.json)',
      openLabel: 'Replay Run',
      canSelectFiles: false,
      canSelectFolders: true,
      canSelectMany: false,
      ...(folder ? { defaultUri: vscode.Uri.joinPath(folder.uri, ...RUNS_FOLDER.split(path.sep)) } : {}),
    });
    if (!picked?.length) return false;
    dir = picked[0].fsPath;
  }
  let name: string;
  try {
    const run = new RunStoreReader(dir).run();
    name = `${run.name} (${run.id})`;
  } catch (error) {
    void vscode.window.showErrorMessage(`Cannot replay ${dir}: ${(error as Error).message}`);
    return false;
  }
  const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(dir)) ?? vscode.workspace.workspaceFolders?.[0];
  const started = await startDebugSession(folder, replayConfiguration(name, dir, startAt));
  // VS Code reveals a stop's source only in the session it focuses, and it does not always focus
  // a new session while another is still being torn down: show the asked-for trajectory anyway.
  if (started && startAt) {
    const uri = vscode.Uri.parse(transcriptUri({ runDirectory: dir, step: startAt.step, index: startAt.trajectory }));
    await vscode.window.showTextDocument(uri, { preview: true }).then(undefined, () => undefined);
  }
  return started;
}

/** For `"runDirectory": "${command:rolloutStudio.pickRun}"`: a quick pick of the workspace's runs. */
export async function pickRun(): Promise<string | undefined> {
  const runs = (vscode.workspace.workspaceFolders ?? []).flatMap((folder) => recordedRuns(folder));
  if (runs.length === 0) {
    void vscode.window.showErrorMessage(`No recorded runs under ${RUNS_FOLDER} in this workspace.`);
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    runs.map((run) => ({ label: run.name, description: run.dir, dir: run.dir })),
    { title: 'Replay which run?', placeHolder: 'Recorded runs, newest first' },
  );
  return picked?.dir;
}
