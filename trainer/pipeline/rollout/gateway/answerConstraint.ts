import type { ToolSpec } from '../../../contract/protocol/chatMessages';
import type { AllowedTokens, SequenceConstraint } from '../../../foundations/models/generation/policy';
import type { Tokenizer } from '../../../foundations/models/text/tokenizer';
import { ToolCallConstraint, type CallTracker } from '../constraints/callConstraint';
import { advance, DONE, stateKey, valueFrame, type GrammarState } from '../constraints/jsonFrames';
import { ShapeBuilder } from '../constraints/schemaShape';
import { TokenIndex } from '../constraints/tokenIndex';
import type { ToolCallFormat } from '../formats/toolCallFormat';
import { ChatRequestError, type ChatTurnRequest } from './chatRequest';

/**
 * What an answer may be, token by token, for a Chat Completions request: its `tool_choice`,
 * `parallel_tool_calls` and `response_format` enforced while the policy samples (the same
 * mechanism as our own loop's schema-constrained calls, constraints/), so an answer always is what
 * the request asked for:
 *
 *   auto       free text; a call, once opened, follows the grammar of the request's tools
 *   none       free text, never the opening marker of a call
 *   required   a call first (the opening marker, then the grammar), then more calls or the end
 *   function   one call of that function, then the end of the turn
 *   json       the content is one JSON value of the schema (`json_object`: any object), then the
 *              end; with tools under `auto`, calls may come instead of it
 *
 * `parallel_tool_calls: false` ends the turn after the first call. The sets every token was
 * sampled under are kept (`applied`), so training scores the distribution that was sampled.
 * Forced formats apply from the answer's first token: a thinking model does not think first.
 */

/** The sets of one tokenizer that stay fixed: the end-of-turn tokens, the opening marker. */
interface Markers {
  openId: number | undefined;
  endIds: readonly number[];
}

type Phase = 'start' | 'text' | 'call' | 'afterCall' | 'json' | 'end';

/** Builds a request's constraint; shares grammars and masks across requests with the same tools or schema. */
export class AnswerConstraints {
  private readonly calls = new Map<string, ToolCallConstraint>();
  private readonly json = new Map<string, JsonGrammar>();
  private readonly sets = new Map<string, AllowedTokens>();
  private readonly markers: Markers;

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly format: ToolCallFormat,
    endIds: readonly number[],
  ) {
    const open = tokenizer.isAddedToken('<tool_call>') ? tokenizer.findTokenId('<tool_call>') : undefined;
    this.markers = { openId: format.callConstraint ? open : undefined, endIds };
  }

  /** A fresh constraint for one answer (one choice) of `request`; undefined when every token is free. */
  begin(request: ChatTurnRequest): AnswerConstraint | undefined {
    const choice = request.toolChoice;
    const json = request.responseFormat.kind === 'json' ? this.jsonGrammar(request.responseFormat.schema) : undefined;
    const tools =
      choice.kind === 'function' ? request.tools.filter((t) => t.function.name === choice.name) : request.tools;
    const calls = choice.kind === 'none' || tools.length === 0 ? undefined : this.callGrammar(tools);
    if (!json && !calls && (choice.kind !== 'none' || this.markers.openId === undefined)) return undefined;
    const forced = choice.kind === 'required' || choice.kind === 'function';
    if ((forced || json) && this.markers.openId === undefined && calls)
      throw new ChatRequestError(
        `tool_choice "${choice.kind}" needs a tool-call format whose opening marker is one token (the ${this.format.name} format and this tokenizer have none)`,
        400,
        'tool_choice',
      );
    return new AnswerConstraint(this, {
      calls: calls?.begin(),
      json,
      forced,
      single: choice.kind === 'function' || !request.parallelToolCalls,
      forbidCalls: choice.kind === 'none',
    });
  }

  private callGrammar(tools: readonly ToolSpec[]): ToolCallConstraint | undefined {
    const make = this.format.callConstraint;
    if (!make) return undefined;
    const key = JSON.stringify(tools);
    let grammar = this.calls.get(key);
    if (!grammar) {
      grammar = make.call(this.format, this.tokenizer, tools);
      this.calls.set(key, grammar);
    }
    return grammar;
  }

  private jsonGrammar(schema: Record<string, unknown>): JsonGrammar {
    const key = JSON.stringify(schema);
    let grammar = this.json.get(key);
    if (!grammar) {
      grammar = new JsonGrammar(TokenIndex.of(this.tokenizer), schema);
      this.json.set(key, grammar);
    }
    return grammar;
  }

  /** One shared object per distinct set (the session's bias table caches by identity). */
  set(key: string, ids: () => Iterable<number>, base?: Uint8Array): AllowedTokens {
    let set = this.sets.get(key);
    if (!set) {
      const allowed = base ? Uint8Array.from(base) : new Uint8Array(this.tokenizer.vocabSize);
      for (const id of ids()) allowed[id] = 1;
      set = { allowed };
      this.sets.set(key, set);
    }
    return set;
  }

  get openId(): number | undefined {
    return this.markers.openId;
  }

  get endIds(): readonly number[] {
    return this.markers.endIds;
  }

  /** Every token but the opening marker (tool_choice `none`). */
  withoutCalls(): AllowedTokens | undefined {
    const open = this.markers.openId;
    if (open === undefined) return undefined;
    const key = 'no-calls';
    let set = this.sets.get(key);
    if (!set) {
      const allowed = new Uint8Array(this.tokenizer.vocabSize).fill(1);
      allowed[open] = 0;
      set = { allowed };
      this.sets.set(key, set);
    }
    return set;
  }
}

