import type { ChatTemplate } from '../../foundations/models/text/chatTemplate';
import {
  contentText,
  type ChatContentPart,
  type ChatMessage,
  type ToolSpec,
} from '../../contract/protocol/chatMessages';
import type { DrawSchedule } from '../../contract/protocol/runStore';
import { describeRow, type DatasetRow } from '../../foundations/data/row';
import { definedFields } from '../../contract/definedFields';
import { observationImages } from '../../foundations/tools/result';
import { decodeBase64, expandImageTokens, hasImages, IMAGE_PLACEHOLDER, policyImage, RolloutImages } from './images';
import type { PreparedImage } from '../../foundations/models/vision/preprocess';
import {
  ToolRunner,
  type ToolCallInterceptor,
  type ToolCallRequest,
  type ToolLogLine,
  type ToolRunOutcome,
} from '../../foundations/tools/runner';
import type { ToolSet } from '../../foundations/tools/toolSet';
import { BudgetError, checkBudget, type LengthBudget } from './budget';
import { defaultErrorObservation, type ErrorObservation } from './errorObservation';
import type { ToolCallFormat } from './formats/toolCallFormat';
import { HermesFormat } from './formats/hermes';
import type { RolloutObserver } from './observer';
import type { CallTracker, ToolCallConstraint } from './constraints/callConstraint';
import type {
  GeneratedTurn,
  Policy,
  PolicySession,
  SamplingOptions,
  TurnRequest,
  UniformSource,
} from '../../foundations/models/generation/policy';
import { renderPrompt, type RenderedPrompt } from './prompt';
import { TextOffsets } from './textOffsets';
import { renderObservation } from './observation';
import { checkTrajectory } from './validate';
import { TrajectoryState, type PendingCallState } from './trajectoryState';
import type { Episode, ToolCallResult, Trajectory, TrajectoryTurn } from './trajectory';
import { defaultTruncationMarker, fitToTokens, truncateToTokens, type TruncationMarker } from './truncate';

/**
 * The agent loop: a policy plus tools turned into token-exact multi-turn trajectories, for a
 * whole batch at once, turn by turn.
 *
 * Each round: every unfinished trajectory generates one turn (one `generate` call for all of
 * them); the calls in those turns are parsed by the tool-call format and run together (across
 * the batch, each tool within its own concurrency limit and timeout); each trajectory's results
 * are rendered by the model's chat template as tool messages and appended — exactly the tokens
 * the template puts after the turn's end-of-turn token — and the next round starts.
 *
 * Token rules:
 * - Tokens the policy sampled are kept as they are, stop token included (mask 1). Nothing is ever
 *   re-tokenised from text.
 * - When a turn stopped on something other than the end-of-turn token (a format's call-end
 *   marker, a stop string, EOS), the loop appends the end-of-turn token itself before the tool
 *   results, as template text (mask 0).
 * - Templates that rewrite earlier turns once more messages follow (Qwen3 drops an earlier
 *   turn's empty `<think></think>`) are handled with `onHistoryRewrite: 'keep-tokens'`: the
 *   policy's tokens stay the truth, only what the template puts after the end-of-turn token is
 *   appended, and the rewrite is recorded on the trajectory (`historyRewrites`).
 *
 * Failures of calls are observations (see ToolRunner); failures of the template to append end
 * that trajectory with `error`; failures of the policy (a broken contract) are exceptions.
 */

