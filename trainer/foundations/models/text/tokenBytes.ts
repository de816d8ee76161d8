/**
 * The bytes behind each vocabulary entry. A tokenizer's vocabulary stores tokens as strings in an
 * encoding of its own: byte-level BPE (GPT-2, Qwen, Llama 3, SmolLM) writes every byte as one
 * printable character (`Ġ` for a space, `Ċ` for a newline); SentencePiece-style vocabularies
 * (Llama 2) write a space as `▁` and bytes that have no piece as `<0xNN>`. A grammar works on the
 * decoded text, so it needs each token's bytes, not its vocabulary string.
 */

/** GPT-2's bytes_to_unicode, inverted: vocabulary character → byte. */
function byteLevelDecoder(): Map<string, number> {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const kept = new Set(printable);
  const map = new Map<string, number>();
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    const char = kept.has(b) ? String.fromCodePoint(b) : String.fromCodePoint(256 + shifted++);
    map.set(char, b);
  }
  return map;
}

let byteLevel: Map<string, number> | undefined;

/** A byte-level vocabulary string's bytes, or undefined when it holds a character outside the byte alphabet. */
export function byteLevelBytes(piece: string): Uint8Array | undefined {
  byteLevel ??= byteLevelDecoder();
  const out: number[] = [];
  for (const char of piece) {
    const b = byteLevel.get(char);
    if (b === undefined) return undefined;
    out.push(b);
  }
  return Uint8Array.from(out);
}

const encoder = new TextEncoder();

/** A SentencePiece-style piece's bytes: `<0xNN>` is that byte, `▁` a space, the rest UTF-8. */
export function sentencePieceBytes(piece: string): Uint8Array {
  const byte = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
  if (byte) return Uint8Array.of(parseInt(byte[1], 16));
  return encoder.encode(piece.replaceAll('\u2581', ' '));
}

/** Every id's bytes; added tokens (special or not) are their content. */
export function tokenByteTable(
  vocabSize: number,
  pieceOf: (id: number) => string | undefined,
  encoding: 'byte-level' | 'sentencepiece',
  added: readonly { id: number; content: string }[],
): (Uint8Array | undefined)[] {
  const table: (Uint8Array | undefined)[] = new Array(vocabSize);
  for (let id = 0; id < vocabSize; id++) {
    const piece = pieceOf(id);
    if (piece === undefined) continue;
    table[id] = encoding === 'byte-level' ? byteLevelBytes(piece) : sentencePieceBytes(piece);
  }
  for (const token of added) if (token.id < vocabSize) table[token.id] = encoder.encode(token.content);
  return table;
}
