import type * as vscode from 'vscode';

/** How many times a panel whose page never starts is recreated before reloads alone go on. */
const MAX_RECREATIONS = 3;

export interface LoadWebviewOptions {
  /** How long a new page may stay silent before it is loaded again. */
  firstWaitMs?: number;
  /** The longest wait between reloads (each waits twice as long as the one before). */
  maxWaitMs?: number;
  /**
   * Replace the panel with a new one — a new frame — after `reloadsBeforeRecreate` reloads that
   * did not help. The caller disposes this panel and opens its twin in the same place.
   */
  recreate?: () => void;
  reloadsBeforeRecreate?: number;
  /** How many times this panel's predecessors were recreated: none after MAX_RECREATIONS. */
  recreations?: number;
}

/**
 * Give a panel its page, and give it again while the page stays silent. Every page says
 * `ready` as its script starts.
 *
 * In a browser-hosted VS Code (code-server) webviews that start together replace each other's
 * service worker, and the page sent meanwhile can be lost; setting the HTML anew once that is over
 * loads it. Each reload waits twice as long as the one before, up to `maxWaitMs`, so a page that
 * is merely slow is not reloaded again and again. A frame that stays broken is recreated after
 * `reloadsBeforeRecreate` reloads when the caller says how; otherwise reloads go on at the capped
 * pace while the panel is shown. A hidden webview does not load until shown: it is checked again
 * soon after. How often it happens: extension/README.md.
 *
 * Resolves when the page has started, or when this panel is closed or handed over to its
 * recreated twin: whoever opens a second panel waits for it (see Open Run… in runPanelCommands.ts).
 */
export function loadWebview(
  panel: vscode.WebviewPanel,
  html: () => string,
  log: (line: string) => void,
  options: LoadWebviewOptions = {},
): Promise<void> {
  const { firstWaitMs = 3000, maxWaitMs = 12_000, reloadsBeforeRecreate = 1, recreations = 0 } = options;
  const recreate = recreations < MAX_RECREATIONS ? options.recreate : undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let reloads = 0;
  const schedule = (ms: number) => {
    clearTimeout(timer);
    timer = setTimeout(() => panel.visible && retry(ms), ms);
  };
  const retry = (waited: number) => {
    if (recreate && reloads >= reloadsBeforeRecreate) {
      log(
        `${panel.title}: the page did not start after ${reloads} reload${reloads === 1 ? '' : 's'}; opening the panel again in a new frame`,
      );
      stop();
      recreate();
      return;
    }
    reloads++;
    log(`${panel.title}: the page did not start within ${waited} ms; loading it again`);
    panel.webview.html = html();
    schedule(Math.min(waited * 2, maxWaitMs));
  };
  // Shown (again) while silent: check soon, with the first patience again.
  const shown = panel.onDidChangeViewState(({ webviewPanel }) => {
    if (webviewPanel.visible) schedule(firstWaitMs);
  });
  // The first message means the page runs: no more checks.
  const listener = panel.webview.onDidReceiveMessage(() => stop());
  let settled!: () => void;
  const started = new Promise<void>((resolve) => (settled = resolve));
  const stop = () => {
    clearTimeout(timer);
    listener.dispose();
    shown.dispose();
    settled();
  };
  panel.onDidDispose(stop);
  panel.webview.html = html();
  schedule(firstWaitMs);
  return started;
}
