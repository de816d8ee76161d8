import type * as vscode from 'vscode';
import type { RunSources } from './source/registry';

/** What every panel host needs from the extension. */
export interface PanelContext {
  extensionUri: vscode.Uri;
  sources: RunSources;
  log: vscode.OutputChannel;
}
