/**
 * The `rollout` debug adapter: DAP in, a RolloutTarget moved, DAP events out. It maps RL onto
 * the protocol: threads are the step's trajectories, stack frames
 * their turns (innermost the current call), sources their transcripts as `rollout:` documents,
 * scopes the call, turn, rewards and step. No vscode import: VS Code runs it inline
 * (registerDebugger.ts), tests run it over a socket (standalone.ts).
 */
import {
  CapabilitiesEvent,
  ContinuedEvent,
  DebugSession,
  Event,
  ExitedEvent,
  InitializedEvent,
  OutputEvent,
  Source,
  StackFrame,
  StoppedEvent,
  TerminatedEvent,
  Thread,
  ThreadEvent,
  Handles,
  ProgressEndEvent,
  ProgressStartEvent,
  ProgressUpdateEvent,
} from '@vscode/debugadapter';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { parseWith } from '../../trainer/contract/protocol/parse';
import {
  RolloutLaunchArguments,
  STOP_POINT_REQUEST,
  StopPointArguments,
  TOOL_DEBUGGER_EVENT,
  TOOL_DEBUGGER_FAILED_REQUEST,
  TranscriptRequestArguments,
  type StopPointBody,
  type ToolDebuggerEventBody,
  type TrainingStatusBody,
  type TranscriptResponseBody,
} from '../../trainer/contract/protocol/debugger';
import type { TrajectoryRecord } from '../../trainer/contract/protocol/runStore';
import { renderTranscript, runEndedPhrase, type RenderedTranscript } from '../../trainer/contract/transcript';
import { BreakpointSet, EXCEPTION_FILTERS } from './breakpoints/breakpoints';
import { compileExpression } from './breakpoints/expression';
import { callFrameName, endFrameName, linePoints, threadName, turnFrameName } from './frames';
import { describeRecordedRun } from './replay/replaySummary';
import type { ResumeKind, RolloutTarget, TargetListener, TargetStop, TargetView } from './rolloutTarget';
import { createTarget, type LiveTrainingHost } from './createTarget';
import type { StopPoint } from './timeline';
import {
  parseTranscriptUri,
  transcriptUri,
  TRANSCRIPTS_CHANGED_EVENT,
  type TranscriptsChangedBody,
} from './transcripts/transcriptUri';
import { CONTEXT_NAMES, turnContext } from './breakpoints/turnContext';
import { VariableStore, type FrameSubject } from './variables';

/** A stack frame: one turn (or call, or the end) of one trajectory of the current step. */
interface FrameRef {
  trajectory: number;
  kind: 'turn' | 'call' | 'end';
  turn: number;
  call: number;
}

/** What the host of the adapter provides beyond DAP. */
export interface SessionHost {
  /** Live training (launch with `config`): how to start the trainer, where to publish it. */
  live?: LiveTrainingHost;
}

export class RolloutDebugSession extends DebugSession {
  private target?: RolloutTarget;
  private readonly breakpoints = new BreakpointSet();
  private readonly variables = new VariableStore();
  private readonly frames = new Handles<FrameRef>();
  /** Thread ids are stable per (step, trajectory index) for the whole session. */
  private readonly threadIds = new Map<string, number>();
  private readonly transcripts = new Map<string, RenderedTranscript>();
  private lastStop?: TargetStop;
  private configured!: () => void;
  private readonly configurationDone = new Promise<void>((resolve) => (this.configured = resolve));
  /** What the client said it can do (initialize). */
  private client = { progress: false };
  /** The progress shown now (one phase of one step at a time). */
  private openProgress: string | undefined;
  private ended = false;
  /** Live: the trainer has exited; what its run did not record will never be known. */
  private trainingEnded = false;

  constructor(private readonly host: SessionHost = {}) {
    super();
    // Transcript tables are 0-based; DebugSession converts to the client's convention.
    this.setDebuggerLinesStartAt1(false);
    this.setDebuggerColumnsStartAt1(false);
  }

