/**
 * Breakpoint conditions, logpoint messages and debug-console input are expressions over the
 * turn context (`reward < 0`, `turn > 3`, `call.name === "search"`). They come from
 * launch.json and breakpoint lists that travel with a workspace, so they are evaluated here,
 * by a small interpreter over plain data — not by `eval` or `node:vm` in the extension host.
 * `node:vm` is documented as no security boundary (a frozen context still leaks
 * `this.constructor.constructor('return process')()`), and its timeout does not stop
 * asynchronous work. This language has no assignment, no loops, no function values and no
 * prototype access, so evaluating it cannot escape the context or run long, and its errors
 * can name the context's fields.
 *
 * Grammar (JavaScript's precedence):
 *   expr    := nullish ('?' expr ':' expr)?
 *   nullish := or ('??' or)* ;  or := and ('||' and)* ;  and := eq ('&&' eq)*
 *   eq      := rel (('===' | '!==' | '==' | '!=') rel)*
 *   rel     := add (('<' | '<=' | '>' | '>=') add)*
 *   add     := mul (('+' | '-') mul)* ;  mul := unary (('*' | '/' | '%') unary)*
 *   unary   := ('!' | '-' | '+') unary | postfix
 *   postfix := primary ('.' name | '?.' name | '[' expr ']' | '(' args ')')*
 *   primary := number | string | true | false | null | undefined | name | '(' expr ')' | '[' list ']'
 *
 * Member access is forgiving like `?.` (a missing field is `undefined`, never a TypeError), and
 * reads only own properties. Calls are limited to the functions and methods listed below.
 */

export type Value = unknown;

type Node =
  | { kind: 'literal'; value: Value }
  | { kind: 'name'; name: string; at: number }
  | { kind: 'member'; object: Node; property: Node; at: number }
  | { kind: 'call'; callee: Node; args: Node[]; at: number }
  | { kind: 'array'; items: Node[] }
  | { kind: 'unary'; op: string; operand: Node }
  | { kind: 'binary'; op: string; left: Node; right: Node }
  | { kind: 'conditional'; test: Node; then: Node; otherwise: Node };

export class ExpressionError extends Error {
  constructor(
    message: string,
    readonly at?: number,
  ) {
    super(message);
    this.name = 'ExpressionError';
  }
}

const MAX_LENGTH = 2000;

/** Pure functions callable by name. */
const FUNCTIONS: Record<string, (...args: Value[]) => Value> = {
  abs: (x) => Math.abs(num(x)),
  min: (...xs) => Math.min(...xs.map(num)),
  max: (...xs) => Math.max(...xs.map(num)),
  round: (x, digits) => {
    const f = 10 ** (digits === undefined ? 0 : num(digits));
    return Math.round(num(x) * f) / f;
  },
  floor: (x) => Math.floor(num(x)),
  ceil: (x) => Math.ceil(num(x)),
  len: (x) => (typeof x === 'string' || Array.isArray(x) ? x.length : isRecord(x) ? Object.keys(x).length : undefined),
  keys: (x) => (isRecord(x) ? Object.keys(x) : Array.isArray(x) ? x.map((_, i) => i) : []),
  isFinite: (x) => typeof x === 'number' && Number.isFinite(x),
  json: (x) => JSON.stringify(x),
  sum: (x) => (Array.isArray(x) ? x.reduce((a: number, b) => a + num(b), 0) : undefined),
};

/** Methods callable on strings and arrays; all pure and bounded by their input's size. */
const STRING_METHODS = new Set([
  'includes',
  'startsWith',
  'endsWith',
  'toLowerCase',
  'toUpperCase',
  'trim',
  'indexOf',
  'slice',
]);
const ARRAY_METHODS = new Set(['includes', 'indexOf', 'join', 'slice']);

function num(x: Value): number {
  return typeof x === 'number' ? x : Number(x);
}

function isRecord(x: Value): x is Record<string, Value> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

// ── tokenizer ──────────────────────────────────────────────────────────────────────────────

interface Token {
  type: 'number' | 'string' | 'name' | 'punct' | 'end';
  text: string;
  value?: Value;
  at: number;
}

