import snippetFile from '../../snippets/typescript.json';
import { resolveSnippet } from './snippetSyntax';

/**
 * The files New Tool, New Reward and New Training Config write: the same bodies as the
 * snippets (snippets/typescript.json is the one source of both), with the names the user typed
 * put into the placeholders that hold names and every other placeholder at its default.
 */

export interface SnippetDefinition {
  prefix: string;
  description: string;
  body: string[];
}

export const SNIPPETS: Readonly<Record<string, SnippetDefinition>> = snippetFile;

export function snippetByPrefix(prefix: string): SnippetDefinition {
  const found = Object.values(SNIPPETS).find((s) => s.prefix === prefix);
  if (!found) throw new Error(`snippets/typescript.json has no snippet with the prefix "${prefix}"`);
  return found;
}

/** "web_search" / "web-search" / "webSearch" → its words: ["web", "search"]. */
function words(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
}

export function pascalCase(name: string): string {
  return words(name)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');
}

/** A valid identifier in camel case; a name starting with a digit gets a leading underscore. */
export function camelCase(name: string): string {
  const pascal = pascalCase(name);
  const camel = pascal ? pascal[0].toLowerCase() + pascal.slice(1) : '_';
  return /^\d/.test(camel) ? `_${camel}` : camel;
}

export function snakeCase(name: string): string {
  return words(name).join('_');
}

/** A tool named `name` (the name the policy calls): class `<Name>Tool`, instance `<name>`. */
export function toolTemplate(name: string): string {
  const base = pascalCase(name).replace(/Tool$/, '') || 'My';
  // 1: class/schema stem, 2: the tool's name, 6: the exported instance.
  return resolveSnippet(snippetByPrefix('tool').body, {
    values: { 1: /^\d/.test(base) ? `T${base}` : base, 2: name, 6: camelCase(name) },
  });
}

/** An outcome reward recorded under `name` and exported as its camel-case form. */
export function rewardTemplate(name: string): string {
  // 1: the exported constant, 2: the reward's name.
  return resolveSnippet(snippetByPrefix('reward').body, { values: { 1: camelCase(name), 2: snakeCase(name) } });
}

/** A complete training config for a run named `name`. */
export function configTemplate(name: string): string {
  // 1: the run's name.
  return resolveSnippet(snippetByPrefix('rolloutconfig').body, { values: { 1: name } });
}

/** Leading tabs as the editor indents (`insertSpaces`, `tabSize`); snippet bodies indent with tabs. */
export function indentLike(text: string, insertSpaces: boolean, tabSize: number): string {
  if (!insertSpaces) return text;
  return text.replace(/^\t+/gm, (tabs) => ' '.repeat(tabs.length * tabSize));
}
