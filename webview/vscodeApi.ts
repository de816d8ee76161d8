/** The handle VS Code gives a webview script; acquireVsCodeApi may be called only once. */
interface VsCodeApi<State> {
  postMessage(message: unknown): void;
  getState(): State | undefined;
  setState(state: State): void;
}
declare function acquireVsCodeApi<State>(): VsCodeApi<State>;

let api: VsCodeApi<unknown> | undefined;

export function vscodeApi<State>(): VsCodeApi<State> {
  api ??= acquireVsCodeApi<unknown>();
  return api as VsCodeApi<State>;
}
