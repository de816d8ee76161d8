/**
 * A training config whose model is a Hub repo id: `rollout-studio pull` fetches it from a local
 * Hub (test/helpers/hubServer.ts), and then, with the server gone and HF_HUB_OFFLINE=1, the
 * model loads from the Hugging Face cache, trains a step and is scored — as a user on a plane
 * would after pulling once. The download's progress reaches the live channel in bytes.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { TrainingEvent } from '#trainer/contract/protocol';
import { evaluateCheckpoint } from '#trainer/pipeline/training/evaluation/evaluateCheckpoint';
import { resolveConfigModel } from '#trainer/pipeline/training/config/modelSource';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { fakeCommit, filesFromFolder, HubServer, type HubRepo } from '../../helpers/hubServer';
import { createTrainingFixture, type TrainingFixture } from '../../helpers/trainingFixture';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';

const root = path.resolve(__dirname, '..', '..', '..');
const REPO = 'test-org/tiny-agent';
const COMMIT = fakeCommit('tiny-agent');

let fixture: TrainingFixture;
let repos: Map<string, HubRepo>;
let server: HubServer;
let cacheDir: string;
const savedEnv = { ...process.env };

function setHubEnv(endpoint: string, extra: Record<string, string> = {}): void {
  for (const key of ['HF_TOKEN', 'HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE', 'HF_HOME', 'HUGGINGFACE_HUB_CACHE'])
    delete process.env[key];
  Object.assign(process.env, {
    HF_ENDPOINT: endpoint,
    HF_HUB_CACHE: cacheDir,
    HF_TOKEN_PATH: path.join(fixture.dir, 'no-token'),
    ...extra,
  });
}

/** The CLI in a child process (asynchronously: the Hub answers from this process). */
function cli(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(root, 'trainer/bridges/cli/main.ts'), ...args],
      { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

before(async () => {
  fixture = createTrainingFixture();
  cacheDir = path.join(fixture.dir, 'hf-cache');
  repos = new Map<string, HubRepo>([
    [
      REPO,
      {
        refs: { main: COMMIT },
        commits: { [COMMIT]: filesFromFolder(path.join(fixture.dir, 'model'), { 'README.md': '# tiny agent\n' }) },
      },
    ],
  ]);
  server = await new HubServer(repos).start();
  setHubEnv(server.endpoint);
});

after(async () => {
  await server.close();
  for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
  Object.assign(process.env, savedEnv);
  fixture.cleanup();
});

describe('a Hub repo as the model of a training config', () => {
  it('rollout-studio pull downloads it (plain progress lines off a terminal) and prints its folder', async () => {
    const snapshot = path.join(cacheDir, 'models--test-org--tiny-agent', 'snapshots', COMMIT);
    const result = await cli(['pull', REPO], process.env);
    assert.equal(result.status, 0, result.stderr);
    assert.match(
      result.stdout,
      new RegExp(
        `^test-org/tiny-agent at ${COMMIT.slice(0, 12)} \\(main\\): downloaded 5 files \\(.* [kM]?B\\) in \\d+\\.\\d s into ${snapshot.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\n$`,
      ),
    );
    assert.match(result.stderr, /^test-org\/tiny-agent: downloading config\.json \(file 1 of 5, 0 B of .* so far\)$/m);
    assert.match(result.stderr, /^test-org\/tiny-agent: downloading model\.safetensors \(file \d of 5/m);
    assert.match(result.stderr, /^test-org\/tiny-agent: downloaded .* in \d+\.\d s$/m);
    assert.ok(!result.stderr.includes('\r'), 'no bar redrawn off a terminal');
    const again = await cli(['pull', REPO], process.env);
    assert.equal(again.status, 0, again.stderr);
    assert.match(again.stdout, /from the Hugging Face cache: .*\n\(nothing to download; the cache is /);
  });

  it('pull explains a missing repo without a stack trace, and refuses what is not a repo id', async () => {
    const missing = await cli(['pull', 'test-org/nothing-here'], process.env);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /^rollout-studio: test-org\/nothing-here was not found on http:\/\/127\.0\.0\.1:\d+/);
    assert.ok(!/\n\s+at /.test(missing.stderr), `no stack trace:\n${missing.stderr}`);
    const bad = await cli(['pull', 'not-a-repo'], process.env);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /"not-a-repo" is not a Hugging Face repo id: expected org\/name/);
  });

  it("a LoRA adapter published on the Hub is evaluated over the config's base model from the Hub", async () => {
    const config = fixture.writeConfig('lora.config.ts', {
      model: `{ path: '${REPO}', lora: { rank: 4, alpha: 8 } }`,
      sft: '',
      steps: '1',
      evaluation: '{ samples: 2 }',
      output: "{ runsDir: 'runs', checkpointEvery: 1, keepCheckpoints: 1 }",
    });
    const runDir = path.join(fixture.dir, 'runs', 'lora');
    await new TrainingRun(await loadConfig(config), { inProcessDevice: true, runDir }).run();
    const checkpoint = path.join(runDir, 'checkpoints', 'step-000001');
    assert.ok(fs.existsSync(path.join(checkpoint, 'adapter_config.json')), fs.readdirSync(checkpoint).join(', '));
    const adapterCommit = fakeCommit('tiny-adapter');
    repos.set('test-org/tiny-adapter', {
      refs: { main: adapterCommit },
      commits: { [adapterCommit]: filesFromFolder(checkpoint, { 'README.md': '# a LoRA adapter\n' }) },
    });
    const scored = await evaluateCheckpoint(await loadConfig(config), 'test-org/tiny-adapter', { samples: 2 });
    assert.equal(scored.rows, 2);
    const snapshot = path.join(cacheDir, 'models--test-org--tiny-adapter', 'snapshots', adapterCommit);
    assert.ok(fs.existsSync(path.join(checkpoint, 'trainer_state.json')));
    assert.deepEqual(
      fs.readdirSync(snapshot).sort(),
      ['adapter_config.json', 'adapter_model.safetensors', 'tokenizer.json', 'tokenizer_config.json'],
      'the adapter and its tokenizer, not the trainer state or the README',
    );
  });

  it('with the Hub gone and HF_HUB_OFFLINE=1, the cached model trains a step and is scored', async () => {
    const endpoint = server.endpoint;
    await server.close();
    setHubEnv(endpoint, { HF_HUB_OFFLINE: '1' });
    const config = fixture.writeConfig('hub.config.ts', {
      model: `{ path: '${REPO}', lora: false }`,
      sft: '',
      steps: '1',
      evaluation: '{ samples: 2 }',
    });
    const logs: string[] = [];
    const run = await new TrainingRun(await loadConfig(config), {
      inProcessDevice: true,
      runDir: path.join(fixture.dir, 'runs', 'hub'),
      log: (line) => logs.push(line),
    }).run();
    assert.equal(run.run.status, 'finished');
    assert.equal(run.run.lastStep, 1);
    assert.equal(
      run.run.model.path,
      path.join(cacheDir, 'models--test-org--tiny-agent', 'snapshots', COMMIT),
      'run.json names the snapshot (and so the commit)',
    );
    assert.ok(
      logs.some((l) =>
        l.includes(`test-org/tiny-agent at ${COMMIT.slice(0, 12)} (main) from the Hugging Face cache (HF_HUB_OFFLINE)`),
      ),
      logs.join('\n'),
    );
    const scored = await evaluateCheckpoint(await loadConfig(config), REPO, { samples: 2 });
    assert.equal(scored.rows, 2);
    assert.equal(typeof scored.reward, 'number');
    server = await new HubServer(new Map()).start(); // closed again in after()
  });

  it('a download in a training reports progress events of phase download, in bytes', async () => {
    const fresh = path.join(fixture.dir, 'fresh-cache');
    const hub = await new HubServer(repos).start();
    try {
      setHubEnv(hub.endpoint, { HF_HUB_CACHE: fresh });
      const config = fixture.writeConfig('progress.config.ts', {
        model: `{ path: '${REPO}', revision: 'main', lora: false }`,
      });
      const events: TrainingEvent[] = [];
      const logs: string[] = [];
      const dir = await resolveConfigModel(await loadConfig(config), {
        events: (e) => events.push(e),
        log: (l) => logs.push(l),
      });
      assert.equal(dir, path.join(fresh, 'models--test-org--tiny-agent', 'snapshots', COMMIT));
      const progress = events.filter((e): e is Extract<TrainingEvent, { type: 'progress' }> => e.type === 'progress');
      assert.ok(progress.length >= 2 && progress.every((e) => e.phase === 'download'));
      const total = fs.readdirSync(dir).reduce((sum, f) => sum + fs.statSync(path.join(dir, f)).size, 0);
      assert.deepEqual(progress.at(-1), {
        protocol: 1,
        type: 'progress',
        step: 0,
        phase: 'download',
        done: total,
        total,
        detail: REPO,
      });
      assert.ok(progress.some((e) => e.detail === `${REPO} · model.safetensors`));
      assert.match(logs[0], /^test-org\/tiny-agent: downloading 5 files \(.*\) into the Hugging Face cache$/);
      assert.match(logs[1], /downloaded 5 files/);
    } finally {
      await hub.close();
    }
  });
});
