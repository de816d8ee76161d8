/**
 * Comparing two runs record by record, for the resume tests: a resumed run must record exactly
 * what the uninterrupted one did. Wall-clock fields (a record's time, time per phase, tokens per
 * second, a tool call's latency) differ between any two runs and are left out; everything else —
 * every metric, every token, log-prob, reward and advantage, every evaluation — must be equal.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { MetricsRecord, TrajectoryRecord } from '#trainer/contract/protocol';
import { RunStoreReader } from '#trainer/contract/runstore';

function withoutClock(record: MetricsRecord): unknown {
  const values = Object.fromEntries(
    Object.entries(record.values).filter(([k]) => !k.startsWith('time/') && !k.startsWith('throughput/')),
  );
  const { time: _time, ...rest } = record;
  return { ...rest, values };
}

function withoutLatency(record: TrajectoryRecord): unknown {
  return JSON.parse(JSON.stringify(record, (key, value) => (key === 'latencyMs' ? undefined : value)));
}

/** Every metrics record, training and evaluation trajectory of `actual` equals `expected`'s (clock fields aside). */
export function assertSameRecords(expected: string, actual: string, what: string): void {
  const a = new RunStoreReader(expected);
  const b = new RunStoreReader(actual);
  assert.deepEqual(
    b.metrics().records.map(withoutClock),
    a.metrics().records.map(withoutClock),
    `${what}: metrics.jsonl`,
  );
  assert.deepEqual(b.steps(), a.steps(), `${what}: rollout steps`);
  for (const step of a.steps()) {
    assert.deepEqual(
      b.trajectories(step).records.map(withoutLatency),
      a.trajectories(step).records.map(withoutLatency),
      `${what}: trajectories of step ${step}`,
    );
  }
  assert.deepEqual(b.evaluations(), a.evaluations(), `${what}: evaluations`);
  for (const step of a.evaluations()) {
    assert.deepEqual(
      b.evaluationTrajectories(step).records.map(withoutLatency),
      a.evaluationTrajectories(step).records.map(withoutLatency),
      `${what}: evaluation after step ${step}`,
    );
  }
}

/**
 * The checkpoint folders are byte for byte the same: weights, optimizer moments, whatever state
 * the critic has, trainer_state.json (data position, random state). Format-agnostic on purpose:
 * a file added to checkpoints later is compared as well.
 */
export function assertSameCheckpoint(expected: string, actual: string, what: string): void {
  const files = fs.readdirSync(expected).sort();
  assert.deepEqual(fs.readdirSync(actual).sort(), files, `${what}: files of ${path.basename(expected)}`);
  for (const file of files) {
    // A separate critic's state is a folder of its own (critic/): compared file by file too.
    if (fs.statSync(path.join(expected, file)).isDirectory()) {
      assertSameCheckpoint(path.join(expected, file), path.join(actual, file), what);
      continue;
    }
    const same = fs.readFileSync(path.join(expected, file)).equals(fs.readFileSync(path.join(actual, file)));
    assert.ok(same, `${what}: ${path.basename(expected)}/${file} differs`);
  }
}