export interface AgentLoopOptions {
  policy: Policy;
  template: ChatTemplate;
  tools: ToolSet;
  budget: LengthBudget;
  sampling: SamplingOptions;
  /** How calls are written (default: Hermes/Qwen `<tool_call>` JSON). */
  format?: ToolCallFormat | undefined;
  /** Prepended to rows without a system message. */
  systemPrompt?: string | undefined;
  /** Extra chat-template variables, e.g. `{ enable_thinking: false }` for Qwen3. */
  templateKwargs?: Record<string, unknown> | undefined;
  errorObservation?: ErrorObservation | undefined;
  truncationMarker?: TruncationMarker | undefined;
  observer?: RolloutObserver | undefined;
  onToolLog?: ((line: ToolLogLine) => void) | undefined;
  /**
   * Images in rows and tool results: the model's vision tower and image processor (see
   * RolloutImages). Without it, a row or tool result with an image is an error naming it.
   */
  images?: RolloutImages | undefined;
  /**
   * Schema-constrained tool calls (default true): while the policy writes a call, it may only
   * sample tokens that keep the call valid for the tools (the format's `callConstraint`; formats
   * without one, such as code blocks, stay free). The sets are recorded on the trajectory
   * (`constrained`) for scoring.
   */
  constrainCalls?: boolean | undefined;
  /** Answers tool calls instead of the tools and sees their outcomes (recorded tool results: tools/cassette.ts). */
  toolInterceptor?: ToolCallInterceptor | undefined;
  /** Strings that end a turn once written (kept in the turn), besides the format's own stops. */
  stop?: readonly string[] | undefined;
}

export interface RunOptions {
  /** Seeds the policy session's sampling. */
  seed: number;
  /** Replaces the seeded sampling stream (a re-roll following its original's draws: rollout/samplingSchedule.ts). */
  uniforms?: UniformSource;
  /** Stops the rollout (between rounds, and running tool calls via their signals). */
  signal?: AbortSignal;
  /**
   * How a sampled round's turns are split into generate calls (default `per-round`: one call).
   * A run recorded before one call per round keeps `per-limit` (its run.json has no
   * `drawSchedule`), so that a resumed run samples what it would have and its re-rolls can work
   * out their draws (samplingSchedule.ts).
   */
  drawSchedule?: DrawSchedule;
}

/** The policy broke the `PolicySession.generate` contract; a bug on the model side, not an observation. */
export class PolicyContractError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PolicyContractError';
  }
}

/** Keeps, on the trajectory, the allowed set each of a turn's tokens (from `start`) was sampled under. */
function recordConstraints(trajectory: Trajectory<object>, start: number, tracker: CallTracker | undefined): void {
  if (!tracker) return;
  if (tracker.refused > 0)
    throw new PolicyContractError(
      `sequence ${trajectory.index}: ${tracker.refused} sampled token(s) were outside the tool-call grammar's allowed set`,
    );
  tracker.applied.forEach((set, i) => {
    if (!set) return;
    trajectory.constrained ??= new Map();
    trajectory.constrained.set(start + i, set);
  });
}

export class AgentLoop {
  readonly budget: LengthBudget;
  readonly format: ToolCallFormat;
  private readonly specs: ToolSpec[];
  private readonly endTokenIds: Set<number>;
  private readonly stopTokenIds: number[];
  private readonly stopStrings: string[];
  private readonly errorObservation: ErrorObservation;
  private readonly truncationMarker: TruncationMarker;
  /** The call grammar of these tools, when calls are constrained. */
  readonly callConstraint: ToolCallConstraint | undefined;

  constructor(private readonly options: AgentLoopOptions) {
    this.budget = checkBudget(options.budget);
    this.format = options.format ?? new HermesFormat();
    this.specs = options.tools.specs();
    const tokenizer = options.template.tokenizer;
    // A turn is over at the template's end-of-turn token and at any EOS the model may emit.
    this.endTokenIds = new Set([options.template.endOfTurnId, ...tokenizer.eosTokenIds]);
    const formatStops = this.format.stopConditions(tokenizer);
    this.stopTokenIds = [...new Set([...this.endTokenIds, ...formatStops.tokenIds])];
    this.stopStrings = [...new Set([...formatStops.strings, ...(options.stop ?? [])])];
    this.callConstraint =
      options.constrainCalls !== false && this.specs.length > 0
        ? this.format.callConstraint?.(tokenizer, this.specs)
        : undefined;
    this.errorObservation = options.errorObservation ?? defaultErrorObservation;
    this.truncationMarker = options.truncationMarker ?? defaultTruncationMarker;
    // The marker must fit a tool result with room to spare; find out now, not mid-run.
    const markerTokens = tokenizer.encode(this.truncationMarker(123_456)).length;
    if (markerTokens >= this.budget.maxToolResultTokens) {
      throw new BudgetError(
        `budget.maxToolResultTokens (${this.budget.maxToolResultTokens}) must exceed the ${markerTokens} tokens of the truncation marker`,
      );
    }
  }

