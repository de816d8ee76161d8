import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import {
  resolveTrainerRuntime,
  runTrainer,
  TrainerProcess,
  TrainerProcessError,
  type TrainerRuntime,
} from '../../../extension/trainerProcess';
import { ALLOCATOR_ENV } from '#trainer/contract/allocatorEnv';

const fixtures = path.resolve(__dirname, '../../fixtures/trainers');
const node: TrainerRuntime = { command: process.execPath, env: process.env, description: "the test runner's Node" };

async function failure(promise: Promise<unknown>): Promise<TrainerProcessError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof TrainerProcessError, `expected a TrainerProcessError, got ${error}`);
    return error;
  }
  assert.fail('expected the trainer request to fail');
}

describe('resolveTrainerRuntime', () => {
  it("uses VS Code's own runtime as Node when no path is configured", () => {
    const runtime = resolveTrainerRuntime('', { PATH: '/bin' });
    assert.equal(runtime.command, process.execPath);
    assert.equal(runtime.env.ELECTRON_RUN_AS_NODE, '1');
    assert.equal(runtime.env.PATH, '/bin');
  });

  it('uses the configured Node, trimmed, and says so', () => {
    const runtime = resolveTrainerRuntime('  /opt/node/bin/node ', {});
    assert.equal(runtime.command, '/opt/node/bin/node');
    assert.match(runtime.description, /rolloutStudio\.trainer\.nodePath/);
  });
});

describe('runTrainer', () => {
  it('names the missing executable and the setting to fix', async () => {
    const error = await failure(
      runTrainer({
        use: { action: 'A test', runs: 'a test trainer' },
        runtime: { ...node, command: '/no/such/node', description: 'the configured /no/such/node' },
        cliPath: path.join(fixtures, 'silent-trainer.js'),
        args: [],
      }),
    );
    assert.match(error.title, /Could not start the trainer with the configured \/no\/such\/node/);
    assert.match(error.detail, /ENOENT/);
    assert.match(error.detail, /rolloutStudio\.trainer\.nodePath/);
  });

  it('says the trainer bundle is missing instead of spawning', async () => {
    const error = await failure(
      runTrainer({
        use: { action: 'A test', runs: 'a test trainer' },
        runtime: node,
        cliPath: '/nowhere/cli.js',
        args: [],
      }),
    );
    assert.match(error.title, /missing from the extension/);
    assert.match(error.detail, /\/nowhere\/cli\.js/);
  });

  it('rejects a message that breaks the protocol and names the field', async () => {
    const error = await failure(
      runTrainer({
        use: { action: 'A test', runs: 'a test trainer' },
        runtime: node,
        cliPath: path.join(fixtures, 'invalid-message-trainer.js'),
        args: [],
      }),
    );
    assert.match(error.title, /does not understand/);
    assert.match(error.detail, /report\.runtime: Invalid input/);
  });

  it("passes the trainer's own fatal error on", async () => {
    const error = await failure(
      runTrainer({
        use: { action: 'A test', runs: 'a test trainer' },
        runtime: node,
        cliPath: path.join(fixtures, 'fatal-trainer.js'),
        args: [],
      }),
    );
    assert.equal(error.title, 'The trainer failed.');
    assert.equal(error.detail, 'config.ts: model.path: expected a folder');
  });

  it('reports the exit code and the last lines of stderr of a trainer that dies', async () => {
    const error = await failure(
      runTrainer({
        use: { action: 'A test', runs: 'a test trainer' },
        runtime: { ...node, command: path.join(fixtures, 'crashing-node.sh') },
        cliPath: path.join(fixtures, 'silent-trainer.js'),
        args: [],
      }),
    );
    assert.match(error.title, /exited with code 3/);
    assert.match(error.detail, /simulated crash: out of memory/);
  });

  it('stops a trainer that does not answer in time', async () => {
    const started = Date.now();
    const error = await failure(
      runTrainer({
        use: { action: 'A test', runs: 'a test trainer' },
        runtime: node,
        cliPath: path.join(fixtures, 'silent-trainer.js'),
        args: [],
        timeoutMs: 300,
      }),
    );
    assert.match(error.title, /did not answer in time/);
    assert.ok(Date.now() - started < 10_000);
  });
});

describe('TrainerProcess', () => {
  it('kills a trainer that does not stop within the timeout, and says it was killed', async () => {
    const trainer = TrainerProcess.start(
      { runtime: node, cliPath: path.join(fixtures, 'silent-trainer.js') },
      { use: { action: 'A test', runs: 'a test trainer' }, args: [] },
    );
    assert.ok(trainer.pid !== undefined && trainer.running);
    const started = Date.now();
    const exit = await trainer.stop(300);
    assert.equal(exit.killed, true);
    assert.equal(exit.signal, 'SIGKILL');
    assert.equal(exit.error, undefined, 'a kill the extension asked for is not a trainer failure');
    assert.equal(trainer.running, false);
    assert.ok(Date.now() - started < 10_000);
    assert.equal(trainer.send({ type: 'stop' }), false, 'nothing is sent to a trainer that has exited');
  });

  it('hands each validated message over, and a fatal one as the exit error', async () => {
    const messages: string[] = [];
    const trainer = TrainerProcess.start(
      { runtime: node, cliPath: path.join(fixtures, 'fatal-trainer.js') },
      { use: { action: 'A test', runs: 'a test trainer' }, args: [], onMessage: (m) => messages.push(m.type) },
    );
    const exit = await trainer.exited;
    assert.deepEqual(messages, ['fatal']);
    assert.equal(exit.error?.detail, 'config.ts: model.path: expected a folder');
  });

  it('reads the inspector port the trainer prints when started with the Node inspector', async () => {
    let inspector: { url: string; port: number } | undefined;
    const trainer = TrainerProcess.start(
      { runtime: node, cliPath: path.join(fixtures, 'silent-trainer.js') },
      {
        use: { action: 'A test', runs: 'a test trainer' },
        args: [],
        inspect: true,
        onInspector: (i) => (inspector = i),
      },
    );
    const deadline = Date.now() + 10_000;
    while (!inspector && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    await trainer.stop(200);
    assert.ok(inspector, 'no inspector URL was read from stderr');
    assert.ok(inspector.port > 0);
    assert.match(inspector.url, new RegExp(`^ws://127\\.0\\.0\\.1:${inspector.port}/`));
  });

  /** The MALLOC_* variables the fixture trainer saw, started with `env`. */
  async function allocatorSettingsSeen(env: NodeJS.ProcessEnv): Promise<Record<string, string | null>> {
    let stdout = '';
    const trainer = TrainerProcess.start(
      { runtime: { ...node, env }, cliPath: path.join(fixtures, 'allocator-env-trainer.js') },
      {
        use: { action: 'A test', runs: 'a test trainer' },
        args: [],
        onOutput: (text, stream) => (stream === 'stdout' ? (stdout += text) : undefined),
      },
    );
    await trainer.exited;
    return JSON.parse(stdout) as Record<string, string | null>;
  }

  it("starts the trainer with the allocator settings on Linux, and keeps a user's own", async (t) => {
    if (process.platform !== 'linux') return t.skip('the settings apply to Linux only');
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('MALLOC_')));
    assert.deepEqual(await allocatorSettingsSeen(clean), ALLOCATOR_ENV);
    assert.deepEqual(await allocatorSettingsSeen({ ...clean, MALLOC_ARENA_MAX: '4' }), {
      MALLOC_ARENA_MAX: '4',
      MALLOC_MMAP_MAX_: null,
      MALLOC_TRIM_THRESHOLD_: null,
    });
  });
});
