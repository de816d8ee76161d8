/**
 * Everything the debugger adds to VS Code, registered in one place: the inline `rollout`
 * debug adapter (replay, and live training with the trainer this extension ships), its
 * configuration provider, the `rollout:` transcript documents, and the Replay Run command.
 */
import * as vscode from 'vscode';
import type { LiveTrainings } from '../live/liveTrainings';
import { registerToolDebugger } from '../live/toolDebugger';
import { resolveTrainerRuntime, type TrainerLaunch } from '../trainerProcess';
import { RolloutConfigurationProvider } from './configurationProvider';
import { openRunInDebugger, pickRun } from './replay/openRun';
import { RolloutDebugSession } from './debugSession';
import { TranscriptDocuments } from './transcripts/transcriptDocuments';
import { TRANSCRIPT_SCHEME } from './transcripts/transcriptUri';
import { untrustedReason } from '../workspaceTrust';

/** The trainer bundled with the extension, run by the configured runtime (read at each launch). */
function trainerLaunch(context: vscode.ExtensionContext): TrainerLaunch {
  const configured = vscode.workspace.getConfiguration('rolloutStudio').get<string>('trainer.nodePath');
  return {
    runtime: resolveTrainerRuntime(configured),
    cliPath: vscode.Uri.joinPath(context.extensionUri, 'dist', 'trainer', 'cli.js').fsPath,
  };
}

export function registerDebugger(context: vscode.ExtensionContext, trainings?: LiveTrainings): void {
  const documents = new TranscriptDocuments();
  const configurations = new RolloutConfigurationProvider();
  context.subscriptions.push(
    vscode.debug.registerDebugAdapterDescriptorFactory('rollout', {
      createDebugAdapterDescriptor: () =>
        new vscode.DebugAdapterInlineImplementation(
          new RolloutDebugSession({
            live: {
              launch: trainerLaunch(context),
              toolDebugger: true,
              refusal: (config) => untrustedReason({ action: 'Training', runs: `the config ${config}` }),
              ...(trainings ? { trainings } : {}),
            },
          }),
        ),
    }),
    vscode.debug.registerDebugConfigurationProvider(
      'rollout',
      configurations,
      vscode.DebugConfigurationProviderTriggerKind.Initial,
    ),
    vscode.debug.registerDebugConfigurationProvider(
      'rollout',
      configurations,
      vscode.DebugConfigurationProviderTriggerKind.Dynamic,
    ),
    vscode.workspace.registerTextDocumentContentProvider(TRANSCRIPT_SCHEME, documents),
    documents.trackSessions(trainings),
    registerToolDebugger(),
    vscode.commands.registerCommand('rolloutStudio.openRunInDebugger', openRunInDebugger),
    vscode.commands.registerCommand('rolloutStudio.pickRun', pickRun),
  );
}
