import { contentText, type ChatMessage, type ToolSpec } from '../../../contract/protocol/chatMessages';
import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
import type { DatasetRow } from '../../../foundations/data/row';
import type { GeneratedTurn } from '../../../foundations/models/generation/policy';
import { textResult } from '../../../foundations/tools/result';
import type { AgentSessionNote, Episode, ToolCallResult, Trajectory, TrajectoryTurn } from '../trajectory';
import type { PreparedImage } from '../../../foundations/models/vision/preprocess';
import { expandImageTokens, IMAGE_PLACEHOLDER, imageTokenStarts } from '../images';
import { renderPrompt, taskText } from '../prompt';
import { readErrorObservation } from '../readErrorObservation';
import { TextOffsets } from '../textOffsets';
import type { AnswerConstraint } from './answerConstraint';
import type { AssistantAnswer } from './assistantAnswer';
import { definedFields } from '../../../contract/definedFields';

/**
 * One token sequence of an agent's session, kept token-exact as the built-in loop keeps its
 * trajectories (rollout/agentLoop.ts): the prompt the first request rendered (mask 0), each
 * answer's sampled tokens as they were sampled (mask 1, their log-probs), and for each later
 * request only what it added — tool results, a user turn, the next generation prompt — rendered by
 * the chat template after the answer's end-of-turn token (mask 0). The conversation's messages are
 * the template's view; the tokens are the truth.
 *
 * Images (vision-language models) are prepared by the caller (requestImages.ts): each one's
 * placeholder is expanded to its tokens, its position recorded, and it goes to the policy with the
 * tokens that hold it.
 *
 * The tool calls of each answer are recorded on the trajectory with the token that completes
 * them; their observations come with the agent's next request, matched by tool_call_id, and a
 * result that reads as one of our error observations is that error (readErrorObservation).
 */

/** A call of an answer, waiting for its result in the agent's next request. */
interface OpenCall {
  call: ToolCallResult;
  answeredAt: number;
}

export class GatewaySequence {
  readonly trajectory: Trajectory;
  /** Tokens not yet sent to the policy (the appended context). */
  pending: number[] = [];
  /** Images in `pending`'s tokens, in order: they go to the policy with them. */
  pendingImages: PreparedImage[] = [];
  /** The tools the conversation was rendered with. */
  tools: ToolSpec[] = [];
  assistantTurns = 0;
  private readonly openCalls = new Map<string, OpenCall>();
  started = false;

  constructor(
    index: number,
    episode: Episode,
    /** Its session, its part of it, and why it started when it is a split (the run record's `agent`). */
    origin: Pick<AgentSessionNote, 'session' | 'part' | 'split'>,
    private readonly template: ChatTemplate,
    private readonly templateKwargs: Record<string, unknown> | undefined,
    /** The vision-language model's image placeholder token; undefined for a text-only model. */
    private readonly imageTokenId?: number,
  ) {
    this.trajectory = {
      index,
      rowId: episode.row.id,
      group: episode.group,
      sample: episode.sample,
      row: episode.row,
      prompt: '',
      messages: [],
      ids: [],
      mask: [],
      logprobs: [],
      entropies: [],
      promptLength: 0,
      turns: [],
      calls: [],
      finishReason: 'answered',
      historyRewrites: [],
      agent: { ...origin },
    };
  }

  /** The first request: its conversation rendered as the prompt (with its images, in order). */
  start(
    messages: ChatMessage[],
    tools: ToolSpec[],
    kwargs: Record<string, unknown> | undefined,
    images: readonly PreparedImage[] = [],
  ): void {
    const row: DatasetRow = { ...this.trajectory.row, messages };
    const prompt = renderPrompt(row, {
      template: this.template,
      tools,
      templateKwargs: this.kwargs(kwargs),
      ...definedFields({ images: images.length ? { list: images, placeholder: IMAGE_PLACEHOLDER } : undefined }),
    });
    const t = this.trajectory;
    t.prompt = taskText(messages);
    t.messages = [...prompt.messages];
    t.ids = [...prompt.ids];
    t.mask = prompt.ids.map(() => 0);
    t.logprobs = prompt.ids.map(() => 0);
    t.entropies = prompt.ids.map(() => 0);
    t.promptLength = prompt.ids.length;
    t.turns = prompt.turns.map((turn) => ({ ...turn }));
    this.pending = [...prompt.ids];
    this.tools = tools;
    this.started = true;
    this.addImages(images, 0, { kind: 'prompt' });
  }

  private addImages(images: readonly PreparedImage[], start: number, from: { kind: 'prompt' }): void {
    if (!images.length) return;
    const t = this.trajectory;
    t.images ??= [];
    imageTokenStarts(t.ids, start, images, this.imageTokenId).forEach((tokenStart, k) =>
      t.images!.push({ image: images[k], tokenStart, from }),
    );
    this.pendingImages.push(...images);
  }

  private kwargs(request: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
    return request || this.templateKwargs ? { ...this.templateKwargs, ...request } : undefined;
  }

