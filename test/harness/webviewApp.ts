import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { webviewDocument } from '../../extension/webviewDocument';
import { repoRoot } from './paths';

/**
 * A built webview app (dist/webview/<app>.js) loaded in Chromium the way VS Code loads it: the
 * same HTML document and Content-Security-Policy (extension/webviewDocument.ts), VS Code's
 * theme variables and body class, and `acquireVsCodeApi` — the one part of VS Code replaced
 * here, by a double that hands the webview's messages to the test and keeps its state.
 */

export type Theme = 'dark' | 'light' | 'high-contrast';

/** A few of VS Code's theme variables, from its Default Dark Modern / Light Modern / High Contrast themes. */
export const THEMES: Record<Theme, Record<string, string>> = {
  dark: {
    'font-family': 'system-ui, sans-serif',
    'font-size': '13px',
    'editor-font-family': 'monospace',
    foreground: '#cccccc',
    descriptionForeground: '#9d9d9d',
    'editor-background': '#1f1f1f',
    'editorWidget-background': '#202020',
    'panel-border': '#2b2b2b',
    errorForeground: '#f85149',
    'textLink-foreground': '#4daafc',
    'list-activeSelectionBackground': '#04395e',
    'list-activeSelectionForeground': '#ffffff',
    'list-hoverBackground': '#2a2d2e',
    'badge-background': '#616161',
    'badge-foreground': '#f8f8f8',
    'charts-foreground': '#cccccc',
    'charts-lines': 'rgba(204, 204, 204, 0.5)',
    'charts-red': '#f14c4c',
    'charts-blue': '#3794ff',
    'charts-yellow': '#cca700',
    'charts-orange': '#d18616',
    'charts-green': '#89d185',
    'charts-purple': '#b180d7',
    disabledForeground: 'rgba(204, 204, 204, 0.5)',
    'textCodeBlock-background': '#2b2b2b',
    'editorError-foreground': '#f14c4c',
    'editorWarning-foreground': '#cca700',
    focusBorder: '#0078d4',
  },
  light: {
    'font-family': 'system-ui, sans-serif',
    'font-size': '13px',
    'editor-font-family': 'monospace',
    foreground: '#3b3b3b',
    descriptionForeground: '#3b3b3b',
    'editor-background': '#ffffff',
    'editorWidget-background': '#f8f8f8',
    'panel-border': '#e5e5e5',
    errorForeground: '#f85149',
    'textLink-foreground': '#005fb8',
    'list-activeSelectionBackground': '#e8e8e8',
    'list-activeSelectionForeground': '#000000',
    'list-hoverBackground': '#f2f2f2',
    'badge-background': '#cccccc',
    'badge-foreground': '#3b3b3b',
    'charts-foreground': '#616161',
    'charts-lines': 'rgba(97, 97, 97, 0.5)',
    'charts-red': '#e51400',
    'charts-blue': '#1a85ff',
    'charts-yellow': '#bf8803',
    'charts-orange': '#d18616',
    'charts-green': '#388a34',
    'charts-purple': '#652d90',
    disabledForeground: 'rgba(97, 97, 97, 0.5)',
    'textCodeBlock-background': '#f8f8f8',
    'editorError-foreground': '#e51400',
    'editorWarning-foreground': '#bf8803',
    focusBorder: '#005fb8',
  },
  'high-contrast': {
    'font-family': 'system-ui, sans-serif',
    'font-size': '13px',
    'editor-font-family': 'monospace',
    foreground: '#ffffff',
    descriptionForeground: 'rgba(255, 255, 255, 0.7)',
    'editor-background': '#000000',
    'editorWidget-background': '#0c141f',
    'panel-border': '#6fc3df',
    contrastBorder: '#6fc3df',
    errorForeground: '#f48771',
    'textLink-foreground': '#21a6ff',
    'list-activeSelectionBackground': '#000000',
    'list-activeSelectionForeground': '#ffffff',
    'list-hoverBackground': '#000000',
    'badge-background': '#000000',
    'badge-foreground': '#ffffff',
    'charts-foreground': '#ffffff',
    'charts-lines': 'rgba(255, 255, 255, 0.5)',
    'charts-red': '#f14c4c',
    'charts-blue': '#3794ff',
    'charts-yellow': '#ffd700',
    'charts-orange': '#ff8c00',
    'charts-green': '#89d185',
    'charts-purple': '#b180d7',
    disabledForeground: '#a5a5a5',
    'textCodeBlock-background': '#000000',
    'editorError-foreground': '#f48771',
    'editorWarning-foreground': '#ffd370',
    focusBorder: '#f38518',
  },
};

