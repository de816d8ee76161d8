import type {
  MetricsRecord,
  RunRecord,
  TrainingPhase,
  TrajectoryRecord,
  TrajectoryRow,
} from '../../../trainer/contract/protocol';

/**
 * What a run looks like to the panels and the status bar, wherever its data comes from: a run
 * directory on disk followed as it grows (RunDirectorySource), or a training running inside the
 * editor, followed through the trainer's live messages (LiveRunSource). Both give the same reads
 * and the same updates, so the panels never know which one they show.
 */
export interface RunSource {
  /** The run directory: the run's identity, also for a live run (it writes there too). */
  readonly dir: string;
  run(): RunRecord;
  /** Steps that have trajectories, ascending. */
  steps(): number[];
  /** Every metrics record so far, in file order. */
  metrics(): readonly MetricsRecord[];
  /** The step's trajectories as table rows. */
  rows(step: number): readonly TrajectoryRow[];
  /** Report the step's new trajectories (`rows` updates) until the returned function is called. */
  follow(step: number): () => void;
  /** One trajectory in full (turns, tool calls, tokens), or undefined when the step has no such index. */
  trajectory(step: number, index: number): TrajectoryRecord | undefined;
  /** Steps after which a held-out evaluation's trajectories were recorded (0: before RL), ascending. */
  evaluations(): number[];
  /** The evaluation's trajectories as table rows (an evaluation is written whole, so there is nothing to follow). */
  evaluationRows(step: number): readonly TrajectoryRow[];
  /** One of the evaluation's trajectories in full, or undefined when it has no such index. */
  evaluationTrajectory(step: number, index: number): TrajectoryRecord | undefined;
  /** Problems met reading the run so far (records that did not validate), newest last. */
  errors(): readonly string[];
  onUpdate(listener: (update: RunUpdate) => void): () => void;
  /** A run trained in this editor: the phase in progress, which the files do not hold. */
  progress?(): LiveProgress | undefined;
  dispose(): void;
}

/** The phase a live training is in (the trainer's latest progress event). */
export interface LiveProgress {
  step: number;
  phase: TrainingPhase;
  done: number;
  total: number;
  tokensPerSecond?: number;
}

/** What changed. Appends carry only what is new; `run` and `steps` carry the whole new value. */
export type RunUpdate =
  | { type: 'run'; run: RunRecord }
  | { type: 'steps'; steps: number[] }
  | { type: 'evaluations'; evaluations: number[] }
  /** `reset`: the records replace all earlier ones (the file was replaced). */
  | { type: 'metrics'; records: MetricsRecord[]; reset?: boolean }
  | { type: 'rows'; step: number; rows: TrajectoryRow[]; reset?: boolean }
  /** Data that could not be read (a record that does not validate): shown, never fatal. */
  | { type: 'error'; message: string }
  /** A live training moved on within a phase (see `RunSource.progress`). */
  | { type: 'progress'; progress: LiveProgress };

/** A minimal listener list, so sources work in plain Node (tests) as well as in VS Code. */
export class UpdateEmitter {
  private listeners = new Set<(update: RunUpdate) => void>();

  on(listener: (update: RunUpdate) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(update: RunUpdate): void {
    for (const listener of [...this.listeners]) listener(update);
  }

  clear(): void {
    this.listeners.clear();
  }
}
