import type { AllowedTokens, SequenceConstraint } from '../../../foundations/models/generation/policy';
import type { Tokenizer } from '../../../foundations/models/text/tokenizer';
import type { ToolSpec } from '../../../contract/protocol/chatMessages';
import { advance, callObjectDone, callStart, DONE, type CallGrammar } from './callFrame';
import { stateKey, type GrammarState } from './jsonFrames';
import { ShapeBuilder } from './schemaShape';
import { TokenIndex } from './tokenIndex';
import { definedFields } from '../../../contract/definedFields';

/**
 * Schema-constrained tool calls for formats that wrap a JSON call in markers (Hermes/Qwen
 * `<tool_call>…</tool_call>`): outside a call every token is free; from the opening marker to the
 * closing one, only tokens that keep the text a valid call of one of the tools — a known name,
 * arguments of that tool's JSON Schema (schemaShape.ts) — may be sampled, then the closing marker.
 *
 * One instance serves a whole run: the allowed set of each grammar state is computed once (a walk
 * of the sorted vocabulary, tokenIndex.ts) and kept by the state's key, and the same object is
 * returned for the same state, so the generation and scoring graphs see one bias row per set.
 */
export interface CallMarkers {
  open: string;
  close: string;
}

export class ToolCallConstraint {
  private readonly grammar: CallGrammar;
  private readonly index: TokenIndex;
  private readonly openId: number | undefined;
  private readonly closeId: number | undefined;
  private readonly openBytes: Uint8Array;
  private readonly cache = new Map<string, AllowedTokens | undefined>();
  private readonly added: Set<number>;

  constructor(tokenizer: Tokenizer, tools: readonly ToolSpec[], markers: CallMarkers) {
    const shapes = new ShapeBuilder();
    const utf8 = new TextEncoder();
    this.openId = addedTokenId(tokenizer, markers.open);
    this.closeId = addedTokenId(tokenizer, markers.close);
    this.openBytes = utf8.encode(markers.open);
    this.added = new Set(tokenizer.addedTokens.map((t) => t.id));
    this.grammar = {
      names: tools.map((t) => utf8.encode(JSON.stringify(t.function.name))),
      argumentShapes: tools.map((t) => shapes.fromSchema(t.function.parameters)),
      ...definedFields({ closing: this.closeId === undefined ? utf8.encode(markers.close) : undefined }),
    };
    this.index = TokenIndex.of(tokenizer);
  }

  /** A tracker for one sequence's turn (outside any call at first). */
  begin(): CallTracker {
    return new CallTracker(this);
  }

  /** Grammar states: where a call's body starts, and the next state after a token (null: not allowed). */
  start(): GrammarState {
    return callStart(this.grammar);
  }

  isOpening(token: number, textBefore: readonly number[]): boolean {
    if (this.openId !== undefined) return token === this.openId;
    // No single token for the marker: its bytes at the end of the text.
    const bytes = [...textBefore, ...(this.index.bytes[token] ?? [])];
    const n = this.openBytes.length;
    return bytes.length >= n && this.openBytes.every((b, i) => bytes[bytes.length - n + i] === b);
  }

  isClosing(token: number, state: GrammarState): boolean {
    return this.closeId !== undefined && token === this.closeId && callObjectDone(state);
  }

  step(state: GrammarState, token: number): GrammarState | null {
    const bytes = this.index.bytes[token];
    if (!bytes || this.added.has(token)) return null;
    let s: GrammarState | null = state;
    for (const b of bytes) {
      s = advance(s, b);
      if (s === null) return null;
    }
    return s;
  }

  /** The tokens allowed from `state`, shared per state; undefined when none would be (the position is left free). */
  allowedAt(state: GrammarState): AllowedTokens | undefined {
    const key = stateKey(state);
    if (this.cache.has(key)) return this.cache.get(key);
    const allowed = this.index.allowedFrom(state);
    if (this.closeId !== undefined && callObjectDone(state)) allowed[this.closeId] = 1;
    const set = allowed.some((a) => a === 1) ? { allowed } : undefined;
    this.cache.set(key, set);
    return set;
  }

  /** How many grammar states have their allowed set computed (for tests and benchmarks). */
  get cachedStates(): number {
    return this.cache.size;
  }

  /** The bytes of the opening marker, to keep a tail of written text for markers of several tokens. */
  get openingLength(): number {
    return this.openBytes.length;
  }

  bytesOf(token: number): Uint8Array | undefined {
    return this.index.bytes[token];
  }
}

/** The constraint of one sequence during one turn: free outside calls, the grammar inside. */
export class CallTracker implements SequenceConstraint {
  /** The grammar state inside a call; null outside. */
  private state: GrammarState | null = null;
  /** The last bytes written outside calls (to find an opening marker spread over tokens). */
  private tail: number[] = [];
  /** Tokens the tracker had to leave unconstrained (a sampled token the grammar refused: never expected). */
  refused = 0;
  /** The allowed set each accepted token was sampled under (undefined: free), in order. */
  readonly applied: (AllowedTokens | undefined)[] = [];
  private offered: AllowedTokens | undefined;

  constructor(private readonly constraint: ToolCallConstraint) {}

  get insideCall(): boolean {
    return this.state !== null;
  }

  next(): AllowedTokens | undefined {
    this.offered = this.state ? this.constraint.allowedAt(this.state) : undefined;
    return this.offered;
  }

  accept(token: number): void {
    this.applied.push(this.offered);
    this.offered = undefined;
    const c = this.constraint;
    if (this.state === null) {
      if (c.isOpening(token, this.tail)) {
        this.state = c.start();
        this.tail = [];
      } else {
        this.tail.push(...(c.bytesOf(token) ?? []));
        if (this.tail.length > c.openingLength) this.tail.splice(0, this.tail.length - c.openingLength);
      }
      return;
    }
    if (c.isClosing(token, this.state)) {
      this.state = null;
      return;
    }
    const next = c.step(this.state, token);
    if (next === null) this.refused++;
    // Closed by the marker's own bytes (no single token for it), or refused: outside again.
    this.state = next === null || next === DONE ? null : next;
  }
}

function addedTokenId(tokenizer: Tokenizer, marker: string): number | undefined {
  return tokenizer.isAddedToken(marker) ? tokenizer.findTokenId(marker) : undefined;
}
