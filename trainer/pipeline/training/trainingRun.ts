import type { ExecutionProviderName } from '../../foundations/engine/runtime/providers';
import type { RunRecord } from '../../contract/protocol/runStore';
import { liveRunLock, RunLockedError } from '../../contract/runstore/runLock';
import type { RunStoreWriter } from '../../contract/runstore/writer';
import { StorageError, withoutResumeAdvice } from '../../contract/runstore/storageError';
import { providerFor } from './config/configOptions';
import { BEST_CHECKPOINT, describeBest, keepBest } from './checkpoints/bestCheckpoint';
import { carryOut } from './health/collapseResponse';
import { evaluateHeldOut, type EvaluationResult } from './evaluation/evaluation';
import { evaluationEvery, evaluationRows } from './evaluation/evaluationSchedule';
import { reviewEvaluation, type Review } from './health/healthReview';
import { closeRunParts, loadRunParts } from './run/loadRunParts';
import type { CassetteOverrides } from './run/runCassette';
import { RunControl } from './run/runControl';
import type { Learners, RunContext, RunParts, StepContext } from './run/runParts';
import { prepareLearners, releaseLearners } from './run/learners';
import { RunReporter, type EventSink } from './run/runReporter';
import { createRun, reopenRun, type OpenedRun } from './run/runStoreOpening';
import type { LoadedConfig } from './config/trainingConfig';
import { trainingStep } from './trainingStep';
import { markRunOnUnexpectedExit } from './run/unexpectedExit';
import { definedFields } from '../../contract/definedFields';

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
  /** Record and/or replay tool calls, over the config's `toolCassette` (runCassette.ts). */
  toolCassette?: CassetteOverrides;
}

export interface TrainResult {
  runDir: string;
  run: RunRecord;
  /** The best held-out evaluation and its checkpoint (`checkpoints/best`), as in run.json. */
  best?: NonNullable<RunRecord['best']>;
  evalBefore?: EvaluationResult;
  evalAfter?: EvaluationResult;
}

