import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  OpenRunInDebuggerArgs,
  parseWith,
  TrajectoriesPanelState,
  type RunRef,
  type StepSelection,
  type TrajectoriesToWebview,
} from '../../trainer/contract/protocol';
import type { PanelContext, PanelPlacement } from './panelContext';
import { RunPanelHost, RunPanels } from './runPanelHost';
import type { RunSourceLease } from './source/registry';
import { TrajectoriesController } from './trajectoriesController';
import { branchesChanged } from '../reroll/branchEvents';

/** Contributed by the debugger: opens a run in replay at one trajectory. */
export const OPEN_RUN_IN_DEBUGGER = 'rolloutStudio.openRunInDebugger';

const TRAJECTORIES = new RunPanels<TrajectoriesPanel, TrajectoriesPanelState>({
  viewType: 'rolloutStudio.trajectories',
  app: 'trajectories',
  name: 'Trajectories',
  saved: TrajectoriesPanelState,
  savedRunDir: (saved) => saved.runDir,
});

/**
 * The Trajectories webview of one run: VS Code's side of it (the logic is TrajectoriesController;
 * the page, its handshake and following the newest run are RunPanelHost's).
 */
export class TrajectoriesPanel {
  static readonly viewType = TRAJECTORIES.kind.viewType;

  private controller: TrajectoriesController;
  private readonly host: RunPanelHost<TrajectoriesToWebview>;

  private constructor(
    readonly panel: vscode.WebviewPanel,
    private lease: RunSourceLease,
    private readonly context: PanelContext,
    step: StepSelection,
    followsNewest: boolean,
    recreations = 0,
  ) {
    this.controller = this.control(step);
    const branches = branchesChanged.event((e) => this.controller.branchesChanged(e.runDirectory, e.step, e.index));
    // Restricted Mode hides Re-roll…; granting trust brings it back without reopening the panel.
    const trust = vscode.workspace.onDidGrantWorkspaceTrust(() => this.controller.trustChanged());
    this.host = new RunPanelHost(
      panel,
      context,
      { panels: TRAJECTORIES, owner: this },
      { followsNewest, recreations },
      {
        runDir: () => this.runDir,
        showRun: (dir) => this.showRun(dir),
        receive: (raw) => this.controller.receive(raw),
        dispose: () => {
          branches.dispose();
          trust.dispose();
          this.controller.dispose();
          this.lease.release();
        },
        reopener: () => {
          const { runDir, followsNewest: follows } = this;
          const selection = this.controller.step;
          return (twin, again) =>
            new TrajectoriesPanel(twin, context.sources.acquire(runDir), context, selection, follows, again);
        },
      },
    );
  }

  /** Settles when the page has started (or the panel was closed or recreated). */
  get started(): Promise<void> {
    return this.host.started;
  }

  get runDir(): string {
    return this.lease.source.dir;
  }

  get followsNewest(): boolean {
    return this.host.following.followsNewest;
  }

  /** A run became the newest: follow it, or (pinned) say that it started. */
  newestRunChanged(run: RunRef): void {
    this.host.following.newestChanged(run);
  }

  /** The panel's logic for its current run; titles the panel after it and lets the page read the run's images. */
  private control(step: StepSelection): TrajectoriesController {
    this.panel.title = `Trajectories · ${this.lease.source.run().id}`;
    allowRunDirectory(this.panel.webview, this.lease.source.dir);
    const { webview } = this.panel;
    const resourceUri = (runDirectory: string, file: string) =>
      webview.asWebviewUri(vscode.Uri.file(path.join(runDirectory, file))).toString();
    const actions = {
      openInDebugger,
      resourceUri,
      followNewestRun: (follow: boolean) => this.host.following.setFollowsNewest(follow),
      trusted: () => vscode.workspace.isTrusted,
      reroll: (args: { runDirectory: string; step: number; index: number }) =>
        void vscode.commands.executeCommand('rolloutStudio.rerollFromHere', args),
      showBranch: (args: { runDirectory: string; id: string; branch: number }) =>
        void vscode.commands.executeCommand('rolloutStudio.showBranch', args),
      replayBranch: (args: { runDirectory: string; id: string }) =>
        void vscode.commands.executeCommand('rolloutStudio.replayBranch', args),
    };
    return new TrajectoriesController(this.lease.source, (message) => this.host.post(message), actions, step);
  }

  /** Show another run here, at its newest step; false (and logged) when it cannot be read. */
  private showRun(dir: string): boolean {
    let lease: RunSourceLease;
    try {
      lease = this.context.sources.acquire(dir);
    } catch (error) {
      this.context.log.appendLine(`Trajectories: cannot show ${dir}: ${(error as Error).message}`);
      return false;
    }
    const started = this.controller.isReady;
    this.controller.dispose();
    this.lease.release();
    this.lease = lease;
    this.controller = this.control('follow');
    if (started) this.controller.start();
    return true;
  }

  /** The step the panel follows or is pinned to, and the step it shows. */
  get step(): { selection: StepSelection; shown: number | undefined } {
    return { selection: this.controller.step, shown: this.controller.shown };
  }

  static all(): TrajectoriesPanel[] {
    return TRAJECTORIES.all();
  }

  /**
   * Open (or reveal) the run's panel; a step pins it. `followsNewest`: a new panel follows the
   * newest run (else it stays on this one); a panel that already shows the run is revealed as it
   * is. Throws when the directory is not a readable run.
   */
  static show(
    context: PanelContext,
    runDir: string,
    options: PanelPlacement & { step?: number } = {},
  ): TrajectoriesPanel {
    const { step, followsNewest = false } = options;
    const existing = TRAJECTORIES.reveal(runDir, options);
    if (existing) {
      if (step !== undefined) existing.controller.select(step);
      return existing;
    }
    const lease = context.sources.acquire(path.resolve(runDir));
    const panel = TRAJECTORIES.create(context, 'Trajectories', options);
    return new TrajectoriesPanel(panel, lease, context, step ?? 'follow', followsNewest);
  }

  /** The serializer that brings a panel back after a window reload from the state its webview saved. */
  static serializer(context: PanelContext): vscode.Disposable {
    return TRAJECTORIES.serializer(
      context,
      (panel, { runDir, step, followsNewest }) =>
        new TrajectoriesPanel(panel, context.sources.acquire(runDir), context, step, followsNewest),
    );
  }
}

/**
 * Let the page load files of the run directory: the images its trajectories saw
 * (images/<sha256>.<format>). Roots are only added, and only when the directory is not already
 * readable: VS Code reloads the page when a panel's options change (it sends the page its
 * content again; the page then says `ready` and is sent everything), so a panel that follows
 * runs back and forth reloads once per new run directory.
 */
function allowRunDirectory(webview: vscode.Webview, dir: string): void {
  const roots = webview.options.localResourceRoots ?? [];
  const inside = (root: vscode.Uri) => {
    const relative = path.relative(root.fsPath, dir);
    return (
      root.scheme === 'file' && relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative)
    );
  };
  if (roots.some(inside)) return;
  webview.options = { ...webview.options, localResourceRoots: [...roots, vscode.Uri.file(dir)] };
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
