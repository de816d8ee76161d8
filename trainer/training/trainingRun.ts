import type { ExecutionProviderName } from '../engine/runtime/providers';
import { PROTOCOL_VERSION } from '../shared/protocol/protocolVersion';
import type { RunRecord } from '../shared/protocol/runStore';
import type { RunStoreWriter } from '../shared/runstore/writer';
import { providerFor } from './configOptions';
import { evaluateHeldOut, type EvaluationResult } from './evaluation';
import { closeRunParts, loadRunParts } from './loadRunParts';
import { RunControl } from './runControl';
import type { Learners, RunParts, RunPosition } from './runParts';
import { prepareLearners, releaseLearners } from './learners';
import { RunReporter, type EventSink } from './runReporter';
import { createRun, reopenRun, type OpenedRun } from './runStoreOpening';
import type { LoadedConfig } from './trainingConfig';
import { trainingStep } from './trainingStep';

export type { EvaluationResult, EventSink };

export interface TrainOptions {
  /** Override config.steps. */
  steps?: number;
  device?: ExecutionProviderName;
  /** Where this run's directory goes (default: config.output.runsDir/<id>). */
  runDir?: string;
  /** Continue the run in this directory from its last checkpoint. */
  resume?: string;
  events?: EventSink;
  control?: RunControl;
  /** Progress lines for a terminal. */
  log?: (line: string) => void;
  /** Run the device in this thread (tests). */
  inProcessDevice?: boolean;
  /** Evaluate on the held-out rows before RL (default true; a benchmark whose runs share a warm start evaluates it once). */
  evaluateBefore?: boolean;
}

export interface TrainResult {
  runDir: string;
  run: RunRecord;
  evalBefore?: EvaluationResult;
  evalAfter?: EvaluationResult;
}

/**
 * A training run from start to end: load the model, tools and data (loadRunParts), open the run
 * store (new, or resumed from its last checkpoint), warm-start with SFT when configured,
 * evaluate, then train step after step (trainingStep.ts) with evaluations between, and finish
 * the run record as finished, stopped or failed. Whatever was opened is closed on every path.
 */
export class TrainingRun {
  readonly control: RunControl;
  private readonly report: RunReporter;

  constructor(
    private readonly loaded: LoadedConfig,
    private readonly options: TrainOptions = {},
  ) {
    this.control = options.control ?? new RunControl();
    this.report = new RunReporter(options.events, options.log);
  }

  async run(): Promise<TrainResult> {
    const started = Date.now();
    const provider = providerFor(this.loaded.config, this.options.device);
    const totalSteps = this.options.steps ?? this.loaded.config.steps;
    const parts = await loadRunParts(this.loaded, { provider, totalSteps, control: this.control, report: this.report, ...(this.options.inProcessDevice ? { inProcessDevice: true } : {}) });
    let opened: OpenedRun;
    try {
      opened = this.options.resume ? reopenRun(parts, this.options.resume) : createRun(parts, provider, this.options.runDir);
    } catch (error) {
      await closeRunParts(parts);
      throw error;
    }
    const { position } = opened;
    this.report.writer = position.writer;
    this.report.emit({ protocol: PROTOCOL_VERSION, type: 'run.started', runDirectory: position.writer.dir, run: position.writer.record });
    this.report.log(`run ${position.writer.record.id}: ${parts.config.algorithm.name} on ${parts.model.config.architecture} (${position.writer.record.model.trainableParameters.toLocaleString()} trainable parameters), ${provider}`);
    let learners: Learners | undefined;
    try {
      learners = await prepareLearners(parts, opened);
      const result = await this.trainSteps(parts, position, learners, opened.startStep);
      this.report.log(`run ${position.writer.record.status} after step ${position.writer.record.lastStep ?? 0} in ${((Date.now() - started) / 1000).toFixed(0)} s: ${position.writer.dir}`);
      return result;
    } catch (error) {
      failRun(position.writer, error as Error);
      throw error;
    } finally {
      this.report.emit({ protocol: PROTOCOL_VERSION, type: 'run.ended', run: position.writer.record });
      if (learners) await releaseLearners(learners);
      await closeRunParts(parts);
    }
  }

  /** Evaluate before RL (a new run), train the steps with the configured evaluations between, evaluate after. */
  private async trainSteps(parts: RunParts, position: RunPosition, learners: Learners, startStep: number): Promise<TrainResult> {
    const { writer } = position;
    const evaluating = parts.evalData !== undefined;
    const every = parts.config.evaluation.every;
    const evalBefore = evaluating && startStep === 1 && this.options.evaluateBefore !== false ? await evaluateHeldOut(parts, writer, 0) : undefined;
    for (let step = startStep; step <= parts.totalSteps && !this.control.stopping; step++) {
      await this.control.waitWhilePaused();
      if (this.control.stopping) break;
      const outcome = await trainingStep(parts, position, learners, step);
      if (outcome === 'failed') return { runDir: writer.dir, run: writer.record, ...(evalBefore ? { evalBefore } : {}) };
      if (outcome === 'stopped') break;
      if (evaluating && every > 0 && step % every === 0 && step < parts.totalSteps) await evaluateHeldOut(parts, writer, step);
    }
    const evalAfter = evaluating && !this.control.stopping ? await evaluateHeldOut(parts, writer, writer.record.lastStep ?? 0) : undefined;
    writer.finish(this.control.stopping ? 'stopped' : 'finished');
    return { runDir: writer.dir, run: writer.record, ...(evalBefore ? { evalBefore } : {}), ...(evalAfter ? { evalAfter } : {}) };
  }
}

/** The run record says failed, with the error and the last completed step. */
function failRun(writer: RunStoreWriter, error: Error): void {
  writer.finish('failed', { message: error.message, ...(error.stack ? { stack: error.stack } : {}), ...(writer.record.lastStep !== undefined ? { step: writer.record.lastStep } : {}) });
}
