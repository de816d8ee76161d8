/**
 * A small arithmetic evaluator for the calculator tool — a recursive-descent parser over a
 * fixed grammar, so model-written input can never run code (no `eval`, no `Function`).
 *
 *   expression := term (('+' | '-') term)*
 *   term       := unary (('*' | '/' | '%') unary)*
 *   unary      := ('+' | '-') unary | power
 *   power      := primary (('^' | '**') unary)?          right-associative, binds tighter than unary minus on its left: -2^2 = -4
 *   primary    := number | constant | function '(' expression (',' expression)* ')' | '(' expression ')'
 *
 * Numbers: `12`, `3.5`, `.5`, `1e-3`, digits grouped with `_` or `,` not allowed (a comma would
 * be ambiguous with function arguments). Constants: `pi`, `e`. Functions: sqrt, abs, round,
 * floor, ceil, exp, ln, log10, log2, min, max, pow. Division by zero and non-finite results are
 * errors, never `Infinity`/`NaN` handed to the policy.
 */

export class ArithmeticError extends Error {
  constructor(
    message: string,
    /** 0-based character position in the expression. */
    readonly position: number,
  ) {
    super(message);
    this.name = 'ArithmeticError';
  }
}

const FUNCTIONS: Record<string, { arity: [number, number]; apply: (...args: number[]) => number }> = {
  sqrt: { arity: [1, 1], apply: Math.sqrt },
  abs: { arity: [1, 1], apply: Math.abs },
  round: { arity: [1, 1], apply: Math.round },
  floor: { arity: [1, 1], apply: Math.floor },
  ceil: { arity: [1, 1], apply: Math.ceil },
  exp: { arity: [1, 1], apply: Math.exp },
  ln: { arity: [1, 1], apply: Math.log },
  log10: { arity: [1, 1], apply: Math.log10 },
  log2: { arity: [1, 1], apply: Math.log2 },
  min: { arity: [1, Infinity], apply: Math.min },
  max: { arity: [1, Infinity], apply: Math.max },
  pow: { arity: [2, 2], apply: Math.pow },
};
const CONSTANTS: Record<string, number> = { pi: Math.PI, e: Math.E };

type Token =
  | { type: 'number'; value: number; at: number }
  | { type: 'name'; value: string; at: number }
  | { type: 'op'; value: string; at: number }
  | { type: 'end'; at: number };

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const number = /^(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?/.exec(source.slice(i));
    if (number) {
      tokens.push({ type: 'number', value: Number(number[0]), at: i });
      i += number[0].length;
      continue;
    }
    const name = /^[A-Za-z_][A-Za-z_0-9]*/.exec(source.slice(i));
    if (name) {
      tokens.push({ type: 'name', value: name[0].toLowerCase(), at: i });
      i += name[0].length;
      continue;
    }
    if (source.startsWith('**', i)) {
      tokens.push({ type: 'op', value: '^', at: i });
      i += 2;
      continue;
    }
    const op = c === '×' ? '*' : c === '÷' ? '/' : c === '−' ? '-' : c;
    if ('+-*/%^(),'.includes(op)) {
      tokens.push({ type: 'op', value: op, at: i });
      i++;
      continue;
    }
    throw new ArithmeticError(`unexpected character ${JSON.stringify(c)} at position ${i + 1}`, i);
  }
  tokens.push({ type: 'end', at: source.length });
  return tokens;
}

class Parser {
  private position = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[this.position];
  }

  private next(): Token {
    return this.tokens[this.position++];
  }

  private isOp(value: string): boolean {
    const t = this.peek();
    return t.type === 'op' && t.value === value;
  }

  private expect(value: string): void {
    const t = this.next();
    if (t.type !== 'op' || t.value !== value)
      throw new ArithmeticError(`expected "${value}" at position ${t.at + 1}, found ${describe(t)}`, t.at);
  }

  parse(): number {
    const value = this.expression();
    const t = this.peek();
    if (t.type !== 'end') throw new ArithmeticError(`unexpected ${describe(t)} at position ${t.at + 1}`, t.at);
    return value;
  }

  private expression(): number {
    let value = this.term();
    while (this.isOp('+') || this.isOp('-')) {
      const op = this.next();
      const right = this.term();
      value = check(op.type === 'op' && op.value === '+' ? value + right : value - right, op.at);
    }
    return value;
  }

  private term(): number {
    let value = this.unary();
    while (this.isOp('*') || this.isOp('/') || this.isOp('%')) {
      const op = this.next() as Extract<Token, { type: 'op' }>;
      const right = this.unary();
      if ((op.value === '/' || op.value === '%') && right === 0)
        throw new ArithmeticError(`division by zero at position ${op.at + 1}`, op.at);
      value = check(op.value === '*' ? value * right : op.value === '/' ? value / right : value % right, op.at);
    }
    return value;
  }

  private unary(): number {
    if (this.isOp('-')) {
      this.next();
      return -this.unary();
    }
    if (this.isOp('+')) {
      this.next();
      return this.unary();
    }
    return this.power();
  }

  private power(): number {
    const base = this.primary();
    if (this.isOp('^')) {
      const op = this.next();
      return check(Math.pow(base, this.unary()), op.at);
    }
    return base;
  }

  private primary(): number {
    const t = this.next();
    if (t.type === 'number') return t.value;
    if (t.type === 'op' && t.value === '(') {
      const value = this.expression();
      this.expect(')');
      return value;
    }
    if (t.type === 'name') {
      // Own properties only: "constructor" or "toString" must not reach Object.prototype.
      if (Object.hasOwn(CONSTANTS, t.value) && !this.isOp('(')) return CONSTANTS[t.value];
      const fn = Object.hasOwn(FUNCTIONS, t.value) ? FUNCTIONS[t.value] : undefined;
      if (!fn)
        throw new ArithmeticError(
          `unknown name "${t.value}" at position ${t.at + 1} (functions: ${Object.keys(FUNCTIONS).join(', ')}; constants: pi, e)`,
          t.at,
        );
      this.expect('(');
      const args = [this.expression()];
      while (this.isOp(',')) {
        this.next();
        args.push(this.expression());
      }
      this.expect(')');
      const [least, most] = fn.arity;
      if (args.length < least || args.length > most) {
        throw new ArithmeticError(
          `${t.value} takes ${least === most ? least : `${least} or more`} argument(s), got ${args.length}`,
          t.at,
        );
      }
      return check(fn.apply(...args), t.at);
    }
    throw new ArithmeticError(`unexpected ${describe(t)} at position ${t.at + 1}`, t.at);
  }
}

function describe(t: Token): string {
  if (t.type === 'end') return 'the end of the expression';
  return JSON.stringify(String(t.value));
}

function check(value: number, at: number): number {
  if (!Number.isFinite(value))
    throw new ArithmeticError(`the result is not a finite number (${value}) at position ${at + 1}`, at);
  return value;
}

export function evaluateArithmetic(expression: string): number {
  return new Parser(tokenize(expression)).parse();
}

/**
 * A number as the calculator shows it: integers exactly (within 2^53), others with 12
 * significant digits so that 0.1 + 0.2 reads 0.3.
 */
export function formatNumber(value: number): string {
  if (Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER) return String(value);
  return String(Number(value.toPrecision(12)));
}
