import type { ChatMessage } from '../../contract/protocol/chatMessages';
import type { TrajectoryRecord } from '../../contract/protocol/runStore';
import type { DatasetRow } from '../../foundations/data/row';
import type { CallView, TrajectoryView } from '../../foundations/tools/context';

/** One rollout to do: a dataset row, its group (GRPO / RLOO compare within a group) and its sample number in the group. */
export interface Episode<Row extends DatasetRow = DatasetRow> {
  row: Row;
  group: number;
  sample: number;
}
import type { PreparedImage } from '../../foundations/models/vision/preprocess';
import type { AllowedTokens } from '../../foundations/models/generation/policy';

/**
 * A finished (or in-progress) rollout of one episode, token-exact: `ids` is the sequence the
 * policy saw and produced, in order, and every other per-token array is aligned with it.
 *
 *   mask      1 where the policy sampled the token (its stop token included), 0 for the prompt,
 *             tool results and any template text the loop appended
 *   logprobs  the sampling log-prob of each policy token, 0 elsewhere
 *   entropies the policy's entropy at each policy token, 0 elsewhere
 *
 * `turns` partition `ids` into contiguous ranges: the prompt's messages, then alternating
 * assistant turns (generated) and tool turns (appended: tool results plus the next turn's
 * header). Calls sit on their assistant turn, each pinned to the token that completes it.
 */

export type TurnFinish = 'tool_call' | 'eos' | 'stop' | 'length';
export type FinishReason = TrajectoryRecord['finishReason'];

export interface ToolCallResult extends CallView {
  /** Index into `trajectory.turns` of the assistant turn that made it. */
  turnIndex: number;
  /** Position in `ids` of the call's last token (where its process reward goes). Always a policy token. */
  tokenEnd: number;
  /** What the tool logged while it ran. */
  logs: string[];
  /** The images the tool returned that the policy saw (vision-language models). */
  images?: PreparedImage[];
}

/** An image the trajectory saw: where its tokens start, and whether the prompt or a tool call gave it. */
export interface TrajectoryImage {
  image: PreparedImage;
  /** Position in `ids` of its first `<|image_pad|>` token; it spans `image.tokens` tokens. */
  tokenStart: number;
  /** `prompt`, or the tool call that returned it (its turn index and position in the turn). */
  from: { kind: 'prompt' } | { kind: 'tool'; turnIndex: number; call: number };
}

export interface TrajectoryTurn {
  index: number;
  role: 'system' | 'user' | 'assistant' | 'tool';
  /** Half-open range [tokenStart, tokenEnd) of `ids`. */
  tokenStart: number;
  tokenEnd: number;
  /** Assistant turns: how generation stopped. */
  finish?: TurnFinish;
  /** Assistant turns: 0 for the first generation, 1 for the second, … */
  assistantTurn?: number;
  /** Assistant turns: the text the calls were parsed from (decoded without an end-of-turn/EOS stop token). */
  content?: string;
  calls?: ToolCallResult[];
}

/** The chat template rendered the earlier conversation differently once tool results followed; the policy's tokens were kept. */
export interface HistoryRewriteNote {
  /** The assistant turn (index into `turns`) after which the results were appended. */
  afterTurn: number;
  /** First differing character, and excerpts of the rendering before and after. */
  index: number;
  before: string;
  after: string;
}

export interface Trajectory<Row extends object = DatasetRow> extends TrajectoryView {
  row: Row;
  /** The task as the user would name it: the last user message of the prompt. */
  prompt: string;
  /** The conversation as chat messages: the template's view (tokens are the truth). */
  messages: ChatMessage[];
  ids: number[];
  mask: number[];
  logprobs: number[];
  entropies: number[];
  /** Tokens of the rendered prompt (the first `append`). */
  promptLength: number;
  turns: TrajectoryTurn[];
  calls: ToolCallResult[];
  finishReason: FinishReason;
  /** Set with finishReason `error`: why the trajectory could not go on (e.g. the template refused the history). */
  error?: string;
  historyRewrites: HistoryRewriteNote[];
  /** Vision-language models: every image of the sequence, in the order of its image token runs. */
  images?: TrajectoryImage[];
  /**
   * Schema-constrained tool calls: the positions of `ids` whose token was sampled from a restricted
   * set, and that set. Scoring for the update applies the same sets, so the log-probs it computes
   * are those of the distribution actually sampled.
   */
  constrained?: Map<number, AllowedTokens>;
  /** An agent we did not write (rollout/gateway): its session, this sequence's part of it, and how the session ended. */
  agent?: AgentSessionNote;
}

/** See Trajectory.agent (and the run store's record of it). */
export interface AgentSessionNote {
  session: string;
  part: number;
  split?: string;
  error?: string;
  answer?: string;
  reward?: number;
}

/** The last assistant turn's text (the final answer, when the trajectory was answered). */
export function finalContent(trajectory: Pick<Trajectory, 'turns'>): string {
  for (let i = trajectory.turns.length - 1; i >= 0; i--) {
    const turn = trajectory.turns[i];
    if (turn.role === 'assistant') return turn.content ?? '';
  }
  return '';
}

/** Position of the last policy token, or -1 when the policy generated nothing. */
export function lastPolicyToken(trajectory: Pick<Trajectory, 'mask'>): number {
  for (let i = trajectory.mask.length - 1; i >= 0; i--) if (trajectory.mask[i]) return i;
  return -1;
}
