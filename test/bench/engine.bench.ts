/**
 * npm run bench:engine — one training step of a fixed reference decoder (4 layers, hidden 256,
 * 4 heads, FFN 1024, vocabulary 4096, sequence 256, batch 8): the engine against eager PyTorch
 * at PyTorch's best thread setting, and against the machine's physical limit, its fp32 FMA peak.
 * Ours and PyTorch (a long-lived process) each run at their fastest thread setting (found by a
 * probe and printed) in alternating pairs; every ratio is the median of the per-pair ratios,
 * with its spread. Prints `RESULT name=value …` lines:
 *   train_step_ratio         ours / PyTorch seconds, fwd + bwd + clip + AdamW (goal ≤ 0.4)
 *   …_cpu_ratio              the same with each side's wall time replaced by its process's CPU
 *                            time: what a loaded machine's scheduler does not move (spinning
 *                            threads count as working)
 *   forward_ratio            ours / PyTorch seconds, forward + loss
 *   train_step_fma_fraction  our train step's matrix GFLOP/s / the FMA peak measured right after
 *                            the same pair (goal ≥ 0.5); pytorch_… the same for PyTorch
 *   matmul_fma_fraction      onnxruntime's own 1024³ MatMul / the FMA peak
 * About 2–3 minutes on 2 cores. BENCH_PAIRS (default 7), BENCH_THREADS (default: every core).
 */
import { createDevice } from '../../trainer/foundations/engine/device/device';
import { Graph } from '../../trainer/foundations/engine/graph';
import * as op from '../../trainer/foundations/engine/ops';
import { serializeGraph } from '../../trainer/foundations/engine/serialize';
import { defaultThreads } from '../../trainer/foundations/engine/runtime/ortSession';
import { seeded } from '../helpers/engine';
import { buildTinyLm, initTinyLm, lmBatch, tinyLmOptimizer, type TinyLmConfig } from '../helpers/tinyLm';
import { FmaPeakProgram } from './lib/fmaPeak';
import { formatSpread, interleavedPairs, ownCpuSeconds, pickFastest, resultLine, seconds, spread } from './lib/pairs';
import { requirePyTorch, settingResult, startBestTorchPeer } from './lib/torchPeer';
import { runsAsTheTrainer } from './lib/trainerAllocator';

const REFERENCE = { vocab: 4096, hidden: 256, layers: 4, heads: 4, ffn: 1024, seq: 256, batch: 8 };
const PAIRS = Number(process.env.BENCH_PAIRS ?? 7);
const MATMUL = 1024;

/** Matrix-multiply FLOPs of one forward pass (the backward pass costs twice as many). */
function forwardFlops(c: typeof REFERENCE): number {
  const tokens = c.batch * c.seq;
  const perLayer =
    2 * tokens * c.hidden * c.hidden * 4 +
    2 * tokens * c.hidden * c.ffn * 3 +
    2 * 2 * c.batch * c.seq * c.seq * c.hidden;
  return c.layers * perLayer + 2 * tokens * c.hidden * c.vocab;
}

/** onnxruntime's best 1024³ MatMul GFLOP/s (operands and product stay on the device). */
async function matmulGflops(threads: number): Promise<number> {
  const g = new Graph('matmul_peak');
  g.output(op.matmul(g.input('a', 'float32', [MATMUL, MATMUL]), g.input('b', 'float32', [MATMUL, MATMUL])), 'c');
  const device = createDevice('cpu', { worker: false });
  const session = await device.load({ model: serializeGraph(g), settings: { threads } });
  const r = seeded(1);
  const data = () => Float32Array.from({ length: MATMUL * MATMUL }, () => r() - 0.5);
  await device.setState({
    a: { dtype: 'float32', shape: [MATMUL, MATMUL], data: data() },
    b: { dtype: 'float32', shape: [MATMUL, MATMUL], data: data() },
  });
  const run = () => device.run(session, { a: { state: 'a' }, b: { state: 'b' } }, { c: { state: 'c' } });
  await run();
  const times: number[] = [];
  for (let i = 0; i < 5; i++) times.push(await seconds(run));
  await device.close();
  return (2 * MATMUL ** 3) / Math.min(...times) / 1e9;
}

/** Our forward pass (parameters resident, only the loss comes back) and train step at `threads`, ready to time. */
async function ours(threads: number) {
  const config: TinyLmConfig = {
    vocab: REFERENCE.vocab,
    hidden: REFERENCE.hidden,
    layers: REFERENCE.layers,
    heads: REFERENCE.heads,
    kvHeads: REFERENCE.heads,
    ffn: REFERENCE.ffn,
  };
  const init = initTinyLm(config, seeded(1));
  const r = seeded(2);
  const batch = lmBatch(
    Array.from({ length: REFERENCE.batch }, () =>
      Array.from({ length: REFERENCE.seq + 1 }, () => Math.floor(r() * REFERENCE.vocab)),
    ),
  );
  const forwardDevice = createDevice('cpu', { worker: false });
  const fwd = buildTinyLm(config, 'forward');
  fwd.graph.output(fwd.loss, 'loss');
  const session = await forwardDevice.load({ model: serializeGraph(fwd.graph), settings: { threads } });
  await forwardDevice.setState(Object.fromEntries(init.map((p) => [p.name, p.value])));
  const feeds = { ...batch, ...Object.fromEntries(init.map((p) => [p.name, { state: p.name }])) };
  const trainDevice = createDevice('cpu', { worker: false });
  const runner = await tinyLmOptimizer(trainDevice, config, init);
  return {
    name: `${threads} thread${threads > 1 ? 's' : ''}`,
    forward: () => seconds(() => forwardDevice.run(session, feeds, { loss: 'return' })),
    trainStep: () => seconds(() => runner.step(batch, 1e-4)),
    close: async () => {
      await forwardDevice.close();
      await trainDevice.close();
    },
  };
}

