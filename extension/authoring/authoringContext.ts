import * as vscode from 'vscode';
import { resolveTrainerRuntime, TrainerProcessError, type TrainerLaunch } from '../trainerProcess';
import type { ResultDocuments } from './resultDocuments';
import { RestrictedModeError } from '../workspaceCode';
import { showRestrictedMode } from '../workspaceTrust';

/** What the authoring commands share: where the trainer CLI is, how to start it, where results and logs go. */
export interface AuthoringContext {
  extension: vscode.ExtensionContext;
  log: vscode.OutputChannel;
  results: ResultDocuments;
}

export function trainerLaunch(context: AuthoringContext): TrainerLaunch {
  const configured = vscode.workspace.getConfiguration('rolloutStudio').get<string>('trainer.nodePath');
  return {
    runtime: resolveTrainerRuntime(configured),
    cliPath: vscode.Uri.joinPath(context.extension.extensionUri, 'dist', 'trainer', 'cli.js').fsPath,
  };
}

/** The trainer compiles the file from disk: unsaved edits of it would not be what runs. */
export async function saveIfDirty(file: string): Promise<void> {
  const document = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === file);
  if (document?.isDirty) await document.save();
}

/** A failure shown to the user: the title in the notification, the detail in it and in the log. */
export function showFailure(context: AuthoringContext, what: string, error: unknown): void {
  if (error instanceof RestrictedModeError) {
    context.log.appendLine(`[${what}] ${error.message}`);
    return showRestrictedMode(error.message);
  }
  const title = error instanceof TrainerProcessError ? error.title : `${what} failed.`;
  const detail =
    error instanceof TrainerProcessError ? error.detail : error instanceof Error ? error.message : String(error);
  context.log.appendLine(`[${what}] ${title}\n${detail}`);
  // A notification shows one paragraph: the first line of the detail (a compile error's location and text); the log has it all.
  const first = detail.split('\n').find((line) => line.trim()) ?? '';
  void vscode.window
    .showErrorMessage(`${what}: ${title} ${first.length > 400 ? `${first.slice(0, 400)}…` : first}`, 'Show Log')
    .then((choice) => {
      if (choice === 'Show Log') context.log.show(true);
    });
}
