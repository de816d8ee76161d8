/**
 * The HTML of every panel, without VS Code, so tests load the very same document in Chromium.
 *
 * Content-Security-Policy: nothing loads or runs but our own bundle. Scripts need the script
 * nonce. Styles come from our stylesheet, plus `<style>` elements carrying the style nonce:
 * FAST Foundation (under @vscode/webview-ui-toolkit) appends an empty `<style>` to the head
 * when it loads, to probe `:focus-visible` support, and without a nonce Chromium reports
 * "Applying inline style violates … style-src". FAST takes the nonce from
 * `<meta property="csp-nonce">`. The style nonce differs from the script nonce, so reading it
 * from the page unlocks no script; inline style attributes stay blocked ('unsafe-inline' is
 * never granted). No connect-src: a webview has no network.
 */
export interface WebviewDocumentOptions {
  /** The origin webview resources are served from (VS Code: `webview.cspSource`). */
  cspSource: string;
  scriptNonce: string;
  styleNonce: string;
  scriptUri: string;
  styleUri: string;
  title: string;
}

export function webviewDocument(o: WebviewDocumentOptions): string {
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${o.scriptNonce}'`,
    `style-src ${o.cspSource} 'nonce-${o.styleNonce}'`,
    `font-src ${o.cspSource}`,
    `img-src ${o.cspSource} data:`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta property="csp-nonce" content="${o.styleNonce}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${o.styleUri}">
<title>${escapeHtml(o.title)}</title>
</head>
<body>
<main id="app"></main>
<script nonce="${o.scriptNonce}" src="${o.scriptUri}"></script>
</body>
</html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}
