import * as crypto from 'node:crypto';
import type { DatasetRow } from '../../../foundations/data/row';
import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
import type {
  Policy,
  GeneratedTurn,
  PolicySession,
  SamplingOptions,
  TurnRequest,
} from '../../../foundations/models/generation/policy';
import type { PreparedImage } from '../../../foundations/models/vision/preprocess';
import { checkBudget, type LengthBudget } from '../budget';
import { policyImage, RolloutImages } from '../images';
import { HermesFormat } from '../formats/hermes';
import type { ToolCallFormat } from '../formats/toolCallFormat';
import type { RolloutObserver } from '../observer';
import type { Episode, Trajectory } from '../trajectory';
import { checkTrajectory } from '../validate';
import type { RunOptions } from '../agentLoop';
import { sameSecret } from '../../../foundations/http/localServer';
import { AddressedDraws, drawSeed } from './addressedDraws';
import { AgentError, type AgentOutcome, type AgentRunner } from './agentRunner';
import { AnswerConstraints, type AnswerConstraint } from './answerConstraint';
import { assistantAnswer } from './assistantAnswer';
import { ChatRequestError, type ChatTurnRequest } from './chatRequest';
import {
  startChatServer,
  type ChatBackend,
  type ChatCall,
  type ChoiceResult,
  type RunningChatServer,
} from './chatServer';
import { GatewaySequence } from './gatewaySequence';
import { matchHistory } from './historyMatch';
import { prepareRequestImages } from './requestImages';
import { StreamDeltas } from './streamDeltas';
import { definedFields } from '../../../contract/definedFields';

/**
 * Rollouts of an agent we did not write: each episode is one session of the user's agent (its
 * own loop, tools and prompts, on the `openai` SDK or any framework over it), served by the
 * policy under training through a session-scoped Chat Completions endpoint. The sessions of a
 * batch run concurrently; their requests are answered in rounds, as the built-in loop generates
 * (agentLoop.ts): a round starts when every session still running waits for an answer, and all
 * their turns share one `generate` call. So a deterministic agent meets the same batches in every
 * run, and the draws are addressed by session and turn besides (addressedDraws.ts).
 *
 * Each session keeps a token-exact sequence (gatewaySequence.ts); a request that does not continue
 * it (historyMatch.ts) starts a new sequence in the same slot, and the session's trajectories
 * share its reward. The run's length budget holds: a request past `maxTurns` answers or past
 * `maxTotalTokens` gets a 400 (`max_turns_exceeded`, `context_length_exceeded`) and the trajectory
 * ends with that finish reason; an answer is cut at `maxNewTokensPerTurn` (finish `length`). The
 * run's sampling settings are the policy's: a request's temperature and top-p are not used in
 * training (its `max_tokens`, `stop`, tools, `tool_choice` and `response_format` are).
 *
 * Faults become failed trajectories, never a failed run: an agent that throws, exits non-zero or
 * runs past its time ends its session with `finishReason: 'error'` and the error in the record; an
 * agent that never called the model gets a trajectory of the row's prompt with no generated token
 * (trained on nothing, its reward counted in its group); a request after its session ended, or a
 * malformed one, is answered with an error the agent sees.
 */

export interface GatewayRolloutOptions {
  policy: Policy;
  template: ChatTemplate;
  budget: LengthBudget;
  sampling: SamplingOptions;
  agent: AgentRunner;
  format?: ToolCallFormat | undefined;
  templateKwargs?: Record<string, unknown> | undefined;
  /** The run's stop strings (kept in the answer's text, as in the built-in loop). */
  stop?: readonly string[] | undefined;
  /** Tool calls constrained to the request's tools while sampled (default true). */
  constrainCalls?: boolean | undefined;
  observer?: RolloutObserver | undefined;
  /** The model id sessions are told (default `policy`). */
  modelName?: string | undefined;
  /** A session's time, from its start (default 600 s). */
  sessionTimeoutMs?: number | undefined;
  /** Images in the agents' requests: the model's vision tower and processor (a text-only model refuses them). */
  images?: RolloutImages | undefined;
  /** Re-rolls (training/reroll/reroll.ts): what each session replays from a recorded run before it samples. */
  replay?: ((session: number) => SessionReplay | undefined) | undefined;
}

