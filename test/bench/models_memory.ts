/**
 * Peak resident memory (VmHWM) of loading a model and of LoRA-training it one step, in a fresh
 * process: `node --import tsx test/bench/models_memory.ts MODEL_DIR` prints {"load": bytes, "train": bytes}.
 */
import * as fs from 'node:fs';
import { createDevice } from '../../trainer/foundations/engine/device/device';
import * as op from '../../trainer/foundations/engine/ops';
import { DEFAULT_ADAMW } from '../../trainer/foundations/engine/optimizer';
import { OptimizerRuntime } from '../../trainer/foundations/engine/optimizerRuntime';
import { packForScoring } from '../../trainer/foundations/models/batch';
import { ModelRuntime } from '../../trainer/foundations/models/runtime';
import { buildScoringGraph } from '../../trainer/foundations/models/scoring';
import { Random } from '../../trainer/foundations/models/random';

function peak(): number {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

async function main(): Promise<void> {
  const dir = process.argv[2];
  const lora = { rank: 16, alpha: 32, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] as const };
  const device = createDevice('cpu', { worker: false });
  const model = await ModelRuntime.load(device, dir, { lora: { ...lora, targets: [...lora.targets] } });
  const load = peak();
  const runner = await OptimizerRuntime.create(device, {
    build: () => {
      const scoring = buildScoringGraph(model.config, { dtype: 'float32', lora: model.options.lora });
      const loss = op.neg(
        op.div(op.reduceSum(scoring.logprobs), op.cast(op.size(scoring.inputs.scoreTokens), 'float32')),
      );
      return {
        graph: scoring.graph,
        loss,
        params: model.extraWeights.map((name) => ({ tensor: scoring.weights.used.get(name)!, decay: true })),
      };
    },
    adamw: DEFAULT_ADAMW,
    resident: model.baseWeights,
    accumulate: false,
  });
  const random = Random.fromSeed(3);
  const packed = packForScoring(
    Array.from({ length: 4 }, () => Array.from({ length: 256 }, () => random.nextInt(150000))),
  );
  await runner.step(
    {
      ...packed.feeds,
      ...model.loraScaleFeed(true),
      inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
    },
    1e-4,
  );
  console.log(JSON.stringify({ load, train: peak() }));
  model.close();
  await device.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
