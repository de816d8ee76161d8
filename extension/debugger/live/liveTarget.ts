/**
 * Live training as a debug target: the trainer process (`rollout-studio train <config> --ipc`)
 * driven over its IPC channel. The trainer announces each stop point it reaches while holding
 * is on and waits to be released; this target decides at each with the same BreakpointSet
 * replay uses, stops the session there or releases the point at once, and keeps holding off
 * altogether while nothing could stop (holdPolicy.ts), so such a training runs at full speed.
 *
 * Stepping follows the trainer: next = the stepped trajectory's next turn (or its end), step in
 * = its next point of any kind (before a call runs, then its result), step out = its end; when
 * the trajectory has ended, next goes on to the same position in the next step. The other
 * trajectories move along meanwhile, as they do in a batch. Which breakpoints interrupt a step
 * is BreakpointSet's decision (`breakpointsDuringStep`: by default only the stepped
 * trajectory's; the others' hits are listed in the console when the step ends), the same as in
 * replay. Pause stops at the next turn boundary (or the step's update). Nothing goes back:
 * stepping back needs a recorded run (replay).
 *
 * Stop asks the trainer to finish cleanly (it marks the run stopped and exits) and kills it
 * only when it does not exit in time; a killed trainer's run is marked stopped here.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  isTrainingEvent,
  type MetricsRecord,
  type RunRecord,
  type TrainerMessage,
  type TrainingEvent,
  type TrajectoryRecord,
} from '../../../trainer/contract/protocol';
import { RunStoreReader } from '../../../trainer/contract/runstore/reader';
import { formatBytes } from '../../../trainer/contract/formatBytes';
import { TrainerProcess, type TrainerExit, type TrainerLaunch } from '../../trainerProcess';
import type { LiveTraining, LiveTrainings } from '../../live/liveTrainings';
import { markRunStopped } from '../../live/stoppedRun';
import type { BreakpointSet, SteppingTrajectory } from '../breakpoints/breakpoints';
import { holdConfiguration } from './holdPolicy';
import { liveFacts, liveView, type Hold } from './liveView';
import {
  toTargetStop,
  type ResumeKind,
  type RolloutTarget,
  type TargetListener,
  type TargetStop,
  type TargetView,
} from '../rolloutTarget';
import { describePoint, isTurnBoundary, type StopPoint } from '../timeline';

export interface LiveTargetOptions {
  /** The training config file (absolute). */
  config: string;
  device?: 'auto' | 'cpu' | 'webgpu' | 'cuda';
  /** Run without debugging: never hold, ignore breakpoints. */
  noDebug: boolean;
  /** Start the trainer with the Node inspector, for breakpoints in the user's own tool code. */
  debugTools: boolean;
  /** The client starts child debug sessions (DAP `startDebugging`): the trainer then waits for the debugger before it runs. */
  childSessions: boolean;
  launch: TrainerLaunch;
  /** Where live trainings are published for the panels and the status bar. */
  trainings?: LiveTrainings;
  /** How long a stop may take before the trainer is killed (default 30 s: an update in flight finishes first). */
  stopTimeoutMs?: number;
}

type Intent =
  /** Continue: breakpoints decide. */
  | { kind: 'run' }
  | { kind: 'entry' }
  | { kind: 'pause' }
  | { kind: 'step'; how: 'next' | 'stepIn' | 'stepOut'; trajectory: number };

const PHASE_TITLES: Record<string, string> = {
  download: 'Downloading the model',
  load: 'Loading the model',
  sft: 'Warm start (SFT)',
  rollout: 'Rollout',
  reward: 'Rewards',
  update: 'Update',
  eval: 'Evaluation',
  checkpoint: 'Checkpoint',
};
const PHASE_UNITS: Record<string, string> = {
  sft: 'steps',
  rollout: 'trajectories',
  reward: 'trajectories',
  eval: 'rows',
};

export class LiveTarget implements RolloutTarget {
  readonly mode = 'live';
  readonly supportsStepBack = false;
  private trainer: TrainerProcess | undefined;
  private exitHandled: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private record: RunRecord | undefined;
  private dir = '';
  private lastView: TargetView | undefined;
  private stoppedAt: Hold | undefined;
  private readonly queue: Hold[] = [];
  private intent: Intent = { kind: 'run' };
  private sentConfiguration = '';
  /** Steps the trainer has recorded (`step.completed`): their trajectories are read from the run store, final. */
  private readonly recorded = new Set<number>();
  private readonly eventListeners = new Set<(event: TrainingEvent) => void>();
  private readonly publication: LiveTraining;