  protected override initializeRequest(
    response: DebugProtocol.InitializeResponse,
    args: DebugProtocol.InitializeRequestArguments,
  ): void {
    this.client = { progress: args.supportsProgressReporting === true };
    response.body = {
      ...response.body,
      supportsConfigurationDoneRequest: true,
      supportsFunctionBreakpoints: true,
      supportsConditionalBreakpoints: true,
      supportsHitConditionalBreakpoints: true,
      supportsLogPoints: true,
      supportsStepBack: true,
      supportsEvaluateForHovers: false,
      supportsExceptionInfoRequest: true,
      supportsExceptionFilterOptions: true,
      exceptionBreakpointFilters: EXCEPTION_FILTERS,
      supportsTerminateRequest: true,
      supportsCompletionsRequest: true,
      completionTriggerCharacters: ['.'],
      supportsDelayedStackTraceLoading: false,
    };
    this.sendResponse(response);
  }

  protected override configurationDoneRequest(response: DebugProtocol.ConfigurationDoneResponse): void {
    this.sendResponse(response);
    this.configured();
  }

  protected override launchRequest(
    response: DebugProtocol.LaunchResponse,
    raw: DebugProtocol.LaunchRequestArguments,
  ): void {
    // DebugSession does not await a request handler. What fails before the answer is answered
    // with the error inside launch(); what fails after it (reading the recorded run, starting
    // the target) can only be shown, in the debug console.
    this.launch(response, raw).catch((error: unknown) =>
      this.output(`The launch failed: ${error instanceof Error ? error.message : String(error)}`, 'stderr'),
    );
  }

  private async launch(
    response: DebugProtocol.LaunchResponse,
    raw: DebugProtocol.LaunchRequestArguments,
  ): Promise<void> {
    let args: RolloutLaunchArguments;
    try {
      args = parseWith(RolloutLaunchArguments, raw ?? {}, 'launch configuration');
    } catch (error) {
      return this.fail(response, (error as Error).message);
    }
    this.breakpoints.duringStep = args.breakpointsDuringStep ?? 'stepped-trajectory';
    try {
      this.target = createTarget(args, {
        breakpoints: this.breakpoints,
        listener: this.listener(),
        live: this.host.live,
      });
    } catch (error) {
      return this.fail(response, (error as Error).message);
    }
    // Live training moves forwards only (the initialize answer assumed a replay).
    if (!this.target.supportsStepBack) this.sendEvent(new CapabilitiesEvent({ supportsStepBack: false }));
    // Ready for breakpoints now that the run is open (transcript breakpoints need its
    // trajectories); they arrive between `initialized` and `configurationDone`.
    this.sendEvent(new InitializedEvent());
    await this.configurationDone;
    this.sendResponse(response);
    if (args.noDebug && this.target.mode === 'replay') {
      // Nothing runs in a replay, so running it without debugging means: say what it holds.
      this.output(describeRecordedRun(this.target.runDirectory), 'console');
      this.sendEvent(new TerminatedEvent());
      return;
    }
    const run = this.target.run();
    const stopping = args.startAt
      ? `, stopping at #${args.startAt.trajectory} of step ${args.startAt.step}`
      : args.stopOnEntry
        ? ', stopping at the first turn'
        : '';
    if (run)
      this.output(
        `Replaying ${run.name} (${run.id}, ${run.status}) from ${this.target.runDirectory}${stopping}`,
        'console',
      );
    this.target.start(args.stopOnEntry ?? false);
  }

  protected override setFunctionBreakPointsRequest(
    response: DebugProtocol.SetFunctionBreakpointsResponse,
    args: DebugProtocol.SetFunctionBreakpointsArguments,
  ): void {
    response.body = { breakpoints: this.breakpoints.setFunctionBreakpoints(args.breakpoints) };
    this.sendResponse(response);
    this.target?.breakpointsChanged?.();
  }

  protected override setExceptionBreakPointsRequest(
    response: DebugProtocol.SetExceptionBreakpointsResponse,
    args: DebugProtocol.SetExceptionBreakpointsArguments,
  ): void {
    response.body = { breakpoints: this.breakpoints.setExceptionBreakpoints(args) };
    this.sendResponse(response);
    this.target?.breakpointsChanged?.();
  }

