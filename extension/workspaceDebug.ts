import * as vscode from 'vscode';
import { assertWorkspaceCodeAllowed, type WorkspaceCodeUse } from './workspaceCode';

/**
 * Every debug session the extension starts, through the same gate as its processes
 * (workspaceCode.ts). A debug launch is a way to start a process: a `rollout` launch with a
 * `config` starts the trainer on it, and another debugger's launch runs what it names. Replaying
 * a recorded run (`runDirectory`) runs nothing of the workspace, and an attach starts no process
 * (it joins the trainer this extension started, which passed the gate), so they stay available
 * in Restricted Mode. test/unit/architecture/processSpawns.test.ts keeps `startDebugging` here.
 */

/** What the launch would run of the workspace; undefined when it runs nothing (a replay, an attach). */
export function debugLaunchUse(configuration: vscode.DebugConfiguration): WorkspaceCodeUse | undefined {
  if (configuration.request === 'attach') return undefined;
  if (configuration.type === 'rollout') {
    if (typeof configuration.config === 'string')
      return { action: 'Training', runs: `the config ${configuration.config}` };
    if (typeof configuration.runDirectory === 'string') return undefined;
  }
  return { action: `The launch "${configuration.name}"`, runs: `a ${configuration.type} program` };
}

/** `vscode.debug.startDebugging`, after the gate: throws a RestrictedModeError instead of launching. */
export function startDebugSession(
  folder: vscode.WorkspaceFolder | undefined,
  configuration: vscode.DebugConfiguration,
  options?: vscode.DebugSessionOptions,
): Thenable<boolean> {
  const use = debugLaunchUse(configuration);
  if (use) assertWorkspaceCodeAllowed(use);
  return vscode.debug.startDebugging(folder, configuration, options);
}