  constructor(
    private readonly options: LiveTargetOptions,
    private readonly breakpoints: BreakpointSet,
    private readonly listener: TargetListener,
  ) {
    if (!fs.existsSync(options.config)) throw new Error(`${options.config}: training config not found`);
    // The publication's getters read the target's current state; `this` inside them is the publication.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const target = this;
    this.publication = {
      get runDirectory() {
        return target.dir;
      },
      config: options.config,
      get pid() {
        return target.trainer?.pid;
      },
      get active() {
        return target.trainer?.running ?? false;
      },
      onEvent: (listener) => {
        this.eventListeners.add(listener);
        return () => this.eventListeners.delete(listener);
      },
    };
  }

  get runDirectory(): string {
    return this.dir;
  }

  /** The trainer's process id while it runs. */
  get pid(): number | undefined {
    return this.trainer?.running ? this.trainer.pid : undefined;
  }

  /** True while the training moves (not stopped at a point). */
  get running(): boolean {
    return this.stoppedAt === undefined;
  }

  run(): RunRecord | undefined {
    return this.record;
  }

  view(): TargetView | undefined {
    return this.lastView;
  }

  /** A recorded step's trajectory as recorded (results and rewards final), else as the last stop point saw it. */
  findTrajectory(step: number, index: number): TrajectoryRecord | undefined {
    const seen = this.lastView?.step === step ? this.lastView.trajectories.find((t) => t.index === index) : undefined;
    if (seen && !this.recorded.has(step)) return seen;
    if (!this.dir) return seen;
    try {
      return new RunStoreReader(this.dir).trajectories(step).records.find((t) => t.index === index) ?? seen;
    } catch {
      return seen;
    }
  }

  start(stopOnEntry: boolean): void {
    const { config, device, launch, noDebug } = this.options;
    if (stopOnEntry && !noDebug) this.intent = { kind: 'entry' };
    const debugTools = this.options.debugTools && !noDebug;
    const args = ['train', config, '--ipc', ...(device ? ['--device', device] : [])];
    try {
      this.trainer = TrainerProcess.start(launch, {
        use: { action: noDebug ? 'Start Training' : 'Debug Training', runs: `the config ${config}` },
        args,
        cwd: path.dirname(config),
        inspect: debugTools ? (this.options.childSessions ? 'break' : true) : false,
        onMessage: (message) => this.onMessage(message),
        onInspector: (inspector) => this.onInspector(inspector),
        onOutput: (text, stream) => this.listener.output(text, stream === 'stderr' ? 'stderr' : 'console'),
      });
    } catch (error) {
      const e = error as Error & { detail?: string };
      this.listener.output(`${e.message}`, 'stderr');
      setImmediate(() => this.listener.ended?.({ exitCode: 1, message: 'The trainer could not be started.' }));
      return;
    }
    this.listener.output(
      `Starting the trainer (pid ${this.trainer.pid ?? '?'}) for ${config}${noDebug ? ', without debugging' : ''}`,
      'console',
    );
    this.reconfigure();
    const trainer = this.trainer;
    this.exitHandled = trainer.exited.then((exit) => this.onExit(exit));
  }

  resume(kind: ResumeKind, trajectory: number): void {
    const held = this.stoppedAt;
    if (!held) {
      this.listener.output('The training is running; pause it first.', 'stderr');
      return;
    }
    if (kind === 'stepBack' || kind === 'reverseContinue') {
      this.listener.output(
        'Live training cannot go back: replay the run (Rollout Studio: Replay Run in Debugger…) to step backwards.',
        'stderr',
      );
      return;
    }
    const at = this.lastView?.positions[trajectory];
    if (kind === 'continue') this.intent = { kind: 'run' };
    // At a trajectory's end, `stepOut` has nowhere further out to go: it steps on like `next`.
    else this.intent = { kind: 'step', how: kind === 'stepOut' && at?.phase === 'end' ? 'next' : kind, trajectory };
    this.stoppedAt = undefined;
    this.reconfigure();
    this.release(held.id);
    this.drain();
  }