/**
 * A training run from start to end: load the model, tools and data (loadRunParts), open the run
 * store (new, or resumed from its last checkpoint), warm-start with SFT when configured,
 * evaluate, then train step after step (trainingStep.ts) with evaluations between (keeping the
 * best weights, bestCheckpoint.ts), and finish the run record as finished, stopped or failed.
 * Whatever was opened is closed on every path.
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
    const { parts, opened } = await this.openRun(provider);
    const { position } = opened;
    this.report.writer = position.writer;
    if (parts.cassette?.record)
      parts.cassette.cassette.recordInto((entries) => position.writer.appendCassette(entries));
    this.report.emit({
      type: 'run.started',
      runDirectory: position.writer.dir,
      run: position.writer.record,
    });
    this.report.log(
      `run ${position.writer.record.id}: ${parts.config.algorithm.name} on ${parts.model.config.architecture} (${position.writer.record.model.trainableParameters.toLocaleString()} trainable parameters), ${provider}`,
    );
    let learners: Learners | undefined;
    const exitWatch = markRunOnUnexpectedExit(position.writer);
    try {
      learners = await prepareLearners(parts, opened);
      const result = await this.trainSteps({ parts, position, learners }, opened.startStep);
      this.report.log(
        `run ${position.writer.record.status} after step ${position.writer.record.lastStep ?? 0} in ${((Date.now() - started) / 1000).toFixed(0)} s: ${position.writer.dir}`,
      );
      return result;
    } catch (thrown) {
      // Before the first checkpoint there is nothing to resume: a full disk's advice says so.
      const error =
        thrown instanceof StorageError && position.writer.record.lastCheckpoint === undefined
          ? withoutResumeAdvice(thrown)
          : thrown;
      failRun(position.writer, error as Error, this.report);
      throw error;
    } finally {
      exitWatch.dispose();
      position.writer.close();
      // A listener that throws here must not keep the parts below open.
      try {
        this.report.emit({ type: 'run.ended', run: position.writer.record });
      } catch {
        // Reported by the run's own error, if any; nothing to add.
      }
      if (learners) await releaseLearners(learners);
      await closeRunParts(parts);
    }
  }

  /**
   * The run's parts, loaded, and its run store, created or reopened to resume. A run another
   * process is writing is refused before the model loads (the lock itself is taken when the run
   * store opens); the parts are closed again if the run store cannot be opened.
   */
  private async openRun(provider: ExecutionProviderName): Promise<{ parts: RunParts; opened: OpenedRun }> {
    const totalSteps = this.options.steps ?? this.loaded.config.steps;
    const target = this.options.resume ?? this.options.runDir;
    const holder = target === undefined ? undefined : liveRunLock(target);
    if (holder) throw new RunLockedError(target!, holder);
    const parts = await loadRunParts(this.loaded, {
      provider,
      totalSteps,
      control: this.control,
      report: this.report,
      ...definedFields({
        inProcessDevice: this.options.inProcessDevice || undefined,
        toolCassette: this.options.toolCassette,
      }),
    });
    try {
      const opened = this.options.resume
        ? reopenRun(parts, this.options.resume)
        : createRun(parts, provider, this.options.runDir);
      return { parts, opened };
    } catch (error) {
      await closeRunParts(parts);
      // A new run that could not be written has nothing to resume: a full disk's advice says so.
      throw !this.options.resume && error instanceof StorageError ? withoutResumeAdvice(error) : error;
    }
  }

  /**
   * Evaluate before RL, train the steps with the configured evaluations between, evaluate after.
   * A resumed run first repeats the evaluation that followed its checkpoint, if one was due: the
   * resume dropped it with everything else recorded after the checkpoint.
   */
  private async trainSteps(run: RunContext, startStep: number): Promise<TrainResult> {
    const { parts } = run;
    const { writer } = run.position;
    const evaluating = parts.evalData !== undefined;
    const every = evaluationEvery(parts.config, parts.totalSteps);
    const due = (step: number) =>
      evaluating &&
      step < parts.totalSteps &&
      (step === 0 ? this.options.evaluateBefore !== false : every > 0 && step % every === 0);
    if (evaluating && startStep === 1)
      this.report.log(
        `held-out evaluation on ${evaluationRows(parts.config, parts.evalData!.rows.length)} of ${parts.evalData!.rows.length} rows ${every > 0 ? `every ${every} steps and ` : ''}at the end; the best is kept as ${BEST_CHECKPOINT}`,
      );
    const before = due(startStep - 1) ? await this.evaluate({ ...run, step: startStep - 1 }, false) : undefined;
    const evalBefore = startStep === 1 ? before : undefined;
    const result = (): TrainResult =>
      definedFields({ runDir: writer.dir, run: writer.record, best: writer.record.best, evalBefore });
    for (let step = startStep; step <= parts.totalSteps && !this.control.stopping; step++) {
      await this.control.waitWhilePaused();
      if (this.control.stopping) break;
      parts.cassette?.cassette.enter('train', step);
      const outcome = await trainingStep({ ...run, step });
      if (outcome === 'failed') return result();
      if (outcome === 'stopped') break;
      if (due(step)) await this.evaluate({ ...run, step }, false);
    }
    const evalAfter =
      evaluating && !this.control.stopping
        ? await this.evaluate({ ...run, step: writer.record.lastStep ?? 0 }, true)
        : undefined;
    writer.finish(this.control.stopping ? 'stopped' : 'finished');
    if (writer.record.best) this.report.log(`best: ${describeBest(writer.record.best)}`);
    return { ...result(), ...definedFields({ evalAfter }) };
  }

  /**
   * A held-out evaluation with its health checks against the best so far; weights that beat the
   * best are kept as checkpoints/best; then the response to a held-out collapse, if `onCollapse`
   * has one (not after the final evaluation: the run is ending, and its best is kept).
   */
  private async evaluate(at: StepContext, final: boolean): Promise<EvaluationResult | undefined> {
    const { parts, position, step } = at;
    let review: Review = { warnings: [] };
    if (this.control.stopping) return undefined;
    parts.cassette?.cassette.enter('eval', step);
    let result: EvaluationResult;
    try {
      result = await evaluateHeldOut(
        parts,
        position.writer,
        step,
        (r) => (review = reviewEvaluation(parts, position, step, r, final)).warnings,
      );
    } catch (error) {
      // A stop ends the evaluation in flight; it is not recorded, and the run ends stopped.
      if (this.control.stopping) return undefined;
      throw error;
    }
    await keepBest(at, result);
    if (review.plan) await carryOut(review.plan, at);
    return result;
  }
}

/**
 * The run record says failed, with the error and the last completed step. When even that cannot
 * be written (the disk that failed the run is still full), the error that ended the run is the
 * one reported, and the record stays `running` — readers show it interrupted once the lock goes.
 */
function failRun(writer: RunStoreWriter, error: Error, report: RunReporter): void {
  try {
    writer.finish(
      'failed',
      definedFields({ message: error.message, stack: error.stack || undefined, step: writer.record.lastStep }),
    );
  } catch (secondary) {
    report.log(`the run could not be marked failed: ${(secondary as Error).message}`);
  }
}
