import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RunDirectorySource } from '../../../extension/panels/source/runDirectorySource';
import { RunSources } from '../../../extension/panels/source/registry';
import type { RunUpdate } from '../../../extension/panels/source/runSource';
import { buildTrajectory, writeRecordedRun, recordedRunWriter } from '../../fixtures/recordedRun';
import { RunStoreReader } from '#trainer/contract/runstore';

function recordedRun(options: { steps: number; batch: number; status?: 'running' | 'finished' }): string {
  return writeRecordedRun(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'source-test-')), 'run-1'), {
    groupSize: 4,
    seed: 3,
    ...options,
  });
}

function random(): () => number {
  let s = 42;
  return () => (s = (s * 16807) % 2147483647) / 2147483647;
}

/** A source that only looks when told to (no watcher, no timer), recording its updates. */
function manualSource(dir: string, cachedSteps?: number): { source: RunDirectorySource; updates: RunUpdate[] } {
  const source = new RunDirectorySource(dir, {
    pollIntervalMs: 0,
    watch: false,
    ...(cachedSteps !== undefined ? { cachedSteps } : {}),
  });
  const updates: RunUpdate[] = [];
  source.onUpdate((u) => updates.push(u));
  return { source, updates };
}

describe('RunDirectorySource', () => {
  it('reads the run, its steps and its metrics, and a step’s trajectories as rows', () => {
    const dir = recordedRun({ steps: 3, batch: 8 });
    const { source } = manualSource(dir);
    assert.equal(source.run().id, 'run-1');
    assert.deepEqual(source.steps(), [1, 2, 3]);
    assert.equal(source.metrics().length, 3);
    const rows = source.rows(2);
    assert.equal(rows.length, 8);
    const record = new RunStoreReader(dir).trajectories(2).records[5];
    const row = rows.find((r) => r.index === 5)!;
    assert.equal(row.reward, record.rewards.total);
    assert.equal(row.toolCalls, record.turns.flatMap((t) => t.toolCalls ?? []).length);
    assert.equal(row.errors, record.turns.flatMap((t) => t.toolCalls ?? []).filter((c) => c.error).length);
    assert.deepEqual(source.trajectory(2, 5), record);
    assert.equal(source.trajectory(2, 99), undefined);
    source.dispose();
  });

  it('shows a running run as interrupted once its writer is gone, though run.json did not change', () => {
    const dir = recordedRun({ steps: 2, batch: 4, status: 'running' });
    const { source, updates } = manualSource(dir);
    assert.equal(source.run().status, 'running');
    const before = fs.readFileSync(path.join(dir, 'run.json'), 'utf8');
    // The writer goes away without finishing the run (a killed trainer leaves its lock behind; none at all reads the same).
    recordedRunWriter(dir).close();
    source.refresh();
    assert.equal(fs.readFileSync(path.join(dir, 'run.json'), 'utf8'), before);
    assert.equal(source.run().status, 'interrupted');
    assert.deepEqual(
      updates.filter((u) => u.type === 'run').map((u) => u.type === 'run' && u.run.status),
      ['interrupted'],
    );
    source.dispose();
  });

  it('reports a record written twice instead of showing it', () => {
    const dir = recordedRun({ steps: 2, batch: 4, status: 'running' });
    const { source } = manualSource(dir);
    const writer = recordedRunWriter(dir);
    writer.appendMetrics({ step: 2, time: new Date().toISOString(), kind: 'train', values: { 'reward/mean': 9 } });
    writer.appendTrajectories(2, [buildTrajectory(2, 1, 4, random())]);
    source.refresh();
    assert.deepEqual(
      source.metrics().map((m) => m.step),
      [1, 2],
    );
    assert.equal(source.metrics()[1].values['reward/mean'] === 9, false, 'the second record of step 2 is not taken');
    assert.equal(source.rows(2).length, 4);
    assert.match(
      source.errors().join('\n'),
      /metrics\.jsonl line 3: train step 2 is recorded twice \(first at line 2\)/,
    );
    assert.match(
      source.errors().join('\n'),
      /step-000002\.jsonl line 5: trajectory index 1 is recorded twice \(first at line 2\)/,
    );
    writer.finish('finished');
    source.dispose();
  });

  it('reports appended metrics, a new step, rows of a followed step and run.json changes', () => {
    const dir = recordedRun({ steps: 2, batch: 4, status: 'running' });
    const { source, updates } = manualSource(dir);
    const release = source.follow(3);
    assert.deepEqual(source.rows(3), []);
    const writer = recordedRunWriter(dir);
    updates.length = 0;
    source.refresh();
    assert.equal(updates.length, 0, 'reopening with the same content changes nothing visible');

    const rng = random();
    writer.appendTrajectories(3, [buildTrajectory(3, 0, 4, rng), buildTrajectory(3, 1, 4, rng)]);
    writer.appendMetrics({ step: 3, time: new Date().toISOString(), kind: 'train', values: { 'reward/mean': 0.5 } });
    source.refresh();
    assert.deepEqual(
      updates.map((u) => u.type),
      ['steps', 'metrics', 'rows'],
    );
    assert.deepEqual((updates[0] as { steps: number[] }).steps, [1, 2, 3]);
    assert.equal((updates[1] as { records: unknown[] }).records.length, 1);
    assert.deepEqual(
      (updates[2] as { rows: Array<{ index: number }> }).rows.map((r) => r.index),
      [0, 1],
    );

    updates.length = 0;
    writer.appendTrajectories(3, [buildTrajectory(3, 2, 4, rng)]);
    writer.finish('finished');
    source.refresh();
    assert.deepEqual(
      updates.map((u) => u.type),
      ['run', 'rows'],
    );
    assert.equal((updates[0] as { run: { status: string } }).run.status, 'finished');
    assert.equal(source.rows(3).length, 3);
    assert.equal(source.metrics().length, 3);
    release();
    source.dispose();
  });

  it('reports a record that does not validate, once, and goes on', () => {
    const dir = recordedRun({ steps: 1, batch: 2 });
    const { source, updates } = manualSource(dir);
    fs.appendFileSync(path.join(dir, 'metrics.jsonl'), '{"step":2,"kind":"train"}\n');
    source.refresh();
    source.refresh();
    const errors = updates.filter((u) => u.type === 'error');
    assert.equal(errors.length, 1);
    assert.match((errors[0] as { message: string }).message, /metrics\.jsonl line 2: .*time/);
    assert.deepEqual(source.errors().slice(-1), [(errors[0] as { message: string }).message]);
    source.dispose();
  });

  it('says what is wrong when the directory is not a run', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'not-a-run-'));
    assert.throws(
      () => new RunDirectorySource(dir, { pollIntervalMs: 0, watch: false }),
      /run\.json: not found .* is not a Rollout Studio run directory/,
    );
  });

  it('keeps followed steps and drops the least recently used others', () => {
    const dir = recordedRun({ steps: 4, batch: 2, status: 'running' });
    const { source, updates } = manualSource(dir, 1);
    source.follow(1);
    source.rows(2);
    source.rows(3); // evicts step 2, never the followed step 1
    const writer = recordedRunWriter(dir);
    const rng = random();
    for (const step of [1, 2, 3]) writer.appendTrajectories(step, [buildTrajectory(step, 9, 4, rng)]);
    source.refresh();
    const rowSteps = updates.filter((u) => u.type === 'rows').map((u) => (u as { step: number }).step);
    assert.deepEqual(rowSteps.sort(), [1, 3]);
    assert.equal(source.rows(2).length, 3, 'a dropped step is read again, whole, when asked for');
    source.dispose();
  });

  it('reads a large step a part at a time, the later rows arriving as updates', async () => {
    const dir = recordedRun({ steps: 1, batch: 40 });
    const source = new RunDirectorySource(dir, { pollIntervalMs: 0, watch: false, readBudgetBytes: 20_000 });
    const updates: RunUpdate[] = [];
    source.onUpdate((u) => updates.push(u));
    const first = source.rows(1).length;
    assert.ok(first > 0 && first < 40, `${first} rows in the first part`);
    await source.whenRead(1);
    const later = updates
      .filter((u) => u.type === 'rows')
      .flatMap((u) => (u as { rows: Array<{ index: number }> }).rows.map((r) => r.index));
    assert.ok(updates.filter((u) => u.type === 'rows').length >= 2, 'several parts');
    assert.equal(first + later.length, 40);
    assert.deepEqual(
      source.rows(1).map((r) => r.index),
      Array.from({ length: 40 }, (_, i) => i),
    );
    assert.equal(source.trajectory(1, 39)?.index, 39);
    source.dispose();
  });

  it('notices appends by itself (watching, polling)', async () => {
    const dir = recordedRun({ steps: 1, batch: 2, status: 'running' });
    const source = new RunDirectorySource(dir, { pollIntervalMs: 200 });
    const got = new Promise<RunUpdate>((resolve) => source.onUpdate((u) => u.type === 'metrics' && resolve(u)));
    const writer = recordedRunWriter(dir);
    writer.appendMetrics({ step: 2, time: new Date().toISOString(), kind: 'train', values: { 'reward/mean': 1 } });
    const update = await Promise.race([got, new Promise<undefined>((r) => setTimeout(() => r(undefined), 3000))]);
    assert.ok(update, 'no metrics update within 3 s');
    source.dispose();
  });
});

describe('RunSources', () => {
  it('shares one source per run directory and disposes it with its last user', () => {
    const dir = recordedRun({ steps: 1, batch: 2 });
    let created = 0;
    let disposed = 0;
    const sources = new RunSources((d) => {
      created++;
      const source = new RunDirectorySource(d, { pollIntervalMs: 0, watch: false });
      const dispose = source.dispose.bind(source);
      source.dispose = () => {
        disposed++;
        dispose();
      };
      return source;
    });
    const a = sources.acquire(dir);
    const b = sources.acquire(`${dir}/`);
    assert.equal(a.source, b.source);
    assert.equal(created, 1);
    a.release();
    a.release();
    assert.equal(disposed, 0);
    b.release();
    assert.equal(disposed, 1);
    assert.equal(sources.size, 0);
  });
});