const PUNCTUATION = [
  '===',
  '!==',
  '==',
  '!=',
  '<=',
  '>=',
  '&&',
  '||',
  '??',
  '?.',
  '<',
  '>',
  '+',
  '-',
  '*',
  '/',
  '%',
  '!',
  '?',
  ':',
  '.',
  ',',
  '(',
  ')',
  '[',
  ']',
];

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const numberMatch = /^(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)/.exec(source.slice(i));
    if (numberMatch) {
      tokens.push({ type: 'number', text: numberMatch[0], value: Number(numberMatch[0]), at: i });
      i += numberMatch[0].length;
      continue;
    }
    const nameMatch = /^[A-Za-z_$][\w$]*/.exec(source.slice(i));
    if (nameMatch) {
      tokens.push({ type: 'name', text: nameMatch[0], at: i });
      i += nameMatch[0].length;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') {
      const { value, end } = readString(source, i);
      tokens.push({ type: 'string', text: source.slice(i, end), value, at: i });
      i = end;
      continue;
    }
    const punct = PUNCTUATION.find((p) => source.startsWith(p, i));
    // `a?.5:1` is a conditional, not optional chaining: `?.` must not be followed by a digit.
    if (punct === '?.' && /\d/.test(source[i + 2] ?? '')) {
      tokens.push({ type: 'punct', text: '?', at: i });
      i += 1;
      continue;
    }
    if (!punct) throw new ExpressionError(`unexpected character ${JSON.stringify(c)} at position ${i + 1}`, i);
    tokens.push({ type: 'punct', text: punct, at: i });
    i += punct.length;
  }
  tokens.push({ type: 'end', text: 'end of expression', at: source.length });
  return tokens;
}

function readString(source: string, start: number): { value: string; end: number } {
  const quote = source[start];
  let value = '';
  let i = start + 1;
  const escapes: Record<string, string> = {
    n: '\n',
    t: '\t',
    r: '\r',
    '0': '\0',
    '\\': '\\',
    '"': '"',
    "'": "'",
    '`': '`',
  };
  while (i < source.length && source[i] !== quote) {
    if (source[i] === '\\') {
      const next = source[i + 1];
      if (next === undefined) break;
      value += escapes[next] ?? next;
      i += 2;
    } else {
      if (quote === '`' && source.startsWith('${', i))
        throw new ExpressionError(
          `template substitutions are not supported (position ${i + 1}); use + to join strings`,
          i,
        );
      value += source[i++];
    }
  }
  if (source[i] !== quote) throw new ExpressionError(`unterminated string starting at position ${start + 1}`, start);
  return { value, end: i + 1 };
}

// ── parser ─────────────────────────────────────────────────────────────────────────────────

class Parser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  parse(): Node {
    const node = this.expression();
    const rest = this.peek();
    if (rest.type !== 'end')
      throw new ExpressionError(`unexpected ${describe(rest)} at position ${rest.at + 1}`, rest.at);
    return node;
  }

  private peek(): Token {
    return this.tokens[this.pos];
  }

  private take(text?: string): Token | undefined {
    const token = this.peek();
    if (token.type === 'punct' && (text === undefined || token.text === text)) {
      this.pos++;
      return token;
    }
    return undefined;
  }

  private expect(text: string): Token {
    const token = this.take(text);
    if (!token) {
      const got = this.peek();
      throw new ExpressionError(`expected "${text}" but found ${describe(got)} at position ${got.at + 1}`, got.at);
    }
    return token;
  }

  private expression(): Node {
    const test = this.binary(0);
    if (!this.take('?')) return test;
    const then = this.expression();
    this.expect(':');
    const otherwise = this.expression();
    return { kind: 'conditional', test, then, otherwise };
  }

  private static readonly LEVELS = [
    ['??'],
    ['||'],
    ['&&'],
    ['===', '!==', '==', '!='],
    ['<', '<=', '>', '>='],
    ['+', '-'],
    ['*', '/', '%'],
  ];

  private binary(level: number): Node {
    if (level === Parser.LEVELS.length) return this.unary();
    let left = this.binary(level + 1);
    for (;;) {
      const token = this.peek();
      if (token.type !== 'punct' || !Parser.LEVELS[level].includes(token.text)) return left;
      this.pos++;
      left = { kind: 'binary', op: token.text, left, right: this.binary(level + 1) };
    }
  }

  private unary(): Node {
    const token = this.peek();
    if (token.type === 'punct' && ['!', '-', '+'].includes(token.text)) {
      this.pos++;
      return { kind: 'unary', op: token.text, operand: this.unary() };
    }
    return this.postfix(this.primary());
  }

  private postfix(node: Node): Node {
    for (;;) {
      const token = this.peek();
      if (this.take('.') || this.take('?.')) {
        const name = this.peek();
        if (name.type !== 'name')
          throw new ExpressionError(`expected a field name after "${token.text}" at position ${name.at + 1}`, name.at);
        this.pos++;
        node = { kind: 'member', object: node, property: { kind: 'literal', value: name.text }, at: name.at };
      } else if (this.take('[')) {
        const property = this.expression();
        this.expect(']');
        node = { kind: 'member', object: node, property, at: token.at };
      } else if (this.take('(')) {
        const args: Node[] = [];
        if (!this.take(')')) {
          do args.push(this.expression());
          while (this.take(','));
          this.expect(')');
        }
        node = { kind: 'call', callee: node, args, at: token.at };
      } else {
        return node;
      }
    }
  }

  private primary(): Node {
    const token = this.peek();
    if (token.type === 'number' || token.type === 'string') {
      this.pos++;
      return { kind: 'literal', value: token.value };
    }
    if (token.type === 'name') {
      this.pos++;
      const constants: Record<string, Value> = {
        true: true,
        false: false,
        null: null,
        undefined: undefined,
        NaN: Number.NaN,
        Infinity: Number.POSITIVE_INFINITY,
      };
      if (Object.hasOwn(constants, token.text)) return { kind: 'literal', value: constants[token.text] };
      return { kind: 'name', name: token.text, at: token.at };
    }
    if (this.take('(')) {
      const inner = this.expression();
      this.expect(')');
      return inner;
    }
    if (this.take('[')) {
      const items: Node[] = [];
      if (!this.take(']')) {
        do items.push(this.expression());
        while (this.take(','));
        this.expect(']');
      }
      return { kind: 'array', items };
    }
    throw new ExpressionError(`unexpected ${describe(token)} at position ${token.at + 1}`, token.at);
  }
}