/**
 * A session's recorded beginning: its first requests are answered with these answers' tokens, as
 * sampled in the recorded run, instead of sampling; its later turns sample with the draws of
 * the recorded session (`draws`), so a deterministic agent with the recorded weights and seed
 * samples what the recorded session sampled.
 */
export interface SessionReplay {
  answers: readonly Omit<GeneratedTurn, 'sequence'>[];
  draws?: { seed: number; session: number } | undefined;
}

interface Waiting {
  request: ChatTurnRequest;
  call: ChatCall;
  resolve(results: ChoiceResult[]): void;
  reject(error: unknown): void;
}

/**
 * A session's time limit, counting only the agent's own time: paused while a request of its waits
 * for the model, which waits in turn for the other sessions of its round (one slow agent would
 * otherwise run every other session out of time).
 */
class AgentClock {
  private left: number;
  private since: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  constructor(
    limitMs: number,
    private readonly expire: () => void,
  ) {
    this.left = limitMs;
    this.resume();
  }
  pause(): void {
    if (this.since === undefined) return;
    clearTimeout(this.timer);
    this.left -= performance.now() - this.since;
    this.since = undefined;
  }
  resume(): void {
    if (this.since !== undefined || !Number.isFinite(this.left)) return;
    this.since = performance.now();
    this.timer = setTimeout(this.expire, Math.max(0, this.left));
  }
  stop(): void {
    this.pause();
    this.left = Infinity;
  }
}

/** One episode's session: its agent run, its sequences (a new one after each split), its request in wait. */
class Session {
  readonly id = crypto.randomBytes(12).toString('hex');
  readonly key = `rs-${crypto.randomBytes(24).toString('hex')}`;
  readonly sequences: GatewaySequence[] = [];
  waiting: Waiting | undefined;
  ended = false;
  answers = 0;
  /** The agent's own time (paused while its request waits for the model). */
  clock = new AgentClock(Infinity, () => undefined);
  /** Why the session's budget ended it, when it did (its last trajectory's finish reason). */
  budgetEnd: 'max_turns' | 'max_total_tokens' | undefined;
  constructor(
    readonly index: number,
    readonly episode: Episode,
  ) {}

  get current(): GatewaySequence {
    return this.sequences[this.sequences.length - 1];
  }
}

/** The sessions of the batch being rolled out, and what their rounds share. */
interface Batch {
  sessions: Map<string, Session>;
  list: Session[];
  policy: PolicySession;
  draws: AddressedDraws;
  seed: number;
  extraIndex: number;
  generating: boolean;
  failure: unknown;
}

export class GatewayRollout implements ChatBackend {
  readonly budget: LengthBudget;
  readonly format: ToolCallFormat;
  private readonly constraints: AnswerConstraints;
  private readonly endIds: Set<number>;
  private server: RunningChatServer | undefined;
  private batch: Batch | undefined;
  private readonly modelName: string;
  private textOnly: RolloutImages | undefined;

  constructor(private readonly options: GatewayRolloutOptions) {
    this.budget = checkBudget(options.budget);
    this.format = options.format ?? new HermesFormat();
    const tokenizer = options.template.tokenizer;
    this.endIds = new Set([options.template.endOfTurnId, ...tokenizer.eosTokenIds]);
    this.constraints = new AnswerConstraints(tokenizer, this.format, [...this.endIds]);
    this.modelName = options.modelName ?? 'policy';
  }

  get tokenizer() {
    return this.options.template.tokenizer;
  }

  /** Rows are the agent's input, not a prompt: nothing to prepare or check against the budget ahead. */
  async prepareRows(): Promise<void> {}
  checkRows(): void {}

  async releasePolicy(): Promise<void> {
    await this.options.policy.release?.();
  }

  /** Stops the endpoint and what the agent runner keeps. */
  async close(): Promise<void> {
    await this.server?.close();
    this.server = undefined;
    await this.options.agent.close?.();
  }

