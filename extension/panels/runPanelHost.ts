import * as path from 'node:path';
import * as vscode from 'vscode';
import type { z } from 'zod';
import type { RunFollowingState, RunRef } from '../../trainer/contract/protocol';
import { reopenInPlace, unavailableHtml, webviewHtml, webviewOptions } from '../webviewHtml';
import { loadWebview } from './loadWebview';
import type { PanelContext, PanelPlacement } from './panelContext';
import { RunFollowing } from './runFollowing';

/**
 * The one skeleton of the Trajectories and Metrics panels, VS Code's side of a run panel:
 *
 * - RunPanels: the open panels of one kind, finding and revealing one that shows a run,
 *   creating a new one, and bringing one back after a window reload (WebviewPanelSerializer)
 *   from the state its page saved;
 * - RunPanelHost: one panel's page — given, and given again while it stays silent
 *   (loadWebview), reopened in a new frame when it never starts —, the ready handshake (the page
 *   says `ready`: the panel's logic sends everything, then whether it follows the newest run),
 *   following the newest run (RunFollowing), and the one way messages go to the page (`post`).
 *
 * Each kind adds its logic: trajectoriesPanel.ts and metricsPanel.ts, whose controllers read the
 * run and answer the page.
 */

/** One kind of run panel. */
export interface RunPanelKind<Saved> {
  viewType: string;
  /** The webview app: dist/webview/<app>.js. */
  app: 'trajectories' | 'metrics';
  /** The panel's name, as the user reads it. */
  name: string;
  /** What its page saves for a window reload (vscode.setState), handed back to the serializer. */
  saved: z.ZodType<Saved>;
  /** The run a saved panel showed (its own run). */
  savedRunDir(saved: Saved): string;
}

/** What RunPanels needs of an open panel. */
export interface OpenRunPanel {
  readonly panel: vscode.WebviewPanel;
  /** The run it shows (its own run, for Metrics). */
  readonly runDir: string;
  readonly followsNewest: boolean;
  newestRunChanged(run: RunRef): void;
}

/** What a panel's logic gives its host. */
export interface RunPanelLogic {
  /** The run the panel shows (its own run). */
  runDir(): string;
  /** Show another run (the panel follows the newest run); false, and logged, when it cannot be read. */
  showRun(dir: string): boolean;
  /** A message from the page; throws (the host logs it) when it is malformed. */
  receive(raw: unknown): void;
  /** The panel closed: let go of what it holds. */
  dispose(): void;
  /**
   * Called before a panel whose page never starts is closed: keep what it shows now, and
   * return how to build the same panel on a new frame (`twin`) in its place.
   */
  reopener(): (twin: vscode.WebviewPanel, recreations: number) => void;
}

/** The open panels of one kind; how one is found, created, and restored after a reload. */
export class RunPanels<P extends OpenRunPanel, Saved> {
  private readonly open = new Set<P>();

  constructor(readonly kind: RunPanelKind<Saved>) {}

  all(): P[] {
    return [...this.open];
  }

  add(panel: P): void {
    this.open.add(panel);
  }

  delete(panel: P): void {
    this.open.delete(panel);
  }

  /** The open panel showing `runDir` — one that follows the newest run as asked, else any —, revealed. */
  reveal(runDir: string, placement: PanelPlacement): P | undefined {
    const { followsNewest = false, preserveFocus = false } = placement;
    const dir = path.resolve(runDir);
    const showing = this.all().filter((p) => p.runDir === dir);
    const existing = showing.find((p) => p.followsNewest === followsNewest) ?? showing[0];
    existing?.panel.reveal(undefined, preserveFocus);
    return existing;
  }

  /** A new VS Code panel of this kind, where `placement` says. */
  create(context: PanelContext, title: string, placement: PanelPlacement): vscode.WebviewPanel {
    const { column = vscode.ViewColumn.Active, preserveFocus = false } = placement;
    return vscode.window.createWebviewPanel(
      this.kind.viewType,
      title,
      { viewColumn: column, preserveFocus },
      webviewOptions(context.extensionUri),
    );
  }

  /**
   * WebviewPanelSerializer: bring a panel back after a window reload from the state its page
   * saved (`build` makes the panel of it; it throws when the run can no longer be read). A
   * panel that follows the newest run moves to a run that started while the window was away.
   */
  restore(context: PanelContext, panel: vscode.WebviewPanel, state: unknown, build: (saved: Saved) => P): void {
    const { name } = this.kind;
    const parsed = this.kind.saved.safeParse(state);
    if (!parsed.success) {
      panel.webview.html = unavailableHtml(
        name,
        `This panel has no saved run to show. Open ${name} again from the Rollout Runs view.`,
      );
      return;
    }
    let restored: P;
    try {
      restored = build(parsed.data);
    } catch (error) {
      const dir = this.kind.savedRunDir(parsed.data);
      panel.webview.html = unavailableHtml(name, `${dir} can no longer be shown: ${(error as Error).message}`);
      return;
    }
    const newest = context.newestRun.run;
    if (restored.followsNewest && newest) restored.newestRunChanged(newest);
  }

  /** The serializer of this kind, registered with VS Code. */
  serializer(context: PanelContext, build: (panel: vscode.WebviewPanel, saved: Saved) => P): vscode.Disposable {
    return vscode.window.registerWebviewPanelSerializer(this.kind.viewType, {
      deserializeWebviewPanel: async (panel, state) =>
        this.restore(context, panel, state, (saved) => build(panel, saved)),
    });
  }
}

/** How a panel starts: whether it follows the newest run, and how many times its predecessors were reopened. */
export interface RunPanelStart {
  followsNewest: boolean;
  recreations: number;
}

/** One run panel's page: its loading, its ready handshake, following the newest run, and what is posted to it. */
export class RunPanelHost<ToWebview> {
  readonly following: RunFollowing;
  /** Settles when the page has started (or the panel was closed or reopened). */
  readonly started: Promise<void>;

  /** Give `panel` (titled already) its page; `owner` is listed in `panels` until the panel closes. */
  constructor(
    readonly panel: vscode.WebviewPanel,
    context: PanelContext,
    kind: { panels: RunPanels<OpenRunPanel, unknown>; owner: OpenRunPanel },
    start: RunPanelStart,
    logic: RunPanelLogic,
  ) {
    const log = (line: string) => context.log.appendLine(line);
    this.following = new RunFollowing(start.followsNewest, {
      dir: () => logic.runDir(),
      showRun: (dir) => logic.showRun(dir),
      newest: () => context.newestRun.run,
      post: (following) => this.post({ type: 'following', following }),
    });
    panel.webview.onDidReceiveMessage((raw) => {
      try {
        logic.receive(raw);
        if ((raw as { type?: unknown } | undefined)?.type === 'ready') this.following.announce();
      } catch (error) {
        log(String(error));
      }
    });
    panel.onDidDispose(() => {
      logic.dispose();
      kind.panels.delete(kind.owner);
    });
    // A frame whose page never starts is replaced by a new panel in the same place, showing the same.
    const recreate = () => {
      const build = logic.reopener();
      reopenInPlace(panel, context.extensionUri, log, (twin) => build(twin, start.recreations + 1));
    };
    const { app } = kind.panels.kind;
    this.started = loadWebview(panel, () => webviewHtml(panel.webview, context.extensionUri, app, panel.title), log, {
      recreate,
      recreations: start.recreations,
    });
    kind.panels.add(kind.owner);
  }

  /** The one way a message goes to the page. */
  post(message: ToWebview | { type: 'following'; following: RunFollowingState }): void {
    void this.panel.webview.postMessage(message);
  }
}
