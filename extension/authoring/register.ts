import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { AuthoringContext } from './authoringContext';
import { AuthoringCodeLensProvider } from './codeLenses';
import { evaluateRewardCommand, type EvaluateOptions } from './evaluateCommand';
import { AUTHORING_COMMANDS, TRAINING_COMMANDS } from './lensSpecs';
import { NEW_FILE_KINDS, newFileCommand, type NewFileOptions } from './newFileCommands';
import { ResultDocuments } from './resultDocuments';
import { runToolCommand, type RunToolOptions } from './toolCommands';

/**
 * Everything of authoring: the New Tool / New Reward / New Training Config commands, the code
 * lenses over tools, rewards and configs, and the commands those lenses run. (The snippets are
 * contributed by package.json alone.)
 */

/** Start Training / Debug Training come from another module; a lens must say so clearly when the command is not there. */
async function runTrainingCommand(commandId: unknown, config: unknown): Promise<unknown> {
  const known = Object.values(TRAINING_COMMANDS).find((c) => c.id === commandId);
  if (!known) throw new Error(`${AUTHORING_COMMANDS.runTrainingCommand}: unknown training command ${JSON.stringify(commandId)}`);
  const file = config instanceof vscode.Uri ? config.fsPath : String(config);
  if (!(await vscode.commands.getCommands(true)).includes(known.id)) {
    const copy = 'Copy CLI Command';
    const choice = await vscode.window.showErrorMessage(
      `${known.title} is not available in this build of Rollout Studio (no command "${known.id}" is registered). Train from a terminal instead: rollout-studio train ${vscode.workspace.asRelativePath(file)}`,
      copy,
    );
    if (choice === copy) await vscode.env.clipboard.writeText(`npx rollout-studio train "${file}"`);
    return undefined;
  }
  return vscode.commands.executeCommand(known.id, config instanceof vscode.Uri ? config : vscode.Uri.file(file));
}

/** From the palette: nothing; from the explorer's context menu: the folder (or file) clicked; from code: options. */
function newFileOptions(arg: unknown): NewFileOptions {
  if (arg instanceof vscode.Uri) return arg.scheme === 'file' ? { folder: fs.statSync(arg.fsPath).isDirectory() ? arg.fsPath : path.dirname(arg.fsPath) } : {};
  return typeof arg === 'object' && arg !== null ? (arg as NewFileOptions) : {};
}

export function registerAuthoring(extension: vscode.ExtensionContext, log: vscode.OutputChannel): void {
  const results = new ResultDocuments();
  const context: AuthoringContext = { extension, log, results };
  const lenses = new AuthoringCodeLensProvider();
  const typescript: vscode.DocumentSelector = [
    { language: 'typescript', scheme: 'file' },
    { language: 'typescriptreact', scheme: 'file' },
  ];
  extension.subscriptions.push(
    results,
    vscode.workspace.registerTextDocumentContentProvider(ResultDocuments.scheme, results),
    vscode.languages.registerCodeLensProvider(typescript, lenses),
    vscode.workspace.onDidCloseTextDocument((document) => lenses.forget(document)),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.newTool, (arg?: unknown) => newFileCommand(NEW_FILE_KINDS.tool, newFileOptions(arg))),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.newReward, (arg?: unknown) => newFileCommand(NEW_FILE_KINDS.reward, newFileOptions(arg))),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.newTrainingConfig, (arg?: unknown) => newFileCommand(NEW_FILE_KINDS.config, newFileOptions(arg))),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.runTool, (target: unknown, options?: RunToolOptions) => runToolCommand(context, target, options, false)),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.debugTool, (target: unknown, options?: RunToolOptions) => runToolCommand(context, target, options, true)),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.evaluateReward, (target: unknown, options?: EvaluateOptions) => evaluateRewardCommand(context, target, options)),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.runTrainingCommand, runTrainingCommand),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.explainLens, (message: string) => vscode.window.showInformationMessage(message)),
  );
}
