import * as path from 'node:path';
import { branchesOf } from '../../trainer/contract/runstore/branchStore';
import {
  branchSummaries,
  parseWith,
  resolveStepSelection,
  TrajectoriesToHost,
  type OpenRunInDebuggerArgs,
  type ShownSet,
  type StepSelection,
  type TrajectoriesToWebview,
  type TrajectoryRow,
} from '../../trainer/contract/protocol';
import type { RunSource, RunUpdate } from './source/runSource';
import { runSummaryOf } from './source/summarize';

export interface TrajectoriesActions {
  /** Open the trajectory in the replay debugger; rejects with a message the user can act on. */
  openInDebugger(args: OpenRunInDebuggerArgs): Promise<void>;
  /** The user ticked or unticked "Follow newest run" (the panel decides which run it shows). */
  followNewestRun?(follow: boolean): void;
  /** A URI the webview can load for a file of the run directory (an image the trajectory saw). */
  resourceUri?(runDirectory: string, file: string): string;
  /** "Re-roll From Here" on the trajectory; and a branch beside its original. */
  reroll?(args: { runDirectory: string; step: number; index: number }): void;
  showBranch?(args: { runDirectory: string; id: string; branch: number }): void;
  /** A re-roll's branches stepped through in the replay debugger. */
  replayBranch?(args: { runDirectory: string; id: string }): void;
  /** Whether the workspace's code may run (VS Code: not in Restricted Mode); absent: a host without Restricted Mode. */
  trusted?(): boolean;
}

/** Rows go to the webview in chunks, so the first screen renders before a 5,000-row step has travelled. */
export const ROWS_PER_MESSAGE = 1000;

/**
 * The host side of the Trajectories panel, without VS Code: turns a run source's reads and
 * updates into messages for the webview, and the webview's requests into reads. The step shown
 * follows the newest step or stays pinned, as the webview asks; rows of the shown step are
 * sent once and then appended as they arrive; a trajectory's full record (its tokens) is sent
 * only when its detail opens. The held-out evaluations sit beside the training steps: the
 * webview may ask for one instead (written whole, an evaluation's rows are sent once).
 */
export class TrajectoriesController {
  private selection: StepSelection;
  private shownSet: ShownSet | undefined;
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

  /** The training step whose rows the webview has, when it shows one. */
  get shown(): number | undefined {
    return this.shownSet?.set === 'train' ? this.shownSet.step : undefined;
  }

  /** The step of the evaluation whose rows the webview has, when it shows one. */
  get shownEvaluation(): number | undefined {
    return this.shownSet?.set === 'eval' ? this.shownSet.step : undefined;
  }

  /** Whether the webview has said it runs (its messages are being read). */
  get isReady(): boolean {
    return this.ready;
  }