  /**
   * Line breakpoints (and logpoints) in a transcript stop at that trajectory's turn, call or
   * end. Breakpoints in other files belong to other debuggers (a child Node session for tool
   * code): say so. The run is open by the time they arrive: `initialized` follows the launch.
   */
  protected override setBreakPointsRequest(
    response: DebugProtocol.SetBreakpointsResponse,
    args: DebugProtocol.SetBreakpointsArguments,
  ): void {
    const requested = args.breakpoints ?? [];
    const address = args.source.path ? parseTranscriptUri(args.source.path) : undefined;
    const unverified = (message: string) => requested.map((bp) => ({ verified: false, line: bp.line, message }));
    if (!address) {
      response.body = {
        breakpoints: unverified(
          'The rollout debugger stops on tools (function breakpoints), failures (exception filters) and transcript lines, not on lines of this file.',
        ),
      };
    } else if (this.target && !sameDirectory(address.runDirectory, this.target.runDirectory)) {
      response.body = {
        breakpoints: unverified(
          `This transcript belongs to ${address.runDirectory}; this session ${this.target.mode === 'live' ? 'trains' : 'replays'} ${this.target.runDirectory || 'a run not created yet'}.`,
        ),
      };
    } else {
      const trajectory = this.target?.findTrajectory(address.step, address.index);
      const points = trajectory ? linePoints(trajectory) : [];
      const lines = requested.map((bp) => ({ ...bp, line: this.convertClientLineToDebugger(bp.line) }));
      const answers = this.breakpoints.setLineBreakpoints(address.step, address.index, lines, points);
      response.body = {
        breakpoints: answers.map((a) => ({
          ...a,
          ...(a.line !== undefined ? { line: this.convertDebuggerLineToClient(a.line) } : {}),
          source: args.source,
        })),
      };
    }
    this.sendResponse(response);
    this.target?.breakpointsChanged?.();
  }

  protected override threadsRequest(response: DebugProtocol.ThreadsResponse): void {
    const view = this.target?.view();
    response.body = {
      threads: view ? view.trajectories.map((t) => new Thread(this.threadId(view.step, t.index), threadName(t))) : [],
    };
    this.sendResponse(response);
  }

  protected override stackTraceRequest(
    response: DebugProtocol.StackTraceResponse,
    args: DebugProtocol.StackTraceArguments,
  ): void {
    const found = this.trajectoryOf(args.threadId);
    if (!found) return this.fail(response, `thread ${args.threadId} is not a trajectory of the current step`);
    const { view, position } = found;
    const trajectory = view.trajectories[position];
    const point = view.positions[position];
    const transcript = this.transcript(view.step, position, trajectory);
    const source = new Source(
      `trajectory-${trajectory.index}.rollout.txt`,
      transcriptUri({ runDirectory: this.target!.runDirectory, step: view.step, index: trajectory.index }),
    );
    const frames: DebugProtocol.StackFrame[] = [];
    const frame = (ref: FrameRef, name: string, line: number) => {
      const f = new StackFrame(
        this.frames.create(ref),
        name,
        source,
        this.convertDebuggerLineToClient(line),
        this.convertDebuggerColumnToClient(0),
      );
      frames.push(f);
    };
    if (point.phase === 'end')
      frame(
        { trajectory: position, kind: 'end', turn: trajectory.turns.length, call: -1 },
        endFrameName(trajectory),
        transcript.endLine,
      );
    if (point.phase === 'call' || point.phase === 'result') {
      const lines = transcript.callLines.find((c) => c.turn === point.turn && c.call === point.call)!;
      frame(
        { trajectory: position, kind: 'call', turn: point.turn, call: point.call },
        callFrameName(trajectory, point),
        point.phase === 'call' ? lines.line : lines.resultLine,
      );
    }
    for (let turn = Math.min(point.turn, trajectory.turns.length - 1); turn >= 0; turn--) {
      frame(
        { trajectory: position, kind: 'turn', turn, call: -1 },
        turnFrameName(trajectory, turn),
        transcript.turnLines[turn],
      );
    }
    const start = args.startFrame ?? 0;
    const count = args.levels ? args.levels : frames.length;
    response.body = { stackFrames: frames.slice(start, start + count), totalFrames: frames.length };
    this.sendResponse(response);
  }

  protected override scopesRequest(response: DebugProtocol.ScopesResponse, args: DebugProtocol.ScopesArguments): void {
    const subject = this.subject(args.frameId);
    if (!subject) return this.fail(response, 'that stack frame is gone: the rollout has moved on');
    response.body = { scopes: this.variables.scopes(subject) };
    this.sendResponse(response);
  }

  protected override variablesRequest(
    response: DebugProtocol.VariablesResponse,
    args: DebugProtocol.VariablesArguments,
  ): void {
    response.body = { variables: this.variables.variables(args.variablesReference) };
    this.sendResponse(response);
  }

