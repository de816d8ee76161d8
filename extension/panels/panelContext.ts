import type * as vscode from 'vscode';
import type { NewestRun } from './newestRun';
import type { RunSources } from './source/registry';

/** What every panel host needs from the extension. */
export interface PanelContext {
  extensionUri: vscode.Uri;
  sources: RunSources;
  log: vscode.OutputChannel;
  /** The newest run, which panels that follow the newest run show. */
  newestRun: NewestRun;
}

/** Where a panel opens, and whether a new one follows the newest run. */
export interface PanelPlacement {
  column?: vscode.ViewColumn;
  /** Open without taking the focus from the editor the user is in. */
  preserveFocus?: boolean;
  followsNewest?: boolean;
}
