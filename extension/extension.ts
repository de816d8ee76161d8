import * as vscode from 'vscode';
import { registerAuthoring } from './authoring/register';
import { registerDebugger } from './debugger/register';
import { EnvironmentPanel } from './environmentPanel';
import { registerPanels, type PanelsApi } from './panels/register';

/** What activate returns (extension.exports): used by the extension tests. */
export interface RolloutStudioApi {
  panels: PanelsApi;
}

export function activate(context: vscode.ExtensionContext): RolloutStudioApi {
  const log = vscode.window.createOutputChannel('Rollout Studio');
  context.subscriptions.push(
    log,
    vscode.commands.registerCommand('rolloutStudio.checkEnvironment', () => EnvironmentPanel.show(context.extensionUri, log)),
  );
  registerDebugger(context);
  registerAuthoring(context, log);
  return { panels: registerPanels(context, log) };
}

export function deactivate(): void {}
