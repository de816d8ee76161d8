import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ToolRunReport } from '../../trainer/contract/protocol';
import { formatToolRun } from '../../trainer/contract/authoringReport';
import { askArguments } from './argumentBox';
import { argumentSkeleton, parseArgumentText } from './argumentText';
import { saveIfDirty, showFailure, trainerLaunch, type AuthoringContext } from './authoringContext';
import { attachDebugger, type AttachedDebugger } from './debugAttach';
import type { ToolTarget } from './lensSpecs';
import { ToolSession } from './toolSession';
import { requireTrust } from '../workspaceTrust';
import type { WorkspaceCodeUse } from '../workspaceCode';
import type { TrainerLaunch } from '../trainerProcess';

/**
 * Run Tool… and Debug Tool. Both start a trainer process that loads the tool (ToolSession), ask
 * for the arguments in a box that checks them against the tool's schema as they are typed, run
 * the call through the trainer's ToolRunner, and show the report (observation, data, error,
 * latency, logs) in a read-only document. Debug Tool opens the process's inspector and attaches
 * VS Code's JavaScript debugger before the call, so breakpoints in the tool's source hit.
 */

export interface RunToolOptions {
  /** The arguments as JSON text, instead of asking (programmatic use, tests). */
  args?: string;
}

const REMEMBERED_ARGS = 'rolloutStudio.toolArguments';

function rememberKey(target: ToolTarget): string {
  return `${target.file}#${JSON.stringify(target.selector)}`;
}

function isToolTarget(value: unknown): value is ToolTarget {
  const t = value as ToolTarget | undefined;
  return (
    typeof t === 'object' &&
    t !== null &&
    typeof t.file === 'string' &&
    typeof t.selector === 'object' &&
    t.selector !== null
  );
}

/** Starts the trainer process that loads the tool (with its inspector open for Debug Tool), showing progress. */
function loadToolSession(
  context: AuthoringContext,
  target: ToolTarget,
  { runtime, cliPath }: TrainerLaunch,
  debug: boolean,
  use: WorkspaceCodeUse,
): Thenable<ToolSession> {
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: `Loading ${target.label}…` },
    () =>
      ToolSession.start({
        use,
        runtime,
        cliPath,
        file: target.file,
        selector: target.selector,
        inspect: debug,
        cwd: vscode.workspace.getWorkspaceFolder(vscode.Uri.file(target.file))?.uri.fsPath ?? path.dirname(target.file),
        onOutput: (text) => context.log.append(text),
      }),
  );
}

/**
 * The call's arguments and their text: the options' JSON, else what the user enters in the
 * checking box (starting from the arguments last used on this tool); undefined when the box is dismissed.
 */
async function toolArguments(
  context: AuthoringContext,
  target: ToolTarget,
  session: ToolSession,
  what: string,
  options: RunToolOptions,
  attached: AttachedDebugger | undefined,
): Promise<{ value: unknown; text: string } | undefined> {
  if (options.args !== undefined) {
    const parsed = parseArgumentText(options.args);
    if (!parsed.ok) throw new Error(`the arguments are not valid JSON: ${parsed.message}`);
    return { value: parsed.value, text: options.args };
  }
  const remembered = context.extension.workspaceState.get<Record<string, string>>(REMEMBERED_ARGS, {})[
    rememberKey(target)
  ];
  return askArguments({
    title: `${what}: ${session.tool.name}`,
    prompt: `Arguments as JSON. ${session.tool.description}`.slice(0, 300),
    initial: remembered ?? JSON.stringify(argumentSkeleton(session.tool.parameters)),
    session,
    ...(attached ? { cancel: attached.onDidEnd } : {}),
  });
}

/** Runs the call in the loaded session (attaching the debugger first for Debug Tool) and shows its report. */
async function runInSession(
  context: AuthoringContext,
  target: ToolTarget,
  session: ToolSession,
  options: RunToolOptions,
  debug: boolean,
): Promise<ToolRunReport | undefined> {
  const what = debug ? 'Debug Tool' : 'Run Tool';
  let attached: AttachedDebugger | undefined;
  try {
    if (debug) {
      if (!session.inspectorUrl) throw new Error('the trainer process did not open its inspector');
      attached = await attachDebugger(
        session.inspectorUrl,
        `${what}: ${session.tool.name}`,
        vscode.workspace.getWorkspaceFolder(vscode.Uri.file(target.file)),
      );
    }
    const args = await toolArguments(context, target, session, what, options, attached);
    if (!args) return undefined;
    const report = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: `Running ${session.tool.name}…` },
      () => session.run(args.value),
    );
    const remembered = context.extension.workspaceState.get<Record<string, string>>(REMEMBERED_ARGS, {});
    await context.extension.workspaceState.update(REMEMBERED_ARGS, { ...remembered, [rememberKey(target)]: args.text });
    await context.results.show(
      `${session.tool.name} · ${what}.txt`,
      formatToolRun(report, vscode.workspace.asRelativePath(target.file)),
    );
    return report;
  } catch (error) {
    showFailure(context, what, error);
    return undefined;
  } finally {
    await attached?.stop();
    session.close();
  }
}

export async function runToolFromEditor(
  context: AuthoringContext,
  target: unknown,
  options: RunToolOptions = {},
  debug = false,
): Promise<ToolRunReport | undefined> {
  const what = debug ? 'Debug Tool' : 'Run Tool';
  if (!isToolTarget(target)) {
    void vscode.window.showInformationMessage(
      `${what} runs from the code lens above a tool (a Tool subclass, a defineTool call or an exported tool instance).`,
    );
    return undefined;
  }
  const use = { action: what, runs: `the tool in ${target.file}` };
  if (!requireTrust(use)) return undefined;
  await saveIfDirty(target.file);
  const launch = trainerLaunch(context);
  let session: ToolSession;
  try {
    session = await loadToolSession(context, target, launch, debug, use);
  } catch (error) {
    showFailure(context, what, error);
    return undefined;
  }
  return runInSession(context, target, session, options, debug);
}
