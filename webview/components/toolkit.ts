/**
 * The one module that knows which web-component library draws our controls.
 *
 * The design card names @vscode/webview-ui-toolkit. Microsoft deprecated it (sunset announced
 * 2024-07-30, archived January 2025, last release 1.4.0, built on the deprecated FAST
 * Foundation). Everything else in webview/ calls only the helpers below, so moving to
 * @vscode-elements/elements is a change to this file alone.
 */
import {
  provideVSCodeDesignSystem,
  vsCodeBadge,
  vsCodeButton,
  vsCodeDataGrid,
  vsCodeDataGridCell,
  vsCodeDataGridRow,
  vsCodeDivider,
  vsCodeDropdown,
  vsCodeOption,
  vsCodeProgressRing,
  vsCodeTag,
  vsCodeTextField,
  vsCodeCheckbox,
} from '@vscode/webview-ui-toolkit';

let registered = false;

/** Register the custom elements once, before anything renders. */
export function registerComponents(): void {
  if (registered) return;
  registered = true;
  provideVSCodeDesignSystem().register(
    vsCodeBadge(),
    vsCodeButton(),
    vsCodeCheckbox(),
    vsCodeDataGrid(),
    vsCodeDataGridCell(),
    vsCodeDataGridRow(),
    vsCodeDivider(),
    vsCodeDropdown(),
    vsCodeOption(),
    vsCodeProgressRing(),
    vsCodeTag(),
    vsCodeTextField(),
  );
}

export type ButtonAppearance = 'primary' | 'secondary' | 'icon';

export function button(label: string, onClick: () => void, appearance: ButtonAppearance = 'primary'): HTMLElement {
  const el = document.createElement('vscode-button');
  el.setAttribute('appearance', appearance);
  el.textContent = label;
  el.addEventListener('click', onClick);
  return el;
}

export function tag(text: string): HTMLElement {
  const el = document.createElement('vscode-tag');
  el.textContent = text;
  return el;
}

export function progressRing(): HTMLElement {
  return document.createElement('vscode-progress-ring');
}

export function divider(): HTMLElement {
  return document.createElement('vscode-divider');
}
