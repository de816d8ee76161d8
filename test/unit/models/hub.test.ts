/**
 * The pure parts of Hub checkpoints: what counts as a repo id, what a name resolves to, which
 * environment variables win, which files a model needs, and what each failure says.
 */
import { afterEach, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { classifyModelPath, hubSettings, isRepoId, resolveModelPath } from '#trainer/foundations/models/hub';
import { httpFailureError, networkErrorCode } from '#trainer/foundations/models/hub/hubErrors';
import { missingFromSnapshot, selectModelFiles, shardsFromIndex } from '#trainer/foundations/models/hub/modelFiles';
import { formatBytes } from '#trainer/contract/formatBytes';

const savedEnv = { ...process.env };
afterEach(() => {
  for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
  Object.assign(process.env, savedEnv);
});

function clearHubEnv(): void {
  for (const key of [
    'HF_ENDPOINT',
    'HF_HUB_CACHE',
    'HUGGINGFACE_HUB_CACHE',
    'HF_HOME',
    'XDG_CACHE_HOME',
    'HF_TOKEN',
    'HUGGING_FACE_HUB_TOKEN',
    'HF_TOKEN_PATH',
    'HF_HUB_OFFLINE',
    'TRANSFORMERS_OFFLINE',
  ])
    delete process.env[key];
}

describe('repo ids', () => {
  it('accepts org/name as the Hub spells it and refuses the rest', () => {
    for (const id of [
      'Qwen/Qwen3-0.6B',
      'meta-llama/Llama-3.2-1B-Instruct',
      'HuggingFaceTB/SmolLM2-135M',
      'a/b',
      'org_1/model.v2',
    ])
      assert.ok(isRepoId(id), id);
    for (const id of [
      'Qwen3-0.6B',
      './model',
      '../a/b',
      '/abs/path',
      'a/b/c',
      'org/-name',
      'org/name-',
      'org--x/name',
      'org/na..me',
      'org/name.git',
      'org/',
      '/name',
      'org/na me',
      'C:\\models\\x',
    ])
      assert.ok(!isRepoId(id), id);
  });

  it('a folder that exists wins over a repo id of the same spelling; built-in names are their own kind', () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'classify-'));
    try {
      fs.mkdirSync(path.join(base, 'Qwen', 'Qwen3-0.6B'), { recursive: true });
      assert.deepEqual(classifyModelPath('Qwen/Qwen3-0.6B', base), {
        kind: 'folder',
        dir: path.join(base, 'Qwen', 'Qwen3-0.6B'),
      });
      assert.deepEqual(classifyModelPath('Qwen/Qwen3-1.7B', base), { kind: 'hub', repo: 'Qwen/Qwen3-1.7B' });
      assert.deepEqual(classifyModelPath('rollout-studio:base', base), { kind: 'builtin', name: 'base' });
      assert.throws(
        () => classifyModelPath('missing-folder', base),
        /"missing-folder" is neither a folder \(there is nothing at .*missing-folder\) nor a Hugging Face repo id/,
      );
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  it('an unknown built-in name is refused with the known ones', async () => {
    await assert.rejects(
      resolveModelPath('rollout-studio:nope', { baseDir: os.tmpdir(), field: 'model.path' }),
      /^HubError: model\.path: "rollout-studio:nope" is not a built-in model \(known: /,
    );
  });
});

describe('settings from the environment, as huggingface_hub reads them', () => {
  it('the cache: HF_HUB_CACHE, then HUGGINGFACE_HUB_CACHE, then $HF_HOME/hub, then $XDG_CACHE_HOME/huggingface/hub, then ~/.cache/huggingface/hub', () => {
    clearHubEnv();
    assert.equal(hubSettings().cacheDir, path.join(os.homedir(), '.cache', 'huggingface', 'hub'));
    process.env['XDG_CACHE_HOME'] = '/x';
    assert.equal(hubSettings().cacheDir, '/x/huggingface/hub');
    process.env['HF_HOME'] = '~/hf';
    assert.equal(hubSettings().cacheDir, path.join(os.homedir(), 'hf', 'hub'), '~ is expanded as Python expands it');
    process.env['HUGGINGFACE_HUB_CACHE'] = '/legacy';
    assert.equal(hubSettings().cacheDir, '/legacy');
    process.env['HF_HUB_CACHE'] = '/new';
    assert.equal(hubSettings().cacheDir, '/new');
  });

  it('offline, endpoint and token', () => {
    clearHubEnv();
    const tokenFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'token-')), 'token');
    process.env['HF_TOKEN_PATH'] = tokenFile;
    let s = hubSettings();
    assert.deepEqual([s.offline, s.endpoint, s.token], [false, 'https://huggingface.co', undefined]);
    for (const on of ['1', 'true', 'YES', 'on']) {
      process.env['HF_HUB_OFFLINE'] = on;
      assert.equal(hubSettings().offline, true, on);
    }
    process.env['HF_HUB_OFFLINE'] = '0';
    assert.equal(hubSettings().offline, false);
    process.env['TRANSFORMERS_OFFLINE'] = '1';
    assert.equal(hubSettings().offline, true);
    process.env['HF_ENDPOINT'] = 'https://hf-mirror.example/';
    assert.equal(hubSettings().endpoint, 'https://hf-mirror.example');
    fs.writeFileSync(tokenFile, 'hf_from_login\n');
    assert.equal(hubSettings().token, 'hf_from_login', 'the token file `hf auth login` writes');
    process.env['HF_TOKEN'] = 'hf_from_env';
    s = hubSettings();
    assert.equal(s.token, 'hf_from_env', 'HF_TOKEN wins over the file');
    fs.rmSync(path.dirname(tokenFile), { recursive: true });
  });
});

