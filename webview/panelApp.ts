// First, before anything that defines a schema: zod without `new Function` (see zodConfig.ts).
import './zodConfig';
import type { z } from 'zod';
import { parseWith } from '../trainer/contract/protocol/parse';
import { registerComponents } from './components/toolkit';

/**
 * The one start of every panel's page (Trajectories, Metrics, Environment). An app's main.ts
 * imports this module first and calls panelApp() where its script starts; it gets the state its
 * page saved before a reload, `save`, the one way messages go to the host (`post`), and
 * `listen`: each message from the host validated against the app's schema before the app
 * renders it, then `ready` — the host answers with everything the page shows.
 */
export interface PanelApp<State, ToHost> {
  /** What the page saved before a window reload, when it still parses. */
  readonly restored: State | undefined;
  /** Keep `state` for a reload (VS Code hands it to the panel's serializer). */
  save(state: State): void;
  post(message: ToHost): void;
  /**
   * Render every message from the host that `schema` accepts; `failed` gets the error (it names
   * the field) of one it does not. Then say `ready`: call it once the page is built.
   */
  listen<ToWebview>(
    schema: z.ZodType<ToWebview>,
    render: (message: ToWebview) => void,
    failed: (error: unknown) => void,
  ): void;
}

/** The handle VS Code gives a webview script; acquireVsCodeApi may be called only once. */
interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

/** Start a panel's page; `saved`: the schema of the state it keeps across a reload, if it keeps one. */
export function panelApp<State, ToHost>(saved?: z.ZodType<State>): PanelApp<State, ToHost> {
  registerComponents();
  const vscode = acquireVsCodeApi();
  const restored = saved?.safeParse(vscode.getState());
  const post = (message: ToHost) => vscode.postMessage(message);
  return {
    restored: restored?.success ? restored.data : undefined,
    save: (state) => vscode.setState(state),
    post,
    listen(schema, render, failed) {
      window.addEventListener('message', (event: MessageEvent) => {
        try {
          render(parseWith(schema, event.data, 'message from the extension'));
        } catch (error) {
          failed(error);
        }
      });
      vscode.postMessage({ type: 'ready' });
    },
  };
}
