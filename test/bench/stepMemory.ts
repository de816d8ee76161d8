/**
 * Where the memory of bench:step's learning phases goes, phase by phase, without the long
 * generation (issue 35): builds a bench:step shape (random weights), then two steps of scoring,
 * reference scoring and the update on `sequences` made-up trajectories of the step's length (the
 * micro-batch, not their number, sets the peak), printing after each phase this process's resident
 * memory, its peak since the last line (VmHWM, reset per line), minor faults and the live
 * JavaScript buffers. --generation samples the trajectories with the policy instead (slow).
 *
 *   nice -n 19 npx tsx test/bench/stepMemory.ts <shape> [sequences=4] [--generation | --generation-only] [--packed | --low-memory]
 *
 * --packed / --low-memory set a quantized shape's `lowMemory` (unset: by the model's size);
 * --checkpoint-layers / --no-checkpoint-layers its gradient checkpointing (unset: by the size);
 * --micro-batch N the sequences per scoring and update pass (default: the shape's);
 * --generation-only samples the step's `sequences` trajectories once and stops (no trainer built):
 * generation's own peak, since the trainer frees the generation graphs before it learns.
 *
 * XINPROC=1 runs the device in this thread; XGC=1 (with node --expose-gc) collects before each line.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice } from '../../trainer/foundations/engine/device/device';
import { ModelPolicy } from '../../trainer/foundations/models/generation/generationSession';
import { ModelRuntime } from '../../trainer/foundations/models/runtime';
import {
  buildShapeModel,
  createStepTrainer,
  emptyCost,
  FULL_WORK,
  groupAdvantages,
  shapeModelOptions,
  ourRollout,
  SHAPES,
  stepPrompts,
} from './stepWork';
import { Random } from '../../trainer/foundations/models/random';

const status = () => fs.readFileSync('/proc/self/status', 'utf8');
const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status())![1]);
const mib = (k: number) => (k / 1024).toFixed(0);
let t0 = performance.now();
let f0 = process.resourceUsage().minorPageFault;
function mark(what: string) {
  if (process.env.XGC) (globalThis as unknown as { gc: () => void }).gc();
  const u = process.memoryUsage();
  console.log(
    `${what.padEnd(34)} rss ${mib(kb('VmRSS')).padStart(6)} MiB  hwm ${mib(kb('VmHWM')).padStart(6)} MiB  faults ${process.resourceUsage().minorPageFault - f0} ab ${mib(u.arrayBuffers / 1024)} ext ${mib(u.external / 1024)} heap ${mib(u.heapUsed / 1024)}  ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  fs.writeFileSync('/proc/self/clear_refs', '5');
  t0 = performance.now();
  f0 = process.resourceUsage().minorPageFault;
}

async function main() {
  const named = SHAPES[process.argv[2]];
  const microBatch = process.argv.indexOf('--micro-batch');
  const shape = named && microBatch > 0 ? { ...named, microBatch: Number(process.argv[microBatch + 1]) } : named;
  if (!shape) throw new Error(`unknown shape "${process.argv[2]}"; expected one of ${Object.keys(SHAPES).join(', ')}`);
  const n = Number(process.argv[3] ?? 4);
  const generationOnly = process.argv.includes('--generation-only');
  const gen = generationOnly || process.argv.includes('--generation');
  const root = path.join(os.tmpdir(), 'stepmem-models');
  fs.mkdirSync(root, { recursive: true });
  const dir = buildShapeModel(root, shape, true);
  mark('start');
  const device = createDevice('cpu', { worker: !process.env.XINPROC });
  const options = shapeModelOptions(shape);
  const lowMemory = process.argv.includes('--packed')
    ? false
    : process.argv.includes('--low-memory')
      ? true
      : undefined;
  if (options.quantize && lowMemory !== undefined) options.quantize = { ...options.quantize, lowMemory };
  const model = await ModelRuntime.load(device, dir, options);
  console.log(`quantized: ${model.quantized ? `lowMemory ${model.quantized.lowMemory}` : 'no'}`);
  mark('model loaded');
  const checkpointing = process.argv.includes('--checkpoint-layers')
    ? true
    : process.argv.includes('--no-checkpoint-layers')
      ? false
      : undefined;
  console.log(
    `gradient checkpointing: ${model.checkpointsLayers(checkpointing)}, micro-batches of ${shape.microBatch}`,
  );
  const work = { ...FULL_WORK, prompts: Math.max(1, n / FULL_WORK.samples), samples: Math.min(n, FULL_WORK.samples) };
  const prompts = stepPrompts(model.tokenizer, work);
  if (generationOnly) {
    const policy = new ModelPolicy(model);
    const rollouts = await ourRollout(policy, model.tokenizer, prompts, work, 1, emptyCost());
    mark(`generation of ${rollouts.length} rows`);
    await policy.release();
    await device.close();
    return;
  }
  const trainer = await createStepTrainer(model, shape, FULL_WORK.klCoef, checkpointing);
  mark('trainer created');
  for (let step = 0; step < 2; step++) {
    let rollouts;
    if (gen) {
      const policy = new ModelPolicy(model);
      rollouts = await ourRollout(policy, model.tokenizer, prompts, work, step + 1, emptyCost());
      mark(`step ${step} generation`);
      await policy.release();
    } else {
      const random = Random.fromSeed(step);
      rollouts = prompts.flatMap((p) =>
        Array.from({ length: work.samples }, () => {
          const tail = Array.from({ length: 154 }, () => 300 + Math.floor(random.nextFloat() * (shape.vocab - 400)));
          const mask = [...p.map(() => 0), ...tail.map((_, i) => (i % 50 < 32 ? 1 : 0))];
          return { ids: [...p, ...tail], mask, logprobs: mask.map((m) => (m ? -3 : 0)) };
        }),
      );
    }
    const scored = rollouts.map((r) => ({ ids: r.ids, mask: Uint8Array.from(r.mask) }));
    await trainer.scoreReferenceAndValues(scored, { reference: false, values: false, policy: true });
    mark(`step ${step} score`);
    const { reference } = await trainer.scoreReferenceAndValues(scored, { reference: true, values: false });
    mark(`step ${step} reference`);
    const advantages = groupAdvantages(rollouts, work, step + 1);
    const sequences = rollouts.map((r, i) => ({
      ids: r.ids,
      mask: Uint8Array.from(r.mask),
      logprobs: Float32Array.from(r.logprobs),
      advantages: advantages[i],
      refLogprobs: reference![i],
    }));
    const m = await trainer.update(sequences, 1e-6, Random.fromSeed(1000 + step));
    mark(`step ${step} update (${rollouts.length} seq) loss ${m.loss}`);
  }
  await trainer.release();
  mark('trainer released');
  await device.close();
  mark('device closed');
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
