import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { encodeFloat32, encodeInt32, encodeUint8 } from '#trainer/contract/protocol';
import { colourTokens, decodeTokens, displayPiece, type TokenData } from '../../../webview/trajectories/tokenColours';

function data(values: { mask: number[]; logprobs: number[]; entropies?: number[]; advantages?: number[] }): TokenData {
  return {
    pieces: values.mask.map((_, i) => `t${i}`),
    mask: Uint8Array.from(values.mask),
    logprobs: Float32Array.from(values.logprobs),
    ...(values.entropies ? { entropies: Float32Array.from(values.entropies) } : {}),
    ...(values.advantages ? { advantages: Float32Array.from(values.advantages) } : {}),
  };
}

describe('token colours', () => {
  const tokens = data({
    mask: [0, 0, 1, 1, 1, 1, 0],
    logprobs: [0, 0, -0.01, -1, -2, 0, 0],
    entropies: [0, 0, 0.5, 2, 1, 0, 0],
    advantages: [9, 9, 1, -1, 0.5, 0, 9],
  });

  it('marks tokens the policy did not generate as masked, whatever their values', () => {
    for (const by of ['advantage', 'logprob', 'entropy'] as const) {
      const { classes } = colourTokens(tokens, by);
      assert.deepEqual([classes[0], classes[1], classes[6]], ['masked', 'masked', 'masked']);
    }
  });

  it('colours advantage on a diverging scale set by the policy tokens', () => {
    // Scale is max |advantage| over policy tokens = 1 (the masked 9s do not count).
    assert.deepEqual(colourTokens(tokens, 'advantage').classes.slice(2, 6), ['adv-p4', 'adv-n4', 'adv-p2', 'adv-0']);
  });

  it('colours log-prob and entropy on a sequential scale, stronger for less likely and less certain', () => {
    assert.deepEqual(colourTokens(tokens, 'logprob').classes.slice(2, 6), ['seq-1', 'seq-2', 'seq-4', 'seq-0']);
    assert.deepEqual(colourTokens(tokens, 'entropy').classes.slice(2, 6), ['seq-1', 'seq-4', 'seq-2', 'seq-0']);
  });

  it('has a legend for every class it uses, masked included', () => {
    for (const by of ['advantage', 'logprob', 'entropy'] as const) {
      const { classes, legend } = colourTokens(tokens, by);
      const legendClasses = new Set(legend.map((e) => e.className));
      for (const c of classes) assert.ok(legendClasses.has(c), `${by}: ${c} has no legend entry`);
    }
    assert.match(colourTokens(tokens, 'advantage').legend[0].label, /−1\.00/);
  });

  it('says when a trajectory has no values for the colouring', () => {
    const without = data({ mask: [0, 1], logprobs: [0, -1] });
    const colours = colourTokens(without, 'entropy');
    assert.equal(colours.missing, 'This trajectory has no per-token entropies.');
    assert.deepEqual(colours.classes, ['masked', 'policy']);
  });

  it('marks a non-finite value instead of hiding it', () => {
    const odd = data({ mask: [1, 1], logprobs: [Number.NEGATIVE_INFINITY, -1] });
    assert.deepEqual(colourTokens(odd, 'logprob').classes, ['nonfinite', 'seq-4']);
  });

  it('decodes the record’s base64 arrays and rejects ones of the wrong length', () => {
    const decoded = decodeTokens({
      ids: encodeInt32([1, 2]),
      pieces: ['a', 'b'],
      mask: encodeUint8([0, 1]),
      logprobs: encodeFloat32([0, -0.5]),
    });
    assert.deepEqual([...decoded.mask], [0, 1]);
    assert.deepEqual([...decoded.logprobs], [0, -0.5]);
    assert.throws(
      () =>
        decodeTokens({
          ids: encodeInt32([1]),
          pieces: ['a', 'b'],
          mask: encodeUint8([0]),
          logprobs: encodeFloat32([0, 0]),
        }),
      /tokens\.mask has 1 values but tokens\.pieces has 2/,
    );
  });

  it('shows whitespace tokens visibly', () => {
    assert.equal(displayPiece('\n'), '↵\n');
    assert.equal(displayPiece('\tx'), '⇥x');
  });
});
