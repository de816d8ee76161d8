import * as crypto from 'node:crypto';
import * as http from 'node:http';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ModelList,
  OpenAIErrorBody,
  TokenLogprob,
  Usage,
} from '../../../contract/protocol/openaiChat';
import type { Tokenizer } from '../../../foundations/models/text/tokenizer';
import {
  allowedHostNames,
  boundedServer,
  checkCaller,
  checkJsonBody,
  DEFAULT_LIMITS,
  readLimitedBody,
  RefusedRequest,
  type GuardLimits,
} from '../../../foundations/http/requestGuard';
import { listen, sendJson } from '../../../foundations/http/localServer';
import type { AssistantAnswer } from './assistantAnswer';
import { ChatRequestError, readChatRequest, type ChatTurnRequest } from './chatRequest';
import { StreamDeltas, type Delta } from './streamDeltas';

/**
 * OpenAI's Chat Completions API over HTTP: `POST /v1/chat/completions` (answers and server-sent
 * event streams), `GET /v1/models`, errors in OpenAI's shape. What answers a request is a
 * ChatBackend: the model served by `rollout-studio serve`, or a training run's policy, whose
 * rollouts each get a base URL of their own, `/sessions/<id>/v1` (the `session` of the call).
 *
 * The same guard as serve-tools keeps it closed to web pages (foundations/http/requestGuard.ts):
 * a foreign Host or an Origin not allowed gets 403, a POST must be JSON, bodies are bounded.
 */

