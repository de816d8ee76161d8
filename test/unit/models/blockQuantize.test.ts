/**
 * Block quantization as llama.cpp computes q4_0 and q8_0, in MatMulNBits' byte layout: hand-worked
 * blocks (the largest-magnitude value negative, halves that round up, clamping at the top code),
 * float16 scales, an all-zero block, and the round trip's error bound.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { dequantizeOnHost, quantizeMatrix } from '#trainer/foundations/models/quantized/blockQuantize';

/** A block of 32 whose first values are `head`, the rest 0. */
function block(head: number[]): Float32Array {
  const values = new Float32Array(32);
  values.set(head);
  return values;
}

/** 4-bit codes of a row of one block, signed (code − 8), even columns from the low nibbles. */
function codes4(data: Uint8Array): number[] {
  return Array.from({ length: 32 }, (_, i) => ((data[i >> 1] >> ((i & 1) * 4)) & 15) - 8);
}

describe('block quantization (q4_0 / q8_0)', () => {
  it('4 bits: d = m / −8 for the signed value of largest magnitude, code = min(7, ⌊x/d + 0.5⌋)', () => {
    // m = −1.6 (|−1.6| > 1.4): d = 0.2, 1/d = 5. −1.6 → −8 exactly; 1.4 → 7; 0.3 → 1.5 + 8.5 = 10 → 2;
    // −0.3 → −1.5 + 8.5 = 7 → −1 (halves go up); 0.29 → 1.45 → 1.
    const q = quantizeMatrix(block([-1.6, 1.4, 0.3, -0.3, 0.29]), 1, 32, { bits: 4, blockSize: 32 });
    assert.deepEqual(codes4(q.data).slice(0, 6), [-8, 7, 2, -1, 1, 0]);
    assert.equal(q.scales[0], 0.199951171875, 'the scale is 0.2 rounded to float16');
    assert.equal(q.data.length, 16);
    // When the largest magnitude is positive, d is negative and the top value clamps at code 7 (llama.cpp's min(15, …)).
    const positive = quantizeMatrix(block([1.6, -1.4]), 1, 32, { bits: 4, blockSize: 32 });
    assert.deepEqual(codes4(positive.data).slice(0, 2), [-8, 7]);
    assert.ok(positive.scales[0] < 0);
    assert.deepEqual(
      Array.from(dequantizeOnHost(positive).slice(0, 2)),
      [1.599609375, -1.399658203125], // −8·d and 7·d, d = −0.2 in float16
    );
  });

  it('8 bits: d = max|x| / 127, codes rounded half away from zero, stored offset by 128', () => {
    // d = 0.01: 0.005 → 0.5 → 1, −0.005 → −1, 0.0149 → 1, −1.27 → −127.
    const q = quantizeMatrix(block([1.27, 0.005, -0.005, 0.0149, -1.27]), 1, 32, { bits: 8, blockSize: 32 });
    assert.deepEqual(
      Array.from(q.data.slice(0, 6), (b) => b - 128),
      [127, 1, -1, 1, -127, 0],
    );
    assert.equal(q.scales.length, 1);
  });

  it('an all-zero block has scale 0 and the midpoint code; dequantized, it is zeros', () => {
    for (const bits of [4, 8] as const) {
      const q = quantizeMatrix(new Float32Array(64), 2, 32, { bits, blockSize: 32 });
      assert.ok(q.scales.every((d) => d === 0)); // −0 at 4 bits (0 / −8), as llama.cpp's
      assert.ok(q.data.every((b) => b === (bits === 4 ? 0x88 : 128)));
      assert.ok(dequantizeOnHost(q).every((v) => v === 0));
    }
  });

  // q4_0's codes reach −8·d but only 7·d on the other side: a value near the block's largest
  // magnitude, of the other sign, is clamped and can be off by a whole step.
  it('round trip: every weight within half a step of its block (a whole step at the 4-bit clamp)', () => {
    const [rows, columns] = [6, 128];
    const values = Float32Array.from({ length: rows * columns }, (_, i) => Math.sin(i * 12.9898) * (1 + (i % 7)));
    for (const [bits, blockSize] of [
      [4, 32],
      [8, 32],
      [4, 64],
    ] as const) {
      const q = quantizeMatrix(values, rows, columns, { bits, blockSize });
      assert.equal(q.scales.length, (rows * columns) / blockSize);
      const back = dequantizeOnHost(q);
      values.forEach((x, i) => {
        const d = Math.abs(q.scales[Math.floor(i / blockSize)]);
        const step = bits === 4 && Math.abs(x) > 7 * d ? d : d * 0.5;
        assert.ok(
          Math.abs(back[i] - x) <= step + Math.abs(x) * 1e-3,
          `int${bits}/${blockSize} [${i}]: ${x} → ${back[i]}`,
        );
      });
    }
  });

  it('refuses rows that do not split into whole blocks', () => {
    assert.throws(
      () => quantizeMatrix(new Float32Array(48), 1, 48, { bits: 4, blockSize: 32 }),
      /48 columns do not split into blocks of 32/,
    );
  });
});