async function main(): Promise<void> {
  requirePyTorch();
  const threads = Number(process.env.BENCH_THREADS ?? defaultThreads());
  console.log(
    `reference decoder ${JSON.stringify(REFERENCE)}, ${threads} threads, ${PAIRS} interleaved pairs per ratio`,
  );
  const fma = FmaPeakProgram.build();
  const one = fma.measure(1);
  const all = fma.measure(threads);
  console.log(
    `FMA peak (${all.isa}, fma_peak.c): ${one.gflops.toFixed(1)} GFLOP/s on one thread, ${all.gflops.toFixed(1)} on ${threads}`,
  );
  // Started once, before our sessions exist: a process started between pairs would fork ours.
  const peakBetweenPairs = fma.serve(threads, 0.2, 1);

  const peer = await startBestTorchPeer('engine_peer.py', threads, { model: REFERENCE }, { op: 'train_step' });
  // Ours at its fastest of one thread and every core too (the same on a quiet machine).
  const setups = await Promise.all([...new Set([1, threads])].map((t) => ours(t)));
  const mine = {
    forward: await pickFastest('ours forward seconds', setups, (s) => s.forward(), { higher: false }),
    trainStep: await pickFastest('ours train step seconds', setups, (s) => s.trainStep(), { higher: false }),
  };
  try {
    const cpu = { ours: ownCpuSeconds, peer: () => peer.peer.cpuSeconds() };
    const forward = await interleavedPairs(
      'forward',
      { pairs: PAIRS, kind: 'seconds', unit: 's', cpu },
      mine.forward.forward,
      async () => (await peer.peer.request<{ seconds: number }>({ op: 'forward' })).seconds,
      (a, b) => a / b,
    );
    const flops = 3 * forwardFlops(REFERENCE);
    const fractions: number[] = [];
    const torchFractions: number[] = [];
    const peaks: number[] = [];

    const train = await interleavedPairs(
      'train step',
      {
        pairs: PAIRS,
        kind: 'seconds',
        unit: 's',
        cpu,
        // The FMA peak right after each pair, so the fraction compares like with like on a loaded machine.
        onPair: async (oursSeconds, peerSeconds) => {
          const peak = (await peakBetweenPairs.measure()).gflops;
          peaks.push(peak);
          fractions.push(flops / oursSeconds / 1e9 / peak);
          torchFractions.push(flops / peerSeconds / 1e9 / peak);
        },
      },
      mine.trainStep.trainStep,
      async () => (await peer.peer.request<{ seconds: number }>({ op: 'train_step' })).seconds,
      (a, b) => a / b,
    );
    const matmul = await matmulGflops(threads);
    const torchMatmul =
      (2 * MATMUL ** 3) / (await peer.peer.request<{ seconds: number }>({ op: 'matmul', n: MATMUL })).seconds / 1e9;
    const peak = spread(peaks);
    console.log(
      `\nours:    forward ${formatSpread(forward.ours)} s, train step ${formatSpread(train.ours)} s (${(flops / train.ours.median / 1e9).toFixed(1)} GFLOP/s)`,
    );
    console.log(
      `PyTorch: forward ${formatSpread(forward.peer)} s, train step ${formatSpread(train.peer)} s (${(flops / train.peer.median / 1e9).toFixed(1)} GFLOP/s)`,
    );
    console.log(
      `FMA peak during the train pairs: ${formatSpread(peak, 1)} GFLOP/s; ${MATMUL}³ MatMul: onnxruntime ${matmul.toFixed(1)}, PyTorch ${torchMatmul.toFixed(1)} GFLOP/s`,
    );
    console.log(resultLine('train_step_ratio', train.ratio));
    console.log(resultLine('train_step_cpu_ratio', train.cpuRatio!));
    console.log(resultLine('forward_cpu_ratio', forward.cpuRatio!));
    console.log(resultLine('forward_ratio', forward.ratio));
    console.log(resultLine('train_step_fma_fraction', spread(fractions)));
    console.log(resultLine('pytorch_train_step_fma_fraction', spread(torchFractions)));
    console.log(`RESULT matmul_fma_fraction=${(matmul / peak.median).toFixed(3)}`);
    console.log(`RESULT ours_setting="forward ${mine.forward.name}; train step ${mine.trainStep.name}"`);
    console.log(`RESULT pytorch_setting=${settingResult(peer)}`);
  } finally {
    for (const setup of setups) await setup.close();
    await peer.peer.close();
    await peakBetweenPairs.close();
  }
}

// Ours runs with the allocator settings the trainer gets (lib/trainerAllocator.ts); the peers with their own.
if (runsAsTheTrainer())
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
