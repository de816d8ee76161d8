import { ANY_DEPTH, type ValueShape } from './schemaShape';

/**
 * A byte-level pushdown recogniser for JSON values of a given shape (schemaShape.ts): the state
 * of a value being written, advanced one byte at a time. States are immutable (a persistent
 * stack of frames), so a mask computation can try every token from one state without undoing,
 * and every state has a `key` that says everything its future depends on — masks are cached by
 * it, and a string or a number being written keeps the same key whatever it holds so far.
 *
 * A frame answers each byte with one of:
 *   consume  the byte is its own; the frame becomes `frame`
 *   push     the byte starts a child value: `frame` waits for it, the byte goes to `child`
 *   replace  `frame` takes this frame's place and gets the byte (a value that now knows its type)
 *   pop      the frame is complete; `consumed` says whether the byte was its last, or belongs to the
 *            parent; `matched` says which of a literal set's values it was (a key, a tool's name)
 *   null     the byte cannot come here
 */
export type FrameResult =
  | { kind: 'consume'; frame: Frame }
  | { kind: 'push'; frame: Frame; child: Frame }
  | { kind: 'replace'; frame: Frame }
  | { kind: 'pop'; consumed: boolean; matched?: number }
  | null;

export interface Frame {
  readonly key: string;
  feed(byte: number): FrameResult;
  /** A container's state once its child value has ended (`matched`: which literal, for a key or a name). */
  afterChild?(matched: number): Frame;
}

/** A stack of frames, top first. `null` is the empty stack (nothing more may be written). */
export interface GrammarState {
  readonly frame: Frame;
  readonly parent: GrammarState | null;
}

/** Whitespace between tokens of a value: at most this many bytes in one place (no endless blank runs). */
export const MAX_WHITESPACE = 1;
/** Digits a number may have before the point, after it, and in its exponent (no endless digit runs). */
export const MAX_INTEGER_DIGITS = 16;
export const MAX_FRACTION_DIGITS = 16;
export const MAX_EXPONENT_DIGITS = 3;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const isWhitespace = (b: number) => b === 0x20 || b === 0x0a;
const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
const isHex = (b: number) => isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);

/** The state after `byte`, or null when the byte cannot come next. */
export function advance(state: GrammarState | null, byte: number): GrammarState | null {
  let s = state;
  for (;;) {
    if (s === null) return null;
    const result = s.frame.feed(byte);
    if (result === null) return null;
    switch (result.kind) {
      case 'consume':
        return result.frame === s.frame ? s : { frame: result.frame, parent: s.parent };
      case 'push':
        s = { frame: result.child, parent: { frame: result.frame, parent: s.parent } };
        continue;
      case 'replace':
        s = { frame: result.frame, parent: s.parent };
        continue;
      case 'pop': {
        const parent = s.parent;
        const resumed =
          parent === null ? null : { frame: parent.frame.afterChild!(result.matched ?? -1), parent: parent.parent };
        if (result.consumed) return resumed ?? DONE;
        s = resumed;
        continue;
      }
    }
  }
}

/** The state of a value written completely at the top level: nothing more may follow. */
export const DONE: GrammarState = { frame: { key: '$', feed: () => null }, parent: null };

export function stateKey(state: GrammarState): string {
  let key = '';
  for (let s: GrammarState | null = state; s; s = s.parent) key += s.frame.key + '|';
  return key;
}

/** The frame of a value of `shape`, before its first byte. */
export function valueFrame(shape: ValueShape): Frame {
  return new ValueFrame(shape);
}

/** A value whose type is decided by its first byte. */
class ValueFrame implements Frame {
  readonly key: string;
  constructor(private readonly shape: ValueShape) {
    this.key = `V${shape.id}`;
  }

  feed(byte: number): FrameResult {
    const frame = concreteFrame(this.shape, byte);
    return frame ? { kind: 'replace', frame } : null;
  }
}

