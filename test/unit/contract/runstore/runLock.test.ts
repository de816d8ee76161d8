/**
 * One writer per run directory: the lock is taken atomically (of processes racing for it exactly
 * one wins), names its holder when it refuses, is taken over when its holder is gone, and lets a
 * reader tell a run that is still being written from one whose writer was killed (interrupted).
 * A record written twice (two writers) is flagged by every reader instead of being taken.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  MetricsRecord,
  PROTOCOL_VERSION,
  TrajectoryRecordWithoutTokens,
  type RunLockRecord,
  type RunRecord,
} from '#trainer/contract/protocol';
import {
  JsonlTail,
  RunDirectoryLock,
  RunStoreReader,
  RunStoreWriter,
  listRuns,
  readRunLock,
} from '#trainer/contract/runstore';
import { metricsKey, trajectoryKey } from '#trainer/contract/runstore/recordKeys';
import { buildTrajectory } from '../../../fixtures/recordedRun';
import { LOCK_FILE, STALE_AFTER_MS } from '#trainer/contract/runstore/runLock';

const ROOT = path.resolve(__dirname, '../../../..');
const TSX = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

function tmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'run-lock-test-'));
}

function runRecord(id: string): RunRecord {
  return {
    protocol: PROTOCOL_VERSION,
    id,
    name: 'lock test',
    status: 'running',
    createdAt: new Date().toISOString(),
    algorithm: 'grpo',
    device: 'cpu',
    seed: 1,
    totalSteps: 3,
    model: { path: '/m', family: 'qwen3', parameters: 10, trainableParameters: 2 },
    versions: { rolloutStudio: '0.1.0', node: process.versions.node },
    config: {},
  };
}

/** The id of a process that has exited: no process has it now (ids are not reused this soon). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

function writeLock(dir: string, holder: Partial<RunLockRecord>): void {
  const now = new Date().toISOString();
  fs.writeFileSync(
    path.join(dir, LOCK_FILE),
    JSON.stringify({ pid: 1, host: os.hostname(), startedAt: now, heartbeatAt: now, ...holder }),
  );
}

/** A run.json left `running` by a writer that is no longer there, and no lock of its own. */
function abandonedRun(id: string): string {
  const dir = path.join(tmpDir(), id);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'run.json'), JSON.stringify(runRecord(id)));
  return dir;
}

describe('the run lock', () => {
  it('is held by the writer, names its holder when refused, and goes when the run ends', () => {
    const dir = path.join(tmpDir(), 'run');
    const writer = RunStoreWriter.create(dir, runRecord('run'));
    const holder = readRunLock(dir)!;
    assert.equal(holder.pid, process.pid);
    assert.equal(holder.host, os.hostname());
    assert.ok(Date.parse(holder.heartbeatAt) > 0);
    assert.throws(
      () => RunDirectoryLock.acquire(dir),
      (error: Error) => {
        assert.equal(error.name, 'RunLockedError');
        assert.match(
          error.message,
          new RegExp(`${dir} is being written by another process: pid ${process.pid} on ${os.hostname()}`),
        );
        assert.match(error.message, /wait for it to end, stop it, or train into another --run-dir/);
        return true;
      },
    );
    assert.equal(new RunStoreReader(dir).run().status, 'running');
    writer.finish('stopped');
    assert.equal(fs.existsSync(path.join(dir, LOCK_FILE)), false);
    assert.equal(new RunStoreReader(dir).run().status, 'stopped');
  });

  it('refreshes its heartbeat while held', async () => {
    const dir = tmpDir();
    const lock = RunDirectoryLock.acquire(dir, { heartbeatMs: 20 });
    const first = readRunLock(dir)!.heartbeatAt;
    const deadline = Date.now() + 5000;
    while (readRunLock(dir)?.heartbeatAt === first && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 10));
    assert.ok(Date.parse(readRunLock(dir)!.heartbeatAt) > Date.parse(first), 'the heartbeat moved on');
    lock.release();
  });

  it('takes over a lock whose holder is gone: a dead process, a reused process id, a silent other host', () => {
    const stale: Array<[string, Partial<RunLockRecord>]> = [
      ['dead process', { pid: deadPid() }],
      // The id now belongs to a process that started at another time (our parent, here).
      ['reused id', { pid: process.ppid, processStart: '1' }],
      [
        'other host',
        {
          pid: process.pid,
          host: 'elsewhere.example',
          heartbeatAt: new Date(Date.now() - STALE_AFTER_MS - 1000).toISOString(),
        },
      ],
    ];
    for (const [what, holder] of stale) {
      const dir = tmpDir();
      writeLock(dir, holder);
      const taken: RunLockRecord[] = [];
      const lock = RunDirectoryLock.acquire(dir, { onTakeover: (old) => taken.push(old) });
      assert.equal(taken.length, 1, what);
      assert.equal(readRunLock(dir)!.pid, process.pid, what);
      lock.release();
    }
    // Alive: a live process on this host (however old its heartbeat), a fresh heartbeat on another host.
    for (const [what, holder] of [
      ['live process', { pid: process.ppid, heartbeatAt: '2000-01-01T00:00:00Z' }],
      ['other host, fresh', { pid: 99, host: 'elsewhere.example' }],
    ] as Array<[string, Partial<RunLockRecord>]>) {
      const dir = tmpDir();
      writeLock(dir, holder);
      assert.throws(() => RunDirectoryLock.acquire(dir), /is being written by another process/, what);
    }
  });

  it('goes to exactly one of several processes that race for it', async () => {
    const dir = tmpDir();
    const script = `const { RunDirectoryLock } = require(${JSON.stringify(path.join(ROOT, 'trainer/contract/runstore/runLock.ts'))});
      const start = Number(process.argv[1]); while (Date.now() < start) {}
      try { RunDirectoryLock.acquire(${JSON.stringify(dir)}); process.stdout.write('won'); setTimeout(() => {}, 1500); } catch (e) { process.stdout.write(e.name); }`;
    const start = Date.now() + 2500;
    const results = await Promise.all(
      Array.from({ length: 4 }, () => {
        const child = spawn(process.execPath, ['--import', TSX, '-e', script, String(start)], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let out = '';
        child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
        return new Promise<string>((resolve) => child.on('close', () => resolve(out)));
      }),
    );
    assert.deepEqual(results.sort(), ['RunLockedError', 'RunLockedError', 'RunLockedError', 'won']);
  });
});

