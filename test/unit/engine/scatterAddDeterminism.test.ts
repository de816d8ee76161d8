/**
 * The embedding's gradient (Gather's rule) adds every repeated token's row into one row of the
 * table. With onnxruntime's ScatterND 'add' that sum raced between threads (two pretraining runs
 * of one recipe diverged at their first step on packed rows); the rule must give the sum in
 * index order, the same bits on every run and at every thread count.
 */
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { grad } from '#trainer/foundations/engine/autodiff';
import { Graph } from '#trainer/foundations/engine/graph';
import * as op from '#trainer/foundations/engine/ops';
import { serializeGraph, disposeSerialized } from '#trainer/foundations/engine/serialize';
import { createSession, releaseSession } from '#trainer/foundations/engine/runtime/ortSession';
import { fromOrtTensor, toOrtTensor } from '#trainer/foundations/engine/runtime/tensors';
import { f32, seeded } from '../../helpers/engine';

const ROWS = 6;
const WIDTH = 64;
/** Many more indices than rows: every row repeats thousands of times, as common tokens do. */
const COUNT = 16384;

function embeddingGradientGraph(): Graph {
  const g = new Graph('embedding_gradient');
  const table = g.input('table', 'float32', [ROWS, WIDTH]);
  const ids = g.input('ids', 'int64', [COUNT]);
  const upstream = g.input('upstream', 'float32', [COUNT, WIDTH]);
  const [dTable] = grad(op.gather(table, ids, 0), [table], { seed: upstream });
  g.output(dTable, 'd_table');
  return g;
}

describe('the embedding gradient with repeated ids', () => {
  it('is the float32 sum in index order, bit for bit, on every run with two threads', async () => {
    const random = seeded(7);
    const ids = BigInt64Array.from({ length: COUNT }, () => BigInt(Math.floor(random() * ROWS)));
    const upstream = f32([COUNT, WIDTH], random);
    const expected = new Float32Array(ROWS * WIDTH);
    for (let i = 0; i < COUNT; i++) {
      const row = Number(ids[i]);
      for (let j = 0; j < WIDTH; j++)
        expected[row * WIDTH + j] = Math.fround(
          expected[row * WIDTH + j] + (upstream.data as Float32Array)[i * WIDTH + j],
        );
    }
    const model = serializeGraph(embeddingGradientGraph());
    const session = await createSession(model, { provider: 'cpu', threads: 2 });
    try {
      const feeds = {
        table: toOrtTensor(f32([ROWS, WIDTH], random)),
        ids: toOrtTensor({ dtype: 'int64', shape: [COUNT], data: ids }),
        upstream: toOrtTensor(upstream),
      };
      for (let run = 0; run < 16; run++) {
        const out = await session.run(feeds);
        const got = fromOrtTensor(out.d_table).data as Float32Array;
        const differing = got.reduce((n, v, i) => n + (v === expected[i] ? 0 : 1), 0);
        assert.equal(
          differing,
          0,
          `run ${run}: ${differing} of ${got.length} gradient elements differ from the in-order sum`,
        );
      }
    } finally {
      await releaseSession(session);
      disposeSerialized(model);
    }
  });
});
