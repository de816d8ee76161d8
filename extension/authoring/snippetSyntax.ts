/**
 * VS Code's snippet syntax, resolved to plain text the way the editor inserts a snippet when
 * the user accepts every default: `$1` / `${1}` tab stops, `${1:default}` placeholders (nested,
 * and mirrored: every occurrence of an index shows the same text), `${1|one,two|}` choices
 * (the first), `$NAME` / `${NAME:default}` variables, and the escapes `\$`, `\}`, `\\`.
 *
 * The New Tool / New Reward / New Training Config commands fill some placeholders with the
 * names the user typed and take the defaults for the rest, so a snippet and the file a command
 * writes come from the same body. Transforms (`${1/regex/format/}`) are not supported: our
 * snippets do not use them, and a body that does is refused rather than mangled.
 */

type SnippetNode =
  | { type: 'text'; text: string }
  | { type: 'placeholder'; index: number; children: SnippetNode[] | undefined }
  | { type: 'choice'; index: number; options: string[] }
  | { type: 'variable'; name: string; children: SnippetNode[] | undefined };

export class SnippetSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SnippetSyntaxError';
  }
}

class Parser {
  private at = 0;
  constructor(private readonly source: string) {}

  private fail(what: string): never {
    throw new SnippetSyntaxError(
      `snippet body, offset ${this.at}: ${what} (near ${JSON.stringify(this.source.slice(Math.max(0, this.at - 10), this.at + 10))})`,
    );
  }

  /** Nodes until the end, or until an unescaped `}` when inside `${…:…}`. */
  parse(nested: boolean): SnippetNode[] {
    const nodes: SnippetNode[] = [];
    let text = '';
    const flush = () => {
      if (text) nodes.push({ type: 'text', text });
      text = '';
    };
    while (this.at < this.source.length) {
      const c = this.source[this.at];
      if (c === '\\' && '$}\\'.includes(this.source[this.at + 1] ?? '')) {
        text += this.source[this.at + 1];
        this.at += 2;
      } else if (c === '}' && nested) {
        flush();
        return nodes;
      } else if (c === '$') {
        const node = this.dollar();
        if (node) {
          flush();
          nodes.push(node);
        } else {
          text += '$';
          this.at++;
        }
      } else {
        text += c;
        this.at++;
      }
    }
    if (nested) this.fail('a "${" is not closed by "}"');
    flush();
    return nodes;
  }

  private match(pattern: RegExp): string | undefined {
    pattern.lastIndex = this.at;
    const m = pattern.exec(this.source);
    if (!m) return undefined;
    this.at += m[0].length;
    return m[0];
  }

  /** At a `$`: a tab stop, placeholder, choice or variable; undefined when the `$` is plain text. */
  private dollar(): SnippetNode | undefined {
    const start = this.at;
    this.at++;
    const index = this.match(/\d+/y);
    if (index !== undefined) return { type: 'placeholder', index: Number(index), children: undefined };
    const name = this.match(/[A-Za-z_][A-Za-z0-9_]*/y);
    if (name !== undefined) return { type: 'variable', name, children: undefined };
    if (this.source[this.at] !== '{') {
      this.at = start;
      return undefined;
    }
    this.at++;
    const braceIndex = this.match(/\d+/y);
    const braceName = braceIndex === undefined ? this.match(/[A-Za-z_][A-Za-z0-9_]*/y) : undefined;
    if (braceIndex === undefined && braceName === undefined)
      this.fail('expected a number or a variable name after "${"');
    const next = this.source[this.at];
    if (next === '}') {
      this.at++;
      return braceIndex !== undefined
        ? { type: 'placeholder', index: Number(braceIndex), children: undefined }
        : { type: 'variable', name: braceName!, children: undefined };
    }
    if (next === ':') {
      this.at++;
      const children = this.parse(true);
      this.at++; // the closing brace
      return braceIndex !== undefined
        ? { type: 'placeholder', index: Number(braceIndex), children }
        : { type: 'variable', name: braceName!, children };
    }
    if (next === '|' && braceIndex !== undefined) return this.choice(Number(braceIndex));
    if (next === '/') this.fail('snippet transforms are not supported');
    return this.fail(`unexpected ${JSON.stringify(next ?? 'end of body')} in "\${…}"`);
  }

  private choice(index: number): SnippetNode {
    this.at++; // the opening |
    const options: string[] = [];
    let option = '';
    while (this.at < this.source.length) {
      const c = this.source[this.at];
      if (c === '\\' && ',|\\$}'.includes(this.source[this.at + 1] ?? '')) {
        option += this.source[this.at + 1];
        this.at += 2;
      } else if (c === ',') {
        options.push(option);
        option = '';
        this.at++;
      } else if (c === '|' && this.source[this.at + 1] === '}') {
        options.push(option);
        this.at += 2;
        return { type: 'choice', index, options };
      } else {
        option += c;
        this.at++;
      }
    }
    return this.fail('a choice "${n|…|}" is not closed');
  }
}

export function parseSnippet(body: string | readonly string[]): SnippetNode[] {
  return new Parser(typeof body === 'string' ? body : body.join('\n')).parse(false);
}

export interface ResolveOptions {
  /** Text for placeholders by index, instead of their defaults (every mirror of the index gets it). */
  values?: Readonly<Record<number, string>>;
  /** Values of variables (`TM_FILENAME_BASE`, …); a variable not given takes its default, else is an error. */
  variables?: Readonly<Record<string, string>>;
}

/** The text the editor would insert with every placeholder at its default (or at `values`). */
export function resolveSnippet(body: string | readonly string[], options: ResolveOptions = {}): string {
  const nodes = parseSnippet(body);
  // The first occurrence of an index that has content defines what every mirror shows.
  const definitions = new Map<number, SnippetNode>();
  const collect = (list: readonly SnippetNode[]) => {
    for (const node of list) {
      if ((node.type === 'placeholder' && node.children) || node.type === 'choice') {
        if (!definitions.has(node.index)) definitions.set(node.index, node);
      }
      if ((node.type === 'placeholder' || node.type === 'variable') && node.children) collect(node.children);
    }
  };
  collect(nodes);
  const resolving = new Set<number>();
  const placeholder = (index: number): string => {
    const given = options.values?.[index];
    if (given !== undefined) return given;
    const definition = definitions.get(index);
    if (!definition) return '';
    if (definition.type === 'choice') return definition.options[0] ?? '';
    if (resolving.has(index)) throw new SnippetSyntaxError(`placeholder $${index} contains itself`);
    resolving.add(index);
    const text = render((definition as { children: SnippetNode[] }).children);
    resolving.delete(index);
    return text;
  };
  const render = (list: readonly SnippetNode[]): string =>
    list
      .map((node) => {
        switch (node.type) {
          case 'text':
            return node.text;
          case 'placeholder':
          case 'choice':
            return placeholder(node.index);
          case 'variable': {
            const value = options.variables?.[node.name];
            if (value !== undefined) return value;
            if (node.children) return render(node.children);
            throw new SnippetSyntaxError(`snippet variable $${node.name} has no value and no default`);
          }
        }
      })
      .join('');
  return render(nodes);
}
