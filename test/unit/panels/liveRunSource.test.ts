import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LiveTrainings, type LiveTraining } from '../../../extension/live/liveTrainings';
import { LiveRunSource } from '../../../extension/panels/source/liveRunSource';
import { RunSources } from '../../../extension/panels/source/registry';
import { RunDirectorySource } from '../../../extension/panels/source/runDirectorySource';
import type { RunUpdate } from '../../../extension/panels/source/runSource';
import { latestTrainMetrics, runStatusText } from '../../../extension/panels/runStatusText';
import { PROTOCOL_VERSION, type TrainingEvent } from '#trainer/contract/protocol';
import { RunStoreReader } from '#trainer/contract/runstore';
import { buildTrajectory, writeRecordedRun, recordedRunWriter } from '../../fixtures/recordedRun';

/** A training's event feed, driven by the test (the real one is LiveTarget's). */
function fakeTraining(runDirectory: string): LiveTraining & { emit(event: TrainingEvent): void; active: boolean } {
  const listeners = new Set<(event: TrainingEvent) => void>();
  return {
    runDirectory,
    config: path.join(runDirectory, 'x.config.ts'),
    pid: 1234,
    active: true,
    onEvent: (listener) => (listeners.add(listener), () => listeners.delete(listener)),
    emit: (event) => listeners.forEach((l) => l(event)),
  };
}

function random(): () => number {
  let s = 7;
  return () => (s = (s * 16807) % 2147483647) / 2147483647;
}

describe('LiveRunSource', () => {
  it('reads the run store when the trainer says it changed, and passes the phase in flight on', () => {
    const dir = writeRecordedRun(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'live-source-')), 'run-1'), {
      steps: 1,
      batch: 4,
      groupSize: 2,
      seed: 5,
      status: 'running',
    });
    const training = fakeTraining(dir);
    const source = new LiveRunSource(dir, training);
    const updates: RunUpdate[] = [];
    source.onUpdate((u) => updates.push(u));
    assert.deepEqual(source.steps(), [1]);
    assert.equal(source.progress(), undefined);

    training.emit({
      protocol: PROTOCOL_VERSION,
      type: 'progress',
      step: 2,
      phase: 'rollout',
      done: 1,
      total: 4,
      tokensPerSecond: 321,
    });
    assert.deepEqual(source.progress(), { step: 2, phase: 'rollout', done: 1, total: 4, tokensPerSecond: 321 });
    assert.equal(updates.at(-1)?.type, 'progress');
    const text = runStatusText(source.run(), latestTrainMetrics(source.metrics()), source.progress()).text;
    assert.match(
      text,
      /^\$\(pulse\) step 2\/1 · rollout 1\/4 · reward -?\d\.\d{3} · exact_match \d\.\d{3} · 321 tok\/s$/,
    );

    // The trainer writes step 2, then says so: nothing is read before that (no watcher, no poll).
    const writer = recordedRunWriter(dir);
    const rng = random();
    writer.appendTrajectories(
      2,
      [0, 1, 2, 3].map((i) => buildTrajectory(2, i, 2, rng)),
    );
    writer.appendMetrics({ step: 2, time: new Date().toISOString(), kind: 'train', values: { 'reward/mean': 0.25 } });
    writer.completeStep(2);
    updates.length = 0;
    assert.deepEqual(source.steps(), [1]);
    training.emit({
      protocol: PROTOCOL_VERSION,
      type: 'metrics',
      record: { step: 2, time: 't', kind: 'train', values: { 'reward/mean': 0.25 } },
    });
    training.emit({ protocol: PROTOCOL_VERSION, type: 'step.completed', step: 2 });
    assert.deepEqual(source.steps(), [1, 2]);
    assert.equal(source.metrics().at(-1)?.values['reward/mean'], 0.25);
    assert.deepEqual([...new Set(updates.map((u) => u.type))].sort(), ['metrics', 'run', 'steps']);
    assert.equal(source.rows(2).length, 4);

    writer.finish('finished');
    training.emit({ protocol: PROTOCOL_VERSION, type: 'run.ended', run: new RunStoreReader(dir).run() });
    assert.equal(source.run().status, 'finished');
    assert.equal(source.progress(), undefined);
    source.dispose();
  });

  it('is what the panels get for a run a training in this window writes; other runs are read from disk', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'live-sources-'));
    const liveDir = writeRecordedRun(path.join(root, 'live'), {
      steps: 1,
      batch: 2,
      groupSize: 2,
      seed: 1,
      status: 'running',
    });
    const diskDir = writeRecordedRun(path.join(root, 'disk'), { steps: 1, batch: 2, groupSize: 2, seed: 2 });
    const trainings = new LiveTrainings();
    const changes: string[] = [];
    trainings.onChange((c) => changes.push(`${c.type} ${path.basename(c.training.runDirectory)}`));
    const training = fakeTraining(liveDir);
    trainings.started(training);
    const sources = new RunSources((dir) => {
      const live = trainings.get(dir);
      return live?.active
        ? new LiveRunSource(dir, live)
        : new RunDirectorySource(dir, { pollIntervalMs: 0, watch: false });
    });
    const live = sources.acquire(liveDir + '/');
    const disk = sources.acquire(diskDir);
    assert.ok(live.source instanceof LiveRunSource);
    assert.ok(disk.source instanceof RunDirectorySource);
    trainings.ended(training);
    assert.equal(trainings.get(liveDir), undefined);
    assert.deepEqual(changes, ['started live', 'ended live']);
    live.release();
    disk.release();
  });
});
