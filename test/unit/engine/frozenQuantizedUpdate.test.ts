/**
 * An update over a quantized base whose codes are baked into the session (OptimizerRuntime
 * `frozen`): the backward of MatMulNBits must dequantize the codes' twin input, never the baked
 * codes (onnxruntime would fold that into a float32 copy of the matrix), and the step must equal
 * the one over the same codes fed as inputs. Each session holds its own packed copy, so an
 * optimizer loads a graph variant only when a micro-batch first asks for it.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { grad } from '#trainer/foundations/engine/autodiff';
import { createDevice } from '#trainer/foundations/engine/device/device';
import { Graph, INPUT_TWIN_SUFFIX, type Tensor } from '#trainer/foundations/engine/graph';
import * as op from '#trainer/foundations/engine/ops';
import { DEFAULT_ADAMW } from '#trainer/foundations/engine/optimizer';
import { OptimizerRuntime } from '#trainer/foundations/engine/optimizerRuntime';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { quantizeMatrix } from '#trainer/foundations/models/quantized/blockQuantize';
import { Random } from '#trainer/foundations/models/random';

const [ROWS, COLUMNS, TOKENS] = [24, 64, 5];

/**
 * loss = Σ c ⊙ MatMulNBits(x ⊙ p, W): p is trainable, W a frozen 4-bit matrix read from inputs —
 * whole, or (`blocks`) in two blocks of rows sliced from the inputs, as a large LM head is read.
 */
function lossGraph(blocks = false) {
  const g = new Graph('frozen_quantized');
  const x = g.input('x', 'float32', [TOKENS, COLUMNS]);
  const c = g.input('c', 'float32', [TOKENS, ROWS]);
  const p = g.input('p', 'float32', [COLUMNS]);
  const data = g.input('w.qdata', 'uint8', [ROWS, COLUMNS / 32, 16]);
  const scales = g.input('w.qscales', 'float32', [ROWS, COLUMNS / 32]);
  const h = op.mul(x, p);
  const product = (start: number, end: number) => {
    const rows = { starts: [start], ends: [end], axes: [0] };
    const whole = start === 0 && end === ROWS;
    const w = {
      data: whole ? data : op.slice(data, rows),
      scales: whole ? scales : op.slice(scales, rows),
      rows: end - start,
      columns: COLUMNS,
      bits: 4 as const,
      blockSize: 32,
    };
    return op.matMulNBits(h, w, 0);
  };
  const half = ROWS / 2;
  const y = blocks ? op.concat([product(0, half), product(half, ROWS)], -1) : product(0, ROWS);
  return { graph: g, loss: op.reduceSum(op.mul(y, c)), p, data, scales };
}

/**
 * Whether `t` is computed from `codes` other than through a MatMulNBits product — what onnxruntime
 * would fold into a constant once the codes are baked in.
 */
function foldedFrom(t: Tensor, codes: readonly Tensor[], seen = new Map<Tensor, boolean>()): boolean {
  if (codes.includes(t)) return true;
  if (!t.producer || t.producer.opType === 'MatMulNBits') return false;
  let known = seen.get(t);
  if (known === undefined) {
    known = t.producer.inputs.some((i) => i !== undefined && foldedFrom(i, codes, seen));
    seen.set(t, known);
  }
  return known;
}

const random = Random.fromSeed(21);
const values = (n: number, std: number) => {
  const a = new Float32Array(n);
  random.fillNormal(a, 0, std);
  return a;
};
const w = quantizeMatrix(values(ROWS * COLUMNS, 0.5), ROWS, COLUMNS, { bits: 4, blockSize: 32 });
const state: Record<string, HostTensor> = {
  'w.qdata': { dtype: 'uint8', shape: [ROWS, COLUMNS / 32, 16], data: w.data },
  'w.qscales': { dtype: 'float32', shape: [ROWS, COLUMNS / 32], data: w.scales },
};
const batch: Record<string, HostTensor> = {
  x: { dtype: 'float32', shape: [TOKENS, COLUMNS], data: values(TOKENS * COLUMNS, 1) },
  c: { dtype: 'float32', shape: [TOKENS, ROWS], data: values(TOKENS * ROWS, 1) },
};
const p0: HostTensor = { dtype: 'float32', shape: [COLUMNS], data: values(COLUMNS, 1) };