  /** The ids `newMessages` (holding `images`) add after the last answer (its end-of-turn token first when it stopped on something else). */
  appendTokens(
    newMessages: readonly ChatMessage[],
    kwargs: Record<string, unknown> | undefined,
    images: readonly PreparedImage[] = [],
  ): number[] {
    const t = this.trajectory;
    const closing = t.ids[t.ids.length - 1] === this.template.endOfTurnId ? [] : [this.template.endOfTurnId];
    const appended = this.template.appendTokens(
      { messages: t.messages, ids: closing.length ? [...t.ids, ...closing] : t.ids },
      newMessages,
      { tools: this.tools, kwargs: this.kwargs(kwargs), onHistoryRewrite: 'keep-tokens' },
    );
    if (appended.historyRewrite) {
      const afterTurn = [...t.turns].reverse().find((turn) => turn.role === 'assistant')?.index ?? 0;
      t.historyRewrites.push({ afterTurn, ...appended.historyRewrite });
    }
    const ids = images.length ? expandImageTokens(appended.ids, images, this.imageTokenId!, 'messages') : appended.ids;
    return [...closing, ...ids];
  }

  /** Appends the context `ids` for `newMessages` (holding `images`), filling in the observations of the calls they answer. */
  extend(
    newMessages: readonly ChatMessage[],
    ids: readonly number[],
    images: readonly PreparedImage[] = [],
  ): ToolCallResult[] {
    const t = this.trajectory;
    const start = t.ids.length;
    for (const id of ids) {
      t.ids.push(id);
      t.mask.push(0);
      t.logprobs.push(0);
      t.entropies.push(0);
    }
    this.pending.push(...ids);
    t.messages.push(...newMessages);
    const role = newMessages.some((m) => m.role === 'tool') ? 'tool' : newMessages[0].role;
    t.turns.push({ index: t.turns.length, role, tokenStart: start, tokenEnd: t.ids.length });
    this.addImages(images, start, { kind: 'prompt' });
    const answered: ToolCallResult[] = [];
    for (const m of newMessages) {
      if (m.role !== 'tool' || m.tool_call_id === undefined) continue;
      const open = this.openCalls.get(m.tool_call_id);
      if (!open) continue;
      this.openCalls.delete(m.tool_call_id);
      answered.push(answer(open, contentText(m.content)));
    }
    return answered;
  }

  /** Records a generated turn (and its calls, pinned to their last tokens). */
  recordTurn(
    generated: GeneratedTurn,
    answer: AssistantAnswer,
    constraint: AnswerConstraint | undefined,
  ): TrajectoryTurn {
    const t = this.trajectory;
    const start = t.ids.length;
    generated.tokens.forEach((token, i) => {
      t.ids.push(token);
      t.mask.push(1);
      t.logprobs.push(generated.logprobs[i]);
      t.entropies.push(generated.entropies[i]);
    });
    constraint?.applied.forEach((set, i) => {
      if (!set) return;
      t.constrained ??= new Map();
      t.constrained.set(start + i, set);
    });
    const turn: TrajectoryTurn = {
      index: t.turns.length,
      role: 'assistant',
      tokenStart: start,
      tokenEnd: t.ids.length,
      assistantTurn: this.assistantTurns++,
      content: answer.text,
      finish: answer.finishReason === 'length' ? 'length' : answer.calls.length ? 'tool_call' : 'eos',
    };
    t.turns.push(turn);
    t.messages.push(answer.historyMessage);
    // The sampled tokens the answer's text covers: a call ends on the token completing it.
    const offsets = new TextOffsets(this.template.tokenizer, generated.tokens.slice(0, Math.max(1, answer.textTokens)));
    turn.calls = answer.calls.map(({ id, parsed }, index) => {
      const call: ToolCallResult = {
        turn: turn.assistantTurn!,
        turnIndex: turn.index,
        index,
        name: parsed.name,
        arguments: parsed.arguments,
        raw: parsed.raw,
        observation: '',
        truncated: false,
        latencyMs: 0,
        tokenEnd: start + offsets.tokenAt(Math.max(parsed.start, parsed.end - 1)),
        logs: [],
      };
      this.openCalls.set(id, { call, answeredAt: performance.now() });
      return call;
    });
    t.calls.push(...turn.calls);
    this.pending = [];
    this.pendingImages = [];
    return turn;
  }

  /** The conversation's messages, for comparison with the next request (historyMatch.ts). */
  get messages(): readonly ChatMessage[] {
    return this.trajectory.messages;
  }

  get length(): number {
    return this.trajectory.ids.length;
  }

  /** The last assistant turn, when there is one. */
  lastAnswer(): TrajectoryTurn | undefined {
    return [...this.trajectory.turns].reverse().find((turn) => turn.assistantTurn !== undefined);
  }
}

/** A call's observation from the agent's tool message; an error observation of ours reads as that error. */
function answer(open: OpenCall, observation: string): ToolCallResult {
  const { call } = open;
  call.observation = observation;
  call.latencyMs = performance.now() - open.answeredAt;
  const error = readErrorObservation(observation);
  if (error) call.error = error;
  else call.result = textResult(observation);
  return call;
}
