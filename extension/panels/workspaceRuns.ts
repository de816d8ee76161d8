import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RunRecord, RunSummary } from '../../trainer/contract/protocol';
import { listRuns } from '../../trainer/contract/runstore';
import { runSummaryOf } from './source/summarize';

export const RUNS_DIRECTORY_SETTING = 'runs.directory';
const DEFAULT_RUNS_DIRECTORY = '.rollout/runs';

export interface RunEntry {
  dir: string;
  run?: RunRecord;
  /** Why run.json could not be read. */
  error?: string;
}

/** The runs folder (setting `rolloutStudio.runs.directory`, relative to the folder) of each workspace folder. */
export function runsRoots(): string[] {
  const configured =
    vscode.workspace.getConfiguration('rolloutStudio').get<string>(RUNS_DIRECTORY_SETTING) || DEFAULT_RUNS_DIRECTORY;
  return (vscode.workspace.workspaceFolders ?? [])
    .filter((f) => f.uri.scheme === 'file')
    .map((f) => path.resolve(f.uri.fsPath, configured));
}

/** Every run of the workspace, newest first; unreadable ones are listed with their error. */
export function workspaceRuns(): RunEntry[] {
  return runsRoots()
    .flatMap((root) => listRuns(root))
    .sort((a, b) => (b.run?.createdAt ?? '').localeCompare(a.run?.createdAt ?? ''));
}

export function workspaceRunSummaries(): RunSummary[] {
  return workspaceRuns().flatMap((e) => (e.run ? [runSummaryOf(e.dir, e.run)] : []));
}