  pause(): void {
    if (this.stoppedAt || !this.trainer?.running) return;
    this.intent = { kind: 'pause' };
    this.reconfigure();
    this.drain();
  }

  breakpointsChanged(): void {
    this.reconfigure();
  }

  /** Stop the training cleanly (the session ends when the trainer has exited). */
  terminate(): void {
    void this.shutdown();
  }

  dispose(): Promise<void> {
    return this.shutdown();
  }

  /** Events of the running training (for the panels): the feed LiveTrainings publishes. */
  get training(): LiveTraining {
    return this.publication;
  }

  private shutdown(): Promise<void> {
    const trainer = this.trainer;
    if (!trainer || !trainer.running) return this.exitHandled ?? Promise.resolve();
    this.stopping ??= (async () => {
      this.queue.length = 0;
      this.stoppedAt = undefined;
      const timeout = this.options.stopTimeoutMs ?? 30_000;
      this.listener.output(
        'Stopping the training: the trainer finishes what it must and marks the run stopped…',
        'console',
      );
      await trainer.stop(timeout);
      await this.exitHandled;
    })();
    return this.stopping;
  }

  private onMessage(message: TrainerMessage): void {
    if (message.type === 'fatal') {
      this.listener.output(`The trainer failed: ${message.message}`, 'stderr');
      return;
    }
    if (!isTrainingEvent(message)) return;
    for (const listener of [...this.eventListeners]) listener(message);
    switch (message.type) {
      case 'run.started':
        this.dir = message.runDirectory;
        this.record = message.run;
        this.listener.output(
          `Training ${message.run.name} (${message.run.id}): ${message.run.algorithm}, ${message.run.totalSteps} steps on ${message.run.device}; run directory ${message.runDirectory}`,
          'console',
        );
        this.options.trainings?.started(this.publication);
        break;
      case 'run.ended':
        this.record = message.run;
        break;
      case 'log':
        this.listener.output(message.message, message.level === 'info' ? 'console' : 'stderr');
        break;
      case 'progress':
        this.progress(message);
        break;
      case 'debug.hold':
        this.queue.push({
          id: message.id,
          point: message.point,
          trajectories: message.trajectories,
          ...(message.metrics ? { metrics: message.metrics } : {}),
        });
        this.drain();
        break;
      case 'step.completed':
        this.recorded.add(message.step);
        this.listener.stepRecorded?.(message.step);
        break;
      case 'metrics':
        break;
    }
  }

  private onInspector(inspector: { url: string; port: number }): void {
    this.listener.output(
      `Your tool code runs in the trainer (an agent module in its child process), whose Node inspector listens on 127.0.0.1:${inspector.port}${this.options.childSessions ? ': attaching a Node debug session' : ': attach a Node debugger there to stop in it'}.`,
      'console',
    );
    this.listener.inspector?.({ ...inspector, skipFiles: [path.dirname(this.options.launch.cliPath)] });
  }

  private async onExit(exit: TrainerExit): Promise<void> {
    this.queue.length = 0;
    this.stoppedAt = undefined;
    let message: string;
    if (exit.killed && this.dir && markRunStopped(this.dir)) {
      message = `The trainer did not stop in time and was killed; ${this.dir} is marked stopped (its last step in flight is not recorded).`;
      this.listener.output(message, 'important');
    } else if (exit.error) {
      message = `${exit.error.title} ${exit.error.detail}`;
      this.listener.output(message, 'stderr');
    } else {
      const run = this.record;
      message = run
        ? `Training ${run.status}${run.lastStep !== undefined ? ` after step ${run.lastStep} of ${run.totalSteps}` : ''}${run.error ? `: ${run.error.message}` : ''}.`
        : 'The trainer exited.';
      this.listener.output(message, run?.status === 'failed' ? 'stderr' : 'console');
    }
    // The session first, so that it answers for an ended training when transcripts are read again on `trainings.ended`.
    this.listener.ended?.({ exitCode: exit.code ?? 1, message });
    if (this.dir) this.options.trainings?.ended(this.publication);
  }