  protected override evaluateRequest(
    response: DebugProtocol.EvaluateResponse,
    args: DebugProtocol.EvaluateArguments,
  ): void {
    const context = this.contextFor(args.frameId);
    if (!context)
      return this.fail(
        response,
        `nothing to evaluate against yet: the ${this.target?.mode === 'live' ? 'training' : 'replay'} has not stopped`,
      );
    try {
      const value = compileExpression(args.expression).evaluate(context);
      response.body = this.variables.evaluated(value, args.expression);
      this.sendResponse(response);
    } catch (error) {
      this.fail(response, (error as Error).message);
    }
  }

  protected override completionsRequest(
    response: DebugProtocol.CompletionsResponse,
    args: DebugProtocol.CompletionsArguments,
  ): void {
    const before = args.text.slice(0, args.column - 1);
    // Quadratic only in an identifier's length, on one line the user is typing in the debug console.
    // eslint-disable-next-line regexp/no-super-linear-move
    const member = /([A-Za-z_$][\w$]*)\.([\w$]*)$/.exec(before);
    // eslint-disable-next-line regexp/no-super-linear-move
    const word = /[\w$]*$/.exec(before)![0];
    let names: string[] = [...CONTEXT_NAMES];
    if (member) {
      const value = this.contextFor(args.frameId)?.[member[1] as (typeof CONTEXT_NAMES)[number]];
      names = typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.keys(value) : [];
    }
    response.body = {
      targets: names
        .filter((n) => n.startsWith(word))
        .map((label) => ({ label, type: member ? 'property' : 'variable', length: word.length })),
    };
    this.sendResponse(response);
  }

  protected override exceptionInfoRequest(response: DebugProtocol.ExceptionInfoResponse): void {
    const exception = this.lastStop?.exception;
    if (!exception) return this.fail(response, 'the rollout did not stop on a failure');
    response.body = {
      exceptionId: exception.id,
      description: exception.description,
      breakMode: 'always',
      details: {
        message: exception.description,
        ...(exception.details !== undefined ? { stackTrace: exception.details } : {}),
      },
    };
    this.sendResponse(response);
  }

  protected override continueRequest(
    response: DebugProtocol.ContinueResponse,
    args: DebugProtocol.ContinueArguments,
  ): void {
    response.body = { allThreadsContinued: true };
    this.resume(response, 'continue', args.threadId);
  }

  protected override nextRequest(response: DebugProtocol.NextResponse, args: DebugProtocol.NextArguments): void {
    this.resume(response, 'next', args.threadId);
  }

  protected override stepInRequest(response: DebugProtocol.StepInResponse, args: DebugProtocol.StepInArguments): void {
    this.resume(response, 'stepIn', args.threadId);
  }

  protected override stepOutRequest(
    response: DebugProtocol.StepOutResponse,
    args: DebugProtocol.StepOutArguments,
  ): void {
    this.resume(response, 'stepOut', args.threadId);
  }

  protected override stepBackRequest(
    response: DebugProtocol.StepBackResponse,
    args: DebugProtocol.StepBackArguments,
  ): void {
    if (this.target && !this.target.supportsStepBack) return this.fail(response, NO_GOING_BACK);
    this.resume(response, 'stepBack', args.threadId);
  }

  protected override reverseContinueRequest(
    response: DebugProtocol.ReverseContinueResponse,
    args: DebugProtocol.ReverseContinueArguments,
  ): void {
    if (this.target && !this.target.supportsStepBack) return this.fail(response, NO_GOING_BACK);
    this.resume(response, 'reverseContinue', args.threadId);
  }

  protected override pauseRequest(response: DebugProtocol.PauseResponse): void {
    this.sendResponse(response);
    this.target?.pause();
  }

  protected override terminateRequest(response: DebugProtocol.TerminateResponse): void {
    if (this.target?.terminate && !this.ended) {
      // Live: the trainer stops cleanly; `terminated` follows when it has exited.
      this.target.terminate();
      this.sendResponse(response);
      return;
    }
    void this.target?.dispose();
    this.sendResponse(response);
    this.end();
  }

