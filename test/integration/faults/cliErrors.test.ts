/**
 * Every command's error paths end the process: a non-zero exit code, the message naming what is
 * wrong, and the exit within seconds of the message — nothing left open (the device's worker
 * thread, the tool worker, MCP servers, a listening socket) to keep it alive. The CLI ends a
 * process that is still kept open 5 s after its command settled and says what was open; these
 * tests fail on that line too, so a leak cannot hide behind it.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import { writeTinyAgentWorkspace } from '../../fixtures/tinyAgent';
import { runCli, type CliResult } from '../../helpers/cliProcess';

let workspace: string;
let config: string;

before(async () => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-errors-'));
  config = await writeTinyAgentWorkspace(workspace, { steps: 2, extraConfig: '  evaluation: { samples: 1 },\n' });
  // checkpointEvery 1: a run to resume from has a checkpoint after each step.
  fs.writeFileSync(config, fs.readFileSync(config, 'utf8').replace('checkpointEvery: 0', 'checkpointEvery: 1'));
});
after(() => fs.rmSync(workspace, { recursive: true, force: true }));

/** Exit code `code` (default 1), the message matching `message`, and the exit promptly after it. */
function assertEndsWith(result: CliResult, message: RegExp, code = 1): void {
  const said = `exit ${result.code} (${result.signal ?? 'no signal'})\nstderr:\n${result.stderr}\nstdout:\n${result.stdout}`;
  assert.equal(result.signal, null, `killed by the test: the process hung\n${said}`);
  assert.equal(result.code, code, said);
  assert.match(result.stderr, message, said);
  assert.doesNotMatch(result.stderr, /was kept open/, `something kept the process open\n${said}`);
  assert.ok(result.messageAtMs !== undefined, said);
  assert.ok(
    result.exitAtMs - result.messageAtMs < 3000,
    `exited ${Math.round(result.exitAtMs - result.messageAtMs)} ms after its message\n${said}`,
  );
}

/** A copy of the workspace's config with one replacement (and a file of its own). */
function variant(name: string, from: string, to: string): string {
  const text = fs.readFileSync(config, 'utf8');
  assert.ok(text.includes(from), `the config has ${from}`);
  const file = path.join(workspace, `${name}.config.ts`);
  fs.writeFileSync(file, text.replace(from, to));
  return file;
}

function cli(args: string[], env?: NodeJS.ProcessEnv) {
  return runCli(args, { cwd: workspace, timeoutMs: 90_000, ...(env ? { env } : {}) });
}

describe('train: setup errors end the process', { timeout: 600_000 }, () => {
  it('a bad dataset row', async () => {
    const data = path.join(workspace, 'data', 'bad.jsonl');
    fs.writeFileSync(
      data,
      fs.readFileSync(path.join(workspace, 'data', 'train.jsonl'), 'utf8') + '{"id": "broken", "prompt": 5}\n',
    );
    assertEndsWith(
      await cli(['train', variant('bad-row', "train: 'data/train.jsonl'", "train: 'data/bad.jsonl'")]),
      /data\/bad\.jsonl:33: .*prompt/,
    );
  });

  it('a missing tokenizer', async () => {
    fs.cpSync(path.join(workspace, 'model'), path.join(workspace, 'no-tokenizer'), { recursive: true });
    fs.rmSync(path.join(workspace, 'no-tokenizer', 'tokenizer.json'));
    assertEndsWith(
      await cli(['train', variant('no-tokenizer', "path: 'model'", "path: 'no-tokenizer'")]),
      /no-tokenizer\/tokenizer\.json: file not found/,
    );
  });

  it('a truncated checkpoint', async () => {
    fs.cpSync(path.join(workspace, 'model'), path.join(workspace, 'truncated'), { recursive: true });
    fs.truncateSync(path.join(workspace, 'truncated', 'model.safetensors'), 100_000);
    assertEndsWith(
      await cli(['train', variant('truncated', "path: 'model'", "path: 'truncated'")]),
      /truncated\/model\.safetensors: truncated/,
    );
  });

  it('an unwritable runs folder', async () => {
    fs.writeFileSync(path.join(workspace, 'not-a-folder'), '');
    assertEndsWith(
      await cli(['train', variant('unwritable', 'output: {', "output: { runsDir: 'not-a-folder/runs',")]),
      /creating the run directory failed \(ENOTDIR\): a part of .*not-a-folder\/runs is a file, not a folder/,
    );
  });

  it('a default export that is not made by defineConfig', async () => {
    assertEndsWith(
      await cli(['train', variant('plain', 'export default defineConfig({', 'export default ({')]),
      /plain\.config\.ts: the default export is a plain object, not a config made by defineConfig/,
    );
  });

  describe('resuming', () => {
    let runDir: string;
    before(async () => {
      runDir = path.join(workspace, 'runs', 'resumable');
      const result = await cli(['train', config, '--run-dir', runDir]);
      assert.equal(result.code, 0, result.stderr);
    });

    it('with another config', async () => {
      assertEndsWith(
        await cli(['train', variant('other', 'lr: 1e-4', 'lr: 2e-4'), '--resume', runDir]),
        /resumable was trained with another config; what differs from the config it was trained with:\n\s+optimization\.lr: 0\.0001 → 0\.0002\nResume with the config it was trained with/,
      );
    });

    it('when every checkpoint is damaged', async () => {
      const damaged = path.join(workspace, 'runs', 'damaged');
      fs.cpSync(runDir, damaged, { recursive: true });
      for (const c of fs.readdirSync(path.join(damaged, 'checkpoints')))
        fs.truncateSync(path.join(damaged, 'checkpoints', c, 'optimizer.safetensors'), 1000);
      const result = await cli(['train', config, '--resume', damaged]);
      assertEndsWith(
        result,
        /damaged: no checkpoint can be resumed from; every one is damaged:\n {2}checkpoints\/step-000002: .*optimizer\.safetensors/,
      );
      assert.doesNotMatch(result.stderr, /\n\s+at .*\.(ts|js):\d+/, 'no stack trace under the message');
    });

    it('a run another live process writes', async () => {
      const held = path.join(workspace, 'runs', 'held');
      fs.cpSync(runDir, held, { recursive: true });
      // This test process holds it, as a trainer would.
      const now = new Date().toISOString();
      fs.writeFileSync(
        path.join(held, 'run.lock'),
        JSON.stringify({ pid: process.pid, host: os.hostname(), startedAt: now, heartbeatAt: now }),
      );
      assertEndsWith(
        await cli(['train', config, '--resume', held]),
        new RegExp(`held is being written by another process: pid ${process.pid} on ${os.hostname()}`),
      );
      assertEndsWith(
        await cli(['train', config, '--run-dir', held]),
        new RegExp(`held is being written by another process: pid ${process.pid}`),
      );
    });
  });
});