function describe(token: Token): string {
  return token.type === 'end' ? 'end of expression' : `"${token.text}"`;
}

// ── evaluation ─────────────────────────────────────────────────────────────────────────────

export interface CompiledExpression {
  readonly source: string;
  /** Top-level names the expression reads (to check them against a context's fields up front). */
  readonly names: readonly string[];
  evaluate(context: Readonly<Record<string, Value>>): Value;
}

/**
 * Parse `source` once. `knownNames`, when given, are the context's fields: a name outside them
 * (a typo such as `rewrad`) is reported now, when the breakpoint is set, not at every stop.
 */
export function compileExpression(source: string, knownNames?: readonly string[]): CompiledExpression {
  if (source.length > MAX_LENGTH)
    throw new ExpressionError(`expression is ${source.length} characters long; at most ${MAX_LENGTH} are allowed`);
  if (source.trim() === '') throw new ExpressionError('expression is empty');
  const tree = new Parser(tokenize(source)).parse();
  const names = [...collectNames(tree, new Set())];
  if (knownNames) {
    const unknown = names.filter((n) => !knownNames.includes(n) && !Object.hasOwn(FUNCTIONS, n));
    if (unknown.length) throw new ExpressionError(unknownNameMessage(unknown[0], knownNames));
  }
  return { source, names, evaluate: (context) => evaluate(tree, context) };
}

function unknownNameMessage(name: string, known: readonly string[]): string {
  return `unknown name "${name}"; the turn context has: ${known.join(', ')}; functions: ${Object.keys(FUNCTIONS).join(', ')}`;
}

function collectNames(node: Node, into: Set<string>): Set<string> {
  switch (node.kind) {
    case 'name':
      into.add(node.name);
      break;
    case 'member':
      collectNames(node.object, into);
      collectNames(node.property, into);
      break;
    case 'call':
      // A method name is a property, not a context name; a bare function name is checked against FUNCTIONS.
      collectNames(node.callee, into);
      node.args.forEach((a) => collectNames(a, into));
      break;
    case 'array':
      node.items.forEach((a) => collectNames(a, into));
      break;
    case 'unary':
      collectNames(node.operand, into);
      break;
    case 'binary':
      collectNames(node.left, into);
      collectNames(node.right, into);
      break;
    case 'conditional':
      collectNames(node.test, into);
      collectNames(node.then, into);
      collectNames(node.otherwise, into);
      break;
    case 'literal':
      break;
  }
  return into;
}

function evaluate(node: Node, context: Readonly<Record<string, Value>>): Value {
  switch (node.kind) {
    case 'literal':
      return node.value;
    case 'name':
      if (Object.hasOwn(context, node.name)) return context[node.name];
      if (Object.hasOwn(FUNCTIONS, node.name)) return FUNCTIONS[node.name];
      throw new ExpressionError(unknownNameMessage(node.name, Object.keys(context)), node.at);
    case 'member':
      return readMember(evaluate(node.object, context), evaluate(node.property, context));
    case 'array':
      return node.items.map((item) => evaluate(item, context));
    case 'call':
      return call(node, context);
    case 'unary': {
      const x = evaluate(node.operand, context);
      if (node.op === '!') return !x;
      return node.op === '-' ? -num(x) : num(x);
    }
    case 'binary':
      return binary(node.op, node.left, node.right, context);
    case 'conditional':
      return evaluate(node.test, context) ? evaluate(node.then, context) : evaluate(node.otherwise, context);
  }
}