/** The frame that writes `shape` starting with `byte`, or undefined when no value of it starts so. */
function concreteFrame(shape: ValueShape, byte: number): Frame | undefined {
  switch (shape.kind) {
    case 'object':
      return byte === 0x7b ? new ObjectFrame(shape, 'open', '', -1, 0) : undefined;
    case 'array':
      return byte === 0x5b ? new ArrayFrame(shape, 'open', 0, 0) : undefined;
    case 'string':
      return byte === QUOTE ? new StringFrame(shape.minLength, shape.maxLength, 'open', 0) : undefined;
    case 'number':
      return byte === 0x2d || isDigit(byte) ? new NumberFrame(shape.integer, 'start', 0, 0, 0) : undefined;
    case 'literals':
      return shape.values.some((v) => v[0] === byte)
        ? new LiteralFrame(`L${shape.id}`, shape.values, 0, '')
        : undefined;
    case 'any':
      return concreteFrame(anyShapeFor(shape, byte), byte);
    case 'union': {
      const options = shape.options.filter((o) => concreteFrame(o, byte) !== undefined);
      if (options.length <= 1) return options.length ? concreteFrame(options[0], byte) : undefined;
      return concreteFrame(mergeOptions(shape, options), byte);
    }
  }
}

/** Generic shapes for `any` values, made once per depth. */
const anyShapes = new Map<string, ValueShape>();
let anyIds = -1;
function generic(name: string, make: (id: number) => ValueShape): ValueShape {
  let shape = anyShapes.get(name);
  if (!shape) {
    shape = make(anyIds--);
    anyShapes.set(name, shape);
  }
  return shape;
}

function anyChild(depth: number): ValueShape {
  return generic(`any${depth}`, (id) => ({ kind: 'any', id, depth }));
}

function anyShapeFor(shape: Extract<ValueShape, { kind: 'any' }>, byte: number): ValueShape {
  const depth = Math.min(shape.depth, ANY_DEPTH);
  if (byte === 0x7b && depth > 0)
    return generic(`object${depth}`, (id) => ({
      kind: 'object',
      id,
      properties: [],
      required: [],
      additional: anyChild(depth - 1),
    }));
  if (byte === 0x5b && depth > 0)
    return generic(`array${depth}`, (id) => ({
      kind: 'array',
      id,
      items: anyChild(depth - 1),
      minItems: 0,
      maxItems: Infinity,
    }));
  if (byte === QUOTE) return generic('string', (id) => ({ kind: 'string', id, minLength: 0, maxLength: Infinity }));
  if (byte === 0x2d || isDigit(byte)) return generic('number', (id) => ({ kind: 'number', id, integer: false }));
  return generic('scalars', (id) => ({
    kind: 'literals',
    id,
    values: ['true', 'false', 'null'].map((v) => new TextEncoder().encode(v)),
  }));
}

/**
 * Union options that all start with the same byte, as one shape: literals join; a string (or a
 * number) absorbs literals of its kind; two objects or arrays become the generic kind. Looser
 * than the union, never tighter: the tool's schema check has the last word.
 */
function mergeOptions(union: ValueShape, options: ValueShape[]): ValueShape {
  if (options.every((o) => o.kind === 'literals'))
    return { kind: 'literals', id: union.id, values: options.flatMap((o) => (o.kind === 'literals' ? o.values : [])) };
  const numbers = options.filter((o) => o.kind === 'number');
  if (numbers.length)
    return {
      kind: 'number',
      id: union.id,
      integer: numbers.every((o) => o.kind === 'number' && o.integer) && options.every((o) => o.kind !== 'literals'),
    };
  if (options.some((o) => o.kind === 'string'))
    return { kind: 'string', id: union.id, minLength: 0, maxLength: Infinity };
  return { kind: 'any', id: union.id, depth: ANY_DEPTH };
}

type ObjectPhase = 'open' | 'first' | 'key' | 'colon' | 'value' | 'after' | 'next';

/** `{ "key": value, … }` with each declared key at most once and the required ones before `}`. */
class ObjectFrame implements Frame {
  readonly key: string;
  constructor(
    private readonly shape: Extract<ValueShape, { kind: 'object' }>,
    private readonly phase: ObjectPhase,
    /** One character per declared property: '1' once written. */
    private readonly used: string,
    /** The property whose value comes next (after its key). */
    private readonly current: number,
    private readonly whitespace: number,
  ) {
    this.key = `O${shape.id}${phase}${used}:${current}:${whitespace}`;
  }

  private with(phase: ObjectPhase, used = this.used, current = this.current): ObjectFrame {
    return new ObjectFrame(this.shape, phase, used, current, 0);
  }