const ORIGIN = 'https://webview.rollout.test';

/** Where a run directory's files are served from (VS Code serves them through asWebviewUri under the same origin). */
export function runResourceUri(file: string): string {
  return `${ORIGIN}/run/${file}`;
}

export interface WebviewApp {
  page: Page;
  /** Every message the webview posted, in order. */
  fromWebview: unknown[];
  /** Content-Security-Policy violations and console errors seen so far. */
  violations: string[];
  consoleErrors: string[];
  /** Messages from the webview that the host-side controller rejected (see connect). */
  hostErrors: string[];
  /** Post a message to the webview as the extension host would; sends stay in order. */
  send(message: unknown): Promise<void>;
  /** Wait until every send so far was delivered. */
  flush(): Promise<void>;
  /** Called for each message from the webview, those already received first (e.g. `ready`, sent on load). */
  onMessage(listener: (message: unknown) => void): void;
  /** What the webview last stored with setState. */
  state(): Promise<unknown>;
  setTheme(theme: Theme): Promise<void>;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** Serve this run directory's files at runResourceUri(file) (the images trajectories saw). */
  runDir?: string | undefined;
  state?: unknown | undefined;
  theme?: Theme | undefined;
  viewport?: { width: number; height: number } | undefined;
}

export async function openWebviewApp(browser: Browser, app: string, options: OpenOptions = {}): Promise<WebviewApp> {
  const dist = path.join(repoRoot, 'dist', 'webview');
  if (!fs.existsSync(path.join(dist, `${app}.js`)))
    throw new Error(`${dist}/${app}.js is missing: run npm run build first`);
  const page = await browser.newPage({ viewport: options.viewport ?? { width: 1400, height: 900 } });
  const fromWebview: unknown[] = [];
  const listeners: Array<(message: unknown) => void> = [];
  const violations: string[] = [];
  const consoleErrors: string[] = [];
  const html = webviewDocument({
    cspSource: ORIGIN,
    scriptNonce: 'c2NyaXB0LW5vbmNlLWZvci10ZXN0cw',
    styleNonce: 'c3R5bGUtbm9uY2UtZm9yLXRlc3Rz',
    scriptUri: `${ORIGIN}/${app}.js`,
    styleUri: `${ORIGIN}/${app}.css`,
    title: app,
  });
  await page.route(`${ORIGIN}/**`, (route) => {
    const name = new URL(route.request().url()).pathname.slice(1);
    if (name === 'index.html') return route.fulfill({ contentType: 'text/html', body: html });
    if (name.startsWith('run/') && options.runDir) {
      const resource = path.join(options.runDir, name.slice('run/'.length));
      if (!fs.existsSync(resource)) return route.fulfill({ status: 404, body: '' });
      return route.fulfill({
        contentType: `image/${path.extname(resource).slice(1)}`,
        body: fs.readFileSync(resource),
      });
    }
    const file = path.join(dist, path.basename(name));
    if (!fs.existsSync(file)) return route.fulfill({ status: 404, body: '' });
    return route.fulfill({
      contentType: file.endsWith('.css') ? 'text/css' : 'text/javascript',
      body: fs.readFileSync(file),
    });
  });
  // Anything else would be a network request, which a webview must never make.
  await page.route(
    (url) => !url.href.startsWith(ORIGIN) && !url.href.startsWith('data:'),
    (route) => {
      violations.push(`network request to ${route.request().url()}`);
      return route.abort();
    },
  );
  await page.exposeFunction('__rolloutToHost', (message: unknown) => {
    fromWebview.push(message);
    for (const listener of listeners) listener(message);
  });
  await page.exposeFunction('__rolloutViolation', (text: string) => violations.push(text));
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(`uncaught: ${error.message}`));
  // A string, not a function: tsx's transform would add helpers the page does not have.
  await page.addInitScript(
    `(${INIT_SCRIPT})(${JSON.stringify({ state: options.state, vars: THEMES[options.theme ?? 'dark'], themeClass: bodyClass(options.theme ?? 'dark') })})`,
  );
  await page.goto(`${ORIGIN}/index.html`);
  let chain: Promise<void> = Promise.resolve();
  return {
    page,
    fromWebview,
    violations,
    consoleErrors,
    hostErrors: [],
    send(message) {
      chain = chain.then(() => page.evaluate(`window.postMessage(${JSON.stringify(message)}, '*')`));
      return chain;
    },
    flush: () => chain,
    onMessage: (listener) => {
      for (const message of [...fromWebview]) listener(message);
      listeners.push(listener);
    },
    state: () => page.evaluate('window.__rolloutState'),
    setTheme: (theme) =>
      page.evaluate(
        `window.__rolloutApplyTheme(${JSON.stringify(THEMES[theme])}, ${JSON.stringify(bodyClass(theme))})`,
      ),
    close: () => page.close(),
  };
}

