import * as crypto from 'node:crypto';
import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
import type { Policy, TurnRequest } from '../../../foundations/models/generation/policy';
import { sameSecret } from '../../../foundations/http/localServer';
import { AddressedDraws, drawSeed } from './addressedDraws';
import { AnswerConstraints } from './answerConstraint';
import { assistantAnswer } from './assistantAnswer';
import type { ChatBackend, ChatCall, ChoiceResult } from './chatServer';
import { ChatRequestError, type ChatTurnRequest } from './chatRequest';
import { StreamDeltas } from './streamDeltas';
import type { ToolCallFormat } from '../formats/toolCallFormat';
import type { PreparedImage } from '../../../foundations/models/vision/preprocess';
import { expandImageTokens, policyImage, RolloutImages } from '../images';
import { prepareRequestImages } from './requestImages';
import { definedFields } from '../../../contract/definedFields';

/**
 * A model served over Chat Completions (`rollout-studio serve`). Every request is rendered by
 * the model's own chat template and answered from its own rows of a generation session; the
 * requests waiting when the model is free are batched into one session, so concurrent clients
 * share each decoding step (vLLM's batching, at the granularity of a turn: a request that arrives
 * while a batch decodes joins the next one). Requests in one batch need the same temperature,
 * top-p and stop strings (one sampling graph run serves them all); others wait for a batch of
 * their own, in arrival order.
 *
 * Sampling draws are addressed by the request's `seed` (or a random one) and the choice's index
 * (addressedDraws.ts): the same request with the same seed gives the same answer whatever else
 * shared its batch.
 */

export interface ServedModelOptions {
  policy: Policy;
  template: ChatTemplate;
  format: ToolCallFormat;
  /** The id clients name in `model` and `GET /v1/models` lists. */
  modelId: string;
  /** The model's context window: prompt plus answer. */
  maxContextTokens: number;
  /** An answer's limit when the request sets none. */
  defaultMaxTokens: number;
  /** Defaults when a request sets none (the model's generation_config.json, else 1 and 1). */
  temperature: number;
  topP: number;
  /** Chat-template variables every request gets (a request's `chat_template_kwargs` adds to them). */
  templateKwargs?: Record<string, unknown> | undefined;
  /** When set, every request must carry `Authorization: Bearer <token>`. */
  token?: string | undefined;
  /** Strings that end every answer, kept in its text: a run's `rollout.stop`, so it answers as it was trained to. */
  stop?: readonly string[] | undefined;
  /** Images in requests: the model's vision tower and processor (a text-only model refuses them). */
  images?: RolloutImages | undefined;
}

/** How long a batch waits for more requests: until none arrived for QUIET ms, at most MAX ms. */
const GATHER_QUIET_MS = 2;
const GATHER_MAX_MS = 25;

interface Waiting {
  request: ChatTurnRequest;
  call: ChatCall;
  prompt: number[];
  /** The images whose placeholder runs are in `prompt`, in order. */
  images: PreparedImage[];
  limit: number;
  seed: number;
  resolve(results: ChoiceResult[]): void;
  reject(error: unknown): void;
}

export class ServedModel implements ChatBackend {
  private readonly waiting: Waiting[] = [];
  private busy = false;
  private textOnly: RolloutImages | undefined;
  private readonly constraints: AnswerConstraints;
  private readonly endIds: Set<number>;
  /** Batches run and the rows each had (for benchmarks and the log). */
  readonly batches: number[] = [];

  constructor(private readonly options: ServedModelOptions) {
    const tokenizer = options.template.tokenizer;
    this.endIds = new Set([options.template.endOfTurnId, ...tokenizer.eosTokenIds]);
    this.constraints = new AnswerConstraints(tokenizer, options.format, [...this.endIds]);
  }

  get tokenizer() {
    return this.options.template.tokenizer;
  }

  modelIds(): string[] {
    return [this.options.modelId];
  }

  authorise(call: Pick<ChatCall, 'apiKey'>): void {
    const token = this.options.token;
    if (token === undefined) return;
    if (!sameSecret(call.apiKey, token))
      throw new ChatRequestError(
        'Incorrect API key provided: send "Authorization: Bearer <token>" with the token this server was started with',
        401,
        null,
        'invalid_api_key',
        'invalid_request_error',
      );
  }

  streamDecoder(request: ChatTurnRequest): StreamDeltas {
    return new StreamDeltas(this.tokenizer, this.endIds, request.stop);
  }

  async complete(request: ChatTurnRequest, call: ChatCall): Promise<ChoiceResult[]> {
    if (request.model !== this.options.modelId)
      throw new ChatRequestError(
        `The model '${request.model}' does not exist; this server serves '${this.options.modelId}'`,
        404,
        'model',
        'model_not_found',
      );
    const { messages, byMessage } = await prepareRequestImages(request.messages, this.images);
    const images = byMessage.flat();
    const prompt = this.promptIds({ ...request, messages }, images);
    const room = this.options.maxContextTokens - prompt.length;
    const limit = Math.min(request.maxTokens ?? this.options.defaultMaxTokens, room);
    if (limit < 1 || (request.maxTokens !== undefined && request.maxTokens > room))
      throw new ChatRequestError(
        `This model's maximum context length is ${this.options.maxContextTokens} tokens. However, you requested ${prompt.length + (request.maxTokens ?? 1)} tokens (${prompt.length} in the messages, ${request.maxTokens ?? 1} in the completion). Please reduce the length of the messages or completion.`,
        400,
        'messages',
        'context_length_exceeded',
      );
    const seed = request.seed ?? crypto.randomInt(0, 2 ** 47);
    return new Promise((resolve, reject) => {
      this.waiting.push({ request, call, prompt, images, limit, seed: Math.abs(seed), resolve, reject });
      void this.serveWaiting();
    });
  }