  private progress(event: Extract<TrainingEvent, { type: 'progress' }>): void {
    const total = this.record?.totalSteps;
    const stepped = event.phase === 'rollout' || event.phase === 'update' || event.phase === 'reward';
    const title = `${PHASE_TITLES[event.phase]}${stepped ? ` · step ${event.step}${total ? `/${total}` : ''}` : ''}`;
    const unit = PHASE_UNITS[event.phase];
    const rate = event.tokensPerSecond !== undefined ? ` · ${Math.round(event.tokensPerSecond)} tok/s` : '';
    // VS Code shows DAP progress as a notification (after half a second) and in the Run and Debug view.
    const amount =
      event.phase === 'download'
        ? `${event.detail ? `${event.detail}: ` : ''}${formatBytes(event.done)} of ${formatBytes(event.total)}`
        : unit
          ? `${event.done}/${event.total} ${unit}`
          : `${Math.round((100 * event.done) / Math.max(1, event.total))}%`;
    this.listener.progress?.({
      id: `${event.step}:${event.phase}`,
      title,
      message: `${amount}${rate}`,
      percentage: event.total > 0 ? Math.min(100, (100 * event.done) / event.total) : 0,
      done: event.done >= event.total,
    });
  }

  /** Decide the held points in the order they came, until one stops the session. */
  private drain(): void {
    while (!this.stoppedAt && this.queue.length) {
      const hold = this.queue.shift()!;
      const view = liveView(hold);
      const previous = this.lastView;
      this.lastView = view;
      if (!previous || previous.step !== view.step) this.listener.stepChanged(previous, view);
      const stop = this.decide(view);
      if (stop) {
        this.stoppedAt = hold;
        this.intent = { kind: 'run' };
        this.listener.stopped(stop);
        return;
      }
      this.release(hold.id);
    }
  }

  private decide(view: TargetView): TargetStop | undefined {
    const { point } = view;
    const where = this.where(view);
    const focus = Math.max(0, point.trajectory);
    switch (this.intent.kind) {
      case 'entry':
        return { reason: 'entry', trajectory: focus, description: `Paused at the first stop point: ${where}` };
      case 'pause':
        if (isTurnBoundary(point) || point.phase === 'update')
          return { reason: 'pause', trajectory: focus, description: `Paused: ${where}` };
        return this.check(view);
      case 'step': {
        const stepped = this.intent.trajectory;
        if (point.trajectory === stepped && reachesStep(this.intent.how, point))
          return { reason: 'step', trajectory: focus, description: where };
        return this.check(view, { trajectory: stepped });
      }
      case 'run':
        return this.check(view);
    }
  }

  private check(view: TargetView, stepping?: SteppingTrajectory): TargetStop | undefined {
    if (this.options.noDebug) return undefined;
    const stop = this.breakpoints.stopAt(
      { ...view, facts: (trajectory) => liveFacts(trajectory, view.point, view.metrics) },
      (text, category) => this.listener.output(text, category),
      stepping,
    );
    return stop && toTargetStop(stop);
  }

  private where(view: TargetView): string {
    const { point, step } = view;
    if (point.phase === 'update') return `step ${step}: after the update (${metricsLine(view.metrics)})`;
    return `step ${step}, #${view.trajectories[point.trajectory]?.index ?? point.trajectory}: ${describePoint(point)}`;
  }

  private reconfigure(): void {
    if (!this.trainer?.running) return;
    const config = holdConfiguration({
      noDebug: this.options.noDebug,
      moving: this.intent.kind !== 'run',
      breakpoints: this.breakpoints.summary(),
    });
    const key = JSON.stringify(config);
    if (key === this.sentConfiguration) return;
    if (this.trainer.send({ type: 'debug.configure', ...config })) this.sentConfiguration = key;
  }

  private release(id: number): void {
    this.trainer?.send({ type: 'debug.release', id });
  }
}

function reachesStep(how: 'next' | 'stepIn' | 'stepOut', point: StopPoint): boolean {
  if (how === 'stepIn') return true;
  if (how === 'stepOut') return point.phase === 'end';
  return isTurnBoundary(point);
}

function metricsLine(metrics: MetricsRecord | undefined): string {
  const reward = metrics?.values['reward/mean'];
  const loss = metrics?.values['loss/total'];
  const parts = [
    typeof reward === 'number' ? `reward ${reward.toFixed(3)}` : undefined,
    typeof loss === 'number' ? `loss ${loss.toFixed(4)}` : undefined,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'no metrics';
}
