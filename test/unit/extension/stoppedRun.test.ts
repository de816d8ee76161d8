import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { markRunStopped } from '../../../extension/live/stoppedRun';
import { RunStoreReader } from '#trainer/contract/runstore';
import { writeRecordedRun } from '../../fixtures/recordedRun';

describe('markRunStopped (a trainer that had to be killed)', () => {
  it('marks a running run stopped and leaves its records as they were', () => {
    const dir = writeRecordedRun(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'stopped-run-')), 'run'), {
      steps: 2,
      batch: 2,
      groupSize: 2,
      seed: 3,
      status: 'running',
    });
    const before = fs.readFileSync(path.join(dir, 'rollouts', 'step-000002.jsonl'), 'utf8');
    assert.equal(markRunStopped(dir), true);
    const run = new RunStoreReader(dir).run();
    assert.equal(run.status, 'stopped');
    assert.ok(run.endedAt);
    assert.equal(run.lastStep, 2);
    assert.equal(fs.readFileSync(path.join(dir, 'rollouts', 'step-000002.jsonl'), 'utf8'), before);
  });

  it('leaves a run that has ended alone', () => {
    const dir = writeRecordedRun(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'stopped-run-')), 'run'), {
      steps: 1,
      batch: 2,
      groupSize: 2,
      seed: 3,
      status: 'finished',
    });
    assert.equal(markRunStopped(dir), false);
    assert.equal(new RunStoreReader(dir).run().status, 'finished');
    assert.equal(markRunStopped(path.join(dir, 'nothing-here')), false);
  });
});
