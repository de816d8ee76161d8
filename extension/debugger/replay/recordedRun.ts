/**
 * A recorded run as replay reads it: run.json, the metrics of each step and each step's
 * trajectories with its timeline, loaded when first needed and kept for a few steps. Read-only
 * by construction: it holds a RunStoreReader and nothing that writes.
 */
import type { MetricsRecord, RunRecord, TrajectoryRecord } from '../../../trainer/contract/protocol/runStore';
import { RunStoreReader } from '../../../trainer/contract/runstore/reader';
import { stepTimeline, type StopPoint } from '../timeline';

export interface StepData {
  step: number;
  trajectories: TrajectoryRecord[];
  /** The step's `train` metrics, when recorded. */
  metrics?: MetricsRecord | undefined;
  timeline: StopPoint[];
  /** The step's file ended in a line cut short by a crash; that trajectory is missing. */
  tornLastLine: boolean;
}

/** Where replay gets its steps from: a run directory now; any recorded history could serve. */
export interface RecordedRunSource {
  readonly directory: string;
  run(): RunRecord;
  /** Steps with trajectories, ascending. Re-read on each call: a running run grows. */
  steps(): number[];
  load(step: number): StepData;
}

const CACHED_STEPS = 4;

export class RecordedRun implements RecordedRunSource {
  private readonly reader: RunStoreReader;
  private readonly cache = new Map<number, StepData>();
  private metricsByStep?: Map<number, MetricsRecord>;

  constructor(readonly directory: string) {
    this.reader = new RunStoreReader(directory);
  }

  run(): RunRecord {
    return this.reader.run();
  }

  steps(): number[] {
    return this.reader.steps();
  }

  load(step: number): StepData {
    const cached = this.cache.get(step);
    if (cached) {
      // Most recently used last, so the oldest is evicted first.
      this.cache.delete(step);
      this.cache.set(step, cached);
      return cached;
    }
    const { records, tornLastLine } = this.reader.trajectories(step);
    const data: StepData = {
      step,
      trajectories: records,
      metrics: this.metrics(step),
      timeline: stepTimeline(records),
      tornLastLine,
    };
    this.cache.set(step, data);
    if (this.cache.size > CACHED_STEPS) this.cache.delete(this.cache.keys().next().value!);
    return data;
  }

  private metrics(step: number): MetricsRecord | undefined {
    if (!this.metricsByStep?.has(step)) {
      // Read again when a step is missing: a running run appends metrics as it goes.
      this.metricsByStep = new Map(
        this.reader
          .metrics()
          .records.filter((m) => m.kind === 'train')
          .map((m) => [m.step, m]),
      );
    }
    return this.metricsByStep.get(step);
  }
}
