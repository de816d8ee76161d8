import * as vscode from 'vscode';
import { workspaceCodeRefusal, type WorkspaceCodeUse } from './workspaceCode';

/**
 * Workspace Trust at the level of the commands. A repository's configs, tools, rewards and
 * recorded runs are programs: Start Training, Debug Training, Run Tool, Debug Tool, Run MCP
 * Tool, Evaluate on Samples, Re-roll and Check Environment run them (or a configured Node) with
 * the user's full privileges. The process itself is refused at the one place processes start
 * (workspaceCode.ts); the commands ask here first so the refusal comes before any quick pick,
 * naming what would have run. Viewing runs, trajectories and metrics, and replaying a recorded
 * run, run no workspace code and stay available. package.json declares the same
 * (`capabilities.untrustedWorkspaces`, `enablement: isWorkspaceTrusted` on those commands — which
 * VS Code does not apply to a code lens click or to executeCommand, so the check here is what
 * holds) and makes `rolloutStudio.trainer.nodePath` a machine setting, which a workspace cannot set.
 */

/** Why `use` cannot run now, or undefined when the workspace is trusted. */
export function untrustedReason(use: WorkspaceCodeUse): string | undefined {
  return workspaceCodeRefusal(use)?.message;
}

/** Shows the refusal as a warning, offering to manage trust. */
export function showRestrictedMode(message: string): void {
  void vscode.window.showWarningMessage(`Rollout Studio: ${message}`, 'Manage Workspace Trust').then((choice) => {
    if (choice) void vscode.commands.executeCommand('workbench.trust.manage');
  });
}

/** True when the workspace is trusted; otherwise says what would have run, offering to manage trust. */
export function requireTrust(use: WorkspaceCodeUse): boolean {
  const reason = untrustedReason(use);
  if (reason === undefined) return true;
  showRestrictedMode(reason);
  return false;
}