  /** The tools as the chat template receives them. */
  toolSpecs(): ToolSpec[] {
    return this.specs;
  }

  /**
   * Reads and prepares the images of the rows (once per row): before checking rows against the
   * budget, because image tokens count. An unreadable file, an image over budget.maxImagePixels,
   * or any image for a text-only model fails here, naming the row, the message part and the file.
   */
  async prepareRows(rows: readonly DatasetRow[]): Promise<void> {
    const images = this.images();
    for (const row of rows) if (hasImages(row.messages)) await images.rowImages(row);
  }

  private imageStore: RolloutImages | undefined;
  private images(): RolloutImages {
    this.imageStore ??=
      this.options.images ??
      new RolloutImages(definedFields({ architecture: 'this model', maxImagePixels: this.budget.maxImagePixels }));
    return this.imageStore;
  }

  /** Renders one row's prompt (system prompt, tools, template kwargs applied; images expanded once prepared). */
  renderPrompt(row: DatasetRow): RenderedPrompt {
    const images = hasImages(row.messages) ? this.images().preparedFor(row) : undefined;
    if (hasImages(row.messages) && !images)
      throw new Error(`${describeRow(row)}: its images are not prepared; call prepareRows first`);
    return renderPrompt(row, {
      template: this.options.template,
      tools: this.specs,
      systemPrompt: this.options.systemPrompt,
      templateKwargs: this.options.templateKwargs,
      ...definedFields({ images: images?.length ? { list: images, placeholder: IMAGE_PLACEHOLDER } : undefined }),
    });
  }

  /**
   * Checks rows against the budget and the tools before any rollout: each prompt must leave
   * room for one full turn, and `toolArgs` may only name tools that exist. Reports up to ten
   * offending rows by file and line.
   */
  checkRows(rows: readonly DatasetRow[]): void {
    const problems: string[] = [];
    for (const row of rows) {
      const problem = this.rowProblem(row);
      if (problem) problems.push(problem);
    }
    if (problems.length) {
      const shown = problems.slice(0, 10).join('\n  ');
      throw new BudgetError(
        `${problems.length} dataset row(s) do not fit the rollout:\n  ${shown}${problems.length > 10 ? `\n  … and ${problems.length - 10} more` : ''}`,
      );
    }
  }

  private rowProblem(row: DatasetRow, prompt?: RenderedPrompt): string | undefined {
    for (const tool of Object.keys(row.toolArgs ?? {})) {
      if (!this.options.tools.get(tool))
        return `${describeRow(row)}: toolArgs names the tool "${tool}", which is not one of the tools (${this.options.tools.names.join(', ') || 'none'})`;
    }
    const { maxNewTokensPerTurn, maxTotalTokens } = this.budget;
    // A row far past the budget is refused before it is rendered and tokenised (a text of tens of
    // megabytes would take the tokeniser's time and memory to say what its size already says).
    const bytes = row.messages.reduce((n, m) => n + Buffer.byteLength(contentText(m.content)), 0);
    const least = Math.ceil(bytes / this.options.template.tokenizer.longestTokenBytes());
    if (!prompt && least + maxNewTokensPerTurn > maxTotalTokens)
      return (
        `${describeRow(row)}: the prompt is at least ${least} tokens (${bytes} bytes of text); with budget.maxNewTokensPerTurn ` +
        `${maxNewTokensPerTurn} it needs more than budget.maxTotalTokens ${maxTotalTokens}`
      );
    const length = (prompt ?? this.renderPrompt(row)).ids.length;
    if (length + maxNewTokensPerTurn > maxTotalTokens) {
      return (
        `${describeRow(row)}: the prompt is ${length} tokens; with budget.maxNewTokensPerTurn ${maxNewTokensPerTurn} it needs ` +
        `${length + maxNewTokensPerTurn} tokens, more than budget.maxTotalTokens ${maxTotalTokens}`
      );
    }
    return undefined;
  }