  modelIds(): string[] {
    return [this.modelName];
  }

  authorise(call: Pick<ChatCall, 'session' | 'apiKey'>): void {
    const session = call.session === undefined ? undefined : this.batch?.sessions.get(call.session);
    if (!session)
      throw new ChatRequestError(
        call.session === undefined
          ? 'this endpoint serves a training run: use the base URL the rollout was given (…/sessions/<id>/v1)'
          : `no rollout session ${call.session} is running (it ended, or belongs to an earlier step)`,
        404,
        null,
        'session_not_found',
      );
    if (!sameSecret(call.apiKey, session.key))
      throw new ChatRequestError(
        "Incorrect API key provided: use the API key the rollout's context gave (OPENAI_API_KEY for a command)",
        401,
        null,
        'invalid_api_key',
      );
  }

  streamDecoder(request: ChatTurnRequest): StreamDeltas {
    return new StreamDeltas(this.tokenizer, this.endIds, request.stop);
  }

  complete(request: ChatTurnRequest, call: ChatCall): Promise<ChoiceResult[]> {
    const batch = this.batch;
    const session = batch?.sessions.get(call.session ?? '');
    if (!batch || !session) throw new ChatRequestError('no rollout session is running', 404, null, 'session_not_found');
    if (session.ended)
      throw new ChatRequestError(
        'this rollout session has ended; its agent may not call the model any more',
        409,
        null,
        'session_ended',
      );
    if (session.waiting)
      throw new ChatRequestError(
        'a request of this session is still being answered; a training session takes one request at a time',
        409,
        null,
        'concurrent_request',
      );
    if (request.n !== 1)
      throw new ChatRequestError('n: a training session samples one answer per request (n: 1)', 400, 'n');
    session.clock.pause();
    return new Promise<ChoiceResult[]>((resolve, reject) => {
      session.waiting = { request, call, resolve, reject };
      this.startRoundIfReady(batch);
    }).finally(() => session.clock.resume());
  }

  /** Rolls out every episode as one session of the agent; returns the trajectories (the first sequence of each episode in episode order, then split-off ones). */
  async run<Row extends DatasetRow>(episodes: readonly Episode<Row>[], run: RunOptions): Promise<Trajectory<Row>[]> {
    if (episodes.length === 0) return [];
    if (this.batch) throw new Error('a gateway rollout is already running');
    this.server ??= await startChatServer(this, { host: '127.0.0.1', port: 0 });
    const draws = new AddressedDraws();
    const policy = await this.options.policy.startSession(episodes.length, run.seed, { uniforms: draws });
    const list = episodes.map((episode, i) => new Session(i, episode));
    const batch: Batch = {
      sessions: new Map(list.map((s) => [s.id, s])),
      list,
      policy,
      draws,
      seed: run.seed,
      extraIndex: episodes.length,
      generating: false,
      failure: undefined,
    };
    for (const s of list) s.sequences.push(this.newSequence(s, s.index, undefined));
    this.batch = batch;
    this.options.observer?.rolloutStarted?.(list.map((s) => s.current.trajectory));
    // One listener on the run's signal ends every session (not one per session: a batch can hold hundreds).
    const sessionStops = new Set<AbortController>();
    const stopAll = () => sessionStops.forEach((c) => c.abort(run.signal?.reason ?? new Error('the run stopped')));
    run.signal?.addEventListener('abort', stopAll, { once: true });
    try {
      await Promise.all(list.map((s) => this.runAgent(batch, s, sessionStops)));
      if (batch.failure) throw batch.failure;
      // A stopped run drops the step (as the built-in loop does), not trains on its cut sessions.
      run.signal?.throwIfAborted();
    } finally {
      run.signal?.removeEventListener('abort', stopAll);
      this.batch = undefined;
      await policy.close();
    }
    const sequences = [...list.map((s) => s.sequences[0]), ...list.flatMap((s) => s.sequences.slice(1))];
    const trajectories = sequences.map((q) => q.trajectory).sort((a, b) => a.index - b.index);
    for (const t of trajectories) checkTrajectory(t);
    return trajectories as unknown as Trajectory<Row>[];
  }