function readMember(object: Value, property: Value): Value {
  if (object === null || object === undefined) return undefined;
  const key = typeof property === 'number' ? property : String(property);
  if (typeof object === 'string' || Array.isArray(object)) {
    if (key === 'length') return object.length;
    if (typeof key === 'number' || /^\d+$/.test(key)) return object[Number(key)];
    if (Array.isArray(object)) return undefined;
    return undefined;
  }
  if (isRecord(object) && Object.hasOwn(object, key)) return object[key as string];
  return undefined;
}

function call(node: Extract<Node, { kind: 'call' }>, context: Readonly<Record<string, Value>>): Value {
  const args = node.args.map((a) => evaluate(a, context));
  if (node.callee.kind === 'member') {
    const target = evaluate(node.callee.object, context);
    const method = String(evaluate(node.callee.property, context));
    const allowed = typeof target === 'string' ? STRING_METHODS : Array.isArray(target) ? ARRAY_METHODS : undefined;
    if (!allowed || !allowed.has(method)) {
      const what =
        typeof target === 'string'
          ? 'a string'
          : Array.isArray(target)
            ? 'an array'
            : target === undefined
              ? 'undefined'
              : typeof target;
      throw new ExpressionError(
        `cannot call .${method}() on ${what}; strings have ${[...STRING_METHODS].join(', ')}; arrays have ${[...ARRAY_METHODS].join(', ')}`,
        node.at,
      );
    }
    return (target as unknown as Record<string, (...a: Value[]) => Value>)[method](...args);
  }
  if (
    node.callee.kind === 'name' &&
    Object.hasOwn(FUNCTIONS, node.callee.name) &&
    !Object.hasOwn(context, node.callee.name)
  ) {
    return FUNCTIONS[node.callee.name](...args);
  }
  throw new ExpressionError(`only these functions can be called: ${Object.keys(FUNCTIONS).join(', ')}`, node.at);
}

function binary(op: string, leftNode: Node, rightNode: Node, context: Readonly<Record<string, Value>>): Value {
  const left = evaluate(leftNode, context);
  // Short-circuit like JavaScript, so `call && call.name === "x"` never evaluates the right side needlessly.
  if (op === '&&') return left ? evaluate(rightNode, context) : left;
  if (op === '||') return left ? left : evaluate(rightNode, context);
  if (op === '??') return left ?? evaluate(rightNode, context);
  const right = evaluate(rightNode, context);
  switch (op) {
    case '===':
      return left === right;
    case '!==':
      return left !== right;
    case '==':
      return looseEquals(left, right);
    case '!=':
      return !looseEquals(left, right);
    case '<':
      return compare(left, right, (a, b) => a < b);
    case '<=':
      return compare(left, right, (a, b) => a <= b);
    case '>':
      return compare(left, right, (a, b) => a > b);
    case '>=':
      return compare(left, right, (a, b) => a >= b);
    case '+':
      return typeof left === 'string' || typeof right === 'string'
        ? display(left) + display(right)
        : num(left) + num(right);
    case '-':
      return num(left) - num(right);
    case '*':
      return num(left) * num(right);
    case '/':
      return num(left) / num(right);
    case '%':
      return num(left) % num(right);
  }
  throw new ExpressionError(`unknown operator ${op}`);
}

/** `==`: like `===`, except that null and undefined equal each other and a number equals its string. */
function looseEquals(a: Value, b: Value): boolean {
  if (a === b) return true;
  if ((a === null || a === undefined) && (b === null || b === undefined)) return true;
  if ((typeof a === 'number' && typeof b === 'string') || (typeof a === 'string' && typeof b === 'number'))
    return Number(a) === Number(b);
  return false;
}

/** Comparisons with a missing value are false (like JavaScript's NaN), so `reward < 0` is false where there is no reward. */
function compare(a: Value, b: Value, op: (a: number | string, b: number | string) => boolean): boolean {
  if (a === undefined || a === null || b === undefined || b === null) return false;
  if (typeof a === 'string' && typeof b === 'string') return op(a, b);
  return op(num(a), num(b));
}

/** How a value reads in a logpoint message or a string concatenation. */
export function display(value: Value): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return 'undefined';
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  return JSON.stringify(value);
}
