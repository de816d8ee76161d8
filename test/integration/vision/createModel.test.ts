/**
 * create-model for the vision-language families, through the CLI: a folder that opens as a
 * Qwen2-VL / Qwen2.5-VL model (config with vision_config, the tower's tensors, the processor's
 * preprocessor_config.json, a chat template that renders images and tools), the vision
 * tokens' ids taken from the (cut) tokenizer, and vision options refused for text families.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { openModelFolder } from '#trainer/foundations/models/modelFolder';
import { QWEN3_TOKENIZER } from '../../helpers/visionFixture';

const repo = path.resolve(__dirname, '../../..');
let root: string;
before(() => (root = fs.mkdtempSync(path.join(os.tmpdir(), 'vl-create-'))));
after(() => fs.rmSync(root, { recursive: true, force: true }));

const cli = (...args: string[]) =>
  spawnSync(
    process.execPath,
    ['--import', 'tsx', path.join(repo, 'trainer/bridges/cli/main.ts'), 'create-model', ...args],
    { cwd: repo, encoding: 'utf8', timeout: 120_000 },
  );
const base = [
  '--layers',
  '1',
  '--hidden',
  '32',
  '--heads',
  '4',
  '--kv-heads',
  '2',
  '--intermediate',
  '32',
  '--tokenizer',
  QWEN3_TOKENIZER,
  '--tokenizer-merges',
  '300',
];

describe('rollout-studio create-model --family qwen2-vl|qwen2.5-vl', () => {
  for (const [flag, family, architecture] of [
    ['qwen2-vl', 'qwen2_vl', 'Qwen2VLForConditionalGeneration'],
    ['qwen2.5-vl', 'qwen2_5_vl', 'Qwen2_5_VLForConditionalGeneration'],
  ] as const) {
    it(`${flag}: a folder that opens as ${architecture}, with its processor files`, () => {
      const out = path.join(root, flag);
      const run = cli(
        '--family',
        flag,
        ...base,
        '--out',
        out,
        '--patch-size',
        '8',
        '--vision-depth',
        '2',
        '--vision-width',
        '16',
        '--vision-heads',
        '2',
        '--max-pixels',
        '4096',
      );
      assert.equal(run.status, 0, run.stderr);
      assert.match(run.stdout, /vision tower: 2 blocks of width 16, patch 8, merge 2/);
      const folder = openModelFolder(out);
      try {
        assert.equal(folder.config.family, family);
        assert.equal(folder.config.architecture, architecture);
        assert.equal(folder.config.vision!.patchSize, 8);
        assert.equal(folder.config.vision!.imageTokenId, folder.tokenizer.tokenId('<|image_pad|>'));
        assert.ok(
          folder.config.vision!.imageTokenId < 1000,
          'the cut tokenizer renumbers the vision tokens; the config follows',
        );
        assert.equal(folder.imageProcessor!.maxPixels, 4096);
        assert.equal(folder.imageProcessor!.source, path.join(out, 'preprocessor_config.json'));
        assert.ok(folder.checkpoint.has('visual.patch_embed.proj.weight'));
        const text = folder.chatTemplate!.render(
          [{ role: 'user', content: [{ type: 'image' }, { type: 'text', text: 'how many?' }] }],
          { addGenerationPrompt: true },
        );
        assert.match(
          text,
          /<\|im_start\|>user\n<\|vision_start\|><\|image_pad\|><\|vision_end\|>how many\?<\|im_end\|>\n<\|im_start\|>assistant\n$/,
        );
      } finally {
        folder.close();
      }
    });
  }
  it('refuses vision options for a text family, naming the option', () => {
    const run = cli('--family', 'qwen3', ...base, '--out', path.join(root, 'text'), '--patch-size', '8');
    assert.notEqual(run.status, 0);
    assert.match(
      run.stderr,
      /--patch-size: only for the vision-language families \(qwen2-vl, qwen2\.5-vl\), not qwen3/,
    );
  });
});