  /**
   * Frees the policy's generation memory until the next rollout (the trainer calls it before an
   * update, whose peak it would otherwise add to).
   */
  async releasePolicy(): Promise<void> {
    await this.options.policy.release?.();
  }

  /** Rolls out every episode; returns the trajectories in episode order. */
  async run<Row extends DatasetRow>(episodes: readonly Episode<Row>[], run: RunOptions): Promise<Trajectory<Row>[]> {
    await this.prepareRows([...new Set(episodes.map((e) => e.row))]);
    // The samples of a group share their row: render and check each row once.
    const prompts = new Map<DatasetRow, RenderedPrompt>();
    const states = episodes.map((episode, i) => {
      let prompt = prompts.get(episode.row);
      if (!prompt) {
        prompt = this.renderPrompt(episode.row);
        const problem = this.rowProblem(episode.row, prompt);
        if (problem) throw new BudgetError(problem);
        prompts.set(episode.row, prompt);
      }
      return new TrajectoryState(i, episode, prompt, this.options.images?.imageTokenId);
    });
    return this.rollOut(states, run);
  }

  /**
   * Rolls out trajectories restored at a cut point instead of started from their prompts (a
   * re-roll: rollout/restoreState.ts): each continues from its token prefix and message history;
   * one cut before its calls' results runs them first.
   */
  async continueFrom<Row extends DatasetRow>(
    states: TrajectoryState<Row>[],
    run: RunOptions,
  ): Promise<Trajectory<Row>[]> {
    return this.rollOut(states, run);
  }

  private async rollOut<Row extends DatasetRow>(
    states: TrajectoryState<Row>[],
    run: RunOptions,
  ): Promise<Trajectory<Row>[]> {
    if (states.length === 0) return [];
    this.options.observer?.rolloutStarted?.(states.map((s) => s.trajectory));
    const runner = new ToolRunner(this.options.tools, {
      signal: run.signal,
      onLog: this.options.onToolLog,
      interceptor: this.options.toolInterceptor,
    });
    const session = await this.options.policy.startSession(
      states.length,
      run.seed,
      run.uniforms ? { uniforms: run.uniforms } : undefined,
    );
    try {
      const waiting = states.filter((s) => !s.done && s.calls.length > 0);
      if (waiting.length) {
        await this.toolRound(runner, waiting);
        for (const state of waiting) this.appendResults(state);
      }
      for (;;) {
        run.signal?.throwIfAborted();
        const active = states.filter((s) => !s.done);
        if (active.length === 0) break;
        await this.generateRound(session, active, run.drawSchedule ?? 'per-round');
        const calling = active.filter((s) => s.calls.length > 0);
        await this.toolRound(runner, calling);
        for (const state of calling) this.appendResults(state);
        for (const state of active) if (state.done) await this.options.observer?.trajectoryFinished?.(state.trajectory);
      }
    } finally {
      await session.close();
    }
    for (const state of states) checkTrajectory(state.trajectory);
    return states.map((s) => s.trajectory);
  }

