/**
 * A reward that never returns (`while (true) {}`) cannot take a training down with it, with real
 * trainer processes on the tiny agent (issue 53):
 * - its deadline (`rewards.timeoutMs`) ends it: the trajectory records a named timeout and the
 *   run goes on to finish;
 * - SIGTERM while it spins stops the run cleanly: `stopped`, its lock released, exit 143;
 * - a launcher killed with SIGKILL while it spins takes its trainer with it — and so it does while
 *   a tool kept on the trainer's thread (`isolation: 'trainer'`) spins there, since the launcher's
 *   pipe is watched from a thread of its own.
 * On the trainer's own thread each of these hangs: no timer, signal handler or pipe watchdog runs
 * while a reward spins there; the rewards run in a reward worker (usercode/rewardHost.ts).
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ALLOCATOR_ENV } from '#trainer/contract/allocatorEnv';
import { readRunLock } from '#trainer/contract/runstore/runLock';
import { writeTinyAgentWorkspace } from '../../fixtures/tinyAgent';
import { startCli, type CliProcess } from '../../helpers/cliProcess';
import { processAlive, processGone, readRun } from '../../helpers/liveTraining';

let workspace: string;
const started: CliProcess[] = [];
const trainerPids: number[] = [];

before(() => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'spinning-reward-'));
});
after(() => {
  // A test that failed on a hang leaves no spinning process behind (each by its own id).
  for (const cli of started) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
  for (const pid of trainerPids) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
  fs.rmSync(workspace, { recursive: true, force: true });
});

const EXAMPLE_TOOLS = path.resolve(__dirname, '../../../examples/multihop-search/tools');

async function until(what: string, check: () => boolean, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The tiny agent's config with one more outcome reward, `spin`: it scores 0 until `when` says
 * spin, then writes `marker` (so a test knows) and loops forever.
 */
async function spinningWorkspace(
  name: string,
  options: { steps: number; timeoutMs: number; when: 'once' | 'flag' },
): Promise<{ config: string; flag: string; marker: string; runDir: string }> {
  const dir = path.join(workspace, name);
  const config = await writeTinyAgentWorkspace(dir, { steps: options.steps, name });
  const flag = path.join(dir, 'spin.flag');
  const marker = path.join(dir, 'spinning.marker');
  const spins =
    options.when === 'once' ? `!fs.existsSync(${JSON.stringify(marker)})` : `fs.existsSync(${JSON.stringify(flag)})`;
  const text = fs.readFileSync(config, 'utf8');
  const spinning = `rewards: {
    ...rewards,
    timeoutMs: ${options.timeoutMs},
    outcome: [
      ...rewards.outcome,
      {
        name: 'spin',
        score: () => {
          if (${spins}) {
            fs.writeFileSync(${JSON.stringify(marker)}, String(process.pid));
            for (;;) {}
          }
          return 0;
        },
      },
    ],
  },`;
  assert.ok(text.includes('\n  rewards,\n'));
  fs.writeFileSync(config, `import * as fs from 'node:fs';\n${text.replace('\n  rewards,\n', `\n  ${spinning}\n`)}`);
  return { config, flag, marker, runDir: path.join(dir, 'run') };
}

function lastStep(runDir: string): number {
  try {
    return readRun(runDir).lastStep ?? -1;
  } catch {
    return -1;
  }
}