/** A JSON value of one schema as an answer's whole content: masks per grammar state, shared. */
class JsonGrammar {
  private readonly masks = new Map<string, Uint8Array>();
  readonly start: GrammarState;
  constructor(
    private readonly index: TokenIndex,
    schema: Record<string, unknown>,
  ) {
    this.start = { frame: valueFrame(new ShapeBuilder().fromSchema(schema)), parent: null };
  }

  mask(state: GrammarState): { key: string; allowed: Uint8Array } {
    const key = stateKey(state);
    let allowed = this.masks.get(key);
    if (!allowed) {
      allowed = this.index.allowedFrom(state);
      this.masks.set(key, allowed);
    }
    return { key: `json:${key}`, allowed };
  }

  step(state: GrammarState, token: number): GrammarState | null {
    const bytes = this.index.bytes[token];
    if (!bytes) return null;
    let s: GrammarState | null = state;
    for (const b of bytes) {
      s = advance(s, b);
      if (s === null) return null;
    }
    return s;
  }
}

interface AnswerRules {
  calls: CallTracker | undefined;
  json: JsonGrammar | undefined;
  /** A call must come first (tool_choice `required` or a named function). */
  forced: boolean;
  /** At most one call. */
  single: boolean;
  forbidCalls: boolean;
}

/** One answer's constraint (a SequenceConstraint the generation session asks before each token). */
export class AnswerConstraint implements SequenceConstraint {
  private phase: Phase = 'start';
  private jsonState: GrammarState | null = null;
  private offered: AllowedTokens | undefined;
  /** The set each accepted token was sampled under (undefined: free), in order. */
  readonly applied: (AllowedTokens | undefined)[] = [];
  /** Tokens the grammar refused after they were sampled (never expected: a bug if not 0). */
  refused = 0;

  constructor(
    private readonly shared: AnswerConstraints,
    private readonly rules: AnswerRules,
  ) {}

  next(): AllowedTokens | undefined {
    this.offered = this.allowed();
    return this.offered;
  }

  private allowed(): AllowedTokens | undefined {
    const { rules, shared } = this;
    const open = shared.openId;
    const ends = () => shared.endIds;
    switch (this.phase) {
      case 'start':
        if (rules.forced) return shared.set('open', () => [open!]);
        if (rules.json) {
          const { key, allowed } = rules.json.mask(rules.json.start);
          return shared.set(`${key}+open:${rules.calls ? 1 : 0}`, () => (rules.calls ? [open!] : []), allowed);
        }
        if (rules.forbidCalls) return shared.withoutCalls();
        return rules.calls?.next();
      case 'text':
        return rules.forbidCalls ? shared.withoutCalls() : rules.calls?.next();
      case 'call':
        return rules.calls!.next();
      case 'afterCall':
        if (rules.single) return shared.set('end', ends);
        if (rules.forced || rules.json) return shared.set('open+end', () => [open!, ...ends()]);
        return rules.calls!.next();
      case 'json': {
        if (this.jsonState === DONE) return shared.set('end', ends);
        const { key, allowed } = rules.json!.mask(this.jsonState!);
        return shared.set(key, () => [], allowed);
      }
      case 'end':
        return shared.set('end', ends);
    }
  }

  accept(token: number): void {
    this.applied.push(this.offered);
    this.offered = undefined;
    const { rules } = this;
    if (this.phase === 'json') {
      const next = this.jsonState === DONE ? null : rules.json!.step(this.jsonState!, token);
      if (next === null && !this.shared.endIds.includes(token)) this.refused++;
      if (next !== null) this.jsonState = next;
      return;
    }
    if (this.phase === 'start' && rules.json && token !== this.shared.openId) {
      this.phase = 'json';
      this.jsonState = rules.json.step(rules.json.start, token);
      if (this.jsonState === null) this.refused++;
      return;
    }
    if (!rules.calls) {
      this.phase = 'text';
      return;
    }
    const wasInside = rules.calls.insideCall;
    rules.calls.accept(token);
    if (rules.calls.insideCall) this.phase = 'call';
    else if (wasInside) this.phase = 'afterCall';
    else if (this.phase === 'start') this.phase = 'text';
  }
}
