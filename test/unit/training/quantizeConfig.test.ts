/**
 * `model.quantize` in a config: what 'int4', 'int8' and `{ type, blockSize }` mean, and the
 * combinations refused with the field named (a quantized base is frozen, so only adapters train).
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { exactMatch } from '#trainer/pipeline/rewards';
import { parseConfig } from '#trainer/pipeline/training/config/trainingConfig';
import { lowMemoryFor, quantizationOf } from '#trainer/foundations/models/quantized/blockQuantize';

const parse = (model: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  parseConfig(
    {
      model: { path: 'model', ...model },
      data: { train: 'train.jsonl' },
      rewards: { outcome: [exactMatch()] },
      steps: 10,
      algorithm: { name: 'grpo' },
      ...extra,
    },
    'a.config.ts',
  );

describe('model.quantize', () => {
  it('names a bit width, with llama.cpp’s blocks of 32 unless the block size is given', () => {
    assert.deepEqual(quantizationOf(parse({ quantize: 'int4' }).model.quantize!), { bits: 4, blockSize: 32 });
    assert.deepEqual(quantizationOf(parse({ quantize: 'int8' }).model.quantize!), { bits: 8, blockSize: 32 });
    assert.deepEqual(quantizationOf(parse({ quantize: { type: 'int4', blockSize: 128 } }).model.quantize!), {
      bits: 4,
      blockSize: 128,
    });
    assert.equal(parse({}).model.quantize, undefined, 'off unless asked for');
  });

  it('reads lowMemory, and leaves it to the base’s size when unset', () => {
    const q = quantizationOf(parse({ quantize: { type: 'int8', lowMemory: true } }).model.quantize!);
    assert.deepEqual(q, { bits: 8, blockSize: 32, lowMemory: true });
    assert.throws(() => parse({ quantize: { type: 'int4', lowMemory: 'yes' } }), /lowMemory/);
    const unset = quantizationOf('int4');
    assert.equal(lowMemoryFor(unset, 494e6), false, 'Qwen2.5-0.5B packs its codes in every session');
    assert.equal(lowMemoryFor(unset, 1.54e9), true, 'Qwen2.5-1.5B reads them unpacked');
    assert.equal(lowMemoryFor({ ...unset, lowMemory: false }, 3.1e9), false, 'a config that says so wins');
  });

  it('refuses what the kernel cannot read, naming the field', () => {
    assert.throws(() => parse({ quantize: 'int3' }), /model\.quantize/);
    assert.throws(() => parse({ quantize: { type: 'int4', blockSize: 48 } }), /power of two/);
    assert.throws(() => parse({ quantize: { type: 'int4', blockSize: 8 } }), /model\.quantize\.blockSize/);
  });

  it('refuses training every weight over a quantized base', () => {
    assert.throws(
      () => parse({ quantize: 'int4', lora: false }),
      /a\.config\.ts: model\.quantize: a quantized base cannot be trained, and model\.lora is false/,
    );
  });

  it("refuses a PPO critic that would copy the policy's weights to train them all", () => {
    assert.throws(
      () => parse({ quantize: 'int8' }, { algorithm: { name: 'ppo' }, critic: { network: 'separate', lora: false } }),
      /critic\.lora: false trains a full copy/,
    );
    // The default critic puts adapters of its own on the policy's quantized base.
    assert.equal(parse({ quantize: 'int8' }, { algorithm: { name: 'ppo' } }).model.quantize, 'int8');
  });
});