describe('the other commands end the process on their errors', { timeout: 600_000 }, () => {
  it('eval with a checkpoint that is not there', async () => {
    assertEndsWith(await cli(['eval', config, '--checkpoint', path.join(workspace, 'nowhere')]), /nowhere/);
  });

  it('eval with a truncated checkpoint', async () => {
    assertEndsWith(
      await cli(['eval', config, '--checkpoint', path.join(workspace, 'truncated')]),
      /model\.safetensors: truncated/,
    );
  });

  it('run-tool on a module that throws while loading', async () => {
    fs.writeFileSync(path.join(workspace, 'throws.ts'), "throw new Error('the module is broken');\n");
    assertEndsWith(
      await cli(['run-tool', 'throws.ts', '--tool', 'x']),
      /throws\.ts: loading the module threw:\nError: the module is broken/,
    );
  });

  it('run-tool with a tool the module does not have', async () => {
    assertEndsWith(await cli(['run-tool', config, '--tool', 'nope']), /no tool named "nope"/);
  });

  it("run-tool CONFIG --tool NAME finds the tool in the config (its default export's tools)", async () => {
    const result = await cli(['run-tool', config, '--tool', 'search', '--args', '{"query": "William"}', '--json']);
    assert.equal(result.code, 0, result.stderr);
    const report = JSON.parse(result.stdout) as { tool: { name: string }; observation?: string; error?: unknown };
    assert.equal(report.tool.name, 'search');
    assert.equal(report.error, undefined);
    assert.ok(report.observation && report.observation.length > 0, result.stdout);
  });

  it('eval-reward on a file that is not there', async () => {
    assertEndsWith(await cli(['eval-reward', 'missing.ts', '--export', 'rewards']), /missing\.ts: file not found/);
  });

  it('create-model with a tokenizer folder that is not there', async () => {
    assertEndsWith(
      await cli([
        'create-model',
        '--family',
        'qwen3',
        '--layers',
        '1',
        '--hidden',
        '8',
        '--heads',
        '2',
        '--kv-heads',
        '1',
        '--intermediate',
        '8',
        '--tokenizer',
        path.join(workspace, 'no-such-tokenizer'),
        '--out',
        path.join(workspace, 'new-model'),
      ]),
      /no-such-tokenizer/,
    );
  });

  it('pull offline, of a model the cache does not have', async () => {
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'empty-hf-cache-'));
    assertEndsWith(
      await cli(['pull', 'test-org/not-cached'], { HF_HUB_OFFLINE: '1', HF_HUB_CACHE: cache }),
      /HF_HUB_OFFLINE is set and the Hugging Face cache .* has no revision "main" of test-org\/not-cached/,
    );
  });

  it('serve-tools on a port that is taken, with the tool worker already started', async () => {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      assertEndsWith(
        await cli(['serve-tools', config, '--port', String(port)]),
        new RegExp(`port ${port} on 127\\.0\\.0\\.1 is in use; choose another with --port`),
      );
    } finally {
      server.close();
    }
  });

  it('export verl with a config that does not load', async () => {
    assertEndsWith(
      await cli(['export', 'verl', path.join(workspace, 'plain.config.ts'), '--out', path.join(workspace, 'verl-out')]),
      /not a config made by defineConfig/,
    );
  });

  it('import verl of a folder that is not there', async () => {
    assertEndsWith(
      await cli(['import', 'verl', path.join(workspace, 'no-dumps')]),
      /no-dumps: not a folder; give verl's trainer\.rollout_data_dir/,
    );
  });
});

