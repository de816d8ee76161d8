/**
 * Images through the OpenAI-compatible endpoint, for a vision-language model (a tiny Qwen2.5-VL):
 * `rollout-studio serve` reads `image_url` parts (data: URLs) with the official `openai` SDK, each
 * image taking the tokens the processor gives it and reaching the model; a web address is refused,
 * naming the part. And an agent we did not write, training through the gateway with a picture in
 * its first request and another in a follow-up: each image sits in the record by hash over its
 * run of image tokens, the re-sent first image matches the conversation (no split), and the
 * update trains on them.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import OpenAI from 'openai';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { ModelPolicy } from '#trainer/foundations/models/generation/generationSession';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { RunStoreReader } from '#trainer/contract/runstore';
import { decodeInt32 } from '#trainer/contract/protocol/tokens';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { HermesFormat } from '#trainer/pipeline/rollout/formats/hermes';
import { startChatServer, type RunningChatServer } from '#trainer/pipeline/rollout/gateway/chatServer';
import { ServedModel } from '#trainer/pipeline/rollout/gateway/servedModel';
import { modelImages } from '#trainer/pipeline/rollout/images';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { createTinyVisionModel, QWEN3_TOKENIZER, randomPng } from '../../helpers/visionFixture';

let dir: string;
let device: Device;
let model: ModelRuntime;
let server: RunningChatServer;
let client: OpenAI;
const pictures: Uint8Array[] = [];
const dataUrl = (png: Uint8Array) => `data:image/png;base64,${Buffer.from(png).toString('base64')}`;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-images-'));
  truncateBpeTokenizer(QWEN3_TOKENIZER, 800, path.join(dir, 'tokenizer'));
  createTinyVisionModel('qwen2_5_vl', path.join(dir, 'model'), path.join(dir, 'tokenizer'));
  for (let i = 0; i < 3; i++) pictures.push(await randomPng(24 + 8 * i, 16, i + 1));
  device = createDevice('cpu', { worker: false });
  model = await ModelRuntime.load(device, path.join(dir, 'model'), {});
  const backend = new ServedModel({
    policy: new ModelPolicy(model),
    template: model.folder.chatTemplate!,
    format: new HermesFormat(),
    modelId: 'tiny-vl',
    maxContextTokens: 512,
    defaultMaxTokens: 4,
    temperature: 1,
    topP: 1,
    images: modelImages(model.folder),
  });
  server = await startChatServer(backend, { host: '127.0.0.1', port: 0 });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  await server?.close();
  model?.close();
  await device?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function askAbout(png: Uint8Array): OpenAI.Chat.Completions.ChatCompletionMessageParam[] {
  return [
    {
      role: 'user',
      content: [
        { type: 'image_url', image_url: { url: dataUrl(png) } },
        { type: 'text', text: 'What is in the picture?' },
      ],
    },
  ];
}

describe('serve: images in requests', () => {
  it('an image_url part takes the tokens the processor gives the image, and the model sees it', async () => {
    const messages = askAbout(pictures[0]);
    const answer = await client.chat.completions.create({ model: 'tiny-vl', messages, seed: 7, logprobs: true });
    // Expected prompt length: the template's rendering with one placeholder, expanded to the image's tokens.
    const image = await modelImages(model.folder).prepare(pictures[0], 'test');
    const placeholder = model.folder.chatTemplate!.promptTokens(
      [
        {
          role: 'user',
          content: [
            { type: 'image', sha256: image.sha256 },
            { type: 'text', text: 'What is in the picture?' },
          ],
        },
      ],
      {},
    ).ids;
    assert.ok(image.tokens > 1, 'the picture spans several merged patches');
    assert.equal(answer.usage?.prompt_tokens, placeholder.length - 1 + image.tokens);
    // Another picture, the same seed: the first token's probability changes, so the pixels reached the model.
    const other = await client.chat.completions.create({
      model: 'tiny-vl',
      messages: askAbout(pictures[1]),
      seed: 7,
      logprobs: true,
    });
    assert.notEqual(
      other.choices[0].logprobs!.content![0].logprob,
      answer.choices[0].logprobs!.content![0].logprob,
      'the logprob of the first answer token depends on the image',
    );
    // The same picture and seed again: the same answer (the image is prepared once, by hash).
    const again = await client.chat.completions.create({ model: 'tiny-vl', messages, seed: 7, logprobs: true });
    assert.equal(again.choices[0].message.content, answer.choices[0].message.content);
    assert.equal(again.choices[0].logprobs!.content![0].logprob, answer.choices[0].logprobs!.content![0].logprob);
  });

  it('a web address is refused with a 400 naming the part; so are bytes that are not an image', async () => {
    const refused = async (url: string) => {
      const error = await client.chat.completions
        .create({
          model: 'tiny-vl',
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'Look:' },
                { type: 'image_url', image_url: { url } },
              ],
            },
          ],
        })
        .then(
          () => assert.fail('answered'),
          (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
        );
      assert.equal(error.status, 400);
      return error;
    };
    const web = await refused('https://example.com/cat.png');
    assert.equal(web.param, 'messages[0].content[1].image_url.url');
    assert.equal(web.code, 'invalid_image_url');
    assert.match(web.message, /does not fetch web addresses/);
    const junk = await refused(`data:image/png;base64,${Buffer.from('not a png at all').toString('base64')}`);
    assert.equal(junk.param, 'messages[0].content[1].image_url');
    assert.equal(junk.code, 'invalid_image');
  });
});

describe('gateway training: an agent that sends pictures', () => {
  it('records each image over its tokens, matches the re-sent picture, and trains', async () => {
    fs.mkdirSync(path.join(dir, 'data/img'), { recursive: true });
    const rows = [0, 1].map((i) => {
      fs.writeFileSync(path.join(dir, `data/img/${i}.png`), pictures[i]);
      return JSON.stringify({ id: `r${i}`, prompt: 'Which picture?', answer: String(i), picture: `img/${i}.png` });
    });
    fs.writeFileSync(path.join(dir, 'data/train.jsonl'), rows.join('\n') + '\n');
    fs.writeFileSync(path.join(dir, 'zoom.png'), pictures[2]);
    // The agent as a user writes it: the openai SDK, the picture from the row, a zoomed picture as a follow-up.
    fs.writeFileSync(
      path.join(dir, 'agent.ts'),
      `import * as fs from 'node:fs';
import * as path from 'node:path';
import OpenAI from ${JSON.stringify(require.resolve('openai'))};
const url = (file: string) => 'data:image/png;base64,' + fs.readFileSync(path.join(${JSON.stringify(dir)}, file)).toString('base64');
export default async function agent(row: { picture: string }, { baseURL, apiKey, model }: { baseURL: string; apiKey: string; model: string }) {
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
  const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
    { role: 'user', content: [{ type: 'image_url', image_url: { url: url('data/' + row.picture) } }, { type: 'text', text: 'Which picture?' }] },
  ];
  const first = await client.chat.completions.create({ model, messages });
  messages.push(first.choices[0].message);
  messages.push({ role: 'user', content: [{ type: 'text', text: 'Closer:' }, { type: 'image_url', image_url: { url: url('zoom.png') } }] });
  const second = await client.chat.completions.create({ model, messages });
  return second.choices[0].message.content ?? '';
}
`,
    );
    fs.writeFileSync(
      path.join(dir, 'images.config.ts'),
      `import { defineConfig, exactMatch, z } from 'rollout-studio';
export default defineConfig({
  name: 'images',
  model: { path: 'model', lora: { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] } },
  data: { train: 'data/train.jsonl', fields: z.object({ answer: z.string(), picture: z.string() }) },
  agent: './agent.ts',
  rewards: { outcome: [exactMatch()] },
  algorithm: { name: 'grpo', groupSize: 2 },
  rollout: { promptsPerStep: 2, temperature: 1, budget: { maxTurns: 2, maxNewTokensPerTurn: 6, maxTotalTokens: 400, maxToolResultTokens: 32 } },
  optimization: { lr: 1e-2, microBatchSize: 4 },
  steps: 1,
  seed: 3,
  output: { runsDir: 'runs', checkpointEvery: 0, keepCheckpoints: 1 },
});
`,
    );
    const runDir = path.join(dir, 'runs', 'images');
    const log: string[] = [];
    const result = await new TrainingRun(await loadConfig(path.join(dir, 'images.config.ts')), {
      inProcessDevice: true,
      runDir,
      log: (line) => log.push(line),
    }).run();
    assert.equal(result.run.status, 'finished', log.join('\n'));
    const reader = new RunStoreReader(runDir);
    const records = reader.steps().flatMap((s) => reader.trajectories(s).records);
    assert.equal(records.length, 4);
    const imageTokenId = model.folder.config.vision!.imageTokenId;
    for (const r of records) {
      assert.equal(r.agent?.error, undefined, `trajectory ${r.index}: ${r.agent?.error}`);
      assert.equal(r.agent?.split, undefined, 'the re-sent first picture matched the conversation');
      assert.equal(r.images?.length, 2, `trajectory ${r.index} holds the row's picture and the zoomed one`);
      const ids = Array.from(decodeInt32(r.tokens.ids));
      for (const image of r.images!) {
        const run = ids.slice(image.tokenStart, image.tokenStart + image.tokens);
        assert.ok(run.length === image.tokens && run.every((id) => id === imageTokenId), 'image tokens there');
        assert.notEqual(ids[image.tokenStart + image.tokens], imageTokenId, 'and no more');
        assert.ok(fs.existsSync(path.join(runDir, image.file)), `${image.file} is stored`);
      }
      assert.equal(
        ids.filter((id) => id === imageTokenId).length,
        r.images!.reduce((n, im) => n + im.tokens, 0),
        'every image token belongs to a recorded image',
      );
      // The second picture comes after the first answer, in the agent's follow-up.
      const firstAnswer = r.turns.find((t) => t.role === 'assistant')!;
      assert.ok(r.images![1].tokenStart > firstAnswer.tokenEnd);
    }
    const update = reader
      .metrics()
      .records.find((m) => m.kind === 'train' && typeof m.values['loss/policy'] === 'number');
    assert.ok(update, 'the step trained');
  });
});
