import {
  parseWith,
  resolveStepSelection,
  TrajectoriesToHost,
  type OpenRunInDebuggerArgs,
  type StepSelection,
  type TrajectoriesToWebview,
  type TrajectoryRow,
} from '../../trainer/shared/protocol';
import type { RunSource, RunUpdate } from './source/runSource';
import { runSummaryOf } from './source/summarize';

export interface TrajectoriesActions {
  /** Open the trajectory in the replay debugger; rejects with a message the user can act on. */
  openInDebugger(args: OpenRunInDebuggerArgs): Promise<void>;
}

/** Rows go to the webview in chunks, so the first screen renders before a 5,000-row step has travelled. */
export const ROWS_PER_MESSAGE = 1000;

/**
 * The host side of the Trajectories panel, without VS Code: turns a run source's reads and
 * updates into messages for the webview, and the webview's requests into reads. The step shown
 * follows the newest step or stays pinned, as the webview asks; rows of the shown step are
 * sent once and then appended as they arrive; a trajectory's full record (its tokens) is sent
 * only when its detail opens.
 */
export class TrajectoriesController {
  private selection: StepSelection;
  private shownStep: number | undefined;
  private releaseStep: (() => void) | undefined;
  private ready = false;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly source: RunSource,
    private readonly post: (message: TrajectoriesToWebview) => void,
    private readonly actions: TrajectoriesActions,
    initialStep: StepSelection = 'follow',
  ) {
    this.selection = initialStep;
    this.unsubscribe = source.onUpdate((update) => this.onUpdate(update));
  }

  get step(): StepSelection {
    return this.selection;
  }

  /** The step whose rows the webview has, when it has one. */
  get shown(): number | undefined {
    return this.shownStep;
  }

  /** Show `step` (pinned) or follow the newest step, at the host's request; the webview is told. */
  select(step: StepSelection): void {
    this.selection = step;
    if (this.ready) this.show(resolveStepSelection(step, this.source.steps()), true);
  }

  /** Handle a message from the webview; throws a ProtocolError naming the field when it is malformed. */
  receive(raw: unknown): void {
    const message = parseWith(TrajectoriesToHost, raw, 'message from the Trajectories panel');
    switch (message.type) {
      case 'ready':
        this.ready = true;
        this.postRun();
        for (const error of this.source.errors()) this.post({ type: 'notice', level: 'error', message: error });
        this.show(resolveStepSelection(this.selection, this.source.steps()), true);
        break;
      case 'showStep':
        this.selection = message.step;
        this.show(resolveStepSelection(this.selection, this.source.steps()));
        break;
      case 'openTrajectory': {
        const record = this.source.trajectory(message.step, message.index);
        if (record) this.post({ type: 'trajectory', record });
        else this.post({ type: 'notice', level: 'error', message: `Step ${message.step} has no trajectory ${message.index}.` });
        break;
      }
      case 'openInDebugger':
        this.actions
          .openInDebugger({ runDirectory: this.source.dir, step: message.step, trajectory: message.index })
          .catch((error: unknown) => this.post({ type: 'notice', level: 'error', message: error instanceof Error ? error.message : String(error) }));
        break;
    }
  }

  dispose(): void {
    this.unsubscribe();
    this.releaseStep?.();
  }

  private onUpdate(update: RunUpdate): void {
    if (!this.ready) return;
    switch (update.type) {
      case 'run':
        this.postRun();
        break;
      case 'steps': {
        this.postRun();
        const target = resolveStepSelection(this.selection, update.steps);
        if (target !== this.shownStep) this.show(target);
        break;
      }
      case 'rows':
        if (update.step === this.shownStep) this.postRows(update.step, update.rows, update.reset ?? false);
        break;
      case 'error':
        this.post({ type: 'notice', level: 'error', message: update.message });
        break;
      case 'metrics':
      case 'progress':
        break;
    }
  }

  private show(step: number | undefined, force = false): void {
    if (step === this.shownStep && !force) return;
    this.releaseStep?.();
    this.releaseStep = undefined;
    this.shownStep = step;
    if (step === undefined) {
      this.post({ type: 'noSteps', selection: this.selection });
      return;
    }
    this.releaseStep = this.source.follow(step);
    this.postRows(step, this.source.rows(step), true);
  }

  private postRows(step: number, rows: readonly TrajectoryRow[], reset: boolean): void {
    if (rows.length === 0) {
      if (reset) this.post({ type: 'rows', step, selection: this.selection, reset, rows: [] });
      return;
    }
    for (let i = 0; i < rows.length; i += ROWS_PER_MESSAGE) {
      this.post({ type: 'rows', step, selection: this.selection, reset: reset && i === 0, rows: rows.slice(i, i + ROWS_PER_MESSAGE) });
    }
  }

  private postRun(): void {
    this.post({ type: 'run', run: runSummaryOf(this.source.dir, this.source.run()), steps: this.source.steps() });
  }
}