  private newSequence(session: Session, index: number, split: string | undefined): GatewaySequence {
    return new GatewaySequence(
      index,
      session.episode,
      { session: session.id, part: session.sequences.length, ...definedFields({ split: split || undefined }) },
      this.options.template,
      this.options.templateKwargs,
      this.options.images?.imageTokenId,
    );
  }

  /** One session: the agent from start to end under the session's time, then its trajectories finished. */
  private async runAgent(batch: Batch, session: Session, stops: Set<AbortController>): Promise<void> {
    const controller = new AbortController();
    stops.add(controller);
    const limit = this.options.sessionTimeoutMs ?? 600_000;
    session.clock = new AgentClock(limit, () =>
      controller.abort(
        new AgentError(`the agent ran past its ${limit / 1000} s (its own time, model calls not counted)`, 'timeout'),
      ),
    );
    let outcome: AgentOutcome | undefined;
    let error: string | undefined;
    try {
      outcome = await Promise.race([
        this.options.agent.run(session.episode.row, {
          session: session.id,
          baseURL: `${this.server!.url}/sessions/${session.id}/v1`,
          apiKey: session.key,
          model: this.modelName,
          signal: controller.signal,
        }),
        new Promise<never>((_, reject) =>
          controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true }),
        ),
      ]);
    } catch (thrown) {
      error = thrown instanceof Error ? thrown.message : String(thrown);
    } finally {
      session.clock.stop();
      stops.delete(controller);
    }
    session.ended = true;
    session.waiting?.reject(new ChatRequestError('this rollout session has ended', 409, null, 'session_ended'));
    session.waiting = undefined;
    this.finishSession(session, outcome, error);
    await this.options.observer?.trajectoryFinished?.(session.current.trajectory);
    this.startRoundIfReady(batch);
  }

  private finishSession(session: Session, outcome: AgentOutcome | undefined, error: string | undefined): void {
    const seq = session.current;
    const t = seq.trajectory;
    if (!seq.started) {
      // No request reached the model: the row's own prompt stands for the session, with nothing generated.
      seq.start(session.episode.row.messages, [], undefined);
      t.finishReason = 'error';
      t.error = error ?? 'the agent ended without calling the model';
    } else if (error !== undefined) {
      t.finishReason = session.budgetEnd ?? 'error';
      t.error = error;
    } else if (session.budgetEnd) t.finishReason = session.budgetEnd;
    else {
      const last = seq.lastAnswer();
      t.finishReason =
        last?.finish === 'length'
          ? seq.length >= this.budget.maxTotalTokens
            ? 'max_total_tokens'
            : 'max_turn_tokens'
          : 'answered';
    }
    for (const q of session.sequences)
      q.trajectory.agent = {
        ...q.trajectory.agent!,
        ...definedFields({ error, answer: outcome?.answer, reward: outcome?.reward }),
      };
  }

  /** A round starts when every session still running waits for an answer (and none is being generated). */
  private startRoundIfReady(batch: Batch): void {
    if (batch.generating || this.batch !== batch) return;
    const running = batch.list.filter((s) => !s.ended);
    if (running.length === 0 || running.some((s) => !s.waiting)) return;
    batch.generating = true;
    this.round(batch, running)
      .catch((error: unknown) => {
        // A broken model or observer: every waiting request fails, and the run with it.
        batch.failure ??= error;
        for (const s of running) {
          s.waiting?.reject(error);
          s.waiting = undefined;
        }
      })
      .finally(() => {
        batch.generating = false;
        this.startRoundIfReady(batch);
      });
  }

  /** One round: each waiting request becomes a turn request (or an error answer), then one generate call per stop-string set. */
  private async round(batch: Batch, sessions: Session[]): Promise<void> {
    const turns: {
      session: Session;
      waiting: Waiting;
      request: TurnRequest;
      constraint: AnswerConstraint | undefined;
    }[] = [];
    for (const session of sessions) {
      const waiting = session.waiting!;
      try {
        turns.push({ session, waiting, ...(await this.prepareTurn(batch, session, waiting.request)) });
      } catch (error) {
        session.waiting = undefined;
        waiting.reject(error);
      }
    }
    const byStop = new Map<string, typeof turns>();
    for (const turn of turns) {
      const recorded = this.options.replay?.(turn.session.index)?.answers[turn.session.answers];
      if (recorded) {
        await this.replayAnswer(turn, recorded);
        continue;
      }
      const stops = this.stopStrings(turn.waiting.request);
      const key = JSON.stringify(stops);
      byStop.set(key, [...(byStop.get(key) ?? []), turn]);
    }
    for (const [key, group] of byStop) {
      const stopStrings = JSON.parse(key) as string[];
      const generated = await batch.policy.generate(
        group.map((g) => g.request),
        {
          ...this.options.sampling,
          maxNewTokens: Math.max(...group.map((g) => g.request.maxNewTokens!)),
          stopTokenIds: [...this.endIds],
          ...definedFields({ stopStrings: stopStrings.length ? stopStrings : undefined }),
          onToken: (sequence, token) =>
            group.find((g) => g.request.sequence === sequence)?.waiting.call.onToken?.(0, token),
        },
      );
      for (let i = 0; i < group.length; i++) await this.answer(group[i], generated[i]);
    }
  }

  /** Answers with a recorded answer: the same path as a sampled one, its tokens then sent to the policy with the next turn's. */
  private async replayAnswer(
    turn: { session: Session; waiting: Waiting; request: TurnRequest; constraint: AnswerConstraint | undefined },
    recorded: Omit<GeneratedTurn, 'sequence'>,
  ): Promise<void> {
    const seq = turn.session.current;
    const pending = seq.pending;
    const images = seq.pendingImages;
    await this.answer(turn, { ...recorded, sequence: turn.request.sequence });
    seq.pending = [...pending, ...recorded.tokens];
    seq.pendingImages = images;
  }

  private stopStrings(request: ChatTurnRequest): string[] {
    return [...new Set([...(this.options.stop ?? []), ...request.stop])].sort();
  }

  /** The session's next turn: its sequence extended (or split) by the request, the budget checked, the draws addressed. */
  private async prepareTurn(batch: Batch, session: Session, request: ChatTurnRequest) {
    const { maxTurns, maxNewTokensPerTurn, maxTotalTokens } = this.budget;
    if (session.budgetEnd) throw this.budgetError(session.budgetEnd);
    if (session.answers >= maxTurns) {
      session.budgetEnd = 'max_turns';
      throw this.budgetError('max_turns');
    }
    await this.placeRequest(batch, session, request);
    const seq = session.current;
    const room = maxTotalTokens - seq.length;
    const limit = Math.min(maxNewTokensPerTurn, request.maxTokens ?? Infinity, room);
    const constraint =
      this.options.constrainCalls === false &&
      request.toolChoice.kind === 'auto' &&
      request.responseFormat.kind === 'text'
        ? undefined
        : this.constraints.begin(request);
    const replay = this.options.replay?.(session.index);
    const address = replay?.draws ?? { seed: batch.seed, session: session.index };
    batch.draws.address(session.index, drawSeed(address.seed, address.session, session.answers));
    const turnRequest: TurnRequest = definedFields({
      sequence: session.index,
      append: seq.pending,
      images: seq.pendingImages.length ? seq.pendingImages.map(policyImage) : undefined,
      maxNewTokens: limit,
      constraint,
    });
    return { request: turnRequest, constraint };
  }

  /** Puts the request's messages into the session's sequence: the first prompt, an extension, or a new sequence. */
  /** The model's images, or a text-only model's refusal of them. */
  private get images(): RolloutImages {
    return this.options.images ?? (this.textOnly ??= new RolloutImages({ architecture: 'this model' }));
  }

  private async placeRequest(batch: Batch, session: Session, sent: ChatTurnRequest): Promise<void> {
    const { messages, byMessage } = await prepareRequestImages(sent.messages, this.images);
    const request = { ...sent, messages };
    const seq = session.current;
    const kwargs = request.templateKwargs;
    const fits = (extra: number) => {
      if (seq.length + extra + 1 <= this.budget.maxTotalTokens) return;
      session.budgetEnd = 'max_total_tokens';
      throw this.budgetError('max_total_tokens');
    };
    if (!seq.started) {
      this.start(seq, request, byMessage.flat());
      fits(0);
      return;
    }
    const match = matchHistory(seq.messages, seq.tools, request.messages, request.tools);
    if (match.kind === 'extend') {
      const images = byMessage.slice(seq.messages.length).flat();
      const ids = this.rendered(() => seq.appendTokens(match.newMessages, kwargs, images));
      fits(ids.length);
      for (const call of seq.extend(match.newMessages, ids, images))
        await this.options.observer?.toolCallFinished?.(seq.trajectory, call);
      return;
    }
    // The agent changed its history: the session goes on in a new sequence in the same slot.
    await this.options.observer?.trajectoryFinished?.(seq.trajectory);
    if (!batch.policy.resetSequence) throw new Error('the policy cannot start a sequence over (resetSequence)');
    const next = this.newSequence(session, batch.extraIndex++, match.reason);
    session.sequences.push(next);
    batch.policy.resetSequence(session.index);
    this.start(next, request, byMessage.flat());
    if (next.length + 1 > this.budget.maxTotalTokens) {
      session.budgetEnd = 'max_total_tokens';
      throw this.budgetError('max_total_tokens');
    }
  }

  private start(seq: GatewaySequence, request: ChatTurnRequest, images: readonly PreparedImage[]): void {
    this.rendered(() => seq.start(request.messages, request.tools, request.templateKwargs, images));
  }

  /** The chat template's refusal of a conversation as the agent's 400. */
  private rendered<T>(render: () => T): T {
    try {
      return render();
    } catch (error) {
      throw new ChatRequestError(
        `messages: the model's chat template cannot render them: ${(error as Error).message}`,
        400,
        'messages',
      );
    }
  }

  private budgetError(end: 'max_turns' | 'max_total_tokens'): ChatRequestError {
    const b = this.budget;
    return end === 'max_turns'
      ? new ChatRequestError(
          `this rollout has used its ${b.maxTurns} answers (the run's budget.maxTurns); end the episode`,
          400,
          'messages',
          'max_turns_exceeded',
        )
      : new ChatRequestError(
          `This model's maximum context length is ${b.maxTotalTokens} tokens in this run (budget.maxTotalTokens); the conversation no longer fits`,
          400,
          'messages',
          'context_length_exceeded',
        );
  }

  /** Records a generated turn, tells the observers (the debugger may hold the answer here), and answers the request. */
  private async answer(
    turn: { session: Session; waiting: Waiting; constraint: AnswerConstraint | undefined },
    generated: GeneratedTurn,
  ): Promise<void> {
    const { session, waiting, constraint } = turn;
    const seq = session.current;
    const promptTokens = seq.length;
    const answer = assistantAnswer(generated, {
      tokenizer: this.tokenizer,
      format: this.format,
      endIds: this.endIds,
      stop: waiting.request.stop,
      callId: (k) => `call_${session.id.slice(0, 8)}_${session.answers}_${k}`,
    });
    if (constraint && constraint.refused > 0)
      throw new Error(
        `session ${session.id}: ${constraint.refused} sampled token(s) were outside the answer's grammar`,
      );
    const recorded = seq.recordTurn(generated, answer, constraint);
    session.answers++;
    const observer = this.options.observer;
    await observer?.turnGenerated?.(seq.trajectory, recorded);
    for (const call of recorded.calls ?? [])
      await observer?.beforeToolCall?.(seq.trajectory, {
        turn: call.turn,
        turnIndex: call.turnIndex,
        index: call.index,
        name: call.name!,
        arguments: call.arguments,
        raw: call.raw,
        tokenEnd: call.tokenEnd,
      });
    session.waiting = undefined;
    waiting.resolve([{ answer, tokens: generated.tokens, logprobs: generated.logprobs, promptTokens }]);
  }
}
