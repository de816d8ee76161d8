import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  bfloat16ToFloat32Bits,
  float16ToFloat32Bits,
  float32Bits,
  float32BitsToBfloat16,
  float32BitsToFloat16,
  float32FromBits,
} from '#trainer/foundations/models';

const toF16 = (x: number) => float32BitsToFloat16(float32Bits(x));
const fromF16 = (h: number) => float32FromBits(float16ToFloat32Bits(h));
const toBf16 = (x: number) => float32BitsToBfloat16(float32Bits(x));

describe('float16 conversion', () => {
  it('encodes known values (IEEE 754 binary16 tables)', () => {
    const cases: [number, number][] = [
      [1, 0x3c00],
      [-2, 0xc000],
      [0.1, 0x2e66],
      [1 / 3, 0x3555],
      [65504, 0x7bff], // largest finite
      [65519, 0x7bff], // rounds down
      [2 ** -14, 0x0400], // smallest normal
      [2 ** -24, 0x0001], // smallest subnormal
      [0.75 * 2 ** -24, 0x0001], // rounds up to it
      [1023 * 2 ** -24, 0x03ff], // largest subnormal
      [-0, 0x8000],
      [Infinity, 0x7c00],
      [-Infinity, 0xfc00],
    ];
    for (const [value, bits] of cases) assert.equal(toF16(value), bits, `${value} -> 0x${toF16(value).toString(16)}`);
  });

  it('rounds ties to even, overflows to infinity and keeps NaN', () => {
    assert.equal(toF16(1 + 2 ** -11), 0x3c00); // halfway between 0x3c00 and 0x3c01: even
    assert.equal(toF16(1 + 3 * 2 ** -11), 0x3c02); // halfway between 0x3c01 and 0x3c02: even
    assert.equal(toF16(2 ** -25), 0x0000); // halfway between 0 and the smallest subnormal
    assert.equal(toF16(1023.5 * 2 ** -24), 0x0400); // halfway from the largest subnormal: to the smallest normal
    assert.equal(toF16(65520), 0x7c00); // halfway between 65504 and 65536: even is infinity
    assert.equal(toF16(1e6), 0x7c00);
    assert.equal(toF16(1e-10), 0x0000);
    assert.equal(toF16(NaN) & 0x7c00, 0x7c00);
    assert.notEqual(toF16(NaN) & 0x3ff, 0);
  });

  it('decodes known values', () => {
    assert.equal(fromF16(0x3c00), 1);
    assert.equal(fromF16(0xc000), -2);
    assert.equal(fromF16(0x7bff), 65504);
    assert.equal(fromF16(0x0001), 2 ** -24);
    assert.equal(fromF16(0x03ff), 1023 * 2 ** -24);
    assert.equal(fromF16(0xfc00), -Infinity);
    assert.ok(Object.is(fromF16(0x8000), -0));
    assert.ok(Number.isNaN(fromF16(0x7e00)));
  });

  it('round-trips every one of the 65536 bit patterns (NaNs stay NaN)', () => {
    for (let h = 0; h < 65536; h++) {
      const back = float32BitsToFloat16(float16ToFloat32Bits(h));
      const isNaN = (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
      if (isNaN) assert.ok(Number.isNaN(fromF16(back)), `0x${h.toString(16)}`);
      else assert.equal(back, h, `0x${h.toString(16)} -> 0x${back.toString(16)}`);
    }
  });
});

describe('bfloat16 conversion', () => {
  it('encodes known values with round-to-nearest-even', () => {
    assert.equal(toBf16(1), 0x3f80);
    assert.equal(toBf16(-0.5), 0xbf00);
    assert.equal(toBf16(Math.PI), 0x4049); // float32 0x40490fdb: rounds down
    assert.equal(float32BitsToBfloat16(0x3f808000), 0x3f80); // tie, even stays
    assert.equal(float32BitsToBfloat16(0x3f818000), 0x3f82); // tie, odd rounds up
    assert.equal(float32BitsToBfloat16(0x3f808001), 0x3f81); // just above the tie
    assert.equal(float32BitsToBfloat16(0x7f7fffff), 0x7f80); // largest float32 overflows to infinity
    assert.equal(toBf16(-0), 0x8000);
    assert.equal(toBf16(-Infinity), 0xff80);
    assert.equal(toBf16(NaN), 0x7fc0);
  });

  it('round-trips every one of the 65536 bit patterns (NaNs stay NaN)', () => {
    for (let h = 0; h < 65536; h++) {
      const back = float32BitsToBfloat16(bfloat16ToFloat32Bits(h));
      const isNaN = (h & 0x7f80) === 0x7f80 && (h & 0x7f) !== 0;
      if (isNaN) assert.ok(Number.isNaN(float32FromBits(bfloat16ToFloat32Bits(back))));
      else assert.equal(back, h, `0x${h.toString(16)}`);
    }
  });
});