describe('the files a model needs', () => {
  const f = (...names: string[]) => names.map((p) => ({ path: p, size: 1 }));

  it('the single-file checkpoint, its configs and tokenizer — nothing else', () => {
    const listed = f(
      '.gitattributes',
      'README.md',
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'pytorch_model.bin',
      'tokenizer.json',
      'tokenizer_config.json',
      'vocab.json',
      'merges.txt',
      'model.gguf',
      'onnx/model.onnx',
      'chat_template.jinja',
    );
    assert.deepEqual(selectModelFiles('o/m', listed, 'model'), {
      files: [
        'config.json',
        'generation_config.json',
        'tokenizer.json',
        'tokenizer_config.json',
        'chat_template.jinja',
        'model.safetensors',
      ],
      needsIndex: false,
    });
  });

  it('a sharded checkpoint goes through its index; a tokenizer-only pull takes no weights', () => {
    const listed = f(
      'config.json',
      'model.safetensors.index.json',
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
      'consolidated.safetensors',
      'tokenizer.json',
      'special_tokens_map.json',
    );
    assert.deepEqual(selectModelFiles('o/m', listed, 'model'), {
      files: ['config.json', 'tokenizer.json', 'special_tokens_map.json', 'model.safetensors.index.json'],
      needsIndex: true,
    });
    assert.deepEqual(selectModelFiles('o/m', listed, 'tokenizer'), {
      files: ['tokenizer.json', 'special_tokens_map.json'],
      needsIndex: false,
    });
    assert.deepEqual(
      shardsFromIndex(
        'i.json',
        JSON.stringify({
          weight_map: {
            a: 'model-00001-of-00002.safetensors',
            b: 'model-00002-of-00002.safetensors',
            c: 'model-00001-of-00002.safetensors',
          },
        }),
      ),
      ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'],
    );
  });

  it('a PEFT adapter repo', () => {
    assert.deepEqual(
      selectModelFiles('o/lora', f('adapter_config.json', 'adapter_model.safetensors', 'README.md'), 'model'),
      { files: ['adapter_config.json', 'adapter_model.safetensors'], needsIndex: false },
    );
  });

  it('says why a repo cannot be used', () => {
    assert.throws(
      () => selectModelFiles('o/m', f('config.json', 'tokenizer.json', 'pytorch_model.bin'), 'model'),
      /o\/m has no safetensors weights .*; it has pytorch_model\.bin\. Convert PyTorch weights with save_pretrained/,
    );
    assert.throws(
      () => selectModelFiles('o/m', f('README.md', 'model.safetensors'), 'model'),
      /o\/m is not a transformers model: it has no config\.json \(it lists README\.md, model\.safetensors\)/,
    );
    assert.throws(
      () => selectModelFiles('o/m', f('config.json', 'model.safetensors', 'tokenizer.model'), 'model'),
      /o\/m has no tokenizer\.json .*fast tokenizers/,
    );
    assert.throws(
      () => shardsFromIndex('i.json', '{"weight_map": {"a": "../x.safetensors"}}'),
      /i\.json: weight_map names "\.\.\/x\.safetensors"; expected a \.safetensors file name/,
    );
    assert.throws(() => shardsFromIndex('i.json', 'nope'), /i\.json: not valid JSON/);
  });

  it('a cached snapshot is complete only with config, tokenizer and every shard', () => {
    const names = new Set([
      'config.json',
      'tokenizer.json',
      'model.safetensors.index.json',
      'model-00001-of-00002.safetensors',
    ]);
    assert.deepEqual(
      missingFromSnapshot(names, 'model', () => [
        'model-00001-of-00002.safetensors',
        'model-00002-of-00002.safetensors',
      ]),
      ['model-00002-of-00002.safetensors'],
    );
    assert.deepEqual(
      missingFromSnapshot(new Set(['tokenizer.json']), 'tokenizer', () => []),
      [],
    );
    assert.deepEqual(
      missingFromSnapshot(new Set(['tokenizer.json']), 'model', () => []),
      ['config.json', 'model.safetensors'],
    );
  });
});