export interface ChatCall {
  /** The session segment of the URL (`/sessions/<id>/v1/…`), undefined for plain `/v1/…`. */
  session: string | undefined;
  /** The bearer token the client sent (OpenAI's SDKs send their `apiKey`). */
  apiKey: string | undefined;
  /** Each sampled token of a choice as soon as it is sampled (streamed answers). */
  onToken?: (choice: number, token: number) => void;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/** One choice of an answer: the parsed answer and the tokens behind it. */
export interface ChoiceResult {
  answer: AssistantAnswer;
  /** The sampled tokens (their log-probs in `logprobs`). */
  tokens: number[];
  logprobs: number[];
  /** Tokens of the prompt this choice was generated from (what the policy read, new or cached). */
  promptTokens: number;
}

export interface ChatBackend {
  /** The model ids `GET /v1/models` lists. */
  modelIds(call: Pick<ChatCall, 'session' | 'apiKey'>): string[];
  /** Refuses a caller (a ChatRequestError with 401/404) before the body is read. */
  authorise(call: Pick<ChatCall, 'session' | 'apiKey'>): void;
  complete(request: ChatTurnRequest, call: ChatCall): Promise<ChoiceResult[]>;
  /** Decodes streamed tokens (the tokenizer, the end-of-turn ids, the stop strings the answer cuts). */
  streamDecoder(request: ChatTurnRequest): StreamDeltas;
  tokenizer: Tokenizer;
}

export interface ChatServerOptions {
  host: string;
  /** 0: any free port. */
  port: number;
  allowHosts?: readonly string[];
  allowOrigins?: readonly string[];
  limits?: Partial<GuardLimits>;
  /** Server errors (500s), with their stacks. */
  log?: (line: string) => void;
}

export interface RunningChatServer {
  /** `http://host:port` */
  url: string;
  close(): Promise<void>;
}

const SESSION_ROUTE = /^\/sessions\/([A-Za-z0-9_-]{1,128})(\/v1\/.*)$/;

function errorBody(error: ChatRequestError): OpenAIErrorBody {
  return { error: { message: error.message, type: error.type, param: error.param, code: error.code } };
}

function sendError(req: http.IncomingMessage, res: http.ServerResponse, error: ChatRequestError): void {
  if (res.headersSent) {
    // A stream already started: OpenAI's servers send the error as an event, then end.
    res.end(`data: ${JSON.stringify(errorBody(error))}\n\n`);
    return;
  }
  if (error.status === 413) res.setHeader('connection', 'close');
  sendJson(res, error.status, errorBody(error));
  if (error.status === 413) res.on('finish', () => req.destroy());
}

/** A guard refusal or a server fault as OpenAI's error. */
function asChatError(error: unknown): ChatRequestError {
  if (error instanceof ChatRequestError) return error;
  if (error instanceof RefusedRequest) return new ChatRequestError(error.message, error.status, null, null);
  return new ChatRequestError((error as Error)?.message ?? String(error), 500, null, null, 'server_error');
}

/** The token of `Authorization: Bearer <token>` (a header holds no line breaks, so `.` is any character). */
function bearer(req: http.IncomingMessage): string | undefined {
  const header = req.headers.authorization ?? '';
  return /^Bearer\s./i.test(header) ? header.slice('Bearer'.length).trim() : undefined;
}

function usageOf(choices: readonly ChoiceResult[]): Usage {
  // The prompt is one for all choices (OpenAI counts it once).
  const prompt = choices[0]?.promptTokens ?? 0;
  const completion = choices.reduce((n, c) => n + c.tokens.length, 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function logprobsOf(tokenizer: Tokenizer, choice: ChoiceResult): { content: TokenLogprob[]; refusal: null } {
  const pieces = tokenizer.pieces(choice.tokens);
  return {
    content: choice.tokens.map((id, i) => {
      const token = tokenizer.decode([id]);
      return {
        token: token.includes('\uFFFD') ? pieces[i] : token,
        logprob: choice.logprobs[i],
        bytes: [...(tokenizer.tokenBytes()[id] ?? Buffer.from(token))],
        top_logprobs: [],
      };
    }),
    refusal: null,
  };
}

export async function startChatServer(backend: ChatBackend, options: ChatServerOptions): Promise<RunningChatServer> {
  const hosts = allowedHostNames(options.host, options.allowHosts);
  const origins = new Set((options.allowOrigins ?? []).map((o) => o.toLowerCase()));
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const server = boundedServer(limits, (req, res) => {
    handle(backend, req, res, { hosts, origins, limits }).catch((error: unknown) => {
      const chatError = asChatError(error);
      if (chatError.status >= 500)
        options.log?.(`chat endpoint: ${req.method} ${req.url} failed: ${(error as Error)?.stack ?? String(error)}`);
      if (!res.writableEnded) sendError(req, res, chatError);
    });
  });
  // Agents keep their connections alive between turns; a rollout ends them on close.
  server.keepAliveTimeout = 60_000;
  return listen(server, options.host, options.port);
}

interface Guard {
  hosts: ReadonlySet<string>;
  origins: ReadonlySet<string>;
  limits: GuardLimits;
}

async function handle(backend: ChatBackend, req: http.IncomingMessage, res: http.ServerResponse, guard: Guard) {
  checkCaller(req, guard.hosts, guard.origins);
  const url = new URL(req.url ?? '/', 'http://localhost');
  const scoped = SESSION_ROUTE.exec(url.pathname);
  const route = scoped ? scoped[2] : url.pathname;
  const who = { session: scoped?.[1], apiKey: bearer(req) };
  if (route === '/health' && req.method === 'GET') return sendJson(res, 200, { ok: true });
  backend.authorise(who);
  if (route === '/v1/models' || route.startsWith('/v1/models/')) {
    if (req.method !== 'GET') throw new ChatRequestError(`${route} takes GET`, 405, null, 'method_not_allowed');
    const created = Math.floor(Date.now() / 1000);
    const data = backend
      .modelIds(who)
      .map((id) => ({ id, object: 'model' as const, created, owned_by: 'rollout-studio' }));
    if (route === '/v1/models') return sendJson(res, 200, { object: 'list', data } satisfies ModelList);
    const id = decodeURIComponent(route.slice('/v1/models/'.length));
    const model = data.find((m) => m.id === id);
    if (!model) throw new ChatRequestError(`The model '${id}' does not exist`, 404, 'model', 'model_not_found');
    return sendJson(res, 200, model);
  }
  if (route !== '/v1/chat/completions')
    throw new ChatRequestError(
      `no route ${req.method} ${url.pathname}; this server answers POST /v1/chat/completions and GET /v1/models`,
      404,
      null,
      'unknown_url',
    );
  if (req.method !== 'POST')
    throw new ChatRequestError('POST a request to /v1/chat/completions', 405, null, 'method_not_allowed');
  checkJsonBody(req);
  const text = await readLimitedBody(req, guard.limits.maxBodyBytes);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new ChatRequestError(`the body is not JSON: ${(error as Error).message}`, 400);
  }
  const request = readChatRequest(body);
  const aborted = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) aborted.abort(new Error('the client closed the connection'));
  });
  const call = { ...who, signal: aborted.signal };
  if (request.stream) return stream(backend, request, call, res);
  const choices = await backend.complete(request, call);
  const completion: ChatCompletion = {
    id: `chatcmpl-${crypto.randomUUID().replaceAll('-', '')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    system_fingerprint: 'rollout-studio',
    choices: choices.map((c, index) => ({
      index,
      message: c.answer.message,
      logprobs: request.logprobs ? logprobsOf(backend.tokenizer, c) : null,
      finish_reason: c.answer.finishReason,
    })),
    usage: usageOf(choices),
  };
  sendJson(res, 200, completion);
}

/** A streamed answer: server-sent events of chunks, `[DONE]` at the end (OpenAI's framing). */
async function stream(
  backend: ChatBackend,
  request: ChatTurnRequest,
  call: Omit<ChatCall, 'onToken'>,
  res: http.ServerResponse,
) {
  const base = {
    id: `chatcmpl-${crypto.randomUUID().replaceAll('-', '')}`,
    object: 'chat.completion.chunk' as const,
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    system_fingerprint: 'rollout-studio',
  };
  const send = (chunk: Omit<ChatCompletionChunk, keyof typeof base>) => {
    if (!res.headersSent)
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
    res.write(`data: ${JSON.stringify({ ...base, ...chunk })}\n\n`);
  };
  const usage = request.includeUsage ? { usage: null } : {};
  const decoders = Array.from({ length: request.n }, () => backend.streamDecoder(request));
  const started = new Set<number>();
  const emit = (
    index: number,
    delta: Delta | undefined,
    finish: ChatCompletionChunk['choices'][0]['finish_reason'] = null,
  ) => {
    if (!delta && !finish) return;
    const role = started.has(index) ? {} : { role: 'assistant' as const };
    started.add(index);
    send({
      choices: [{ index, delta: { ...role, ...(delta ?? {}) }, logprobs: null, finish_reason: finish }],
      ...usage,
    });
  };
  // The role first, as OpenAI's first chunk carries it (clients read it before any content).
  for (let i = 0; i < request.n; i++) emit(i, { content: '' });
  const choices = await backend.complete(request, { ...call, onToken: (i, token) => emit(i, decoders[i].push(token)) });
  choices.forEach((c, i) => {
    emit(i, decoders[i].finish(c.answer));
    emit(i, {}, c.answer.finishReason);
  });
  if (request.includeUsage) send({ choices: [], usage: usageOf(choices) });
  res.end('data: [DONE]\n\n');
}
