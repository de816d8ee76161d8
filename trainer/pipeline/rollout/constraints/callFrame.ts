import {
  advance,
  DONE,
  MAX_WHITESPACE,
  valueFrame,
  LiteralFrame,
  type Frame,
  type FrameResult,
  type GrammarState,
} from './jsonFrames';
import type { ValueShape } from './schemaShape';

/**
 * The body of one Hermes/Qwen tool call, as chat templates write it:
 *   `\n{"name": "<tool>", "arguments": {…}}\n`
 * — a known tool's name, then arguments of that tool's shape; up to two whitespace bytes before
 * and after the object, at most one between its tokens. The closing marker follows: a token of
 * its own where the tokenizer has one (`</tool_call>`, see callConstraint.ts), otherwise the
 * marker's bytes, written here (`closing`).
 */
export interface CallGrammar {
  /** The tools' names as JSON strings, and each tool's argument shape, in the same order. */
  names: Uint8Array[];
  argumentShapes: ValueShape[];
  /** The closing marker's bytes when no single token writes it; undefined when one does. */
  closing?: Uint8Array;
}

const utf8 = new TextEncoder();

type Piece = { literal: Uint8Array } | { whitespace: number } | 'name' | 'arguments' | 'closing';

const PIECES: Piece[] = [
  { whitespace: 2 },
  { literal: utf8.encode('{') },
  { whitespace: MAX_WHITESPACE },
  { literal: utf8.encode('"name"') },
  { whitespace: MAX_WHITESPACE },
  { literal: utf8.encode(':') },
  { whitespace: MAX_WHITESPACE },
  'name',
  { whitespace: MAX_WHITESPACE },
  { literal: utf8.encode(',') },
  { whitespace: MAX_WHITESPACE },
  { literal: utf8.encode('"arguments"') },
  { whitespace: MAX_WHITESPACE },
  { literal: utf8.encode(':') },
  { whitespace: MAX_WHITESPACE },
  'arguments',
  { whitespace: MAX_WHITESPACE },
  { literal: utf8.encode('}') },
  { whitespace: 2 },
  'closing',
];

/** The index of the piece after the call's object: from here on the call may be closed. */
const AFTER_OBJECT = PIECES.length - 2;

class CallFrame implements Frame {
  readonly key: string;
  constructor(
    private readonly grammar: CallGrammar,
    private readonly piece: number,
    /** Bytes of the current literal, or whitespace bytes, written so far. */
    private readonly offset: number,
    /** The tool named (its index), once the name is written. */
    readonly tool: number,
  ) {
    this.key = `C${piece}:${offset}:${tool}`;
  }

  /** Whether the call's object is complete (only whitespace, then the closing marker, may follow). */
  get objectDone(): boolean {
    return this.piece >= AFTER_OBJECT;
  }

  feed(byte: number): FrameResult {
    const piece = PIECES[this.piece];
    if (piece === undefined) return null;
    if (piece === 'closing') {
      const closing = this.grammar.closing;
      if (!closing || closing[this.offset] !== byte) return null;
      return this.offset + 1 === closing.length
        ? { kind: 'pop', consumed: true }
        : { kind: 'consume', frame: new CallFrame(this.grammar, this.piece, this.offset + 1, this.tool) };
    }
    if (piece === 'name') return { kind: 'push', frame: this, child: new LiteralFrame('T', this.grammar.names, 0, '') };
    if (piece === 'arguments')
      return { kind: 'push', frame: this, child: valueFrame(this.grammar.argumentShapes[this.tool]) };
    if ('whitespace' in piece) {
      if ((byte === 0x20 || byte === 0x0a) && this.offset < piece.whitespace)
        return { kind: 'consume', frame: new CallFrame(this.grammar, this.piece, this.offset + 1, this.tool) };
      return { kind: 'replace', frame: new CallFrame(this.grammar, this.piece + 1, 0, this.tool) };
    }
    if (piece.literal[this.offset] !== byte) return null;
    const done = this.offset + 1 === piece.literal.length;
    return {
      kind: 'consume',
      frame: done
        ? new CallFrame(this.grammar, this.piece + 1, 0, this.tool)
        : new CallFrame(this.grammar, this.piece, this.offset + 1, this.tool),
    };
  }

  afterChild(matched: number): Frame {
    const tool = PIECES[this.piece] === 'name' ? matched : this.tool;
    return new CallFrame(this.grammar, this.piece + 1, 0, tool);
  }
}

/** The state at the start of a call's body (right after the opening marker). */
export function callStart(grammar: CallGrammar): GrammarState {
  return { frame: new CallFrame(grammar, 0, 0, -1), parent: null };
}

/** Whether the call's object is complete, so the closing marker token may come. */
export function callObjectDone(state: GrammarState | null): boolean {
  return (
    state !== null &&
    state !== DONE &&
    state.parent === null &&
    state.frame instanceof CallFrame &&
    state.frame.objectDone
  );
}

export { advance, DONE };
