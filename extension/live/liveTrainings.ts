/**
 * The trainings running inside this editor, by run directory: the debug sessions that start
 * them (LiveTarget) publish here once the trainer announces its run, and the panels and the
 * status bar follow a run's live events from here (LiveRunSource) instead of watching its
 * files. No vscode import: the debug adapter core and its tests use it too.
 */
import * as path from 'node:path';
import type { TrainingEvent } from '../../trainer/contract/protocol';

export interface LiveTraining {
  /** The run directory the trainer writes (absolute). */
  readonly runDirectory: string;
  /** The training config file it runs. */
  readonly config: string;
  readonly pid: number | undefined;
  /** False once the trainer process has exited. */
  readonly active: boolean;
  /** Every event the trainer sends from now on; the returned function stops listening. */
  onEvent(listener: (event: TrainingEvent) => void): () => void;
}

export type LiveTrainingsChange = { type: 'started' | 'ended'; training: LiveTraining };

export class LiveTrainings {
  private readonly trainings = new Map<string, LiveTraining>();
  private readonly listeners = new Set<(change: LiveTrainingsChange) => void>();

  /** The trainer announced its run (`run.started`). */
  started(training: LiveTraining): void {
    this.trainings.set(key(training.runDirectory), training);
    this.emit({ type: 'started', training });
  }

  /** The trainer process has exited. */
  ended(training: LiveTraining): void {
    if (this.trainings.get(key(training.runDirectory)) === training) this.trainings.delete(key(training.runDirectory));
    this.emit({ type: 'ended', training });
  }

  /** The live training writing `runDirectory`, if one is running. */
  get(runDirectory: string): LiveTraining | undefined {
    return this.trainings.get(key(runDirectory));
  }

  all(): LiveTraining[] {
    return [...this.trainings.values()];
  }

  onChange(listener: (change: LiveTrainingsChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(change: LiveTrainingsChange): void {
    for (const listener of [...this.listeners]) listener(change);
  }
}

function key(dir: string): string {
  return path.resolve(dir);
}
