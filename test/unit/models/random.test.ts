import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { Random } from '#trainer/foundations/models/random';

describe('Random (xoshiro128**)', () => {
  it('matches the reference xoshiro128** output for the state [1, 2, 3, 4]', () => {
    // The first outputs of Vigna's reference C code (also rand_xoshiro's test vector).
    const random = Random.fromState([1, 2, 3, 4]);
    const drawn = Array.from({ length: 6 }, () => random.nextUint32());
    assert.deepEqual(drawn, [11520, 0, 5927040, 70819200, 2031721883, 1637235492]);
  });

  it('seeds through SplitMix64 like the reference seeding', () => {
    // SplitMix64(42) twice, split into little-endian uint32 words, computed with Python integers.
    const random = Random.fromSeed(42);
    assert.deepEqual(random.state(), [803958421, 3184996902, 2993090819, 686809907]);
    assert.deepEqual(
      Array.from({ length: 4 }, () => random.nextUint32()),
      [1776835114, 4165204688, 17111135, 2317295270],
    );
  });

  it('is deterministic per seed and differs between seeds', () => {
    const draw = (seed: number) => {
      const random = Random.fromSeed(seed);
      return Array.from({ length: 8 }, () => random.nextFloat());
    };
    assert.deepEqual(draw(7), draw(7));
    assert.notDeepEqual(draw(7), draw(8));
    assert.notDeepEqual(draw(0), draw(1));
  });

  it('continues exactly from a saved state', () => {
    const random = Random.fromSeed(123);
    for (let i = 0; i < 10; i++) random.nextUint32();
    const resumed = Random.fromState(random.state());
    const a = Array.from({ length: 5 }, () => random.normal());
    const b = Array.from({ length: 5 }, () => resumed.normal());
    assert.deepEqual(a, b);
  });

  it('draws uniform floats in [0, 1) and unbiased integers in [0, n)', () => {
    const random = Random.fromSeed(1);
    const counts = new Array<number>(6).fill(0);
    let sum = 0;
    const n = 60_000;
    for (let i = 0; i < n; i++) {
      const u = random.nextFloat();
      assert.ok(u >= 0 && u < 1);
      sum += u;
      counts[random.nextInt(6)]!++;
    }
    assert.ok(Math.abs(sum / n - 0.5) < 0.01, `mean ${sum / n}`);
    for (const c of counts) assert.ok(Math.abs(c - n / 6) < 0.05 * (n / 6), `counts ${counts}`);
  });

  it('fills normal(mean, std) values with the right moments', () => {
    const random = Random.fromSeed(5);
    const values = new Float64Array(100_001);
    random.fillNormal(values, 2, 0.5);
    let sum = 0;
    for (const v of values) sum += v;
    const mean = sum / values.length;
    let sq = 0;
    for (const v of values) sq += (v - mean) ** 2;
    const std = Math.sqrt(sq / values.length);
    assert.ok(Math.abs(mean - 2) < 0.01, `mean ${mean}`);
    assert.ok(Math.abs(std - 0.5) < 0.01, `std ${std}`);
    assert.ok(Number.isFinite(values[values.length - 1]!));
  });

  it('fills normals deterministically from two 32-bit draws per pair (Box-Muller)', () => {
    const a = new Float32Array(5);
    const b = new Float32Array(5);
    const random = Random.fromSeed(11);
    random.fillNormal(a, 0, 0.02);
    Random.fromSeed(11).fillNormal(b, 0, 0.02);
    assert.deepEqual(a, b);
    // Three pairs for five values: six draws, whatever the values.
    const reference = Random.fromSeed(11);
    const draws = Array.from({ length: 6 }, () => reference.nextUint32());
    assert.deepEqual(random.state(), reference.state());
    // The first pair from its two draws: r = sqrt(-2 ln((a + 1) / 2^32)), angle = 2 pi b / 2^32.
    const radius = 0.02 * Math.sqrt(-2 * Math.log((draws[0]! + 1) / 2 ** 32));
    const angle = (2 * Math.PI * draws[1]!) / 2 ** 32;
    assert.equal(a[0], Math.fround(radius * Math.cos(angle)));
    assert.equal(a[1], Math.fround(radius * Math.sin(angle)));
  });

  it('shuffles deterministically into a permutation', () => {
    const a = Random.fromSeed(9).shuffle([...Array(20).keys()]);
    const b = Random.fromSeed(9).shuffle([...Array(20).keys()]);
    assert.deepEqual(a, b);
    assert.deepEqual(
      [...a].sort((x, y) => x - y),
      [...Array(20).keys()],
    );
    assert.notDeepEqual(a, [...Array(20).keys()]);
  });

  it('rejects bad seeds, states and bounds with a message', () => {
    assert.throws(() => Random.fromSeed(-1), /non-negative integer/);
    assert.throws(() => Random.fromSeed(1.5), /non-negative integer/);
    assert.throws(() => Random.fromState([0, 0, 0, 0]), /all-zero/);
    assert.throws(() => Random.fromState([1, 2, 3] as never), /four uint32 words/);
    assert.throws(() => Random.fromSeed(1).nextInt(0), /integer bound/);
  });
});
