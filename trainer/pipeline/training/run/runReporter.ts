import { PROTOCOL_VERSION, type Unstamped } from '../../../contract/protocol/protocolVersion';
import type { MetricsRecord, TrainingEvent, TrainingPhase } from '../../../contract/protocol';
import type { HealthWarning } from '../../../contract/protocol/runStore';
import type { RunStoreWriter } from '../../../contract/runstore/writer';
import { WarningLog } from './warningLog';
import { definedFields } from '../../../contract/definedFields';

export type EventSink = (event: TrainingEvent) => void;

/**
 * Where a run reports to: live events (the editor's panels, the debugger's progress), the run
 * store's metrics file, and progress lines for a terminal. Metrics are written to the run store
 * first, then announced, so a listener that reads the run store finds what it was told about.
 */
export class RunReporter {
  writer: RunStoreWriter | undefined;
  private readonly warningLog: WarningLog;

  constructor(
    private readonly sink: EventSink = () => undefined,
    readonly log: (line: string) => void = () => undefined,
  ) {
    this.warningLog = new WarningLog(log);
  }

  /** A training step's health warnings for the terminal: each kind when it starts, then a reminder while it lasts. */
  stepWarnings(step: number, warnings: readonly HealthWarning[]): void {
    this.warningLog.step(step, warnings);
  }

  /** Announces a live event, stamped here with the protocol version (callers leave it out). */
  emit(event: Unstamped<TrainingEvent>): void {
    this.sink({ protocol: PROTOCOL_VERSION, ...event } as TrainingEvent);
  }

  progress(step: number, phase: TrainingPhase, done: number, total: number, tokensPerSecond?: number): void {
    this.emit({
      type: 'progress',
      step,
      phase,
      done,
      total,
      ...definedFields({ tokensPerSecond }),
    });
  }

  metrics(record: MetricsRecord): void {
    if (!this.writer) throw new Error('metrics reported before the run store was opened');
    this.writer.appendMetrics(record);
    this.emit({ type: 'metrics', record });
  }
}
