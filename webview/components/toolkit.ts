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
  vsCodeButton,
  vsCodeDataGrid,
  vsCodeDataGridCell,
  vsCodeDataGridRow,
  vsCodeDivider,
  vsCodeDropdown,
  vsCodeOption,
  vsCodeProgressRing,
  vsCodeTextField,
  vsCodeCheckbox,
} from '@vscode/webview-ui-toolkit';
import './components.css';

let registered = false;

/** Register the custom elements once, before anything renders. */
export function registerComponents(): void {
  if (registered) return;
  registered = true;
  provideVSCodeDesignSystem().register(
    vsCodeButton(),
    vsCodeCheckbox(),
    vsCodeDataGrid(),
    vsCodeDataGridCell(),
    vsCodeDataGridRow(),
    vsCodeDivider(),
    vsCodeDropdown(),
    vsCodeOption(),
    vsCodeProgressRing(),
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

/**
 * A tag (a small label). Drawn by us, not by the toolkit's vscode-tag / vscode-badge: their
 * template binds an inline `style` attribute, which the panels' CSP refuses
 * ("Applying inline style violates … style-src"), whether or not it is empty.
 */
export function tag(text: string): HTMLElement {
  const el = document.createElement('span');
  el.className = 'rs-tag';
  el.textContent = text;
  return el;
}

export function progressRing(): HTMLElement {
  return document.createElement('vscode-progress-ring');
}

export function divider(): HTMLElement {
  return document.createElement('vscode-divider');
}

/** A value-holding control (text field, dropdown, checkbox): read and set what it shows. */
export type ValueElement = HTMLElement & { value: string };

/** A text field; `onInput` fires on every keystroke, `onChange` when the user commits (Enter, leaving the field). */
export function textField(options: {
  id?: string;
  placeholder?: string;
  value?: string;
  label: string;
  size?: number;
  onInput?: (value: string) => void;
  onChange?: (value: string) => void;
}): ValueElement {
  const el = document.createElement('vscode-text-field') as ValueElement;
  if (options.id) el.id = options.id;
  if (options.placeholder) el.setAttribute('placeholder', options.placeholder);
  if (options.size) el.setAttribute('size', String(options.size));
  // The toolkit replaces aria-label with "Text field" when the element connects (it labels
  // fields by their text content, which ours do not show); put ours back whenever it does.
  el.setAttribute('aria-label', options.label);
  new MutationObserver(() => {
    if (el.getAttribute('aria-label') !== options.label) el.setAttribute('aria-label', options.label);
  }).observe(el, { attributes: true, attributeFilter: ['aria-label'] });
  el.value = options.value ?? '';
  if (options.onInput) el.addEventListener('input', () => options.onInput!(el.value));
  if (options.onChange) el.addEventListener('change', () => options.onChange!(el.value));
  return el;
}

export interface DropdownOption {
  value: string;
  label: string;
}

/** A dropdown whose options can be replaced later (e.g. tool names seen so far). */
export interface Dropdown {
  element: ValueElement;
  setOptions(options: readonly DropdownOption[], value: string): void;
  set(value: string): void;
}

export function dropdown(options: {
  id?: string;
  label: string;
  options: readonly DropdownOption[];
  value: string;
  onChange: (value: string) => void;
}): Dropdown {
  const el = document.createElement('vscode-dropdown') as ValueElement;
  if (options.id) el.id = options.id;
  el.setAttribute('aria-label', options.label);
  let current = '';
  const setOptions = (list: readonly DropdownOption[], value: string) => {
    const same =
      list.length === el.children.length &&
      list.every(
        (o, i) => (el.children[i] as ValueElement).value === o.value && el.children[i].textContent === o.label,
      );
    if (!same) {
      el.replaceChildren(
        ...list.map((o) => {
          const option = document.createElement('vscode-option') as ValueElement;
          option.value = o.value;
          option.textContent = o.label;
          return option;
        }),
      );
    }
    current = value;
    el.value = value;
  };
  setOptions(options.options, options.value);
  el.addEventListener('change', () => {
    if (el.value === current) return;
    current = el.value;
    options.onChange(el.value);
  });
  return {
    element: el,
    setOptions,
    set: (value) =>
      setOptions(
        [...el.children].map((c) => ({ value: (c as ValueElement).value, label: c.textContent ?? '' })),
        value,
      ),
  };
}

export interface Checkbox {
  element: HTMLElement;
  /** Set the box without calling `onChange` (the toolkit fires `change` for programmatic changes too). */
  set(checked: boolean): void;
}

export function checkbox(options: {
  id?: string;
  label: string;
  checked: boolean;
  onChange: (checked: boolean) => void;
}): Checkbox {
  const el = document.createElement('vscode-checkbox') as HTMLElement & { checked: boolean };
  if (options.id) el.id = options.id;
  el.textContent = options.label;
  el.checked = options.checked;
  let quiet = false;
  el.addEventListener('change', () => {
    if (!quiet) options.onChange(el.checked);
  });
  return {
    element: el,
    set(checked) {
      if (el.checked === checked) return;
      quiet = true;
      try {
        el.checked = checked;
      } finally {
        quiet = false;
      }
    },
  };
}

/** A count badge; drawn by us for the same reason as `tag`. */
export function badge(text: string): HTMLElement {
  const el = document.createElement('span');
  el.className = 'rs-badge';
  el.textContent = text;
  return el;
}
