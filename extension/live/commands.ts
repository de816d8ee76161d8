/**
 * Rollout Studio: Start Training (a `rollout` debug session without debugging, like Run
 * Without Debugging), Debug Training (the same with breakpoints live) and Stop Training, plus
 * `${command:rolloutStudio.pickTrainingConfig}` for launch configurations. Training runs as a
 * debug session either way, so the debug toolbar's stop and restart, the debug console and
 * progress work the same for both.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { startDebugSession } from '../workspaceDebug';
import { chooseTrainingConfig } from './trainingConfigs';
import { requireTrust } from '../workspaceTrust';

/** The launch configuration that trains `config`. */
export function trainingConfiguration(config: vscode.Uri, debug: boolean): vscode.DebugConfiguration {
  return {
    type: 'rollout',
    request: 'launch',
    name: `${debug ? 'Debug' : 'Train'} ${path.basename(config.fsPath)}`,
    config: config.fsPath,
  };
}

function isTraining(session: vscode.DebugSession): boolean {
  return session.type === 'rollout' && typeof session.configuration.config === 'string';
}

export function registerTrainingCommands(context: vscode.ExtensionContext): void {
  const sessions = new Set<vscode.DebugSession>();
  const start = async (arg: unknown, debug: boolean): Promise<boolean> => {
    const action = debug ? 'Debug Training' : 'Start Training';
    // Before the quick pick of configs: in Restricted Mode there is nothing to choose.
    if (
      !requireTrust({ action, runs: arg instanceof vscode.Uri ? `the config ${arg.fsPath}` : "this folder's config" })
    )
      return false;
    const config = await chooseTrainingConfig(
      context,
      arg,
      debug ? 'Debug training of which config?' : 'Train which config?',
    );
    if (!config) return false;
    const folder = vscode.workspace.getWorkspaceFolder(config) ?? vscode.workspace.workspaceFolders?.[0];
    return startDebugSession(folder, trainingConfiguration(config, debug), { noDebug: !debug });
  };
  context.subscriptions.push(
    vscode.debug.onDidStartDebugSession((session) => isTraining(session) && sessions.add(session)),
    vscode.debug.onDidTerminateDebugSession((session) => sessions.delete(session)),
    vscode.commands.registerCommand('rolloutStudio.startTraining', (arg?: unknown) => start(arg, false)),
    vscode.commands.registerCommand('rolloutStudio.debugTraining', (arg?: unknown) => start(arg, true)),
    vscode.commands.registerCommand('rolloutStudio.stopTraining', async () => {
      const running = [...sessions];
      if (running.length === 0) {
        void vscode.window.showInformationMessage('Rollout Studio: no training is running in this window.');
        return false;
      }
      const session =
        running.length === 1
          ? running[0]
          : (
              await vscode.window.showQuickPick(
                running.map((s) => ({ label: s.name, description: String(s.configuration.config), session: s })),
                { title: 'Stop which training?' },
              )
            )?.session;
      if (!session) return false;
      // Through the debug session, as the toolbar's stop does: the trainer stops cleanly and marks the run stopped.
      await vscode.debug.stopDebugging(session);
      return true;
    }),
    vscode.commands.registerCommand(
      'rolloutStudio.pickTrainingConfig',
      async () => (await chooseTrainingConfig(context))?.fsPath,
    ),
  );
}