  protected override disconnectRequest(response: DebugProtocol.DisconnectResponse): void {
    // Replay holds no process and writes nothing: letting go is all there is. Live, the trainer
    // is stopped (killed if it does not stop in time) before the answer, so a restart never
    // overlaps two trainers. A failure to stop it is the answer (DebugSession does not await this).
    Promise.resolve(this.target?.dispose()).then(
      () => this.sendResponse(response),
      (error: unknown) => this.fail(response, error instanceof Error ? error.message : String(error)),
    );
  }

  protected override customRequest(command: string, response: DebugProtocol.Response, raw: unknown): void {
    if (command === 'rolloutTraining') {
      const run = this.target?.run();
      const body: TrainingStatusBody = {
        mode: this.target?.mode ?? 'replay',
        runDirectory: this.target?.runDirectory ?? '',
        ...(this.target?.pid !== undefined ? { pid: this.target.pid } : {}),
        ...(run ? { status: run.status, ...(run.lastStep !== undefined ? { lastStep: run.lastStep } : {}) } : {}),
      };
      response.body = body;
      return this.sendResponse(response);
    }
    if (command === TOOL_DEBUGGER_FAILED_REQUEST) {
      const message =
        typeof (raw as { message?: unknown })?.message === 'string'
          ? (raw as { message: string }).message
          : 'no reason given';
      this.output(
        `Could not attach a Node debug session to the trainer: ${message}. Stopping the training (it waits for a debugger before it starts).`,
        'stderr',
      );
      this.target?.terminate?.();
      return this.sendResponse(response);
    }
    if (command === STOP_POINT_REQUEST) return this.stopPoint(response, raw);
    if (command !== 'rolloutTranscript') return this.fail(response, `unknown request "${command}"`);
    try {
      const args = parseWith(TranscriptRequestArguments, raw, 'rolloutTranscript request');
      if (!this.target || !sameDirectory(args.runDirectory, this.target.runDirectory))
        throw new Error(`this session shows ${this.target?.runDirectory || 'nothing yet'}, not ${args.runDirectory}`);
      const trajectory = transcriptOf(this.target, args.step, args.index);
      const endedBy = this.trainingEnded ? runEndedPhrase(this.target.run()?.status ?? 'running') : undefined;
      const text = renderTranscript(trajectory, endedBy ? { endedBy } : {}).text;
      const body: TranscriptResponseBody = {
        text,
        trajectory: { ...trajectory, tokens: { ids: '', pieces: [], mask: '', logprobs: '' } },
      };
      response.body = body;
      this.sendResponse(response);
    } catch (error) {
      this.fail(response, (error as Error).message);
    }
  }

  /** Where the thread asked about (default: the last stop's) stands: what "Re-roll From Here" re-rolls from. */
  private stopPoint(response: DebugProtocol.Response, raw: unknown): void {
    try {
      const args = parseWith(StopPointArguments, raw ?? {}, `${STOP_POINT_REQUEST} request`);
      const view = this.target?.view();
      if (!this.target || !view || this.target.running)
        throw new Error('the rollout is not stopped: pause it or wait for a stop first');
      const position =
        (args.threadId !== undefined ? this.trajectoryOf(args.threadId)?.position : undefined) ??
        this.lastStop?.trajectory ??
        view.point.trajectory;
      const trajectory = view.trajectories[position];
      const point = view.positions[position];
      if (!trajectory || !point) throw new Error('no trajectory is stopped (the step is at its update)');
      const body: StopPointBody = {
        mode: this.target.mode,
        runDirectory: this.target.runDirectory,
        step: view.step,
        index: trajectory.index,
        phase: point.phase,
        turn: point.turn,
        call: point.call,
      };
      response.body = body;
      this.sendResponse(response);
    } catch (error) {
      this.fail(response, (error as Error).message);
    }
  }

  // ── helpers ──────────────────────────────────────────────────────────────────────────────

  private resume(response: DebugProtocol.Response, kind: ResumeKind, threadId: number): void {
    if (!this.target) return this.fail(response, 'nothing is running yet: launch first');
    if (this.target.running)
      return this.fail(
        response,
        `the ${this.target.mode === 'live' ? 'training is running' : 'replay is already moving'}; pause it first`,
      );
    const position = this.trajectoryOf(threadId)?.position ?? this.lastStop?.trajectory ?? 0;
    this.sendResponse(response);
    // Every trajectory moves with a step (the batch runs together); only `continue`'s response can say so.
    if (kind !== 'continue') this.sendEvent(new ContinuedEvent(threadId, true));
    this.forgetStop();
    this.target.resume(kind, position);
  }

