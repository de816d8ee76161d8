import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { AuthoringContext } from './authoringContext';
import { AuthoringCodeLensProvider } from './codeLenses';
import { evaluateRewardCommand, type EvaluateOptions } from './evaluateCommand';
import { AUTHORING_COMMANDS, missingTrainingCommandMessage } from './lensSpecs';
import { NEW_FILE_KINDS, newFileCommand, type NewFileOptions } from './newFileCommands';
import { ResultDocuments } from './resultDocuments';
import { runMcpToolCommand, type RunMcpToolOptions } from './mcpToolCommand';
import { runToolFromEditor, type RunToolOptions } from './toolCommands';

/**
 * Everything of authoring: the New Tool / New Reward / New Training Config commands, the code
 * lenses over tools, rewards and configs, and the commands those lenses run. (The snippets are
 * contributed by package.json alone.)
 */

/**
 * Start Training / Debug Training belong to another module and are called by id. A lens must not
 * fail with VS Code's bare "command not found": when the command is not registered, say what is
 * missing and how to train anyway. Returns the command's result, or undefined when it is missing.
 */
async function runTrainingCommand(commandId: unknown, config: unknown, title?: unknown): Promise<unknown> {
  if (typeof commandId !== 'string' || !(config instanceof vscode.Uri))
    throw new Error(`${AUTHORING_COMMANDS.runTrainingCommand}: expected a command id and a config URI`);
  if (!(await vscode.commands.getCommands(true)).includes(commandId)) {
    const copy = 'Copy CLI Command';
    // Not awaited: the command is done once the message is up; the button acts whenever it is pressed.
    void vscode.window
      .showErrorMessage(
        missingTrainingCommandMessage(
          typeof title === 'string' ? title : commandId,
          commandId,
          vscode.workspace.asRelativePath(config),
        ),
        copy,
      )
      .then((choice) => {
        if (choice === copy) void vscode.env.clipboard.writeText(`npx rollout-studio train "${config.fsPath}"`);
      });
    return undefined;
  }
  return vscode.commands.executeCommand(commandId, config);
}

/** From the palette: nothing; from the explorer's context menu: the folder (or file) clicked; from code: options. */
function newFileOptions(arg: unknown): NewFileOptions {
  if (arg instanceof vscode.Uri)
    return arg.scheme === 'file'
      ? { folder: fs.statSync(arg.fsPath).isDirectory() ? arg.fsPath : path.dirname(arg.fsPath) }
      : {};
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
    vscode.commands.registerCommand(AUTHORING_COMMANDS.newTool, (arg?: unknown) =>
      newFileCommand(NEW_FILE_KINDS.tool, newFileOptions(arg)),
    ),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.newReward, (arg?: unknown) =>
      newFileCommand(NEW_FILE_KINDS.reward, newFileOptions(arg)),
    ),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.newTrainingConfig, (arg?: unknown) =>
      newFileCommand(NEW_FILE_KINDS.config, newFileOptions(arg)),
    ),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.runTool, (target: unknown, options?: RunToolOptions) =>
      runToolFromEditor(context, target, options, false),
    ),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.runMcpTool, (target: unknown, options?: RunMcpToolOptions) =>
      runMcpToolCommand(context, target, options),
    ),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.debugTool, (target: unknown, options?: RunToolOptions) =>
      runToolFromEditor(context, target, options, true),
    ),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.evaluateReward, (target: unknown, options?: EvaluateOptions) =>
      evaluateRewardCommand(context, target, options),
    ),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.runTrainingCommand, runTrainingCommand),
    vscode.commands.registerCommand(AUTHORING_COMMANDS.explainLens, (message: string) =>
      vscode.window.showInformationMessage(message),
    ),
  );
}
