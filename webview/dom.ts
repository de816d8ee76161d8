/** A tiny element factory: h('div', { class: 'x' }, child, 'text'). Children may be strings. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | undefined> = {},
  ...children: Array<Node | string | undefined | false>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) el.setAttribute(name, value);
  for (const child of children) if (child !== undefined && child !== false) el.append(child);
  return el;
}