  private get open(): boolean {
    return this.shape.properties.length === 0;
  }

  private requiredDone(): boolean {
    return this.shape.required.every((i) => this.used[i] === '1');
  }

  private anyLeft(): boolean {
    return this.open || this.shape.properties.some((_, i) => this.used[i] !== '1');
  }

  feed(byte: number): FrameResult {
    if (this.phase === 'open')
      return byte === 0x7b
        ? { kind: 'consume', frame: this.with('first', this.shape.properties.map(() => '0').join('')) }
        : null;
    if (isWhitespace(byte) && this.phase !== 'key') {
      return this.whitespace < MAX_WHITESPACE
        ? {
            kind: 'consume',
            frame: new ObjectFrame(this.shape, this.phase, this.used, this.current, this.whitespace + 1),
          }
        : null;
    }
    switch (this.phase) {
      case 'first':
      case 'next':
        if (byte === 0x7d && this.phase === 'first' && this.requiredDone()) return { kind: 'pop', consumed: true };
        if (byte !== QUOTE || !this.anyLeft()) return null;
        return { kind: 'push', frame: this.with('key'), child: this.keyFrame() };
      case 'colon':
        return byte === 0x3a ? { kind: 'consume', frame: this.with('value') } : null;
      case 'value': {
        const shape = this.current >= 0 ? this.shape.properties[this.current].shape : this.shape.additional!;
        return { kind: 'push', frame: this, child: valueFrame(shape) };
      }
      case 'after':
        if (byte === 0x2c && this.anyLeft()) return { kind: 'consume', frame: this.with('next') };
        if (byte === 0x7d && this.requiredDone()) return { kind: 'pop', consumed: true };
        return null;
      default:
        return null;
    }
  }

  private keyFrame(): Frame {
    if (this.open) return new StringFrame(0, Infinity, 'open', 0);
    const candidates = this.shape.properties.map((p, i) => (this.used[i] === '1' ? undefined : p.key));
    return new LiteralFrame(`K${this.shape.id}${this.used}`, candidates, 0, '');
  }

  afterChild(matched: number): Frame {
    if (this.phase === 'key') {
      const index = this.open ? -1 : matched;
      const used = index >= 0 ? this.used.slice(0, index) + '1' + this.used.slice(index + 1) : this.used;
      return this.with('colon', used, index);
    }
    return this.with('after');
  }
}

type ArrayPhase = 'open' | 'first' | 'after' | 'next';

class ArrayFrame implements Frame {
  readonly key: string;
  constructor(
    private readonly shape: Extract<ValueShape, { kind: 'array' }>,
    private readonly phase: ArrayPhase,
    private readonly count: number,
    private readonly whitespace: number,
  ) {
    this.key = `A${shape.id}${phase}${Number.isFinite(shape.maxItems) || shape.minItems > 0 ? count : ''}:${whitespace}`;
  }

  feed(byte: number): FrameResult {
    const { shape } = this;
    if (this.phase === 'open')
      return byte === 0x5b ? { kind: 'consume', frame: new ArrayFrame(shape, 'first', 0, 0) } : null;
    if (isWhitespace(byte))
      return this.whitespace < MAX_WHITESPACE
        ? { kind: 'consume', frame: new ArrayFrame(shape, this.phase, this.count, this.whitespace + 1) }
        : null;
    if (this.phase === 'after') {
      if (byte === 0x2c && this.count < shape.maxItems)
        return { kind: 'consume', frame: new ArrayFrame(shape, 'next', this.count, 0) };
      return byte === 0x5d && this.count >= shape.minItems ? { kind: 'pop', consumed: true } : null;
    }
    if (byte === 0x5d && this.phase === 'first') return shape.minItems === 0 ? { kind: 'pop', consumed: true } : null;
    if (this.count >= shape.maxItems) return null;
    return { kind: 'push', frame: new ArrayFrame(shape, this.phase, this.count, 0), child: valueFrame(shape.items) };
  }

  afterChild(): Frame {
    return new ArrayFrame(this.shape, 'after', this.count + 1, 0);
  }
}

/** Matches one of a set of byte strings (enum values, keys, true/false/null); `matched` is the index once complete. */
class LiteralFrame implements Frame {
  readonly key: string;
  constructor(
    private readonly id: string,
    private readonly values: readonly (Uint8Array | undefined)[],
    private readonly position: number,
    private readonly prefix: string,
  ) {
    this.key = `${id}:${prefix}`;
  }

