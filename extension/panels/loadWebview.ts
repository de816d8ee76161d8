import type * as vscode from 'vscode';

/**
 * Give a panel its page, and give it again while the page stays silent. Every page says
 * `ready` as its script starts; in code-server a webview created while another panel opens
 * beside it sometimes never runs its script (about one time in five in our tests), which
 * would leave a blank panel for good. Setting the HTML anew reloads the page. Each reload
 * waits twice as long as the one before, up to `maxWaitMs`, so a page that is merely slow to
 * start (a busy machine, a trainer loading its model beside it) is not reloaded again and
 * again; a page that stays silent is retried at that pace for as long as it is shown — one
 * that had four reloads over 45 s and stayed blank was seen in a fresh-clone test run — and
 * checked again soon after it is shown again.
 */
export function loadWebview(panel: vscode.WebviewPanel, html: () => string, log: (line: string) => void, firstWaitMs = 3000, maxWaitMs = 12_000): void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  // A hidden webview does not load until it is shown: the view-state listener takes over.
  const schedule = (ms: number) => {
    clearTimeout(timer);
    timer = setTimeout(() => panel.visible && reload(ms), ms);
  };
  const reload = (waited: number) => {
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
  const stop = () => {
    clearTimeout(timer);
    listener.dispose();
    shown.dispose();
  };
  panel.onDidDispose(stop);
  panel.webview.html = html();
  schedule(firstWaitMs);
}
