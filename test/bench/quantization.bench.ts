/**
 * npm run bench:quantization — what quantizing a base costs in log-probs: the shipped pretrained
 * base (rollout-studio:base) and a Qwen2.5-0.5B-shaped model with random weights, each scored
 * float32 and over an 8- and a 4-bit base (model.quantize, blocks of 32) on held-out text — the
 * multi-hop example's demonstrations, rendered by each model's chat template, assistant tokens
 * scored. Each base is scored twice, as the trainer's sessions compute it: with lowMemory (codes
 * read unpacked, float32 products: the quantization's own cost) and packed (int8 products, the
 * default below 1B parameters: that plus the activations' rounding). Per model, width and mode:
 *   RESULT <model>_<int8|int4>[_packed]_nll_delta=…   mean increase of −log p per scored token (nats)
 *          mean_abs_logprob_delta=…  max_abs_logprob_delta=…  greedy_agreement=…  tokens=…
 * greedy_agreement: the share of scored positions whose most likely next token is the same as the
 * float32 model's. A random-weight model's log-probs are close to uniform, so its numbers say how
 * far the arithmetic moves, not what a trained model loses; the pretrained base says the latter.
 * About a minute on 2 cores. Never run in CI.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice } from '../../trainer/foundations/engine/device/device';
import { serializeGraph } from '../../trainer/foundations/engine/serialize';
import { packForScoring } from '../../trainer/foundations/models/batch';
import { builtInModelDir } from '../../trainer/foundations/models/builtinModels';
import type { Quantization } from '../../trainer/foundations/models/quantized/blockQuantize';
import { ModelRuntime } from '../../trainer/foundations/models/runtime';
import { buildScoringGraph } from '../../trainer/foundations/models/scoring';
import { tokenizeDemonstration } from '../../trainer/pipeline/rollout/tokenizeDemonstration';
import { generateDataset } from '../../examples/multihop-search/data';
import { buildShapeModel, LORA, SHAPES } from './stepWork';

const ROWS = 24;

interface Scored {
  logprobs: Float32Array;
  /** The most likely next token at each scored position. */
  greedy: Float32Array;
  mask: Uint8Array[];
}

async function score(dir: string, quantize: Quantization | undefined, texts: string): Promise<Scored> {
  const device = createDevice('cpu');
  // A fresh adapter (B = 0) leaves the base as it is; quantize needs LoRA.
  const model = await ModelRuntime.load(device, dir, quantize ? { lora: LORA, quantize } : {});
  try {
    const rows = fs
      .readFileSync(texts, 'utf8')
      .split('\n')
      .filter(Boolean)
      .slice(0, ROWS)
      .map((line) => JSON.parse(line) as { messages: Parameters<typeof tokenizeDemonstration>[1] });
    const template = model.folder.chatTemplate!;
    const tokens = rows.map((r) => tokenizeDemonstration(template, r.messages, { kwargs: { enable_thinking: false } }));
    const graph = buildScoringGraph(model.config, {
      dtype: 'float32',
      lora: model.options.lora,
      quantized: model.quantized,
      greedy: true,
    });
    graph.graph.output(graph.logprobs, 'logprobs');
    graph.graph.output(graph.greedy!, 'greedy');
    // As the trainer's scoring loads it: the codes baked in and packed unless lowMemory.
    const frozenInputs = Object.fromEntries(model.packedInputs(graph.weights.used.keys()).map((n) => [n, n]));
    const session = await device.load({
      model: serializeGraph(graph.graph),
      settings: { memoryArena: false },
      frozenInputs,
    });
    const packed = packForScoring(
      tokens.map((t) => t.ids),
      tokens.map((t) => t.mask),
    );
    const out = await device.run(
      session,
      {
        ...packed.feeds,
        ...model.weightFeeds(graph.weights),
        ...model.loraScaleFeed(true),
        inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
      },
      { logprobs: 'return', greedy: 'return' },
    );
    return {
      logprobs: out.logprobs.data as Float32Array,
      greedy: out.greedy.data as Float32Array,
      mask: tokens.map((t) => t.mask),
    };
  } finally {
    model.close();
    await device.close();
  }
}

function compare(name: string, float: Scored, quantized: Scored): void {
  const T = float.logprobs.length / float.mask.length;
  let n = 0;
  let delta = 0;
  let absolute = 0;
  let worst = 0;
  let agree = 0;
  float.mask.forEach((mask, b) => {
    for (let t = 1; t < mask.length; t++) {
      if (!mask[t]) continue;
      const i = b * T + t;
      const d = quantized.logprobs[i] - float.logprobs[i];
      n++;
      delta -= d;
      absolute += Math.abs(d);
      worst = Math.max(worst, Math.abs(d));
      if (float.greedy[i] === quantized.greedy[i]) agree++;
    }
  });
  console.log(
    `RESULT ${name}_nll_delta=${(delta / n).toFixed(5)} mean_abs_logprob_delta=${(absolute / n).toFixed(5)} max_abs_logprob_delta=${worst.toFixed(4)} greedy_agreement=${(agree / n).toFixed(4)} tokens=${n}`,
  );
}

async function main(): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-quantization-'));
  try {
    generateDataset({ out: path.join(root, 'data'), seed: 7, train: 4, heldout: 4, sft: ROWS, short: 0 });
    const texts = path.join(root, 'data', 'sft.jsonl');
    const models: Array<[string, string]> = [
      ['base', builtInModelDir('base')],
      ['qwen25_05b_random', buildShapeModel(root, SHAPES.qwen25_05b_lora)],
    ];
    for (const [name, dir] of models) {
      const float = await score(dir, undefined, texts);
      for (const bits of [8, 4] as const) {
        compare(`${name}_int${bits}`, float, await score(dir, { bits, blockSize: 32, lowMemory: true }, texts));
        compare(`${name}_int${bits}_packed`, float, await score(dir, { bits, blockSize: 32, lowMemory: false }, texts));
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
