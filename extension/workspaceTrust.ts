import * as vscode from 'vscode';

/**
 * Workspace Trust. A repository's configs, tools and rewards are programs: Start Training, Debug
 * Training, Run Tool, Debug Tool, Evaluate on Samples and Check Environment run them (or a
 * configured Node) with the user's full privileges. In Restricted Mode those are refused here,
 * at the point where the trainer would start, whatever asked for it (a command, a code lens, a
 * launch configuration); viewing runs, trajectories and metrics, and replaying a recorded run,
 * run no workspace code and stay available. package.json declares the same
 * (`capabilities.untrustedWorkspaces`, `enablement: isWorkspaceTrusted` on those commands) and
 * makes `rolloutStudio.trainer.nodePath` a machine setting, which a workspace cannot set.
 */

/** Why `what` cannot run now, or undefined when the workspace is trusted. */
export function untrustedReason(what: string): string | undefined {
  if (vscode.workspace.isTrusted) return undefined;
  return `${what} runs this workspace's code (its config, tools and rewards), and this workspace is not trusted (Restricted Mode). Trust it to run it: Workspaces: Manage Workspace Trust.`;
}

/** True when the workspace is trusted; otherwise says why `what` is refused, offering to manage trust. */
export function requireTrust(what: string): boolean {
  const reason = untrustedReason(what);
  if (reason === undefined) return true;
  void vscode.window.showWarningMessage(`Rollout Studio: ${reason}`, 'Manage Workspace Trust').then((choice) => {
    if (choice) void vscode.commands.executeCommand('workbench.trust.manage');
  });
  return false;
}
