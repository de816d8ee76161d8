import * as vscode from 'vscode';
import { registerDebugger } from './debugger/register';
import { EnvironmentPanel } from './environmentPanel';

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Rollout Studio');
  context.subscriptions.push(
    log,
    vscode.commands.registerCommand('rolloutStudio.checkEnvironment', () => EnvironmentPanel.show(context.extensionUri, log)),
  );
  registerDebugger(context);
}

export function deactivate(): void {}
