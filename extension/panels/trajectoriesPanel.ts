import * as path from 'node:path';
import * as vscode from 'vscode';
import { OpenRunInDebuggerArgs, parseWith, TrajectoriesPanelState, type StepSelection } from '../../trainer/shared/protocol';
import { reopenInPlace, unavailableHtml, webviewHtml, webviewOptions } from '../webviewHtml';
import { loadWebview } from './loadWebview';
import type { PanelContext } from './panelContext';
import type { RunSourceLease } from './source/registry';
import { TrajectoriesController } from './trajectoriesController';

/** Contributed by the debugger: opens a run in replay at one trajectory. */
export const OPEN_RUN_IN_DEBUGGER = 'rolloutStudio.openRunInDebugger';

/** The Trajectories webview of one run: VS Code's side of it (the logic is TrajectoriesController). */
export class TrajectoriesPanel {
  static readonly viewType = 'rolloutStudio.trajectories';
  private static readonly panels = new Map<string, TrajectoriesPanel>();

  private readonly controller: TrajectoriesController;
  /** Settles when the page has started (or the panel was closed or recreated). */
  readonly started: Promise<void>;

  private constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly lease: RunSourceLease,
    context: PanelContext,
    step: StepSelection,
    recreations = 0,
  ) {
    const run = lease.source.run();
    panel.title = `Trajectories · ${run.id}`;
    // The run directory is readable by the page too: the images its trajectories saw (images/<sha256>.<format>).
    panel.webview.options = { ...panel.webview.options, localResourceRoots: [...(panel.webview.options.localResourceRoots ?? []), vscode.Uri.file(lease.source.dir)] };
    const resourceUri = (runDirectory: string, file: string) => panel.webview.asWebviewUri(vscode.Uri.file(path.join(runDirectory, file))).toString();
    this.controller = new TrajectoriesController(lease.source, (message) => void panel.webview.postMessage(message), { openInDebugger, resourceUri }, step);
    panel.webview.onDidReceiveMessage((raw) => {
      try {
        this.controller.receive(raw);
      } catch (error) {
        context.log.appendLine(String(error));
      }
    });
    panel.onDidDispose(() => {
      this.controller.dispose();
      this.lease.release();
      TrajectoriesPanel.panels.delete(this.runDir);
    });
    // A frame whose page never starts is replaced by a new panel in the same place, with the same step.
    const recreate = () => {
      const { runDir } = this;
      const selection = this.controller.step;
      reopenInPlace(panel, context.extensionUri, (line) => context.log.appendLine(line), (twin) => new TrajectoriesPanel(twin, context.sources.acquire(runDir), context, selection, recreations + 1));
    };
    this.started = loadWebview(panel, () => webviewHtml(panel.webview, context.extensionUri, 'trajectories', panel.title), (line) => context.log.appendLine(line), { recreate, recreations });
    TrajectoriesPanel.panels.set(this.runDir, this);
  }

  get runDir(): string {
    return this.lease.source.dir;
  }

  /** The step the panel follows or is pinned to, and the step it shows. */
  get step(): { selection: StepSelection; shown: number | undefined } {
    return { selection: this.controller.step, shown: this.controller.shown };
  }

  static all(): TrajectoriesPanel[] {
    return [...TrajectoriesPanel.panels.values()];
  }

  /** Open (or reveal) the run's panel; a step pins it. Throws when the directory is not a readable run. */
  static show(context: PanelContext, runDir: string, step?: number, column = vscode.ViewColumn.Active): TrajectoriesPanel {
    const existing = TrajectoriesPanel.panels.get(path.resolve(runDir));
    if (existing) {
      existing.panel.reveal();
      if (step !== undefined) existing.controller.select(step);
      return existing;
    }
    const lease = context.sources.acquire(runDir);
    const panel = vscode.window.createWebviewPanel(TrajectoriesPanel.viewType, 'Trajectories', column, webviewOptions(context.extensionUri));
    return new TrajectoriesPanel(panel, lease, context, step ?? 'follow');
  }

  /** WebviewPanelSerializer: bring a panel back after a window reload from the state its webview saved. */
  static restore(context: PanelContext, panel: vscode.WebviewPanel, state: unknown): void {
    const parsed = TrajectoriesPanelState.safeParse(state);
    if (!parsed.success) {
      panel.webview.html = unavailableHtml('Trajectories', 'This panel has no saved run to show. Open Trajectories again from the Rollout Runs view.');
      return;
    }
    try {
      new TrajectoriesPanel(panel, context.sources.acquire(parsed.data.runDir), context, parsed.data.step);
    } catch (error) {
      panel.webview.html = unavailableHtml('Trajectories', `${parsed.data.runDir} can no longer be shown: ${(error as Error).message}`);
    }
  }
}

async function openInDebugger(args: OpenRunInDebuggerArgs): Promise<void> {
  parseWith(OpenRunInDebuggerArgs, args, 'Open in Debugger');
  const commands = await vscode.commands.getCommands(true);
  if (!commands.includes(OPEN_RUN_IN_DEBUGGER)) {
    throw new Error(
      `Open in Debugger needs the Rollout Studio replay debugger (command ${OPEN_RUN_IN_DEBUGGER}), which this build of the extension does not have yet. ` +
        `The trajectory is step ${args.step}, index ${args.trajectory} of ${args.runDirectory}.`,
    );
  }
  await vscode.commands.executeCommand(OPEN_RUN_IN_DEBUGGER, args);
}
