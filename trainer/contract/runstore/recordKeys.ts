import type { MetricsRecord, TrajectoryRecord } from '../protocol/runStore';

/**
 * What identifies a record of the run store within its file. A run has one writer (runLock.ts),
 * so a key seen twice means two processes wrote the run at once (or a file was edited by hand):
 * readers report the second record instead of taking it.
 */

/** What identifies a metrics record: one per kind and step (`train 3`, `eval 0`, `sft 12`). */
export function metricsKey(record: MetricsRecord): string {
  return `${record.kind} step ${record.step}`;
}

/** What identifies a trajectory record within its file. */
export function trajectoryKey(record: Pick<TrajectoryRecord, 'index'>): string {
  return `trajectory index ${record.index}`;
}

/** The message for a record whose key was already seen: two processes wrote the same run. */
export function duplicateMessage(file: string, key: string, line: number, firstLine: number): string {
  return `${file} line ${line}: ${key} is recorded twice (first at line ${firstLine}) — two processes wrote this run at once; its records cannot be trusted`;
}