describe('a reader of a run whose writer is gone', () => {
  it('shows it interrupted: killed (its lock names a dead process) or without a lock at all', () => {
    const killed = abandonedRun('killed');
    writeLock(killed, { pid: deadPid() });
    assert.equal(new RunStoreReader(killed).run().status, 'interrupted');
    const unlocked = abandonedRun('unlocked');
    assert.equal(new RunStoreReader(unlocked).run().status, 'interrupted');
    assert.deepEqual(
      listRuns(path.dirname(killed)).map((r) => r.run?.status),
      ['interrupted'],
    );
    // run.json itself is left as it was: the status is what the reader concludes.
    assert.equal(JSON.parse(fs.readFileSync(path.join(killed, 'run.json'), 'utf8')).status, 'running');
    // A live writer elsewhere on this host: still running.
    const live = abandonedRun('live');
    writeLock(live, { pid: process.ppid });
    assert.equal(new RunStoreReader(live).run().status, 'running');
  });
});

describe('records written twice', () => {
  it('are an error naming both lines for the reader, and a reported, skipped line for a follower', () => {
    const dir = path.join(tmpDir(), 'twice');
    const writer = RunStoreWriter.create(dir, runRecord('twice'));
    const metrics = (step: number): MetricsRecord => ({
      step,
      time: new Date().toISOString(),
      kind: 'train',
      values: { 'reward/mean': step },
    });
    // What two trainers writing one run left behind (steps 1, 2, 1).
    for (const step of [1, 2, 1]) writer.appendMetrics(metrics(step));
    const file = path.join(dir, 'metrics.jsonl');
    assert.throws(
      () => new RunStoreReader(dir).metrics(),
      new RegExp(`${file} line 3: train step 1 is recorded twice \\(first at line 1\\) — two processes wrote this run`),
    );
    const tail = new JsonlTail(file, MetricsRecord, { key: metricsKey });
    const read = tail.read();
    assert.deepEqual(
      read.records.map((r) => r.step),
      [1, 2],
    );
    assert.equal(read.errors.length, 1);
    assert.match(read.errors[0], /line 3: train step 1 is recorded twice/);
    // The same step of another kind is no duplicate.
    writer.appendMetrics({ ...metrics(1), kind: 'eval' });
    assert.deepEqual(
      tail.read().records.map((r) => `${r.kind} ${r.step}`),
      ['eval 1'],
    );
    writer.finish('finished');
  });

  it('flags a trajectory index recorded twice in a step', () => {
    const dir = path.join(tmpDir(), 'twice-trajectories');
    const writer = RunStoreWriter.create(dir, runRecord('twice-trajectories'));
    const random = () => 0.5;
    writer.appendTrajectories(1, [buildTrajectory(1, 0, 2, random), buildTrajectory(1, 1, 2, random)]);
    writer.appendTrajectories(1, [buildTrajectory(1, 0, 2, random)]);
    writer.finish('finished');
    const file = path.join(dir, 'rollouts', 'step-000001.jsonl');
    assert.throws(
      () => new RunStoreReader(dir).trajectories(1),
      new RegExp(`${file} line 3: trajectory index 0 is recorded twice \\(first at line 1\\)`),
    );
    const read = new JsonlTail(file, TrajectoryRecordWithoutTokens, { key: trajectoryKey }).read();
    assert.deepEqual(
      read.records.map((r) => r.index),
      [0, 1],
    );
    assert.match(read.errors.join('\n'), /line 3: trajectory index 0 is recorded twice \(first at line 1\)/);
  });
});
