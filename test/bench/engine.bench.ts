/**
 * npm run bench:engine — one training step of a fixed reference decoder (4 layers, hidden 256,
 * 4 heads, FFN 1024, vocabulary 4096, sequence 256, batch 8), the engine against eager
 * PyTorch on the same machine in the same run, same thread count and shapes. Prints
 * `RESULT name=value` lines:
 *   train_step_ratio = ours_seconds / pytorch_seconds (fwd + bwd + clip + AdamW)
 *   forward_ratio    = ours_seconds / pytorch_seconds (forward + loss)
 *   train_step_peak_fraction = achieved GFLOP/s / measured MatMul GFLOP/s (onnxruntime)
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createDevice } from '../../trainer/engine/device/device';
import { Graph } from '../../trainer/engine/graph';
import * as op from '../../trainer/engine/ops';
import { serializeGraph } from '../../trainer/engine/serialize';
import { defaultThreads } from '../../trainer/engine/runtime/ortSession';
import { seeded } from '../helpers/engine';
import { buildTinyLm, initTinyLm, lmBatch, tinyLmOptimizer, type TinyLmConfig } from '../helpers/tinyLm';

const REFERENCE = { vocab: 4096, hidden: 256, layers: 4, heads: 4, ffn: 1024, seq: 256, batch: 8 };
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const REPS = Number(process.env.BENCH_REPS ?? 5);
const MATMUL = 1024;
const PYTHON = process.env.BENCH_PYTHON ?? '/usr/bin/python3';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** Matrix-multiply FLOPs of one forward pass (the backward pass costs twice as many). */
function forwardFlops(c: typeof REFERENCE): number {
  const tokens = c.batch * c.seq;
  const perLayer = 2 * tokens * c.hidden * c.hidden * 4 + 2 * tokens * c.hidden * c.ffn * 3 + 2 * 2 * c.batch * c.seq * c.seq * c.hidden;
  return c.layers * perLayer + 2 * tokens * c.hidden * c.vocab;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < WARMUP; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < REPS; i++) {
    const t0 = performance.now();
    await fn();
    times.push((performance.now() - t0) / 1000);
  }
  return median(times);
}

async function matmulPeak(threads: number): Promise<number> {
  const g = new Graph('matmul_peak');
  g.output(op.matmul(g.input('a', 'float32', [MATMUL, MATMUL]), g.input('b', 'float32', [MATMUL, MATMUL])), 'c');
  const device = createDevice('cpu', { worker: false });
  const session = await device.load({ model: serializeGraph(g), settings: { threads } });
  const r = seeded(1);
  const data = () => Float32Array.from({ length: MATMUL * MATMUL }, () => r() - 0.5);
  await device.setState({ a: { dtype: 'float32', shape: [MATMUL, MATMUL], data: data() }, b: { dtype: 'float32', shape: [MATMUL, MATMUL], data: data() } });
  // Keep the product on the device: only the multiply is timed, not copying 4 MB back.
  const seconds = await timed(() => device.run(session, { a: { state: 'a' }, b: { state: 'b' } }, { c: { state: 'c' } }));
  await device.close();
  return (2 * MATMUL ** 3) / seconds / 1e9;
}

async function ours(threads: number): Promise<{ forward: number; trainStep: number; loss: number }> {
  const config: TinyLmConfig = { vocab: REFERENCE.vocab, hidden: REFERENCE.hidden, layers: REFERENCE.layers, heads: REFERENCE.heads, kvHeads: REFERENCE.heads, ffn: REFERENCE.ffn };
  const init = initTinyLm(config, seeded(1));
  const r = seeded(2);
  const batch = lmBatch(Array.from({ length: REFERENCE.batch }, () => Array.from({ length: REFERENCE.seq + 1 }, () => Math.floor(r() * REFERENCE.vocab))));
  const device = createDevice('cpu', { worker: false });
  // Forward only: parameters resident, only the loss comes back.
  const fwd = buildTinyLm(config, 'forward');
  fwd.graph.output(fwd.loss, 'loss');
  const fwdSession = await device.load({ model: serializeGraph(fwd.graph), settings: { threads } });
  await device.setState(Object.fromEntries(init.map((p) => [p.name, p.value])));
  const feeds = { ...batch, ...Object.fromEntries(init.map((p) => [p.name, { state: p.name }])) };
  let loss = 0;
  const forward = await timed(async () => {
    loss = Number((await device.run(fwdSession, feeds, { loss: 'return' })).loss.data[0]);
  });
  await device.close();
  const trainDevice = createDevice('cpu', { worker: false });
  const runner = await tinyLmOptimizer(trainDevice, config, init);
  const trainStep = await timed(() => runner.step(batch, 1e-4));
  await trainDevice.close();
  return { forward, trainStep, loss };
}

async function main(): Promise<void> {
  const threads = Number(process.env.BENCH_THREADS ?? defaultThreads());
  console.log(`reference decoder ${JSON.stringify(REFERENCE)}, ${threads} threads, median of ${REPS} after ${WARMUP} warm-up`);
  if (!fs.existsSync(PYTHON)) throw new Error(`${PYTHON} not found: install Debian's python3-torch and libopenblas0-pthread (apt-get install python3-torch libopenblas0-pthread)`);
  const peer = spawnSync(PYTHON, [path.join(__dirname, 'engine_peer.py'), JSON.stringify({ ...REFERENCE, threads, warmup: WARMUP, reps: REPS, matmul: MATMUL })], { encoding: 'utf8' });
  if (peer.status !== 0) throw new Error(`the PyTorch peer failed:\n${peer.stderr}`);
  const torch = JSON.parse(peer.stdout.trim().split('\n').pop()!) as { forward_s: number; train_step_s: number; matmul_gflops: number; torch: string; blas_build: string; blas_loaded: string[]; threads: number };
  console.log(`PyTorch ${torch.torch} (${torch.threads} threads, BLAS: ${torch.blas_build}; loaded ${torch.blas_loaded.join(', ') || 'unknown'}): forward ${torch.forward_s.toFixed(3)} s, train step ${torch.train_step_s.toFixed(3)} s, ${MATMUL}³ MatMul ${torch.matmul_gflops.toFixed(1)} GFLOP/s`);
  const peak = await matmulPeak(threads);
  const mine = await ours(threads);
  const flops = forwardFlops(REFERENCE);
  const trainGflops = (3 * flops) / mine.trainStep / 1e9;
  console.log(`ours: forward ${mine.forward.toFixed(3)} s, train step ${mine.trainStep.toFixed(3)} s (${trainGflops.toFixed(1)} GFLOP/s), ${MATMUL}³ MatMul ${peak.toFixed(1)} GFLOP/s; loss ${mine.loss.toFixed(3)}`);
  console.log(`RESULT train_step_ratio=${(mine.trainStep / torch.train_step_s).toFixed(3)}`);
  console.log(`RESULT forward_ratio=${(mine.forward / torch.forward_s).toFixed(3)}`);
  console.log(`RESULT train_step_peak_fraction=${(trainGflops / peak).toFixed(3)}`);
  console.log(`RESULT pytorch_train_step_peak_fraction=${((3 * flops) / torch.train_step_s / 1e9 / peak).toFixed(3)}`);
  console.log(`RESULT ours_train_step_s=${mine.trainStep.toFixed(3)} pytorch_train_step_s=${torch.train_step_s.toFixed(3)}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