/** Runs in the page before any of its scripts: the VS Code API double, CSP reporting, theme variables. */
const INIT_SCRIPT = `function ({ state, vars, themeClass }) {
  let acquired = false;
  let saved = state;
  window.acquireVsCodeApi = () => {
    if (acquired) throw new Error('acquireVsCodeApi may be called only once');
    acquired = true;
    return {
      postMessage: (message) => window.__rolloutToHost(JSON.parse(JSON.stringify(message))),
      getState: () => saved,
      setState: (next) => { saved = next; window.__rolloutState = next; },
    };
  };
  document.addEventListener('securitypolicyviolation', (e) =>
    window.__rolloutViolation(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber));
  window.__rolloutApplyTheme = (variables, cls) => {
    window.__rolloutTheme = { variables, cls };
    if (!document.documentElement) return;
    for (const [name, value] of Object.entries(variables)) document.documentElement.style.setProperty('--vscode-' + name, value);
    if (document.body) document.body.className = cls;
  };
  window.__rolloutApplyTheme(vars, themeClass);
  // Like VS Code, set the variables before the app's script runs.
  new MutationObserver((_, observer) => {
    if (!document.body) return;
    observer.disconnect();
    window.__rolloutApplyTheme(window.__rolloutTheme.variables, window.__rolloutTheme.cls);
  }).observe(document, { childList: true, subtree: true });
}`;

function bodyClass(theme: Theme): string {
  return theme === 'high-contrast' ? 'vscode-high-contrast' : `vscode-${theme}`;
}

/**
 * Wire a host-side controller to the page: `create` gets the function that posts to the
 * webview and returns the controller; the webview's messages (those already sent, like
 * `ready`, first) go to its `receive`. Messages it rejects are kept in `app.hostErrors`.
 */
export function connect<C extends { receive(message: unknown): void }>(
  app: WebviewApp,
  create: (post: (message: unknown) => void) => C,
): C {
  const controller = create((message) => void app.send(message));
  app.onMessage((message) => {
    try {
      controller.receive(message);
    } catch (error) {
      app.hostErrors.push((error as Error).message);
    }
  });
  return controller;
}