  feed(byte: number): FrameResult {
    const p = this.position;
    let continues = false;
    let completesHere = -1;
    let longer = false;
    for (let i = 0; i < this.values.length; i++) {
      const v = this.values[i];
      if (!v || v.length <= p || !this.startsWithPrefix(v)) continue;
      if (v[p] !== byte) continue;
      continues = true;
      if (v.length === p + 1) completesHere = i;
      else longer = true;
    }
    if (!continues) {
      // A complete value (a number literal such as 12, beside 123) ends before this byte.
      const complete = this.completeIndex();
      return complete >= 0 ? { kind: 'pop', consumed: false, matched: complete } : null;
    }
    if (completesHere >= 0 && !longer) return { kind: 'pop', consumed: true, matched: completesHere };
    return {
      kind: 'consume',
      frame: new LiteralFrame(this.id, this.values, p + 1, this.prefix + String.fromCharCode(byte)),
    };
  }

  private startsWithPrefix(v: Uint8Array): boolean {
    for (let i = 0; i < this.position; i++) if (v[i] !== this.prefix.charCodeAt(i)) return false;
    return true;
  }

  private completeIndex(): number {
    return this.values.findIndex((v) => v !== undefined && v.length === this.position && this.startsWithPrefix(v));
  }
}

type StringPhase = 'open' | 'body' | 'escape' | 'u1' | 'u2' | 'u3' | 'u4';

/**
 * The bytes a UTF-8 character's next byte may take, by what came before: after a lead byte, its
 * continuation bytes (the first one's range narrowed where the standard forbids overlong forms,
 * surrogates and code points past U+10FFFF). Encoded as "lo-hi:remaining".
 */
function continuation(lead: number): { lo: number; hi: number; remaining: number } | undefined {
  if (lead >= 0xc2 && lead <= 0xdf) return { lo: 0x80, hi: 0xbf, remaining: 1 };
  if (lead === 0xe0) return { lo: 0xa0, hi: 0xbf, remaining: 2 };
  if (lead === 0xed) return { lo: 0x80, hi: 0x9f, remaining: 2 };
  if (lead >= 0xe1 && lead <= 0xef) return { lo: 0x80, hi: 0xbf, remaining: 2 };
  if (lead === 0xf0) return { lo: 0x90, hi: 0xbf, remaining: 3 };
  if (lead >= 0xf1 && lead <= 0xf3) return { lo: 0x80, hi: 0xbf, remaining: 3 };
  if (lead === 0xf4) return { lo: 0x80, hi: 0x8f, remaining: 3 };
  return undefined;
}

/**
 * A JSON string of valid UTF-8: any characters but unescaped quotes, backslashes and control
 * bytes. Its length counts UTF-16 units, as the tool's schema check (zod, JavaScript strings) does.
 */
class StringFrame implements Frame {
  readonly key: string;
  constructor(
    private readonly minLength: number,
    private readonly maxLength: number,
    private readonly phase: StringPhase,
    /** UTF-16 units so far (counted only when a bound needs it). */
    private readonly length: number,
    /** Inside a multi-byte character: the range of its next byte and how many bytes remain. */
    private readonly pending?: { lo: number; hi: number; remaining: number },
  ) {
    const bounded = minLength > 0 || Number.isFinite(maxLength);
    const inChar = pending ? `${pending.lo}-${pending.hi}:${pending.remaining}` : '';
    this.key = `S${phase}${inChar}${bounded ? `${length}/${minLength}/${maxLength}` : ''}`;
  }

  private next(
    phase: StringPhase,
    units: number,
    pending?: { lo: number; hi: number; remaining: number },
  ): StringFrame {
    const length = this.minLength > 0 || Number.isFinite(this.maxLength) ? this.length + units : 0;
    if (phase === this.phase && length === this.length && !pending && !this.pending) return this;
    return new StringFrame(this.minLength, this.maxLength, phase, length, pending);
  }