  /** The model's images, or a text-only model's refusal of them. */
  private get images(): RolloutImages {
    return this.options.images ?? (this.textOnly ??= new RolloutImages({ architecture: this.options.modelId }));
  }

  private promptIds(request: ChatTurnRequest, images: readonly PreparedImage[]): number[] {
    try {
      const ids = this.options.template.promptTokens(request.messages, {
        tools: request.tools.length ? request.tools : undefined,
        kwargs: { ...this.options.templateKwargs, ...request.templateKwargs },
      }).ids;
      return images.length ? expandImageTokens(ids, images, this.images.imageTokenId!, 'messages') : ids;
    } catch (error) {
      throw new ChatRequestError(
        `messages: the model's chat template cannot render them: ${(error as Error).message}`,
        400,
        'messages',
      );
    }
  }

  /** Runs batches while requests wait; one at a time (the model is one). */
  private async serveWaiting(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      while (this.waiting.length) {
        await this.gatherArrivals();
        const batch = this.nextBatch();
        try {
          const results = await this.answer(batch);
          batch.forEach((w, i) => w.resolve(results[i]));
        } catch (error) {
          for (const w of batch) w.reject(error);
        }
      }
    } finally {
      this.busy = false;
    }
  }

  /**
   * Waits while requests keep arriving (a pause of GATHER_QUIET_MS ends it; GATHER_MAX_MS at most),
   * so that clients answered by one batch, which send their next requests together, share the next
   * batch. Without it the first to arrive runs alone and the rest wait for it: measured with 8
   * closed-loop clients (bench:serve), batches of 1, 7, 1, 7 rows instead of 8.
   */
  private async gatherArrivals(): Promise<void> {
    const started = performance.now();
    for (let seen = -1; seen !== this.waiting.length && performance.now() - started < GATHER_MAX_MS;) {
      seen = this.waiting.length;
      await new Promise((resolve) => setTimeout(resolve, GATHER_QUIET_MS));
    }
  }

  /** The first waiting request and every other that can share its sampling settings, in arrival order. */
  private nextBatch(): Waiting[] {
    const key = (w: Waiting) =>
      JSON.stringify([this.temperature(w.request), this.topP(w.request), [...w.request.stop].sort()]);
    const first = key(this.waiting[0]);
    const batch: Waiting[] = [];
    for (let i = 0; i < this.waiting.length;) {
      const w = this.waiting[i];
      if (w.call.signal.aborted) {
        this.waiting.splice(i, 1);
        w.reject(w.call.signal.reason);
      } else if (key(w) === first) batch.push(...this.waiting.splice(i, 1));
      else i++;
    }
    return batch;
  }

  private temperature(r: ChatTurnRequest): number {
    return r.temperature ?? this.options.temperature;
  }

  private topP(r: ChatTurnRequest): number {
    return r.topP ?? this.options.topP;
  }

  private async answer(batch: Waiting[]): Promise<ChoiceResult[][]> {
    const rows = batch.flatMap((w) => Array.from({ length: w.request.n }, (_, choice) => ({ w, choice })));
    if (rows.length === 0) return batch.map(() => []);
    const draws = new AddressedDraws();
    rows.forEach((r, b) => draws.address(b, drawSeed(r.w.seed, r.choice)));
    const session = await this.options.policy.startSession(rows.length, 0, { uniforms: draws });
    const trackers = rows.map((r) => this.constraints.begin(r.w.request));
    const requests: TurnRequest[] = rows.map((r, b) =>
      definedFields({
        sequence: b,
        append: r.w.prompt,
        images: r.w.images.length ? r.w.images.map(policyImage) : undefined,
        maxNewTokens: r.w.limit,
        constraint: trackers[b],
      }),
    );
    const first = batch[0].request;
    const stopStrings = [...new Set([...first.stop, ...(this.options.stop ?? [])])];
    let turns;
    try {
      turns = await session.generate(requests, {
        temperature: this.temperature(first),
        topP: this.topP(first),
        topK: 0,
        maxNewTokens: Math.max(...rows.map((r) => r.w.limit)),
        stopTokenIds: [...this.endIds],
        ...definedFields({ stopStrings: stopStrings.length ? stopStrings : undefined }),
        onToken: (b, token) => rows[b].w.call.onToken?.(rows[b].choice, token),
      });
    } finally {
      await session.close();
    }
    this.batches.push(rows.length);
    const results = batch.map((): ChoiceResult[] => []);
    turns.forEach((turn, b) => {
      const { w } = rows[b];
      const answer = assistantAnswer(turn, {
        tokenizer: this.tokenizer,
        format: this.options.format,
        endIds: this.endIds,
        stop: w.request.stop,
        callId: () => `call_${crypto.randomBytes(12).toString('hex')}`,
      });
      results[batch.indexOf(w)].push({
        answer,
        tokens: turn.tokens,
        logprobs: turn.logprobs,
        promptTokens: w.prompt.length,
      });
    });
    return results;
  }
}