  private listener(): TargetListener {
    return {
      stopped: (stop) => {
        this.lastStop = stop;
        this.reportPassedOver();
        const view = this.target?.view();
        // Live trajectories grow between stops: render their transcripts afresh, and let open ones be read again.
        this.transcripts.clear();
        if (this.target?.mode === 'live' && view)
          this.sendEvent(
            new Event(TRANSCRIPTS_CHANGED_EVENT, { runDirectory: this.target.runDirectory, step: view.step }),
          );
        const trajectory = view?.trajectories[stop.trajectory];
        const event = new StoppedEvent(
          stop.reason,
          view && trajectory ? this.threadId(view.step, trajectory.index) : undefined,
        ) as DebugProtocol.StoppedEvent;
        event.body.description = stop.description;
        event.body.allThreadsStopped = true;
        if (stop.exception) event.body.text = stop.exception.description;
        if (stop.hitBreakpointIds?.length) event.body.hitBreakpointIds = stop.hitBreakpointIds;
        this.sendEvent(event);
      },
      output: (text, category) => this.output(text, category),
      // A recorded step's trajectories are final now: open transcripts of it are read again.
      stepRecorded: (step) =>
        this.sendEvent(new Event(TRANSCRIPTS_CHANGED_EVENT, { runDirectory: this.target!.runDirectory, step })),
      progress: (progress) => this.progress(progress),
      ended: ({ exitCode }) => {
        this.reportPassedOver();
        // Open transcripts of the run are read again: now they say what was never recorded.
        this.trainingEnded = true;
        if (this.target?.runDirectory)
          this.sendEvent(
            new Event(TRANSCRIPTS_CHANGED_EVENT, {
              runDirectory: this.target.runDirectory,
            } satisfies TranscriptsChangedBody),
          );
        if (this.openProgress) this.sendEvent(new ProgressEndEvent(this.openProgress));
        this.openProgress = undefined;
        this.sendEvent(new ExitedEvent(exitCode));
        this.end();
      },
      inspector: (inspector) => this.attachToolDebugger(inspector),
      stepChanged: (previous, next) => {
        this.transcripts.clear();
        for (const t of previous?.trajectories ?? [])
          this.sendEvent(new ThreadEvent('exited', this.threadId(previous!.step, t.index)));
        for (const t of next.trajectories)
          this.sendEvent(new ThreadEvent('started', this.threadId(next.step, t.index)));
      },
    };
  }

  /** After a step: the other trajectories' breakpoint hits it went past (see BreakpointSet.duringStep). */
  private reportPassedOver(): void {
    const passed = this.breakpoints.takePassedOver();
    if (passed) this.output(passed, 'console');
  }

  /** DAP progress for the phase in flight; a new phase ends the previous one. */
  private progress(progress: { id: string; title: string; message: string; percentage: number; done: boolean }): void {
    if (!this.client.progress) return;
    if (this.openProgress !== progress.id) {
      if (this.openProgress) this.sendEvent(new ProgressEndEvent(this.openProgress));
      this.openProgress = undefined;
      if (progress.done) return; // a phase seen only at its end (or reported twice) shows nothing
      this.openProgress = progress.id;
      const start = new ProgressStartEvent(
        progress.id,
        progress.title,
        progress.message,
      ) as DebugProtocol.ProgressStartEvent;
      start.body.percentage = progress.percentage;
      start.body.cancellable = false;
      this.sendEvent(start);
      return;
    }
    if (progress.done) {
      this.sendEvent(new ProgressEndEvent(progress.id, progress.message));
      this.openProgress = undefined;
      return;
    }
    const update = new ProgressUpdateEvent(progress.id, progress.message) as DebugProtocol.ProgressUpdateEvent;
    update.body.percentage = progress.percentage;
    this.sendEvent(update);
  }