describe('failure messages', () => {
  const context = {
    repo: 'o/m',
    revision: 'main',
    settings: { endpoint: 'https://huggingface.co', cacheDir: '/c', token: undefined, offline: false },
  };

  it("by the Hub's error code first, then by status", () => {
    const of = (status: number, errorCode?: string, serverMessage?: string) =>
      httpFailureError({ status, url: 'u', errorCode, serverMessage }, context).message;
    assert.match(of(404, 'RevisionNotFound'), /^o\/m has no revision "main"/);
    assert.match(
      of(401, 'GatedRepo'),
      /^o\/m is a gated model and no token is set \(HF_TOKEN\)\. Accept its licence on https:\/\/huggingface\.co\/o\/m/,
    );
    assert.match(
      of(401, 'RepoNotFound'),
      /^o\/m was not found on https:\/\/huggingface\.co or is private: .*set HF_TOKEN/,
    );
    assert.match(of(404), /^o\/m was not found on https:\/\/huggingface\.co: check the repo id/);
    assert.match(
      of(401, undefined, 'Invalid credentials in Authorization header'),
      /refused the access token in HF_TOKEN \(invalid or expired\)/,
    );
    assert.match(of(403), /refused access to o\/m \(403\): accept the licence on https:\/\/huggingface\.co\/o\/m/);
    assert.match(of(503), /answered 503 for o\/m .*try again later/);
  });

  it('finds the network code undici hides in `cause`', () => {
    const refused = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    });
    assert.equal(networkErrorCode(refused), 'ECONNREFUSED');
    const dns = new TypeError('fetch failed', {
      cause: Object.assign(new Error('getaddrinfo ENOTFOUND huggingface.co'), { code: 'ENOTFOUND' }),
    });
    assert.equal(networkErrorCode(dns), 'ENOTFOUND');
    assert.equal(networkErrorCode(new Error('something else')), undefined);
  });

  it('sizes as the Hub writes them', () => {
    assert.deepEqual([0, 999, 1000, 1_234_567, 1_503_238_553].map(formatBytes), [
      '0 B',
      '999 B',
      '1.00 kB',
      '1.23 MB',
      '1.50 GB',
    ]);
  });
});