  /** The webview runs (it said `ready`, or it showed another run a moment ago): send it everything. */
  start(): void {
    this.ready = true;
    this.postRun();
    for (const error of this.source.errors()) this.post({ type: 'notice', level: 'error', message: error });
    this.show(resolveStepSelection(this.selection, this.source.steps()), true);
    this.postTrust();
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
        this.start();
        break;
      case 'showStep':
        this.selection = message.step;
        this.show(resolveStepSelection(this.selection, this.source.steps()));
        break;
      case 'openTrajectory': {
        const evaluation = message.set === 'eval';
        const record = evaluation
          ? this.source.evaluationTrajectory(message.step, message.index)
          : this.source.trajectory(message.step, message.index);
        if (record) {
          const images = record.images ?? [];
          const uri = this.actions.resourceUri;
          const imageUris =
            uri && images.length
              ? Object.fromEntries(images.map((image) => [image.sha256, uri(this.source.dir, image.file)]))
              : undefined;
          const branches = branchSummaries(
            branchesOf(this.source.dir, { set: message.set, step: message.step, index: message.index }),
          );
          this.post({ type: 'trajectory', set: message.set, record, ...(imageUris ? { imageUris } : {}), branches });
        } else
          this.post({
            type: 'notice',
            level: 'error',
            message: `${evaluation ? 'The evaluation after step' : 'Step'} ${message.step} has no trajectory ${message.index}.`,
          });
        break;
      }
      case 'openInDebugger':
        this.actions
          .openInDebugger({ runDirectory: this.source.dir, step: message.step, trajectory: message.index })
          .catch((error: unknown) =>
            this.post({
              type: 'notice',
              level: 'error',
              message: error instanceof Error ? error.message : String(error),
            }),
          );
        break;
      case 'followNewestRun':
        this.actions.followNewestRun?.(message.follow);
        break;
      case 'reroll':
        this.actions.reroll?.({ runDirectory: this.source.dir, step: message.step, index: message.index });
        break;
      case 'showBranch':
        this.actions.showBranch?.({ runDirectory: this.source.dir, id: message.id, branch: message.branch });
        break;
      case 'replayBranch':
        this.actions.replayBranch?.({ runDirectory: this.source.dir, id: message.id });
        break;
    }
  }

  /** The workspace became trusted (or not): the webview offers Re-roll… only when it may run. */
  trustChanged(): void {
    if (this.ready) this.postTrust();
  }

  /** Only a host with Restricted Mode says; the webview offers Re-roll… once told it may (it fails closed). */
  private postTrust(): void {
    if (this.actions.trusted) this.post({ type: 'trust', trusted: this.actions.trusted() });
  }

  /** A re-roll saved branches of a trajectory of this run: the webview asks for its detail again if it shows it. */
  branchesChanged(runDirectory: string, step: number, index: number): void {
    if (this.ready && path.resolve(runDirectory) === path.resolve(this.source.dir))
      this.post({ type: 'branchesChanged', step, index });
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
        this.show(resolveStepSelection(this.selection, update.steps));
        break;
      }
      case 'evaluations':
        this.postRun();
        // An evaluation asked for before it was written shows once it is.
        if (this.shownSet === undefined) this.show(resolveStepSelection(this.selection, this.source.steps()));
        break;
      case 'rows':
        if (this.shownSet?.set === 'train' && update.step === this.shownSet.step)
          this.postRows(this.shownSet, update.rows, update.reset ?? false);
        break;
      case 'error':
        this.post({ type: 'notice', level: 'error', message: update.message });
        break;
      case 'metrics':
      case 'progress':
        break;
    }
  }

  private show(target: ShownSet | undefined, force = false): void {
    // An evaluation that is not recorded (yet) shows as nothing, like a run without steps.
    const shown = target?.set === 'eval' && !this.source.evaluations().includes(target.step) ? undefined : target;
    if (shown?.set === this.shownSet?.set && shown?.step === this.shownSet?.step && !force) return;
    this.releaseStep?.();
    this.releaseStep = undefined;
    this.shownSet = shown;
    if (shown === undefined) {
      this.post({ type: 'noSteps', selection: this.selection });
      return;
    }
    if (shown.set === 'eval') {
      this.postRows(shown, this.source.evaluationRows(shown.step), true);
      return;
    }
    this.releaseStep = this.source.follow(shown.step);
    this.postRows(shown, this.source.rows(shown.step), true);
  }

  private postRows({ set, step }: ShownSet, rows: readonly TrajectoryRow[], reset: boolean): void {
    if (rows.length === 0) {
      if (reset) this.post({ type: 'rows', set, step, selection: this.selection, reset, rows: [] });
      return;
    }
    for (let i = 0; i < rows.length; i += ROWS_PER_MESSAGE) {
      this.post({
        type: 'rows',
        set,
        step,
        selection: this.selection,
        reset: reset && i === 0,
        rows: rows.slice(i, i + ROWS_PER_MESSAGE),
      });
    }
  }

  private postRun(): void {
    this.post({
      type: 'run',
      run: runSummaryOf(this.source.dir, this.source.run()),
      steps: this.source.steps(),
      evaluations: this.source.evaluations(),
    });
  }
}
