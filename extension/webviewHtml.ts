import * as crypto from 'node:crypto';
import * as vscode from 'vscode';

/**
 * The HTML shell of every panel: a strict Content-Security-Policy (nothing but our own
 * script, with a nonce, and our own stylesheet), the bundled app script and its CSS.
 * Webview apps live in dist/webview/<app>.js and .css.
 */
export function webviewHtml(webview: vscode.Webview, extensionUri: vscode.Uri, app: string, title: string): string {
  const nonce = crypto.randomBytes(18).toString('base64');
  const asset = (file: string) => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', 'webview', file));
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src ${webview.cspSource}`,
    `font-src ${webview.cspSource}`,
    `img-src ${webview.cspSource} data:`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${asset(`${app}.css`)}">
<title>${title}</title>
</head>
<body>
<main id="app"></main>
<script nonce="${nonce}" src="${asset(`${app}.js`)}"></script>
</body>
</html>`;
}

/** Options shared by all our panels: scripts on, and only our own dist/webview folder readable. */
export function webviewOptions(extensionUri: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
  return { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist', 'webview')], retainContextWhenHidden: false };
}
