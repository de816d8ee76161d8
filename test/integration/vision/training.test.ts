/**
 * A training run of a vision-language model end to end (a tiny Qwen2.5-VL, LoRA on the language
 * model): rows whose prompt holds an image file, a tool that returns an image, GRPO steps with
 * the images in the update, the run store holding each image once by content hash with records
 * that point at it, checkpoints with the processor's files — the vision tower unchanged (frozen)
 * — and the run failing before it starts, naming the row and file, when an image is missing.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import sharp from 'sharp';
import { CheckpointReader } from '#trainer/foundations/models/files/checkpointReader';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { RunStoreReader } from '#trainer/contract/runstore';
import { sftBaseline } from '#trainer/pipeline/training/warmStart/sftBaseline';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { createTinyVisionModel, QWEN3_TOKENIZER } from '../../helpers/visionFixture';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';

let dir: string;
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vision-training-'));
  truncateBpeTokenizer(QWEN3_TOKENIZER, 800, path.join(dir, 'tokenizer'));
  createTinyVisionModel('qwen2_5_vl', path.join(dir, 'model'), path.join(dir, 'tokenizer'));
  fs.mkdirSync(path.join(dir, 'data/img'), { recursive: true });
  const rows: string[] = [];
  for (let i = 0; i < 4; i++) {
    const png = await sharp({
      create: { width: 32, height: 24, channels: 3, background: { r: 40 * i, g: 200, b: 90 } },
    })
      .png()
      .toBuffer();
    fs.writeFileSync(path.join(dir, `data/img/${i}.png`), png);
    rows.push(
      JSON.stringify({
        id: `r${i}`,
        answer: String(i),
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', path: `img/${i}.png` },
              { type: 'text', text: 'Which picture is it? Zoom first.' },
            ],
          },
        ],
      }),
    );
  }
  fs.writeFileSync(path.join(dir, 'data/train.jsonl'), rows.join('\n') + '\n');
  // Demonstrations: the picture, a zoom call, the zoomed picture as the tool's result, the answer.
  const demos = [0, 1, 2, 3].map((i) =>
    JSON.stringify({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', path: `img/${i}.png` },
            { type: 'text', text: 'Which picture is it? Zoom first.' },
          ],
        },
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ type: 'function', function: { name: 'zoom', arguments: { x: 1 } } }],
        },
        {
          role: 'tool',
          name: 'zoom',
          content: [
            { type: 'image', path: '../zoom.png' },
            { type: 'text', text: 'zoomed' },
          ],
        },
        { role: 'assistant', content: `<answer>${i}</answer>` },
      ],
    }),
  );
  fs.writeFileSync(path.join(dir, 'data/sft.jsonl'), demos.join('\n') + '\n');
  fs.writeFileSync(
    path.join(dir, 'data/missing.jsonl'),
    JSON.stringify({
      id: 'gone',
      answer: '1',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', path: 'img/none.png' },
            { type: 'text', text: 'Hm?' },
          ],
        },
      ],
    }) + '\n',
  );
  const zoomPng = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#ff8800' } })
    .png()
    .toBuffer();
  fs.writeFileSync(path.join(dir, 'zoom.png'), zoomPng);
  const config = (
    name: string,
    train: string,
    algorithm = "{ name: 'grpo', groupSize: 2 }",
    extra = '',
    model = "{ path: 'model', lora: { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] } }",
  ) =>
    fs.writeFileSync(
      path.join(dir, name),
      `import * as fs from 'node:fs';
import * as path from 'node:path';
import { defineConfig, defineTool, imageResult, exactMatch, z } from 'rollout-studio';
const zoom = defineTool({ name: 'zoom', description: 'Zoom into the picture.', parameters: z.object({ x: z.number() }), execute: () => imageResult([fs.readFileSync(path.join(${JSON.stringify(dir)}, 'zoom.png'))], 'zoomed') });
export default defineConfig({
  name: 'vision',
  model: ${model},
  data: { train: ${JSON.stringify(train)} },
  tools: [zoom],
  rewards: { outcome: [exactMatch()] },
  algorithm: ${algorithm},${extra}
  rollout: { promptsPerStep: 2, temperature: 1, budget: { maxTurns: 2, maxNewTokensPerTurn: 12, maxTotalTokens: 400, maxToolResultTokens: 32, maxImagePixels: 4096 } },
  optimization: { lr: 1e-2, microBatchSize: 4 },
  sft: { data: 'data/sft.jsonl', epochs: 2, lr: 1e-2, batchSize: 2 },
  steps: 2,
  seed: 3,
  output: { runsDir: 'runs', checkpointEvery: 2, keepCheckpoints: 1 },
});
`,
    );
  config('vision.config.ts', 'data/train.jsonl');
  config('missing.config.ts', 'data/missing.jsonl');
  // PPO with a separate critic that trains every language-model weight (a full copy of the policy).
  config(
    'ppo.config.ts',
    'data/train.jsonl',
    "{ name: 'ppo', groupSize: 2 }",
    '\n  critic: { lora: false, lr: 1e-2 },',
  );
  // Full fine-tuning, the tower frozen: what the SFT-only baseline continues.
  config(
    'full.config.ts',
    'data/train.jsonl',
    undefined,
    "\n  evaluation: { data: 'data/train.jsonl' },",
    "{ path: 'model', lora: false }",
  );
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('a vision-language training run', () => {
  it('trains on rows with images, records each image once by hash, and keeps the vision tower frozen', async () => {
    const runDir = path.join(dir, 'runs', 'run');
    const result = await new TrainingRun(await loadConfig(path.join(dir, 'vision.config.ts')), {
      inProcessDevice: true,
      runDir,
    }).run();
    assert.equal(result.run.status, 'finished');
    const reader = new RunStoreReader(runDir);
    // The warm start trained on demonstrations holding the prompt's and the tool's images.
    const warmStart = reader.metrics().records.filter((m) => m.kind === 'sft');
    const sft = warmStart.filter((m) => 'loss/sft' in m.values);
    assert.equal(sft.length, 4);
    assert.ok(sft.every((m) => typeof m.values['loss/sft'] === 'number' && m.values['loss/sft']! > 0));
    // Its check read the same demonstrations, images and all, after each epoch.
    const checks = warmStart.filter((m) => 'sft/check_loss' in m.values);
    assert.equal(checks.length, 2, 'one check after each of the two epochs');
    assert.ok(checks.every((m) => m.values['sft/check_loss']! > 0));
    const records = reader.steps().flatMap((s) => reader.trajectories(s).records);
    assert.equal(records.length, 8);
    for (const r of records) {
      assert.ok(r.images && r.images.length >= 1, `trajectory ${r.index} of step ${r.step} lists its images`);
      const prompt = r.images[0];
      assert.equal(prompt.from.kind, 'prompt');
      const bytes = fs.readFileSync(path.join(runDir, prompt.file));
      assert.equal(
        crypto.createHash('sha256').update(bytes).digest('hex'),
        prompt.sha256,
        'the file is the image, named by its hash',
      );
      assert.equal(
        r.tokens.pieces.slice(prompt.tokenStart, prompt.tokenStart + prompt.tokens).join(''),
        '<|image_pad|>'.repeat(prompt.tokens),
      );
      for (const turn of r.turns)
        for (const call of turn.toolCalls ?? [])
          if (call.images)
            assert.ok(call.images.every((h) => r.images!.some((im) => im.sha256 === h && im.from.kind === 'tool')));
    }
    const files = fs.readdirSync(path.join(runDir, 'images'));
    const hashes = new Set(records.flatMap((r) => r.images!.map((im) => im.file.slice('images/'.length))));
    assert.deepEqual(files.sort(), [...hashes].sort(), 'one file per distinct image, no more');
    // Only the LoRA adapters train (q_proj 32→32 and v_proj 32→16 at rank 4, two layers): the vision tower is frozen.
    assert.equal(reader.run().model.trainableParameters, 2 * (4 * 32 + 32 * 4 + 4 * 32 + 16 * 4));
    assert.ok(fs.existsSync(path.join(runDir, reader.run().lastCheckpoint!, 'adapter_config.json')));
  });

  it("PPO's separate critic values the images too: a full-copy critic trains its language model, not the untied LM head, and keeps its vision tower frozen as the policy does", async () => {
    const runDir = path.join(dir, 'runs', 'ppo');
    const result = await new TrainingRun(await loadConfig(path.join(dir, 'ppo.config.ts')), {
      inProcessDevice: true,
      runDir,
    }).run();
    assert.equal(result.run.status, 'finished', result.run.error?.message);
    const reader = new RunStoreReader(runDir);
    const train = reader.metrics().records.filter((m) => m.kind === 'train');
    assert.equal(train.length, 2);
    for (const m of train) {
      assert.ok(Number.isFinite(m.values['loss/value']), `step ${m.step}: a finite value loss`);
      assert.ok((m.values['critic/grad_norm'] as number) > 0, `step ${m.step}: the critic has a gradient`);
    }
    // The critic's checkpoint: its trainable tensors under critic/… — language model and value head, no vision weight.
    const critic = CheckpointReader.open(
      path.join(runDir, reader.run().lastCheckpoint!, 'critic'),
      'optimizer.safetensors',
    );
    try {
      const names = critic.names().filter((n) => !n.endsWith('.m') && !n.endsWith('.v'));
      assert.ok(
        names.some((n) => n.startsWith('critic/model.layers.')),
        'the language model trains',
      );
      assert.ok(names.includes('critic/v_head.summary.weight'));
      assert.deepEqual(
        names.filter((n) => n.startsWith('critic/visual.')),
        [],
        'no vision weight trains',
      );
      assert.ok(!names.includes('critic/lm_head.weight'), 'a critic has no LM head');
    } finally {
      critic.close();
    }
  });

  it('the SFT-only baseline trains on the demonstrations with their images (prompt and tool), keeps the frozen tower as it was, and evaluates', async () => {
    const outDir = path.join(dir, 'runs', 'baseline');
    const baseline = await sftBaseline(await loadConfig(path.join(dir, 'full.config.ts')), {
      from: path.join(dir, 'model'),
      seconds: 0.5,
      outDir,
    });
    assert.ok(baseline.steps >= 1, `${baseline.steps} SFT steps`);
    assert.equal(baseline.evaluation.rows, 4);
    assert.ok(fs.existsSync(path.join(outDir, 'preprocessor_config.json')), 'the processor travels with the model');
    const before = CheckpointReader.open(path.join(dir, 'model'), 'model.safetensors');
    const after = CheckpointReader.open(outDir, 'model.safetensors');
    try {
      const names = before.names();
      const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
      const changed = names.filter((n) => !bytes(before.read(n)).equals(bytes(after.read(n))));
      assert.ok(
        changed.some((n) => n.startsWith('model.layers.')),
        'the language model trained',
      );
      assert.deepEqual(
        changed.filter((n) => n.startsWith('visual.')),
        [],
        'the frozen tower is saved as it was read',
      );
    } finally {
      before.close();
      after.close();
    }
  });

  it('a row whose image file is missing stops the run before it starts, naming the row and the file', async () => {
    await assert.rejects(
      async () =>
        new TrainingRun(await loadConfig(path.join(dir, 'missing.config.ts')), {
          inProcessDevice: true,
          runDir: path.join(dir, 'runs', 'missing'),
        }).run(),
      new RegExp(
        `missing\\.jsonl:1 \\(row gone\\): messages\\.0\\.content\\.0: the image file .*img/none\\.png does not exist`,
      ),
    );
    assert.ok(!fs.existsSync(path.join(dir, 'runs', 'missing', 'run.json')), 'no half-made run directory');
  });
});
