import * as vscode from 'vscode';
import { registerAuthoring } from './authoring/registerAuthoring';
import { registerDebugger } from './debugger/registerDebugger';
import { EnvironmentPanel } from './environmentPanel';
import { registerTrainingCommands } from './live/commands';
import { LiveTrainings } from './live/liveTrainings';
import { registerPanels, type PanelsApi } from './panels/registerPanels';
import { registerReroll } from './reroll/rerollCommands';

/** What activate returns (extension.exports): used by the extension tests. */
export interface RolloutStudioApi {
  panels: PanelsApi;
  /** Trainings running in this window (started from the debugger or the training commands). */
  trainings: LiveTrainings;
}

export function activate(context: vscode.ExtensionContext): RolloutStudioApi {
  const log = vscode.window.createOutputChannel('Rollout Studio');
  context.subscriptions.push(
    log,
    vscode.commands.registerCommand('rolloutStudio.checkEnvironment', () =>
      EnvironmentPanel.show(context.extensionUri, log),
    ),
  );
  const trainings = new LiveTrainings();
  registerDebugger(context, trainings);
  registerTrainingCommands(context);
  registerAuthoring(context, log);
  registerReroll(context, log);
  return { panels: registerPanels(context, log, trainings), trainings };
}

export function deactivate(): void {}