  private async generateRound<Row extends DatasetRow>(
    session: PolicySession,
    active: TrajectoryState<Row>[],
    schedule: DrawSchedule,
  ): Promise<void> {
    const { maxNewTokensPerTurn, maxTotalTokens } = this.budget;
    // Sequences near the total budget get a smaller limit, each its own (TurnRequest.maxNewTokens),
    // in one generate call lasting as long as the round's longest turn; one call per limit would
    // decode every limit over the whole batch. Runs recorded with the older `per-limit` schedule
    // keep one call per limit, largest first, for their sampled turns (the session draws a uniform
    // per row per decoding step, so the split decides every draw); greedy turns draw nothing and
    // go in one call under either schedule.
    const oneCall = schedule === 'per-round' || this.options.sampling.temperature === 0;
    const byLimit = new Map<number, TrajectoryState<Row>[]>();
    for (const state of active) {
      const room = maxTotalTokens - state.trajectory.ids.length;
      state.turnLimit = Math.min(maxNewTokensPerTurn, room);
      state.limitedByTotal = room < maxNewTokensPerTurn;
      const key = oneCall ? maxNewTokensPerTurn : state.turnLimit;
      const group = byLimit.get(key) ?? [];
      group.push(state);
      byLimit.set(key, group);
    }
    for (const [limit, group] of [...byLimit].sort((a, b) => b[0] - a[0])) {
      const trackers = new Map<number, CallTracker>();
      const requests: TurnRequest[] = group.map((s) => {
        const tracker = this.callConstraint?.begin();
        if (tracker) trackers.set(s.trajectory.index, tracker);
        return definedFields({
          sequence: s.trajectory.index,
          append: s.pending,
          images: s.pendingImages.length ? s.pendingImages.map(policyImage) : undefined,
          constraint: tracker,
          maxNewTokens: s.turnLimit < limit ? s.turnLimit : undefined,
        });
      });
      const generated = await session.generate(requests, {
        ...this.options.sampling,
        maxNewTokens: limit,
        stopTokenIds: this.stopTokenIds,
        ...definedFields({ stopStrings: this.stopStrings.length ? this.stopStrings : undefined }),
      });
      const bySequence = new Map(generated.map((g) => [g.sequence, g]));
      if (bySequence.size !== generated.length || generated.length !== group.length) {
        throw new PolicyContractError(
          `generate returned ${generated.length} turns for ${group.length} requested sequences (sequences: ${generated.map((g) => g.sequence).join(', ')})`,
        );
      }
      for (const state of group) {
        const turn = bySequence.get(state.trajectory.index);
        if (!turn) throw new PolicyContractError(`generate returned no turn for sequence ${state.trajectory.index}`);
        state.pending = [];
        state.pendingImages = [];
        const start = state.trajectory.ids.length;
        this.recordTurn(state, turn, state.turnLimit);
        recordConstraints(state.trajectory, start, trackers.get(state.trajectory.index));
        await this.options.observer?.turnGenerated?.(state.trajectory, state.lastTurn!);
      }
    }
  }

  private recordTurn<Row extends DatasetRow>(
    state: TrajectoryState<Row>,
    generated: GeneratedTurn,
    limit: number,
  ): void {
    const { tokens, logprobs, entropies, finish } = generated;
    const where = `sequence ${state.trajectory.index}`;
    if (tokens.length === 0) throw new PolicyContractError(`${where}: generate returned an empty turn`);
    if (logprobs.length !== tokens.length || entropies.length !== tokens.length) {
      throw new PolicyContractError(
        `${where}: ${tokens.length} tokens but ${logprobs.length} log-probs and ${entropies.length} entropies`,
      );
    }
    if (tokens.length > limit)
      throw new PolicyContractError(`${where}: ${tokens.length} tokens generated with maxNewTokens ${limit}`);
    const last = tokens[tokens.length - 1];
    if (finish === 'stop_token' && !this.stopTokenIds.includes(last)) {
      throw new PolicyContractError(`${where}: finish "stop_token" but the last token ${last} is not a stop token`);
    }

    const t = state.trajectory;
    const start = t.ids.length;
    for (let i = 0; i < tokens.length; i++) {
      t.ids.push(tokens[i]);
      t.mask.push(1);
      t.logprobs.push(logprobs[i]);
      t.entropies.push(entropies[i]);
    }
    // The text calls are parsed from: without an end-of-turn/EOS stop token, but with a format's
    // own stop marker (a `</tool_call>` stop token is part of the call).
    const endsTurn = finish === 'stop_token' && this.endTokenIds.has(last);
    const textIds = endsTurn ? tokens.slice(0, -1) : tokens;
    const content = this.options.template.tokenizer.decode(textIds);
    const turn: TrajectoryTurn = {
      index: t.turns.length,
      role: 'assistant',
      tokenStart: start,
      tokenEnd: t.ids.length,
      assistantTurn: state.assistantTurns,
      content,
    };
    t.turns.push(turn);
    state.lastTurn = turn;
    state.assistantTurns++;
    state.calls = [];

    if (finish === 'length') {
      // A cut turn: its calls may be half-written, and no template can append after it.
      turn.finish = 'length';
      t.messages.push({ role: 'assistant', content });
      state.finish(state.limitedByTotal ? 'max_total_tokens' : 'max_turn_tokens');
      return;
    }
    const parsed = this.format.parse(content);
    t.messages.push(this.format.assistantMessage(content, parsed));
    if (parsed.length === 0) {
      turn.finish = endsTurn ? 'eos' : 'stop';
      state.finish('answered');
      return;
    }
    turn.finish = 'tool_call';
    const offsets = new TextOffsets(this.options.template.tokenizer, textIds);
    state.calls = parsed.map((call, index) => ({
      parsed: call,
      index,
      tokenEnd: start + offsets.tokenAt(Math.max(call.start, call.end - 1)),
    }));
  }

