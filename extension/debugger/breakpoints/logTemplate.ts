/**
 * Logpoint messages: text with `{expression}` parts, as VS Code's logpoints write them,
 * evaluated over the turn context by the expression evaluator. `{{` and `}}` stand for
 * literal braces.
 */
import { compileExpression, display, ExpressionError, type CompiledExpression, type Value } from './expression';

export interface CompiledTemplate {
  render(context: Readonly<Record<string, Value>>): string;
}

export function compileTemplate(template: string, knownNames?: readonly string[]): CompiledTemplate {
  const parts: Array<string | CompiledExpression> = [];
  let i = 0;
  let text = '';
  while (i < template.length) {
    if (template.startsWith('{{', i) || template.startsWith('}}', i)) {
      text += template[i];
      i += 2;
    } else if (template[i] === '{') {
      const end = findClosingBrace(template, i);
      if (end < 0) throw new ExpressionError(`log message: "{" at position ${i + 1} is not closed`);
      if (text) parts.push(text);
      text = '';
      try {
        parts.push(compileExpression(template.slice(i + 1, end), knownNames));
      } catch (error) {
        throw new ExpressionError(`log message, in {${template.slice(i + 1, end)}}: ${(error as Error).message}`);
      }
      i = end + 1;
    } else {
      text += template[i++];
    }
  }
  if (text) parts.push(text);
  return {
    render(context) {
      return parts
        .map((part) => {
          if (typeof part === 'string') return part;
          try {
            return display(part.evaluate(context));
          } catch (error) {
            return `<${(error as Error).message}>`;
          }
        })
        .join('');
    },
  };
}

/** The `}` that closes the `{` at `open`, skipping braces inside string literals. */
function findClosingBrace(text: string, open: number): number {
  let quote: string | undefined;
  for (let i = open + 1; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'" || c === '`') quote = c;
    else if (c === '}') return i;
  }
  return -1;
}
