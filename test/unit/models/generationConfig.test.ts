import { describe, it, before, after } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadGenerationConfig, ModelConfigError } from '#trainer/foundations/models';

describe('loadGenerationConfig', () => {
  let root: string;
  let n = 0;
  const folder = (json?: unknown) => {
    const dir = path.join(root, `g${n++}`);
    fs.mkdirSync(dir);
    if (json !== undefined)
      fs.writeFileSync(
        path.join(dir, 'generation_config.json'),
        typeof json === 'string' ? json : JSON.stringify(json),
      );
    return dir;
  };
  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'rs-genconfig-'));
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it("reads Qwen3's sampling defaults and its list of eos ids", () => {
    // generation_config.json of Qwen/Qwen3-0.6B.
    const dir = folder({
      bos_token_id: 151643,
      do_sample: true,
      eos_token_id: [151645, 151643],
      pad_token_id: 151643,
      temperature: 0.6,
      top_k: 20,
      top_p: 0.95,
      transformers_version: '4.51.0',
    });
    const { file, ...config } = loadGenerationConfig(dir)!;
    assert.equal(file, path.join(dir, 'generation_config.json'));
    assert.deepEqual(config, {
      bosTokenId: 151643,
      eosTokenIds: [151645, 151643],
      padTokenId: 151643,
      doSample: true,
      temperature: 0.6,
      topK: 20,
      topP: 0.95,
    });
  });

  it('accepts a single eos id and leaves absent defaults undefined', () => {
    const config = loadGenerationConfig(folder({ _from_model_config: true, bos_token_id: 1, eos_token_id: 2 }))!;
    assert.deepEqual(config.eosTokenIds, [2]);
    assert.equal(config.temperature, undefined);
    assert.equal(config.topK, undefined);
  });

  it('is optional', () => {
    assert.equal(loadGenerationConfig(folder()), undefined);
  });

  it('names the file and the field of a bad value', () => {
    assert.throws(
      () => loadGenerationConfig(folder({ eos_token_id: 'x' })),
      (error: unknown) =>
        error instanceof ModelConfigError && /generation_config\.json: eos_token_id: Invalid input/.test(error.message),
    );
    assert.throws(
      () => loadGenerationConfig(folder({ top_p: 1.5 })),
      /generation_config\.json: top_p: Too big: expected number to be <=1/,
    );
    assert.throws(() => loadGenerationConfig(folder('{')), /generation_config\.json: not valid JSON/);
  });
});