  /**
   * Live with `debugTools`: ask the host for a child Node debug session attached to the
   * trainer, so breakpoints in tool code hit. (DAP's `startDebugging` reverse request cannot do
   * it: VS Code starts children of the parent's own debug type.) The extension answers the
   * event with vscode.debug.startDebugging; a host that does not gets the port to attach to in
   * the console (LiveTarget says so).
   */
  private attachToolDebugger(inspector: { url: string; port: number; skipFiles: string[] }): void {
    if (!this.host.live?.toolDebugger) return;
    const body: ToolDebuggerEventBody = { address: '127.0.0.1', port: inspector.port, skipFiles: inspector.skipFiles };
    this.sendEvent(new Event(TOOL_DEBUGGER_EVENT, body));
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.sendEvent(new TerminatedEvent());
  }

  private forgetStop(): void {
    this.frames.reset();
    this.variables.reset();
  }

  private threadId(step: number, index: number): number {
    const key = `${step}:${index}`;
    let id = this.threadIds.get(key);
    if (id === undefined) this.threadIds.set(key, (id = this.threadIds.size + 1));
    return id;
  }

  private trajectoryOf(threadId: number): { view: TargetView; position: number } | undefined {
    const view = this.target?.view();
    if (!view) return undefined;
    const position = view.trajectories.findIndex((t) => this.threadIds.get(`${view.step}:${t.index}`) === threadId);
    return position < 0 ? undefined : { view, position };
  }

  private transcript(step: number, position: number, trajectory: TrajectoryRecord): RenderedTranscript {
    const key = `${step}:${position}`;
    let rendered = this.transcripts.get(key);
    if (!rendered) this.transcripts.set(key, (rendered = renderTranscript(trajectory)));
    return rendered;
  }

  private subject(frameId: number): FrameSubject | undefined {
    const ref = this.frames.get(frameId);
    const view = this.target?.view();
    if (!ref || !view) return undefined;
    return {
      step: view.step,
      trajectory: view.trajectories[ref.trajectory],
      turn: ref.turn,
      call: ref.call,
      isEnd: ref.kind === 'end',
      visibleAt: view.positions[ref.trajectory],
      metrics: view.metrics,
      ...(this.target?.runDirectory ? { runDirectory: this.target.runDirectory } : {}),
    };
  }

  /** The turn context of a frame, or of the trajectory the last stop focused. */
  private contextFor(frameId: number | undefined) {
    const view = this.target?.view();
    if (!view) return undefined;
    const ref = frameId !== undefined ? this.frames.get(frameId) : undefined;
    if (!ref) {
      const position = this.lastStop?.trajectory ?? 0;
      const trajectory = view.trajectories[position];
      const point = view.point.phase === 'update' ? view.point : (view.positions[position] ?? view.point);
      return turnContext(view.step, point.phase === 'update' ? undefined : trajectory, point, view.metrics);
    }
    const visibleAt = view.positions[ref.trajectory];
    const at: StopPoint =
      ref.kind === 'turn' && ref.turn !== visibleAt.turn
        ? { trajectory: ref.trajectory, phase: 'turn', turn: ref.turn, call: -1 }
        : visibleAt;
    return turnContext(view.step, view.trajectories[ref.trajectory], at, view.metrics, visibleAt);
  }

  private output(text: string, category: 'console' | 'stderr' | 'important'): void {
    this.sendEvent(new OutputEvent(text.endsWith('\n') ? text : `${text}\n`, category));
  }

  private fail(response: DebugProtocol.Response, message: string): void {
    // `variables: {}` keeps DAP's {placeholder} formatting from touching braces in the message.
    this.sendErrorResponse(response, { id: 1, format: message, showUser: true, variables: {} });
  }
}

const NO_GOING_BACK =
  'Live training only moves forwards: replay the run (Rollout Studio: Replay Run in Debugger…) to step back through it.';

/**
 * The trajectory a transcript shows: while stopped, as the stop shows it (its frames point into
 * that text); while the rollout moves on, the newest the target has (live: the recorded one once
 * its step is recorded).
 */
function transcriptOf(target: RolloutTarget, step: number, index: number): TrajectoryRecord {
  const view = target.view();
  const fromView =
    view?.step === step && !target.running ? view.trajectories.find((t) => t.index === index) : undefined;
  const trajectory = fromView ?? target.findTrajectory(step, index);
  if (!trajectory) throw new Error(`step ${step} has no trajectory #${index}`);
  return trajectory;
}

function sameDirectory(a: string, b: string): boolean {
  const norm = (p: string) => p.replace(/\\/g, '/').replace(/(?<!\/)\/+$/, '');
  return norm(a) === norm(b);
}
