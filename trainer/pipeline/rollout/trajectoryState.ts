import type { DatasetRow } from '../../foundations/data/row';
import type { ParsedToolCall } from './formats/toolCallFormat';
import { type RenderedPrompt, taskText } from './prompt';
import { imageTokenStarts } from './images';
import type { FinishReason, Trajectory, TrajectoryImage, TrajectoryTurn, Episode } from './trajectory';
import type { PreparedImage } from '../../foundations/models/vision/preprocess';

/** A call parsed from the current turn, waiting to run, pinned to its last token. */
export interface PendingCallState {
  parsed: ParsedToolCall;
  index: number;
  tokenEnd: number;
}

/** The agent loop's bookkeeping for one trajectory while it is rolled out. */
export class TrajectoryState<Row extends DatasetRow> {
  readonly trajectory: Trajectory<Row>;
  /** Tokens already in `trajectory.ids` that the policy has not been sent yet. */
  pending: number[];
  done = false;
  assistantTurns = 0;
  calls: PendingCallState[] = [];
  /** The turn's token limit this round, and whether the total budget (not the per-turn one) set it. */
  turnLimit = 0;
  limitedByTotal = false;
  lastTurn: TrajectoryTurn | undefined;

  constructor(index: number, episode: Episode<Row>, prompt: RenderedPrompt, imageTokenId?: number) {
    this.trajectory = {
      index,
      rowId: episode.row.id,
      group: episode.group,
      sample: episode.sample,
      row: episode.row,
      prompt: taskText(prompt.messages),
      messages: [...prompt.messages],
      ids: [...prompt.ids],
      mask: prompt.ids.map(() => 0),
      logprobs: prompt.ids.map(() => 0),
      entropies: prompt.ids.map(() => 0),
      promptLength: prompt.ids.length,
      turns: prompt.turns.map((t) => ({ ...t })),
      calls: [],
      finishReason: 'answered',
      historyRewrites: [],
      images: [],
    };
    this.pending = [...prompt.ids];
    this.pendingImages = [...prompt.images];
    this.recordImages(prompt.images, 0, () => ({ kind: 'prompt' }), imageTokenId);
  }

  /** Notes where each image's token run starts in `ids`, from `start` on (each image spans image.tokens tokens). */
  recordImages(
    images: readonly PreparedImage[],
    start: number,
    from: (k: number) => TrajectoryImage['from'],
    imageTokenId: number | undefined,
  ): void {
    imageTokenStarts(this.trajectory.ids, start, images, imageTokenId).forEach((tokenStart, k) =>
      this.trajectory.images!.push({ image: images[k], tokenStart, from: from(k) }),
    );
  }

  /** Images in `pending`'s tokens, in order: they go to the policy with them. */
  pendingImages: PreparedImage[];

  appendContext(ids: readonly number[]): void {
    const t = this.trajectory;
    for (const id of ids) {
      t.ids.push(id);
      t.mask.push(0);
      t.logprobs.push(0);
      t.entropies.push(0);
    }
    this.pending.push(...ids);
  }

  finish(reason: FinishReason, error?: string): void {
    this.done = true;
    this.trajectory.finishReason = reason;
    if (error !== undefined) this.trajectory.error = error;
  }
}
