import type * as vscode from 'vscode';

/**
 * Give a panel its page, and give it again while the page stays silent. Every page says
 * `ready` as its script starts; in code-server a webview created while another panel opens
 * beside it sometimes never runs its script (about one time in five in our tests), which
 * would leave a blank panel for good. Setting the HTML anew reloads the page. Each reload
 * waits twice as long as the one before, so a page that is merely slow to start (a busy
 * machine, a trainer loading its model beside it) is not reloaded again and again.
 */
export function loadWebview(panel: vscode.WebviewPanel, html: () => string, log: (line: string) => void, firstWaitMs = 3000, reloads = 4): void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  // The first message means the page runs: no more checks.
  const listener = panel.webview.onDidReceiveMessage(() => stop());
  const check = (waitMs: number, left: number) => {
    timer = setTimeout(() => {
      if (left === 0) return stop();
      // A hidden webview does not load until it is shown: look again later, same patience.
      if (!panel.visible) return check(waitMs, left);
      log(`${panel.title}: the page did not start within ${waitMs} ms; loading it again`);
      panel.webview.html = html();
      check(waitMs * 2, left - 1);
    }, waitMs);
  };
  const stop = () => {
    if (timer) clearTimeout(timer);
    listener.dispose();
  };
  panel.onDidDispose(stop);
  panel.webview.html = html();
  check(firstWaitMs, reloads);
}
