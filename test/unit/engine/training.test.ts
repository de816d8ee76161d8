import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { createDevice } from '#trainer/foundations/engine/device/device';
import { DEFAULT_ADAMW } from '#trainer/foundations/engine/optimizer';
import { seeded } from '../../helpers/engine';
import { initTinyLm, lmBatch, tinyLmOptimizer, type TinyLmConfig } from '../../helpers/tinyLm';

const text = 'the quick brown fox jumps over the lazy dog. pack my box with five dozen liquor jugs.';

describe('training a tiny language model', () => {
  it('memorises a short text: the loss falls by 100x within 300 steps', async (t) => {
    const chars = [...new Set(text)].sort();
    const tokens = [...text].map((ch) => chars.indexOf(ch));
    const config: TinyLmConfig = { vocab: chars.length, hidden: 32, layers: 2, heads: 4, kvHeads: 2, ffn: 64 };
    const init = initTinyLm(config, seeded(1));
    const device = createDevice('cpu');
    try {
      const runner = await tinyLmOptimizer(device, config, init, { adamw: { ...DEFAULT_ADAMW, weightDecay: 0 } });
      const batch = lmBatch([tokens]);
      const first = await runner.step(batch, 1e-2);
      let last = first;
      for (let s = 1; s < 300 && last.loss > first.loss / 100; s++) last = await runner.step(batch, 1e-2);
      const summary = `loss ${first.loss.toFixed(3)} → ${last.loss.toFixed(5)} after ${runner.steps} steps`;
      t.diagnostic(summary);
      assert.ok(last.loss < first.loss / 100, summary);
      assert.ok(last.applied && Number.isFinite(last.gradNorm));
    } finally {
      await device.close();
    }
  });
});