  private async toolRound<Row extends DatasetRow>(runner: ToolRunner, calling: TrajectoryState<Row>[]): Promise<void> {
    const { requests, owners, announced } = this.toolRequests(calling);
    await Promise.all(announced);
    const outcomes = await runner.run(requests);
    const outcomeOf = new Map(owners.map((owner, i) => [owner.call, outcomes[i]]));

    for (const state of calling) {
      const turn = state.lastTurn!;
      turn.calls = [];
      for (const call of state.calls) {
        const result = await this.callResult(state, call, outcomeOf.get(call));
        turn.calls.push(result);
        state.trajectory.calls.push(result);
        await this.options.observer?.toolCallFinished?.(state.trajectory, result);
      }
    }
  }

  /**
   * The round's runnable calls (those that parsed and have a name), each with the trajectory it
   * belongs to; the observer's `beforeToolCall` is called for each as it is collected.
   */
  private toolRequests<Row extends DatasetRow>(
    calling: TrajectoryState<Row>[],
  ): {
    requests: ToolCallRequest[];
    owners: { state: TrajectoryState<Row>; call: PendingCallState }[];
    announced: Promise<void>[];
  } {
    const requests: ToolCallRequest[] = [];
    const owners: { state: TrajectoryState<Row>; call: PendingCallState }[] = [];
    const announced: Promise<void>[] = [];
    for (const state of calling) {
      for (const call of state.calls) {
        const { name, arguments: args, parseError } = call.parsed;
        if (parseError !== undefined || name === undefined) continue;
        const turn = state.lastTurn!.assistantTurn!;
        requests.push({
          name,
          arguments: args,
          trajectory: state.trajectory,
          turn,
          callIndex: call.index,
          row: state.trajectory.row,
        });
        owners.push({ state, call });
        const hook = this.options.observer?.beforeToolCall;
        if (hook) {
          const pending = {
            turn,
            turnIndex: state.lastTurn!.index,
            index: call.index,
            name,
            arguments: args,
            raw: call.parsed.raw,
            tokenEnd: call.tokenEnd,
          };
          announced.push(Promise.resolve(hook.call(this.options.observer, state.trajectory, pending)));
        }
      }
    }
    return { requests, owners, announced };
  }

  /** One call of the last turn as the policy is shown it: the outcome (or the parse error), its images, fitted to the budget. */
  private async callResult<Row extends DatasetRow>(
    state: TrajectoryState<Row>,
    call: PendingCallState,
    outcome: ToolRunOutcome | undefined,
  ): Promise<ToolCallResult> {
    const turn = state.lastTurn!;
    const tokenizer = this.options.template.tokenizer;
    const { parsed } = call;
    let error = outcome
      ? outcome.error
      : { kind: 'parse' as const, message: parsed.parseError ?? 'the tool call has no name' };
    // Images the tool returned: prepared for the policy, or the call's error when one cannot be used.
    let images: PreparedImage[] = [];
    if (!error && outcome?.result) {
      try {
        images = await this.callImages(
          outcome.result,
          `trajectory ${state.trajectory.index}, turn ${turn.index}, call ${call.index} (${parsed.name})`,
        );
      } catch (imageError) {
        error = { kind: 'threw', message: (imageError as Error).message };
      }
    }
    const shown = renderObservation(error ? { error } : outcome!, parsed.name, this.errorObservation);
    // An error is shown whole or shortened to fit, never cut to a marker the policy cannot act on.
    const { text, truncated } = error
      ? fitToTokens(tokenizer, shown, this.budget.maxToolResultTokens)
      : truncateToTokens(tokenizer, shown, this.budget.maxToolResultTokens, this.truncationMarker);
    return definedFields({
      turn: turn.assistantTurn!,
      turnIndex: turn.index,
      index: call.index,
      name: parsed.name,
      arguments: outcome ? outcome.arguments : parsed.arguments,
      raw: parsed.raw,
      observation: text,
      truncated,
      error,
      result: outcome?.result,
      latencyMs: outcome?.latencyMs ?? 0,
      tokenEnd: call.tokenEnd,
      logs: outcome?.logs ?? [],
      images: images.length ? images : undefined,
    });
  }

