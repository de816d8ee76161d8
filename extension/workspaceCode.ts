import * as childProcess from 'node:child_process';

/**
 * The one gate for workspace code. Every process the extension starts — the trainer for a
 * training, a re-roll, Run Tool, an MCP server's tool list, Evaluate on Samples, Check
 * Environment — is started by `spawnWorkspaceCode` or `execFileWorkspaceCode` below, and they
 * refuse in Restricted Mode. A repository's configs, tools, rewards and recorded runs (whose
 * run.json names a config) are programs, and a check kept at each command would be forgotten by
 * the next one (an attack pass found two: Re-roll from the panel and the MCP tool list ran
 * before any check). The commands still check early, through `requireWorkspaceTrust`
 * (workspaceTrust.ts), so the refusal comes before any quick pick; this is the check that no
 * call site can leave out. test/unit/architecture/processSpawns.test.ts fails when anything in
 * extension/ starts a process elsewhere.
 *
 * No `vscode` import: the trainer's process classes that call this are unit-tested in plain
 * Node, where there is no Restricted Mode. Inside the extension host `vscode` is there to ask.
 */

/** What would run, for the refusal: "Re-roll" would run "the config /r/agent.config.ts". */
export interface WorkspaceCodeUse {
  /** The action, as the user knows it: "Re-roll", "Run Tool", "Training". */
  action: string;
  /** What of the workspace it would run: "the config /r/agent.config.ts". */
  runs: string;
}

/** Thrown instead of starting a process in Restricted Mode. */
export class RestrictedModeError extends Error {
  constructor(readonly use: WorkspaceCodeUse) {
    super(restrictedModeMessage(use));
    this.name = 'RestrictedModeError';
  }
}

export function restrictedModeMessage({ action, runs }: WorkspaceCodeUse): string {
  return `Restricted Mode: ${action} would run ${runs} from this folder. Trust the folder to run it (Workspaces: Manage Workspace Trust).`;
}

type TrustProbe = () => boolean;

/**
 * VS Code's answer when this runs in an extension host. Outside one (the trainer's own tests,
 * a script) `vscode` cannot be loaded and there is no Restricted Mode to honour.
 */
function extensionHostTrust(): TrustProbe {
  let vscode: { workspace: { isTrusted: boolean } };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- optional: absent outside VS Code
    vscode = require('vscode') as typeof vscode;
  } catch {
    return () => true;
  }
  return () => vscode.workspace.isTrusted;
}

let isTrusted: TrustProbe = extensionHostTrust();

/** Unit tests only: answer the trust question without VS Code. Returns a function that restores the previous probe. */
export function setTrustProbeForTests(probe: TrustProbe): () => void {
  const previous = isTrusted;
  isTrusted = probe;
  return () => (isTrusted = previous);
}

/** The refusal when the workspace is not trusted; undefined when `use` may run. */
export function workspaceCodeRefusal(use: WorkspaceCodeUse): RestrictedModeError | undefined {
  return isTrusted() ? undefined : new RestrictedModeError(use);
}

/** Throws a RestrictedModeError when the workspace is not trusted. */
export function assertWorkspaceCodeAllowed(use: WorkspaceCodeUse): void {
  const refusal = workspaceCodeRefusal(use);
  if (refusal) throw refusal;
}

/** `child_process.spawn`, after the gate. */
export function spawnWorkspaceCode(
  use: WorkspaceCodeUse,
  command: string,
  args: readonly string[],
  options: childProcess.SpawnOptions,
): childProcess.ChildProcess {
  assertWorkspaceCodeAllowed(use);
  return childProcess.spawn(command, args, options);
}

/** `child_process.execFile` with string output, after the gate (which throws before anything starts). */
export function execFileWorkspaceCode(
  use: WorkspaceCodeUse,
  command: string,
  args: readonly string[],
  options: childProcess.ExecFileOptions,
  callback: (error: childProcess.ExecFileException | null, stdout: string, stderr: string) => void,
): childProcess.ChildProcess {
  assertWorkspaceCodeAllowed(use);
  return childProcess.execFile(command, args, { ...options, encoding: 'utf8' }, callback);
}