  feed(byte: number): FrameResult {
    switch (this.phase) {
      case 'open':
        return byte === QUOTE ? { kind: 'consume', frame: this.next('body', 0) } : null;
      case 'body':
        return this.body(byte);
      case 'escape':
        if (byte === 0x75) return { kind: 'consume', frame: this.next('u1', 0) };
        return '"\\/bfnrt'.includes(String.fromCharCode(byte))
          ? { kind: 'consume', frame: this.next('body', 0) }
          : null;
      default: {
        if (!isHex(byte)) return null;
        const following: Record<string, StringPhase> = { u1: 'u2', u2: 'u3', u3: 'u4', u4: 'body' };
        return { kind: 'consume', frame: this.next(following[this.phase], 0) };
      }
    }
  }

  private body(byte: number): FrameResult {
    const pending = this.pending;
    if (pending) {
      if (byte < pending.lo || byte > pending.hi) return null;
      return {
        kind: 'consume',
        frame: this.next(
          'body',
          0,
          pending.remaining > 1 ? { lo: 0x80, hi: 0xbf, remaining: pending.remaining - 1 } : undefined,
        ),
      };
    }
    if (byte === QUOTE) return this.length >= this.minLength ? { kind: 'pop', consumed: true } : null;
    if (byte < 0x20) return null;
    if (byte < 0x80) {
      if (this.length + 1 > this.maxLength) return null;
      return { kind: 'consume', frame: this.next(byte === BACKSLASH ? 'escape' : 'body', 1) };
    }
    const started = continuation(byte);
    if (!started) return null;
    // A 4-byte character is two UTF-16 units (a surrogate pair).
    const units = started.remaining === 3 ? 2 : 1;
    if (this.length + units > this.maxLength) return null;
    return { kind: 'consume', frame: this.next('body', units, started) };
  }
}

type NumberPhase = 'start' | 'minus' | 'zero' | 'int' | 'dot' | 'frac' | 'e' | 'esign' | 'exp';

/** -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)? — integers without the fraction and exponent; digit runs bounded. */
class NumberFrame implements Frame {
  readonly key: string;
  constructor(
    private readonly integer: boolean,
    private readonly phase: NumberPhase,
    private readonly intDigits: number,
    private readonly fracDigits: number,
    private readonly expDigits: number,
  ) {
    this.key = `N${integer ? 'i' : 'f'}${phase}${intDigits}.${fracDigits}.${expDigits}`;
  }

  private to(phase: NumberPhase, int = this.intDigits, frac = this.fracDigits, exp = this.expDigits): FrameResult {
    return { kind: 'consume', frame: new NumberFrame(this.integer, phase, int, frac, exp) };
  }

  feed(byte: number): FrameResult {
    const digit = isDigit(byte);
    switch (this.phase) {
      case 'start':
      case 'minus':
        if (byte === 0x2d && this.phase === 'start') return this.to('minus');
        if (!digit) return null;
        return byte === 0x30 ? this.to('zero', 1) : this.to('int', 1);
      case 'dot':
        return digit ? this.to('frac', this.intDigits, 1) : null;
      case 'e':
        if (byte === 0x2b || byte === 0x2d) return this.to('esign');
        return digit ? this.to('exp', this.intDigits, this.fracDigits, 1) : null;
      case 'esign':
        return digit ? this.to('exp', this.intDigits, this.fracDigits, 1) : null;
      case 'int':
        if (digit) return this.intDigits < MAX_INTEGER_DIGITS ? this.to('int', this.intDigits + 1) : null;
        return this.fractionOrEnd(byte);
      case 'zero':
        return digit ? null : this.fractionOrEnd(byte);
      case 'frac':
        if (digit)
          return this.fracDigits < MAX_FRACTION_DIGITS ? this.to('frac', this.intDigits, this.fracDigits + 1) : null;
        return this.exponentOrEnd(byte);
      case 'exp':
        if (digit)
          return this.expDigits < MAX_EXPONENT_DIGITS
            ? this.to('exp', this.intDigits, this.fracDigits, this.expDigits + 1)
            : null;
        return { kind: 'pop', consumed: false };
    }
  }

  private fractionOrEnd(byte: number): FrameResult {
    if (byte === 0x2e && !this.integer) return this.to('dot');
    return this.exponentOrEnd(byte);
  }

  private exponentOrEnd(byte: number): FrameResult {
    if ((byte === 0x65 || byte === 0x45) && !this.integer) return this.to('e');
    return { kind: 'pop', consumed: false };
  }
}

export { LiteralFrame };
