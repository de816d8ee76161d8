/**
 * What feeding the weights as graph inputs costs a decoding step (issue 35): a chain of linear
 * layers as ours are built (layers/linear.ts: Gemm with transB, weights [out, in] as Hugging Face
 * stores them) shaped like SmolLM2-135M's MLPs (576 → 1536 → 576, 30 layers, 212 MB), run
 * on M rows with the weights fed as inputs (as every graph of ours takes them, by device-state
 * name, so that one copy serves generation, scoring and the update and sees every update) and with
 * the same weights as initializers (which onnxruntime's CPU Gemm packs once, at session creation,
 * instead of at every run). Prints ms per run, median of 5 rounds of 20 runs:
 *
 *   RESULT m<M>_inputs_ms=… initializers_ms=… inputs_vs_initializers=…
 *
 *   nice -n 19 npx tsx test/bench/weightFeeds.ts [--layers 30] [--rows 1,8,32] [--threads 2]
 */
import { parseArgs } from 'node:util';
import { DeviceCore } from '../../trainer/foundations/engine/device/core';
import { Graph } from '../../trainer/foundations/engine/graph';
import type { HostTensor } from '../../trainer/foundations/engine/runtime/tensors';
import { serializeGraph } from '../../trainer/foundations/engine/serialize';
import { linear } from '../../trainer/foundations/models/layers/linear';
import { Random } from '../../trainer/foundations/models/random';

const HIDDEN = 576;
const INTERMEDIATE = 1536;

const { values } = parseArgs({
  options: {
    layers: { type: 'string', default: '30' },
    rows: { type: 'string', default: '1,8,32' },
    threads: { type: 'string', default: '2' },
  },
});
const layers = Number(values.layers);
const rowCounts = values.rows!.split(',').map(Number);
const random = Random.fromSeed(1);
const tensor = (shape: number[]): HostTensor => ({
  dtype: 'float32',
  shape,
  data: Float32Array.from({ length: shape[0] * shape[1] }, () => (random.nextFloat() - 0.5) * 0.05),
});
const weights: Record<string, HostTensor> = {};
for (let l = 0; l < layers; l++) {
  weights[`up_${l}`] = tensor([INTERMEDIATE, HIDDEN]);
  weights[`down_${l}`] = tensor([HIDDEN, INTERMEDIATE]);
}

function chain(asInputs: boolean): Graph {
  const g = new Graph('linear_chain');
  let x = g.input('x', 'float32', ['M', HIDDEN]);
  for (const [name, w] of Object.entries(weights)) {
    const weight = asInputs
      ? g.input(name, 'float32', w.shape)
      : g.constant(w.data as Float32Array, 'float32', w.shape, name);
    x = linear(x, weight);
  }
  g.output(x, 'y');
  return g;
}

async function msPerRun(device: DeviceCore, session: number, feeds: Parameters<DeviceCore['run']>[1]): Promise<number> {
  const rounds: number[] = [];
  for (let round = 0; round < 6; round++) {
    const start = performance.now();
    for (let i = 0; i < 20; i++) await device.run(session, feeds, { y: 'return' });
    if (round > 0) rounds.push((performance.now() - start) / 20);
  }
  return rounds.sort((a, b) => a - b)[2];
}

async function main(): Promise<void> {
  const device = new DeviceCore('cpu', Number(values.threads));
  await device.setState(weights);
  const asInputs = await device.load({ model: serializeGraph(chain(true)), settings: {} });
  const asInitializers = await device.load({ model: serializeGraph(chain(false)), settings: {} });
  for (const rows of rowCounts) {
    const x = { x: tensor([rows, HIDDEN]) };
    const inputs = await msPerRun(device, asInputs, {
      ...x,
      ...Object.fromEntries(Object.keys(weights).map((name) => [name, { state: name }])),
    });
    const initializers = await msPerRun(device, asInitializers, x);
    console.log(
      `RESULT m${rows}_inputs_ms=${inputs.toFixed(2)} initializers_ms=${initializers.toFixed(2)} inputs_vs_initializers=${(inputs / initializers).toFixed(3)}`,
    );
  }
}

void main();