describe('an update over frozen quantized codes', () => {
  for (const blocks of [false, true])
    it(`dequantizes the codes’ twin in the backward, never the codes the forward reads (${blocks ? 'in blocks of rows' : 'whole'})`, () => {
      const { graph, loss, p, data, scales } = lossGraph(blocks);
      grad(loss, [p]);
      const twins = [...graph.twins];
      assert.deepEqual(twins.sort(), [
        [`w.qdata${INPUT_TWIN_SUFFIX}`, 'w.qdata'],
        [`w.qscales${INPUT_TWIN_SUFFIX}`, 'w.qscales'],
      ]);
      const products = graph.nodes.filter((n) => n.opType === 'MatMulNBits');
      assert.equal(products.length, blocks ? 2 : 1);
      // What a product reads from the codes besides them (a Slice: a block of rows) is its own.
      const consumers = graph.nodes.filter(
        (n) => n.opType !== 'MatMulNBits' && foldedFrom(n.outputs[0], [data, scales]),
      );
      assert.deepEqual(
        consumers.map((n) => n.opType),
        blocks ? ['Slice', 'Slice', 'Slice', 'Slice'] : [],
        'only the forward products (and their blocks of rows) read the codes a session may bake in',
      );
      for (const slice of consumers)
        assert.ok(
          products.some((m) => m.inputs.includes(slice.outputs[0])),
          'a block of rows goes to a product only',
        );
      assert.ok(
        graph.nodes.some((n) => n.opType === 'BitwiseAnd'),
        'the backward dequantizes',
      );
    });

  for (const blocks of [false, true])
    it(`steps exactly as over the same codes fed as inputs (${blocks ? 'in blocks of rows' : 'whole'})`, async () => {
      const step = async (frozen: boolean) => {
        const device = createDevice('cpu', { worker: false, threads: 1 });
        try {
          await device.setState(state);
          const optimizer = await OptimizerRuntime.create(device, {
            build: () => {
              const { graph, loss, p } = lossGraph(blocks);
              return { graph, loss, params: [{ tensor: p, decay: false }] };
            },
            adamw: DEFAULT_ADAMW,
            initial: { p: p0 },
            resident: ['w.qdata', 'w.qscales'],
            frozen: frozen ? ['w.qdata', 'w.qscales'] : [],
            accumulate: true,
          });
          const { loss } = await optimizer.accumulate(batch);
          const { gradNorm } = await optimizer.apply(1e-2);
          const { p } = await optimizer.parameters();
          return { loss, gradNorm, p: [...(p.data as Float32Array)] };
        } finally {
          await device.close();
        }
      };
      const [fed, baked] = [await step(false), await step(true)];
      assert.ok(fed.gradNorm > 0, 'the loss depends on p');
      assert.ok(Math.abs(baked.loss - fed.loss) <= 1e-5 * Math.abs(fed.loss), `losses ${baked.loss} vs ${fed.loss}`);
      assert.ok(
        Math.abs(baked.gradNorm - fed.gradNorm) <= 1e-5 * fed.gradNorm,
        `gradient norms ${baked.gradNorm} vs ${fed.gradNorm}`,
      );
      const moved = baked.p.reduce((m, v, i) => Math.max(m, Math.abs(v - fed.p[i])), 0);
      assert.ok(moved <= 1e-6, `parameters after the step differ by ${moved}`);
    });

  it('loads a graph variant when a micro-batch first asks for it, and refuses one it does not know', async () => {
    const device = createDevice('cpu', { worker: false, threads: 1 });
    try {
      await device.setState(state);
      const built: string[] = [];
      const optimizer = await OptimizerRuntime.create(device, {
        variants: ['first', 'second'],
        build: (variant) => {
          built.push(variant);
          const { graph, loss, p } = lossGraph();
          return { graph, loss, params: [{ tensor: p, decay: false }] };
        },
        adamw: DEFAULT_ADAMW,
        initial: { p: p0 },
        resident: ['w.qdata', 'w.qscales'],
        frozen: ['w.qdata', 'w.qscales'],
        accumulate: true,
      });
      assert.deepEqual(built, ['first']);
      const first = await optimizer.accumulate(batch, 'first');
      const second = await optimizer.accumulate(batch, 'second');
      assert.deepEqual(built, ['first', 'second']);
      assert.equal(second.loss, first.loss, 'the same loss in either layout');
      await optimizer.accumulate(batch, 'second');
      assert.deepEqual(built, ['first', 'second'], 'loaded once');
      await assert.rejects(optimizer.accumulate(batch, 'third'), /no graph variant "third"/);
      await optimizer.release();
    } finally {
      await device.close();
    }
  });
});
