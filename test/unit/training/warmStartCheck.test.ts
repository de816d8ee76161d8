/** The warm start's check in words (warmStartCheck.ts): which demonstrations it reads, the warning, the config's hash. */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { exactMatch } from '#trainer/pipeline/rewards';
import type { DemonstrationScore } from '#trainer/pipeline/rl/demonstrationCheck';
import type { SftSequence } from '#trainer/pipeline/rl/sft';
import { hashable, parseConfig } from '#trainer/pipeline/training/config/trainingConfig';
import {
  checkValues,
  describeScore,
  splitForCheck,
  warmStartWarning,
} from '#trainer/pipeline/training/warmStart/warmStartCheck';

const sequences: SftSequence[] = Array.from({ length: 100 }, (_, i) => ({
  ids: [i, i + 1],
  mask: Uint8Array.of(0, 1),
}));
const first = (s: readonly SftSequence[]) => s.map((x) => x.ids[0]);

const score = (calls: [number, number], text: [number, number], miss?: DemonstrationScore['firstCallMiss']) => ({
  demonstrations: 32,
  loss: 0.0512,
  callTurns: { right: calls[0], total: calls[1] },
  textTurns: { right: text[0], total: text[1] },
  ...(miss ? { firstCallMiss: miss } : {}),
});

describe('the demonstrations the warm start checks', () => {
  it('checks evenly spaced demonstrations it also trains on, by default', () => {
    const { trained, checked } = splitForCheck(sequences, 4, false);
    assert.deepEqual(first(checked), [12, 37, 62, 87]);
    assert.equal(trained.length, 100);
  });

  it('holds the checked ones out of training when asked, never more than a fifth of the file', () => {
    const { trained, checked } = splitForCheck(sequences, 32, true);
    assert.equal(checked.length, 20);
    assert.equal(trained.length, 80);
    const all = new Set([...first(trained), ...first(checked)]);
    assert.equal(all.size, 100, 'every demonstration is either trained or checked, once');
  });

  it('checks nothing when sft.check is 0, and all of a short file at most', () => {
    assert.equal(splitForCheck(sequences, 0, false).checked.length, 0);
    assert.equal(splitForCheck(sequences.slice(0, 5), 32, false).checked.length, 5);
    assert.equal(splitForCheck(sequences.slice(0, 4), 32, true).checked.length, 0);
  });
});

describe('what the check reports', () => {
  it('reads as counts and shares, and records shares as metrics', () => {
    assert.equal(
      describeScore(score([12, 32], [30, 32])),
      'tool calls 12 of 32 (38 %), other turns 30 of 32 (94 %), loss 0.051',
    );
    assert.equal(describeScore(score([0, 0], [5, 8])), 'turns 5 of 8 (63 %), loss 0.051');
    assert.deepEqual(checkValues(score([12, 32], [30, 32])), {
      'sft/check_calls': 0.375,
      'sft/check_turns': 0.9375,
      'sft/check_loss': 0.0512,
    });
  });

  it('warns when fewer than 90 % of the calls are reproduced, with the first miss and the trend', () => {
    const decode = (ids: readonly number[]) => ids.map((id) => String.fromCharCode(id)).join('');
    const miss = {
      demonstration: 3,
      source: 'sft.jsonl:213',
      expected: [...'"to": "U'].map((c) => c.charCodeAt(0)),
      wrote: [...'"to": "C'].map((c) => c.charCodeAt(0)),
    };
    const warning = warmStartWarning(score([14, 32], [17, 32], miss), score([10, 32], [15, 32]), decode, false);
    assert.ok(warning);
    assert.equal(warning.code, 'warm_start_calls');
    assert.match(
      warning.message,
      /14 of the 32 tool calls of its checked demonstrations token for token \(44 %\) \(31 % an epoch earlier\)/,
    );
    assert.match(
      warning.message,
      /the first miss \(sft\.jsonl:213\): after `…"to": "` the demonstration writes `U`, the model `C`/,
    );
    assert.match(warning.advice, /^it was still improving: raise sft\.epochs/);
    // Not rising: no "still improving"; held out: says so.
    const flat = warmStartWarning(score([14, 32], [17, 32]), score([15, 32], [15, 32]), decode, true);
    assert.match(flat!.message, /held-out demonstrations/);
    assert.match(flat!.advice, /^raise sft\.epochs/);
  });

  it('does not warn at 90 % or without tool calls', () => {
    const decode = () => '';
    assert.equal(warmStartWarning(score([29, 32], [0, 32]), undefined, decode, false), undefined);
    assert.equal(warmStartWarning(score([0, 0], [0, 32]), undefined, decode, false), undefined);
  });
});

describe("the check in the config's hash", () => {
  const parse = (sft: Record<string, unknown>) =>
    parseConfig(
      {
        model: { path: 'model', lora: false },
        data: { train: 'train.jsonl' },
        rewards: { outcome: [exactMatch()] },
        steps: 10,
        algorithm: { name: 'grpo' },
        sft: { data: 'sft.jsonl', ...sft },
      },
      'a.config.ts',
    );

  it('leaves the check out, since it trains nothing, unless it holds demonstrations out', () => {
    const plain = hashable(parse({})).sft as Record<string, unknown>;
    assert.deepEqual(Object.keys(plain).sort(), ['batchSize', 'data', 'epochs', 'lr', 'warmupSteps']);
    assert.deepEqual(hashable(parse({ check: 8 })).sft, plain);
    const heldOut = hashable(parse({ holdOut: true, check: 8 })).sft as Record<string, unknown>;
    assert.equal(heldOut.holdOut, true);
    assert.equal(heldOut.check, 8);
  });
});
