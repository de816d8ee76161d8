/**
 * The agent loop with images (real Qwen3 tokenizer, the vision tool template create-model
 * writes, a scripted policy): a row's image file and a tool's image reach the policy with their
 * tokens — each placeholder expanded to one `<|image_pad|>` per merged patch — and the
 * trajectory records where each image sits; bad images fail naming the row, part and file, or
 * become the error observation of the call that returned them.
 */
import { before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import sharp from 'sharp';
import { datasetFromRows } from '#trainer/foundations/data';
import { ChatTemplate } from '#trainer/foundations/models/text/chatTemplate';
import { parseModelConfig } from '#trainer/foundations/models/modelConfig';
import type { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { VISION_TOOL_CHAT_TEMPLATE } from '#trainer/foundations/models/vision/visionChatTemplate';
import { defaultImageProcessor } from '#trainer/foundations/models/vision/preprocess';
import { AgentLoop } from '#trainer/pipeline/rollout';
import { RolloutImages } from '#trainer/pipeline/rollout/images';
import { defineTool, ToolSet } from '#trainer/foundations/tools';
import { imageResult } from '#trainer/foundations/tools/result';
import { qwen3, ScriptedPolicy } from '../../helpers/scriptedPolicy';

const SAMPLING = { temperature: 1, topK: 0, topP: 1 };
const BUDGET = { maxTurns: 3, maxNewTokensPerTurn: 60, maxTotalTokens: 1500, maxToolResultTokens: 100 };

describe('AgentLoop with images', () => {
  let tokenizer: Tokenizer;
  let template: ChatTemplate;
  let dir: string;
  let rowPng: Buffer;
  let toolPng: Buffer;
  const vision = () => {
    const config = parseModelConfig(
      {
        architectures: ['Qwen2VLForConditionalGeneration'],
        model_type: 'qwen2_vl',
        vocab_size: 151936,
        hidden_size: 16,
        intermediate_size: 16,
        num_hidden_layers: 1,
        num_attention_heads: 2,
        rope_scaling: { type: 'mrope', mrope_section: [1, 1, 2] },
        vision_config: { depth: 1, embed_dim: 8, hidden_size: 16, num_heads: 2, patch_size: 4, spatial_merge_size: 2 },
      },
      'vl/config.json',
    );
    return {
      config: config.vision!,
      processor: { ...defaultImageProcessor(config.vision!), minPixels: 64 },
      architecture: config.architecture,
    };
  };
  const images = (maxImagePixels?: number) =>
    new RolloutImages({
      vision: vision(),
      architecture: 'Qwen2VLForConditionalGeneration',
      ...(maxImagePixels ? { maxImagePixels } : {}),
    });
  const zoom = () =>
    defineTool({
      name: 'zoom',
      description: 'Zoom into the picture.',
      parameters: z.object({ factor: z.number() }),
      execute: ({ factor }) =>
        imageResult([factor > 0 ? toolPng : new TextEncoder().encode('broken')], `zoomed ×${factor}`),
    });
  const script = (factor: number) => (_s: number, turn: number) =>
    turn === 0
      ? `<tool_call>\n{"name": "zoom", "arguments": {"factor": ${factor}}}\n</tool_call>`
      : '<answer>3</answer>';

  before(async () => {
    ({ tokenizer } = qwen3());
    template = new ChatTemplate(
      tokenizer,
      { default: VISION_TOOL_CHAT_TEMPLATE },
      'vision chat template',
      '<|im_end|>',
    );
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-images-'));
    rowPng = await sharp({ create: { width: 24, height: 16, channels: 3, background: '#336699' } })
      .png()
      .toBuffer(); // 3×2 merged units: 6 tokens
    toolPng = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#ff0000' } })
      .webp()
      .toBuffer(); // 4 tokens
    fs.writeFileSync(path.join(dir, 'dots.png'), rowPng);
  });

  const rows = (...values: Record<string, unknown>[]) => datasetFromRows(path.join(dir, 'train.jsonl'), values).rows;
  const question = (image: Record<string, unknown>) => ({
    id: 'q1',
    messages: [{ role: 'user', content: [image, { type: 'text', text: 'How many dots?' }] }],
  });

  it("sends the row's image with the prompt and the tool's image with its result, tokens expanded", async () => {
    const policy = new ScriptedPolicy(tokenizer, script(2), template.endOfTurnId);
    const loop = new AgentLoop({
      policy,
      template,
      tools: new ToolSet([zoom()]),
      budget: BUDGET,
      sampling: SAMPLING,
      images: images(),
    });
    const [t] = await loop.run([{ row: rows(question({ type: 'image', path: 'dots.png' }))[0], group: 0, sample: 0 }], {
      seed: 1,
    });
    const pad = tokenizer.tokenId('<|image_pad|>');
    assert.equal(t.finishReason, 'answered');
    assert.equal(t.ids.filter((id) => id === pad).length, 6 + 4);
    assert.deepEqual(
      policy.calls.map((c) => c.requests[0].images?.map((im) => im.grid)),
      [[[1, 4, 6]], [[1, 4, 4]]],
    );
    assert.deepEqual(
      t.images!.map((im) => [im.image.format, im.image.tokens, im.from.kind]),
      [
        ['png', 6, 'prompt'],
        ['webp', 4, 'tool'],
      ],
    );
    for (const im of t.images!) {
      assert.deepEqual(
        t.ids.slice(im.tokenStart, im.tokenStart + im.image.tokens),
        new Array(im.image.tokens).fill(pad),
      );
      assert.equal(t.ids[im.tokenStart - 1], tokenizer.tokenId('<|vision_start|>'));
      assert.equal(t.ids[im.tokenStart + im.image.tokens], tokenizer.tokenId('<|vision_end|>'));
      assert.ok(
        t.mask.slice(im.tokenStart, im.tokenStart + im.image.tokens).every((m) => m === 0),
        'image tokens are never policy tokens',
      );
    }
    assert.deepEqual(policy.contexts.get(0), t.ids, 'the policy saw exactly the trajectory');
    assert.equal(t.calls[0].images?.length, 1);
    assert.equal(t.calls[0].observation, 'zoomed ×2');
  });

  it('base64 image bytes in a row work like a file', async () => {
    const policy = new ScriptedPolicy(tokenizer, () => '<answer>3</answer>', template.endOfTurnId);
    const loop = new AgentLoop({
      policy,
      template,
      tools: new ToolSet([]),
      budget: BUDGET,
      sampling: SAMPLING,
      images: images(),
    });
    const [t] = await loop.run(
      [{ row: rows(question({ type: 'image', base64: rowPng.toString('base64') }))[0], group: 0, sample: 0 }],
      { seed: 1 },
    );
    assert.equal(t.images!.length, 1);
  });

  it('errors name the row, the message part and the file: missing file, over the pixel budget, a text-only model', async () => {
    const policy = new ScriptedPolicy(tokenizer, () => '<answer>3</answer>', template.endOfTurnId);
    const loop = (store?: RolloutImages) =>
      new AgentLoop({
        policy,
        template,
        tools: new ToolSet([]),
        budget: BUDGET,
        sampling: SAMPLING,
        ...(store ? { images: store } : {}),
      });
    const missing = rows(question({ type: 'image', path: 'nowhere.png' }));
    await assert.rejects(
      loop(images()).prepareRows(missing),
      new RegExp(
        `train\\.jsonl:1 \\(row q1\\): messages\\.0\\.content\\.0: the image file ${path.join(dir, 'nowhere.png').replace(/[.]/g, '\\.')} does not exist`,
      ),
    );
    await assert.rejects(
      loop(images(100)).prepareRows(rows(question({ type: 'image', path: 'dots.png' }))),
      /train\.jsonl:1 \(row q1\): messages\.0\.content\.0: the image is 24×16 = 384 pixels, more than the budget of 100 pixels/,
    );
    await assert.rejects(
      loop().prepareRows(rows(question({ type: 'image', path: 'dots.png' }))),
      /train\.jsonl:1 \(row q1\): messages\.0\.content\.0: an image, but this model is a text-only model/,
    );
  });

  it("an image a tool returns that cannot be read becomes that call's error observation, naming the call", async () => {
    const policy = new ScriptedPolicy(tokenizer, script(-1), template.endOfTurnId);
    const loop = new AgentLoop({
      policy,
      template,
      tools: new ToolSet([zoom()]),
      budget: BUDGET,
      sampling: SAMPLING,
      images: images(),
    });
    const [t] = await loop.run([{ row: rows(question({ type: 'image', path: 'dots.png' }))[0], group: 0, sample: 0 }], {
      seed: 1,
    });
    assert.equal(t.finishReason, 'answered');
    assert.equal(t.calls[0].error?.kind, 'threw');
    assert.match(
      t.calls[0].error!.message,
      /trajectory 0, turn \d+, call 0 \(zoom\): image 0 of the result: not a readable image/,
    );
    assert.equal(t.images!.length, 1, 'only the prompt image');
  });
});
