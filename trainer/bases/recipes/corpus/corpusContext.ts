import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
import type { Tokenizer } from '../../../foundations/models/text/tokenizer';

/** What the generators need from the model: its tokenizer and chat template, and the tokens that spell plain ASCII. */
export class CorpusContext {
  /** Ids of ordinary tokens whose text is printable ASCII (random spans are drawn from them). */
  readonly asciiTokens: readonly number[];
  readonly endOfText: number;

  constructor(readonly template: ChatTemplate) {
    const tokenizer = template.tokenizer;
    const ascii: number[] = [];
    const specials = new Set(tokenizer.addedTokens.map((t) => t.id));
    const pieces = tokenizer.pieces(
      Array.from({ length: tokenizer.vocabSize - tokenizer.addedTokens.length }, (_, i) => i),
    );
    pieces.forEach((piece, id) => {
      if (!specials.has(id) && /^[\x20-\x7e]+$/.test(piece)) ascii.push(id);
    });
    this.asciiTokens = ascii;
    this.endOfText = tokenizer.tokenId('<|endoftext|>');
  }

  get tokenizer(): Tokenizer {
    return this.template.tokenizer;
  }
}
