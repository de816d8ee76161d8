import type { TrainingEvent } from '../../../trainer/contract/protocol';
import type { LiveTraining } from '../../live/liveTrainings';
import { RunDirectorySource } from './runDirectorySource';
import { UpdateEmitter, type LiveProgress, type RunSource, type RunUpdate } from './runSource';

/**
 * The run a training in this editor is writing, fed by the trainer's IPC events. The run store
 * stays the source of truth — every read goes to the run directory — but instead of watching
 * files and polling, the source looks at them exactly when the trainer says they changed: a
 * metrics record appended, a step's trajectories complete, the run started or ended. What the
 * files do not hold, the phase in progress and its throughput, comes from the progress events.
 */
export class LiveRunSource implements RunSource {
  private readonly files: RunDirectorySource;
  private readonly emitter = new UpdateEmitter();
  private readonly unsubscribe: Array<() => void>;
  private latest: LiveProgress | undefined;

  constructor(
    readonly dir: string,
    training: LiveTraining,
  ) {
    this.files = new RunDirectorySource(dir, { pollIntervalMs: 0, watch: false });
    this.unsubscribe = [
      this.files.onUpdate((update) => this.emitter.emit(update)),
      training.onEvent((event) => this.onEvent(event)),
    ];
  }

  run() {
    return this.files.run();
  }

  steps(): number[] {
    return this.files.steps();
  }

  metrics() {
    return this.files.metrics();
  }

  rows(step: number) {
    return this.files.rows(step);
  }

  follow(step: number): () => void {
    return this.files.follow(step);
  }

  trajectory(step: number, index: number) {
    return this.files.trajectory(step, index);
  }

  evaluations(): number[] {
    return this.files.evaluations();
  }

  evaluationRows(step: number) {
    return this.files.evaluationRows(step);
  }

  evaluationTrajectory(step: number, index: number) {
    return this.files.evaluationTrajectory(step, index);
  }

  errors(): readonly string[] {
    return this.files.errors();
  }

  progress(): LiveProgress | undefined {
    return this.latest;
  }

  onUpdate(listener: (update: RunUpdate) => void): () => void {
    return this.emitter.on(listener);
  }

  dispose(): void {
    this.unsubscribe.forEach((u) => u());
    this.files.dispose();
    this.emitter.clear();
  }

  private onEvent(event: TrainingEvent): void {
    switch (event.type) {
      case 'progress':
        this.latest = {
          step: event.step,
          phase: event.phase,
          done: event.done,
          total: event.total,
          ...(event.tokensPerSecond !== undefined ? { tokensPerSecond: event.tokensPerSecond } : {}),
        };
        this.emitter.emit({ type: 'progress', progress: this.latest });
        break;
      case 'run.ended':
        this.latest = undefined;
        this.files.refresh();
        break;
      case 'metrics':
      case 'step.completed':
      case 'run.started':
        this.files.refresh();
        break;
      case 'log':
      case 'debug.hold':
        break;
    }
  }
}
