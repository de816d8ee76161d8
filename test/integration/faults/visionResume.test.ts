/**
 * Exact resume of a vision-language run (a tiny Qwen2.5-VL): rows whose prompt holds an image, a
 * tool that returns an image, an SFT warm start on demonstrations with images, full fine-tuning
 * with the vision tower trained too (model.trainVision) and KL in the loss — so the checkpoint
 * holds the tower's weights and moments, and the resumed KL reference must be the warm-started
 * model, tower included. The run crashes after step 2's records are written (before its
 * checkpoint), leaving torn lines; the resume must record what the uninterrupted run did, hold
 * the same image files, and end with the same checkpoint byte for byte.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import sharp from 'sharp';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { checkpointDirName, type TrainingEvent } from '#trainer/contract/protocol';
import { RunStoreReader } from '#trainer/contract/runstore';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { assertSameCheckpoint, assertSameRecords } from '../../helpers/runComparison';
import { createTinyVisionModel, QWEN3_TOKENIZER } from '../../helpers/visionFixture';

let dir: string;
let config: string;
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vision-resume-'));
  truncateBpeTokenizer(QWEN3_TOKENIZER, 800, path.join(dir, 'tokenizer'));
  createTinyVisionModel('qwen2_5_vl', path.join(dir, 'model'), path.join(dir, 'tokenizer'));
  fs.mkdirSync(path.join(dir, 'data/img'), { recursive: true });
  const prompt = (i: number) => [
    { type: 'image', path: `img/${i}.png` },
    { type: 'text', text: 'Which picture is it? Zoom first.' },
  ];
  for (let i = 0; i < 4; i++) {
    fs.writeFileSync(
      path.join(dir, `data/img/${i}.png`),
      await sharp({ create: { width: 32, height: 24, channels: 3, background: { r: 40 * i, g: 200, b: 90 } } })
        .png()
        .toBuffer(),
    );
  }
  fs.writeFileSync(
    path.join(dir, 'zoom.png'),
    await sharp({ create: { width: 16, height: 16, channels: 3, background: '#ff8800' } })
      .png()
      .toBuffer(),
  );
  const jsonl = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
  fs.writeFileSync(
    path.join(dir, 'data/train.jsonl'),
    jsonl(
      [0, 1, 2, 3].map((i) => ({ id: `r${i}`, answer: String(i), messages: [{ role: 'user', content: prompt(i) }] })),
    ),
  );
  fs.writeFileSync(
    path.join(dir, 'data/sft.jsonl'),
    jsonl(
      [0, 1].map((i) => ({
        messages: [
          { role: 'user', content: prompt(i) },
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
      })),
    ),
  );
  config = path.join(dir, 'vision.config.ts');
  fs.writeFileSync(
    config,
    `import * as fs from 'node:fs';
import * as path from 'node:path';
import { defineConfig, defineTool, imageResult, exactMatch, z } from 'rollout-studio';
const zoom = defineTool({ name: 'zoom', description: 'Zoom into the picture.', parameters: z.object({ x: z.number() }), execute: () => imageResult([fs.readFileSync(path.join(${JSON.stringify(dir)}, 'zoom.png'))], 'zoomed') });
export default defineConfig({
  name: 'vision-resume',
  model: { path: 'model', lora: false, trainVision: true },
  data: { train: 'data/train.jsonl' },
  tools: [zoom],
  rewards: { outcome: [exactMatch()] },
  algorithm: { name: 'grpo', groupSize: 2, kl: { coef: 0.5, mode: 'loss' } },
  rollout: { promptsPerStep: 2, temperature: 1, budget: { maxTurns: 2, maxNewTokensPerTurn: 8, maxTotalTokens: 400, maxToolResultTokens: 32, maxImagePixels: 4096 } },
  optimization: { lr: 1e-2, microBatchSize: 4 },
  sft: { data: 'data/sft.jsonl', epochs: 1, lr: 1e-2, batchSize: 2 },
  steps: 2,
  seed: 3,
  output: { runsDir: 'runs', checkpointEvery: 1, keepCheckpoints: 2 },
});
`,
  );
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

class SimulatedCrash extends Error {}

async function train(options: ConstructorParameters<typeof TrainingRun>[1]) {
  return new TrainingRun(await loadConfig(config), { inProcessDevice: true, log: () => undefined, ...options }).run();
}

describe('resume of a vision-language run', { timeout: 600_000 }, () => {
  it('full fine-tuning with the vision tower, SFT warm start on images, KL in the loss: ends as the uninterrupted run', async () => {
    const straight = path.join(dir, 'runs', 'straight');
    const crashed = path.join(dir, 'runs', 'crashed');
    assert.equal((await train({ runDir: straight })).run.status, 'finished');
    const crash = (event: TrainingEvent) => {
      if (event.type === 'metrics' && event.record.kind === 'train' && event.record.step === 2)
        throw new SimulatedCrash('crash in step 2');
    };
    await assert.rejects(train({ runDir: crashed, events: crash }), SimulatedCrash);
    fs.appendFileSync(path.join(crashed, 'metrics.jsonl'), '{"step":2,"time":"2026-');
    fs.appendFileSync(path.join(crashed, 'rollouts', 'step-000002.jsonl'), '{"step":2,"index":99,"rowId":"tr');
    assert.equal(new RunStoreReader(crashed).run().lastStep, 1, 'the crashed step is not complete');

    const logs: string[] = [];
    assert.equal((await train({ resume: crashed, log: (line) => logs.push(line) })).run.status, 'finished');
    assert.match(logs.join('\n'), /resuming crashed after step 1 from checkpoints\/step-000001/);
    assertSameRecords(straight, crashed, 'vision');
    const records = new RunStoreReader(crashed).trajectories(2).records;
    assert.ok(
      records.length > 0 && records.every((r) => r.images && r.images.length >= 1),
      'the resumed step saw its images',
    );
    assert.deepEqual(
      fs.readdirSync(path.join(crashed, 'images')).sort(),
      fs.readdirSync(path.join(straight, 'images')).sort(),
      'the same image files',
    );
    assertSameCheckpoint(path.join(straight, checkpointDirName(2)), path.join(crashed, checkpointDirName(2)), 'vision');
  });
});
