/**
 * Everything the debugger adds to VS Code, registered in one place: the inline `rollout`
 * debug adapter, its configuration provider, the `rollout:` transcript documents, and the
 * Open Run… command.
 */
import * as vscode from 'vscode';
import { RolloutConfigurationProvider } from './configurationProvider';
import { openRunInDebugger, pickRun } from './openRun';
import { RolloutDebugSession } from './session';
import { TranscriptDocuments } from './transcriptDocuments';
import { TRANSCRIPT_SCHEME } from './transcriptUri';

export function registerDebugger(context: vscode.ExtensionContext): void {
  const documents = new TranscriptDocuments();
  const configurations = new RolloutConfigurationProvider();
  context.subscriptions.push(
    vscode.debug.registerDebugAdapterDescriptorFactory('rollout', {
      createDebugAdapterDescriptor: () => new vscode.DebugAdapterInlineImplementation(new RolloutDebugSession()),
    }),
    vscode.debug.registerDebugConfigurationProvider('rollout', configurations, vscode.DebugConfigurationProviderTriggerKind.Initial),
    vscode.debug.registerDebugConfigurationProvider('rollout', configurations, vscode.DebugConfigurationProviderTriggerKind.Dynamic),
    vscode.workspace.registerTextDocumentContentProvider(TRANSCRIPT_SCHEME, documents),
    documents.trackSessions(),
    vscode.commands.registerCommand('rolloutStudio.openRunInDebugger', openRunInDebugger),
    vscode.commands.registerCommand('rolloutStudio.pickRun', pickRun),
  );
}
