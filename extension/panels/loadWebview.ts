import type * as vscode from 'vscode';

/**
 * Give a panel its page, and give it again while the page stays silent. Every page says
 * `ready` as its script starts; in code-server a webview created while another panel opens
 * beside it sometimes never runs its script (about one time in five in our tests), which
 * would leave a blank panel for good. Setting the HTML anew reloads the page.
 */
export function loadWebview(panel: vscode.WebviewPanel, html: () => string, log: (line: string) => void, checkEveryMs = 3000, reloads = 5): void {
  let heard = false;
  let left = reloads;
  const listener = panel.webview.onDidReceiveMessage(() => {
    heard = true;
    listener.dispose();
  });
  const timer = setInterval(() => {
    if (heard || left === 0) return stop();
    if (!panel.visible) return; // a hidden webview does not load until it is shown
    left -= 1;
    log(`${panel.title}: the page did not start; loading it again`);
    panel.webview.html = html();
  }, checkEveryMs);
  const stop = () => {
    clearInterval(timer);
    listener.dispose();
  };
  panel.onDidDispose(stop);
  panel.webview.html = html();
}
