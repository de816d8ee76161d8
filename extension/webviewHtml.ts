import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import { webviewDocument } from './webviewDocument';

/**
 * The HTML shell of every panel (see webviewDocument for its Content-Security-Policy): the
 * bundled app script and its CSS from dist/webview/<app>.js and .css.
 */
export function webviewHtml(webview: vscode.Webview, extensionUri: vscode.Uri, app: string, title: string): string {
  const nonce = () => crypto.randomBytes(18).toString('base64');
  const asset = (file: string) =>
    webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', 'webview', file)).toString();
  return webviewDocument({
    cspSource: webview.cspSource,
    scriptNonce: nonce(),
    styleNonce: nonce(),
    scriptUri: asset(`${app}.js`),
    styleUri: asset(`${app}.css`),
    title,
  });
}

/** Options shared by all our panels: scripts on, and only our own dist/webview folder readable. */
export function webviewOptions(extensionUri: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
  return {
    enableScripts: true,
    localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist', 'webview')],
    retainContextWhenHidden: false,
  };
}

/** A panel that cannot show its data (e.g. a restored panel whose run was deleted): text only, no script. */
export function unavailableHtml(title: string, message: string): string {
  const escape = (t: string) =>
    t.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
  return `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8"><meta http-equiv="Content-Security-Policy" content="default-src 'none'"><title>${escape(title)}</title></head><body><h1>${escape(title)}</h1><p>${escape(message)}</p></body></html>`;
}

/**
 * Close `panel` and open a new panel of the same kind and title in its column, without taking
 * focus; `host` gives the new panel its page and logic. A failure is logged, and leaves no
 * empty panel behind.
 */
export function reopenInPlace(
  panel: vscode.WebviewPanel,
  extensionUri: vscode.Uri,
  log: (line: string) => void,
  host: (twin: vscode.WebviewPanel) => void,
): void {
  const viewColumn = panel.viewColumn ?? vscode.ViewColumn.Active;
  const { viewType, title } = panel;
  panel.dispose();
  let twin: vscode.WebviewPanel | undefined;
  try {
    twin = vscode.window.createWebviewPanel(
      viewType,
      title,
      { viewColumn, preserveFocus: true },
      webviewOptions(extensionUri),
    );
    host(twin);
  } catch (error) {
    twin?.dispose();
    log(`${title}: could not open the panel again: ${(error as Error).message}`);
  }
}