  /** The images of a tool's result, prepared; errors say which call returned which content part. */
  private async callImages(
    result: import('../../foundations/tools/result').ToolResult,
    where: string,
  ): Promise<PreparedImage[]> {
    const parts = observationImages(result);
    const images: PreparedImage[] = [];
    for (const [i, part] of parts.entries()) {
      const partWhere = `${where}: image ${i} of the result`;
      const bytes = typeof part.data === 'string' ? decodeBase64(part.data, partWhere) : part.data;
      images.push(await this.images().prepare(bytes, partWhere));
    }
    return images;
  }

  /** Appends the turn's tool results (and the next generation prompt), or ends the trajectory. */
  private appendResults<Row extends DatasetRow>(state: TrajectoryState<Row>): void {
    const t = state.trajectory;
    const turn = state.lastTurn!;
    if (state.assistantTurns >= this.budget.maxTurns) {
      state.finish('max_turns');
      return;
    }
    const template = this.options.template;
    // A result with images is a content list: the images (the template's placeholders), then the text.
    const toolMessages: ChatMessage[] = (turn.calls ?? []).map((call) => ({
      role: 'tool',
      content: call.images?.length
        ? [...call.images.map((): ChatContentPart => ({ type: 'image' })), { type: 'text', text: call.observation }]
        : call.observation,
      ...definedFields({ name: call.name }),
    }));
    const callImages = (turn.calls ?? []).flatMap((call) => call.images ?? []);
    const lastToken = t.ids[t.ids.length - 1];
    const closing = lastToken === template.endOfTurnId ? [] : [template.endOfTurnId];
    let appended;
    try {
      appended = template.appendTokens(
        { messages: t.messages, ids: closing.length ? [...t.ids, ...closing] : t.ids },
        toolMessages,
        {
          tools: this.specs,
          kwargs: this.options.templateKwargs,
          onHistoryRewrite: 'keep-tokens',
        },
      );
    } catch (error) {
      state.finish('error', `after turn ${turn.index}: ${(error as Error).message}`);
      return;
    }
    if (appended.historyRewrite) t.historyRewrites.push({ afterTurn: turn.index, ...appended.historyRewrite });
    let appendedIds = appended.ids;
    if (callImages.length) {
      try {
        appendedIds = expandImageTokens(
          appended.ids,
          callImages,
          this.options.images!.imageTokenId!,
          `after turn ${turn.index}`,
        );
      } catch (error) {
        state.finish('error', (error as Error).message);
        return;
      }
    }
    const added = [...closing, ...appendedIds];
    // Room for at least one generated token, or there is no point in showing the results.
    if (t.ids.length + added.length + 1 > this.budget.maxTotalTokens) {
      state.finish('max_total_tokens');
      return;
    }
    const start = t.ids.length;
    state.appendContext(added);
    if (callImages.length) {
      const owners = (turn.calls ?? []).flatMap((call) => (call.images ?? []).map(() => call.index));
      state.recordImages(
        callImages,
        start,
        (k) => ({ kind: 'tool', turnIndex: turn.index, call: owners[k] }),
        this.options.images!.imageTokenId,
      );
      state.pendingImages.push(...callImages);
    }
    t.messages.push(...toolMessages);
    t.turns.push({ index: t.turns.length, role: 'tool', tokenStart: start, tokenEnd: t.ids.length });
  }
}
