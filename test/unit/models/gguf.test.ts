/**
 * The pieces of the GGUF export that llama.cpp's round trip (test/integration/models/gguf.test.ts)
 * checks only as a whole: Q8_0 and Q4_0 blocks bit for bit, the container's layout, the q/k row
 * permutation, and the pre-tokenizer names.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { permuteForPairwiseRope } from '#trainer/foundations/models/gguf/architecture';
import { decodeQ4_0, decodeQ8_0, encodeQ4_0, encodeQ8_0, encodedBytes } from '#trainer/foundations/models/gguf/encode';
import { GGUF_ALIGNMENT, GGUF_MAGIC, meta, writeGguf } from '#trainer/foundations/models/gguf/format';
import { preTokenizerName } from '#trainer/foundations/models/gguf/vocabulary';
import { float16ToFloat32Bits, float32FromBits } from '#trainer/foundations/models/files/halfFloat';
import { dequantizeOnHost, quantizeMatrix } from '#trainer/foundations/models/quantized/blockQuantize';
import { Random } from '#trainer/foundations/models/random';

const half = (bits: number) => float32FromBits(float16ToFloat32Bits(bits));
const hex = (byte: number) => byte.toString(16).padStart(2, '0');

describe('GGUF encoding', () => {
  it('Q8_0: scale max|x|/127 as float16, then round-half-away-from-zero of x/scale', () => {
    const values = Float32Array.from({ length: 32 }, (_, i) => (i - 16) * 0.25); // max |x| = 4
    values[5] = 2 * (4 / 127) * 1.5; // exactly 3 steps: rounds to 3
    const bytes = encodeQ8_0(values);
    assert.equal(bytes.length, 34);
    const view = new DataView(bytes.buffer);
    assert.ok(Math.abs(half(view.getUint16(0, true)) - 4 / 127) < 1e-5, 'scale is max|x| / 127');
    assert.equal(view.getInt8(2 + 0), -127, 'the largest magnitude maps to ±127');
    assert.equal(view.getInt8(2 + 5), 3);
    assert.equal(view.getInt8(2 + 16), 0);
    // x/d = 0.25·127/4 = 7.9375 → 8; −15·0.25·127/4 = −119.06 → −119
    assert.equal(view.getInt8(2 + 17), 8);
    assert.equal(view.getInt8(2 + 1), -119);
    const back = decodeQ8_0(bytes, 32, half);
    for (let i = 0; i < 32; i++)
      assert.ok(Math.abs(back[i] - values[i]) <= 4 / 127 / 2 + 1e-3, `value ${i}: ${back[i]} vs ${values[i]}`);
  });

  it('Q8_0 of an all-zero block is a zero scale and zeros', () => {
    const bytes = encodeQ8_0(new Float32Array(32));
    assert.deepEqual([...bytes], new Array(34).fill(0));
  });

  it('Q8_0 rounds halves away from zero', () => {
    const values = new Float32Array(32);
    values[0] = 127; // d = 1 exactly
    values[1] = 2.5;
    values[2] = -2.5;
    const view = new DataView(encodeQ8_0(values).buffer);
    assert.equal(view.getInt8(3), 3);
    assert.equal(view.getInt8(4), -3);
  });

  it("Q4_0: the bytes of llama.cpp's quantize_row_q4_0_ref, worked out by hand", () => {
    // d = m / −8 for m the first value of largest magnitude; q = min(15, trunc(x·(1/d) + 8.5)) with
    // every step in float32; byte j = q[j] | q[j + 16] << 4 after the float16 scale.
    const values = new Float32Array(4 * 32);
    // Block 0: m = −8, so d = 1 (float16 0x3c00). 8 at index 16 is as large but comes later.
    values.set([-8, 0.5, -0.5, 6.5 - 2 ** -21, 1.25, -3.7], 0);
    values.set([8, -7.5, 7.49, -2.5], 16);
    // Block 1: m = 4 is positive, d = −0.5 (0xb800), 1/d = −2; −4 comes later.
    values.set([4, -4, 1, -0.25], 32);
    values.set([0.75, -1.75], 48);
    // Block 2: d = 0.1 / 8 = 0.0125 is no float16: stored as 0x2266, codes from the float32 d.
    values.set([-0.1, 0.05, 0.1, -0.03], 64);
    // Block 3: all zero: d = 0 / −8 = −0 (0x8000), every code 8.
    const bytes = encodeQ4_0(values);
    assert.equal(bytes.length, 4 * 18);
    assert.equal(encodedBytes('Q4_0', [2, 64]), 4 * 18);
    const rest = (n: number) => new Array<number>(n).fill(0x88);
    const expected = [
      // −8 → 0.5 → 0 | 8 → 16.5 → 16, clamped to 15
      // 0.5 → 9 exactly → 9 | −7.5 → 1 exactly → 1
      // −0.5 → 8 exactly → 8 | 7.49 → 15.99 → 15
      // 6.5 − 2⁻²¹ → 15 − 2⁻²¹, which float32 rounds (to even) up to 15 → 15 (float64: 14) | −2.5 → 6
      // 1.25 → 9.75 → 9 | 0 → 8; −3.7 → 4.8 → 4 | 0 → 8
      ...[0x00, 0x3c, 0xf0, 0x19, 0xf8, 0x6f, 0x89, 0x84, ...rest(10)],
      // 4 → −8 + 8.5 → 0 | 0.75 → 7 exactly; −4 → 16.5 → 15 | −1.75 → 12 exactly;
      // 1 → 6.5 → 6 | 0 → 8; −0.25 → 9 exactly | 0 → 8
      ...[0x00, 0xb8, 0x70, 0xcf, 0x86, 0x89, ...rest(12)],
      // 1/d = 80: −0.1 → 0; 0.05 → 12.5 → 12; 0.1 → 16.5 → 15; −0.03 → 6.1 → 6
      ...[0x66, 0x22, 0x80, 0x8c, 0x8f, 0x86, ...rest(12)],
      ...[0x00, 0x80, ...rest(16)],
    ];
    assert.deepEqual([...bytes].map(hex), expected.map(hex));
    const back = decodeQ4_0(bytes, values.length, half);
    assert.deepEqual([...back.subarray(0, 4)], [-8, 1, 0, 7]);
    assert.equal(back[16], 7, 'the clamped code stands for 7·d');
  });

  it("Q4_0 holds the codes and scales of a QLoRA base at 4 bits, from MatMulNBits' order to ggml's", () => {
    const [rows, columns] = [6, 96];
    const values = new Float32Array(rows * columns);
    Random.fromSeed(5).fillNormal(values, 0, 0.05);
    const q = quantizeMatrix(values, rows, columns, { bits: 4, blockSize: 32 });
    const bytes = encodeQ4_0(values);
    for (let block = 0; block < q.scales.length; block++) {
      const view = new DataView(bytes.buffer, block * 18, 18);
      assert.equal(half(view.getUint16(0, true)), q.scales[block], `block ${block}: scale`);
      for (let i = 0; i < 32; i++) {
        // MatMulNBits: value i in byte i/2, low nibble for even i; ggml: byte i mod 16, high nibble from 16 on.
        const ours = (q.data[block * 16 + (i >> 1)] >> ((i & 1) * 4)) & 15;
        const ggml = (view.getUint8(2 + (i & 15)) >> ((i >> 4) * 4)) & 15;
        assert.equal(ggml, ours, `block ${block}, value ${i}`);
      }
    }
    assert.deepEqual(decodeQ4_0(bytes, values.length, half), dequantizeOnHost(q));
  });
});

describe('GGUF container', () => {
  it('writes the header, metadata, tensor table and aligned data llama.cpp reads', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gguf-unit-'));
    try {
      const file = path.join(dir, 'x.gguf');
      const matrix = Float32Array.from({ length: 6 }, (_, i) => i);
      const size = writeGguf(
        file,
        [
          ['general.architecture', meta.str('llama')],
          ['llama.block_count', meta.u32(3)],
        ],
        [
          { name: 'a', shape: [2, 3], type: 'F32', values: () => matrix },
          { name: 'b', shape: [3], type: 'F32', values: () => Float32Array.of(7, 8, 9) },
        ],
      );
      const bytes = fs.readFileSync(file);
      assert.equal(bytes.length, size);
      assert.equal(bytes.readUInt32LE(0), GGUF_MAGIC);
      assert.equal(bytes.toString('latin1', 0, 4), 'GGUF');
      assert.equal(bytes.readUInt32LE(4), 3, 'version 3');
      assert.equal(bytes.readBigUInt64LE(8), 2n, 'tensors');
      assert.equal(bytes.readBigUInt64LE(16), 2n, 'metadata entries');
      // Tensor "a": dims written innermost first (3, 2); data at offset 0, "b" at the next 32-byte boundary.
      const a = bytes.indexOf(Buffer.from('\x01\x00\x00\x00\x00\x00\x00\x00a', 'latin1'));
      assert.equal(bytes.readUInt32LE(a + 9), 2, 'n_dims');
      assert.equal(bytes.readBigUInt64LE(a + 13), 3n);
      assert.equal(bytes.readBigUInt64LE(a + 21), 2n);
      assert.equal(bytes.readUInt32LE(a + 29), 0, 'F32');
      assert.equal(bytes.readBigUInt64LE(a + 33), 0n);
      const bOffset = Number(bytes.readBigUInt64LE(a + 41 + 8 + 1 + 4 + 8 + 4));
      assert.equal(bOffset, GGUF_ALIGNMENT, 'each tensor starts on the alignment');
      const dataStart = size - GGUF_ALIGNMENT - 32;
      assert.equal(dataStart % GGUF_ALIGNMENT, 0);
      assert.deepEqual(
        [...new Float32Array(bytes.buffer.slice(bytes.byteOffset + dataStart, bytes.byteOffset + dataStart + 24))],
        [...matrix],
      );
      assert.deepEqual(
        [...new Float32Array(bytes.buffer.slice(bytes.byteOffset + dataStart + 32, bytes.byteOffset + dataStart + 44))],
        [7, 8, 9],
      );
      assert.ok(!fs.existsSync(`${file}.partial`));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a duplicate tensor or key, naming it', () => {
    const t = { name: 'w', shape: [4], type: 'F32' as const, values: () => new Float32Array(4) };
    assert.throws(() => writeGguf('/nonexistent/x.gguf', [], [t, t]), /GGUF tensor w is given twice/);
    assert.throws(
      () =>
        writeGguf(
          '/nonexistent/x.gguf',
          [
            ['k', meta.u32(1)],
            ['k', meta.u32(2)],
          ],
          [],
        ),
      /key k is given twice/,
    );
  });
});

describe('llama.cpp layout', () => {
  it('permutes q/k rows per head from rotate-half pairs (i, i+hd/2) to adjacent pairs (2i, 2i+1)', () => {
    // 2 heads of head dim 4, rows of length 1: row r holds r.
    const rows = Float32Array.from({ length: 8 }, (_, r) => r);
    assert.deepEqual([...permuteForPairwiseRope(rows, 2, 1)], [0, 2, 1, 3, 4, 6, 5, 7]);
    // Rows of length 2 move whole.
    const wide = Float32Array.from({ length: 8 }, (_, i) => i);
    assert.deepEqual([...permuteForPairwiseRope(wide, 1, 2)], [0, 1, 4, 5, 2, 3, 6, 7]);
  });

  it('names the pre-tokenizers llama.cpp implements and refuses others', () => {
    const split = (regex: string) => ({
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated' },
        { type: 'ByteLevel', use_regex: false },
      ],
    });
    const qwen =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    assert.equal(preTokenizerName(split(qwen), 'tokenizer.json'), 'qwen2');
    assert.equal(preTokenizerName(split(qwen.replace('\\p{N}|', '\\p{N}{1,3}|')), 'tokenizer.json'), 'llama-bpe');
    assert.equal(
      preTokenizerName(
        {
          type: 'Sequence',
          pretokenizers: [
            { type: 'Digits', individual_digits: true },
            { type: 'ByteLevel', use_regex: true },
          ],
        },
        'f',
      ),
      'smollm',
    );
    assert.equal(preTokenizerName({ type: 'ByteLevel', add_prefix_space: false }, 'f'), 'gpt-2');
    assert.throws(
      () => preTokenizerName(split('\\w+'), 'dir/tokenizer.json'),
      /dir\/tokenizer\.json: the pre-tokenizer's split pattern "\\\\w\+" is not one llama\.cpp implements/,
    );
    assert.throws(
      () => preTokenizerName({ type: 'Metaspace' }, 'dir/tokenizer.json'),
      /pre_tokenizer \["Metaspace"\] is not one llama\.cpp implements/,
    );
  });
});