describe('user errors say what to do, without stack traces (kept with --verbose)', { timeout: 600_000 }, () => {
  const NO_STACK = /\n\s+at .*\.(ts|js):\d+/;
  let runDir: string;

  before(async () => {
    runDir = path.join(workspace, 'runs', 'done');
    const done = await cli(['train', config, '--run-dir', runDir, '--steps', '1']);
    assert.equal(done.code, 0, done.stderr);
  });

  it('a run directory that already holds a run', async () => {
    const result = await cli(['train', config, '--run-dir', runDir]);
    assertEndsWith(result, /done already holds a run; choose another run directory or resume it \(--resume /);
    assert.doesNotMatch(result.stderr, NO_STACK);
    const verbose = await cli(['train', config, '--run-dir', runDir, '--verbose']);
    assertEndsWith(verbose, /already holds a run/);
    assert.match(verbose.stderr, NO_STACK, 'with --verbose the stack trace is printed');
  });

  it('a resume under a changed config names the fields that differ', async () => {
    const changed = variant('changed', 'groupSize: 2', 'groupSize: 3');
    const result = await cli(['train', changed, '--resume', runDir]);
    assertEndsWith(
      result,
      /done was trained with another config; what differs from the config it was trained with:\n\s+algorithm\.groupSize: 2 → 3\n/,
    );
    assert.doesNotMatch(result.stderr, NO_STACK);
  });

  it('a resume refused when the recorded config shows no change says so, with both hashes and versions', async () => {
    // A run written by another version: its checkpoints carry another hash, its record no differing field.
    const other = path.join(workspace, 'runs', 'other-version');
    fs.cpSync(runDir, other, { recursive: true });
    for (const c of fs.readdirSync(path.join(other, 'checkpoints'))) {
      const state = path.join(other, 'checkpoints', c, 'trainer_state.json');
      fs.writeFileSync(
        state,
        fs.readFileSync(state, 'utf8').replace(/"configHash": "[0-9a-f]+"/, '"configHash": "0000000000000000"'),
      );
    }
    const runJson = path.join(other, 'run.json');
    const run = JSON.parse(fs.readFileSync(runJson, 'utf8')) as { versions: { rolloutStudio: string } };
    run.versions.rolloutStudio = '0.0.1';
    fs.writeFileSync(runJson, JSON.stringify(run));
    const result = await cli(['train', config, '--resume', other]);
    assertEndsWith(
      result,
      /other-version was trained with another config: its checkpoints were made under config hash 0000000000000000, this config's is [0-9a-f]{16}, yet run\.json's record of its config shows no field that differs \(the run was written by rollout-studio 0\.0\.1, this is [^)]+\)\nResume with the rollout-studio version and config it was trained with/,
    );
    assert.doesNotMatch(result.stderr, NO_STACK);
  });

  it('a run with no checkpoint to resume from', async () => {
    const bare = path.join(workspace, 'runs', 'bare');
    fs.cpSync(runDir, bare, { recursive: true });
    fs.rmSync(path.join(bare, 'checkpoints'), { recursive: true });
    const result = await cli(['train', config, '--resume', bare]);
    assertEndsWith(
      result,
      /bare: the run has no checkpoint to resume from \(it ended before its first one was saved\); start a new run instead/,
    );
    assert.doesNotMatch(result.stderr, NO_STACK);
  });

  it('a --resume of a folder that is not a run, or of one that is not there', async () => {
    const notARun = path.join(workspace, 'runs', 'not-a-run');
    fs.mkdirSync(notARun, { recursive: true });
    const result = await cli(['train', config, '--resume', notARun]);
    assertEndsWith(
      result,
      /not-a-run is not a Rollout Studio run \(it has no run\.json\); --resume takes the folder of an earlier run/,
    );
    assert.doesNotMatch(result.stderr, NO_STACK);
    const missing = await cli(['train', config, '--resume', path.join(workspace, 'runs', 'never')]);
    assertEndsWith(missing, /never does not exist; --resume takes the folder of an earlier run/);
    assert.doesNotMatch(missing.stderr, NO_STACK);
  });

  it('eval of a config that names no evaluation data', async () => {
    assert.doesNotMatch(fs.readFileSync(config, 'utf8'), /eval:/, 'the tiny config has no data.eval');
    const result = await cli(['eval', config, '--checkpoint', path.join(runDir, 'checkpoints', 'step-000001')]);
    assertEndsWith(result, /no evaluation data: set data\.eval or evaluation\.data, or pass --data/);
    assert.doesNotMatch(result.stderr, NO_STACK);
  });
});