describe('a reward that never returns', { timeout: 300_000 }, () => {
  it('is ended by its timeout: the trajectory records a named timeout and the run finishes', async () => {
    const { config, runDir } = await spinningWorkspace('timeout', { steps: 2, timeoutMs: 2_000, when: 'once' });
    const cli = startCli(['train', config, '--run-dir', runDir], { cwd: path.dirname(config) });
    started.push(cli);
    const result = await cli.done;
    assert.equal(result.code, 0, result.stderr);
    assert.equal(readRun(runDir).status, 'finished');
    const records = fs
      .readFileSync(path.join(runDir, 'rollouts', 'step-000001.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { rewards: { components: Record<string, number>; errors?: unknown[] } });
    const timedOut = records.filter((r) => r.rewards.errors?.length);
    assert.ok(timedOut.length >= 1, 'a trajectory records the timeout');
    const [error] = timedOut[0].rewards.errors as { reward: string; kind: string; message: string }[];
    assert.equal(error.reward, 'spin');
    assert.equal(error.kind, 'timeout');
    assert.match(
      error.message,
      /^outcome reward "spin" on trajectory \d+ .* did not return within 2000 ms \(rewards\.timeoutMs\)$/,
    );
    assert.equal(timedOut[0].rewards.components.spin, 0, 'a timed-out outcome reward counts as 0');
    assert.ok(
      records.every((r) => typeof r.rewards.components.exact_match === 'number'),
      'the other rewards scored',
    );
  });

  it('is ended by its timeout in `eval` too: the evaluation finishes', async () => {
    const { config } = await spinningWorkspace('eval', { steps: 1, timeoutMs: 2_000, when: 'once' });
    const dir = path.dirname(config);
    const cli = startCli(
      [
        'eval',
        config,
        '--checkpoint',
        path.join(dir, 'model'),
        '--data',
        'data/train.jsonl',
        '--samples',
        '2',
        '--json',
      ],
      { cwd: dir },
    );
    started.push(cli);
    const result = await cli.done;
    assert.equal(result.code, 0, result.stderr);
    assert.ok(fs.existsSync(path.join(dir, 'spinning.marker')), 'the reward spun');
  });

  it('SIGTERM while it spins stops the run cleanly: stopped, lock released, exit 143', async () => {
    const { config, flag, marker, runDir } = await spinningWorkspace('sigterm', {
      steps: 30,
      timeoutMs: 600_000,
      when: 'flag',
    });
    const trainer = startCli(['train', config, '--run-dir', runDir], { cwd: path.dirname(config) });
    started.push(trainer);
    await until('step 1', () => lastStep(runDir) >= 1);
    fs.writeFileSync(flag, '');
    await until('the reward to spin', () => fs.existsSync(marker));
    trainer.child.kill('SIGTERM');
    const signalled = Date.now();
    const result = await Promise.race([
      trainer.done,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`still running 30 s after SIGTERM: ${trainer.stderr()}`)), 30_000),
      ),
    ]);
    assert.ok(Date.now() - signalled < 30_000);
    assert.equal(result.code, 143, result.stderr);
    const run = readRun(runDir);
    assert.equal(run.status, 'stopped');
    assert.equal(readRunLock(runDir), undefined, 'its lock is gone');
  });

  it('a launcher killed with SIGKILL while it spins leaves no trainer process', async () => {
    const spinning = await spinningWorkspace('launcher', { steps: 30, timeoutMs: 600_000, when: 'flag' });
    await killLauncherWhileSpinning(spinning);
  });

  it("a launcher killed with SIGKILL while a tool with isolation: 'trainer' spins leaves no trainer process", async () => {
    const dir = path.join(workspace, 'trainer-tool');
    fs.mkdirSync(dir, { recursive: true });
    const flag = path.join(dir, 'spin.flag');
    const marker = path.join(dir, 'spinning.marker');
    const toolsModule = path.join(dir, 'spinningTools.ts');
    // The example's tools as the tiny agent was warm-started to call them, kept on the trainer's thread.
    fs.writeFileSync(
      toolsModule,
      `import * as fs from 'node:fs';
import { tools as exampleTools } from ${JSON.stringify(EXAMPLE_TOOLS)};
export const tools = exampleTools.map((tool) => Object.assign(Object.create(Object.getPrototypeOf(tool)), tool, {
  isolation: 'trainer',
  execute: (args: never, ctx: never) => {
    if (fs.existsSync(${JSON.stringify(flag)})) {
      fs.writeFileSync(${JSON.stringify(marker)}, '');
      for (;;) {}
    }
    return tool.execute(args, ctx);
  },
}));
`,
    );
    const config = await writeTinyAgentWorkspace(dir, { steps: 30, toolsModule, name: 'trainer-tool' });
    await killLauncherWhileSpinning({ config, flag, marker, runDir: path.join(dir, 'run') });
  });
});

/** Start `train` as from a shell, make it spin after step 1, kill its launcher: the trainer must go too. */
async function killLauncherWhileSpinning(spinning: {
  config: string;
  flag: string;
  marker: string;
  runDir: string;
}): Promise<void> {
  const { config, flag, marker, runDir } = spinning;
  // Started as from a shell without MALLOC_* settings: the CLI runs the trainer as a second process.
  const env = Object.fromEntries(Object.keys(ALLOCATOR_ENV).map((name) => [name, undefined]));
  const launcher = startCli(['train', config, '--run-dir', runDir], { cwd: path.dirname(config), env });
  started.push(launcher);
  await until('step 1', () => lastStep(runDir) >= 1);
  const trainerPid = readRunLock(runDir)?.pid;
  assert.ok(trainerPid !== undefined && trainerPid !== launcher.child.pid, 'the run is written by a second process');
  trainerPids.push(trainerPid);
  fs.writeFileSync(flag, '');
  await until('the reward to spin', () => fs.existsSync(marker));
  launcher.child.kill('SIGKILL');
  await launcher.done;
  await processGone(trainerPid, 10_000);
}
