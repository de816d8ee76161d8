import type { Tokenizer } from '../../../foundations/models/text/tokenizer';
import type { ToolCallRecord, TrajectoryRecord, TurnRecord } from '../../../contract/protocol/runStore';
import { encodeUint8 } from '../../../contract/protocol/tokens';
import type { PendingCall } from '../../rollout/observer';
import { callRecord, imageRecord, turnRecord } from '../step/trajectoryRecord';
import type { ToolCallResult, Trajectory, TrajectoryTurn } from '../../rollout/trajectory';
import { definedFields } from '../../../contract/definedFields';

/**
 * The step's rollout as the debugger sees it at a held stop point: every trajectory of the
 * batch as it stands, as run-store records marked `inFlight` — turns so far, finished calls,
 * calls announced but not run yet (`pending`), and whether it has ended. Rewards and
 * advantages do not exist yet (the batch is scored after the rollout): they stay zeros and the
 * mark says so. Per-token arrays are left empty except the mask (the debugger counts generated
 * tokens with it); decoding a turn's text is the costly part, so each turn is decoded once.
 */
export class LiveSnapshot {
  private trajectories: readonly Trajectory[] = [];
  private readonly ended = new Set<number>();
  /** Announced calls that have not finished, by trajectory index. */
  private readonly pending = new Map<number, PendingCall[]>();
  /** Turns never change once generated (or appended): decode each once. */
  private readonly turns = new WeakMap<TrajectoryTurn, TurnRecord>();
  private readonly started = performance.now();

  constructor(
    readonly step: number,
    private readonly tokenizer: Tokenizer,
  ) {}

  /** The batch the agent loop fills in place. */
  rolloutStarted(trajectories: readonly Trajectory[]): void {
    this.trajectories = trajectories;
  }

  callAnnounced(trajectory: number, call: PendingCall): void {
    const list = this.pending.get(trajectory) ?? [];
    list.push(call);
    this.pending.set(trajectory, list);
  }

  callFinished(trajectory: number, call: ToolCallResult): void {
    const list = this.pending.get(trajectory);
    if (!list) return;
    const rest = list.filter((p) => !(p.turnIndex === call.turnIndex && p.index === call.index));
    if (rest.length) this.pending.set(trajectory, rest);
    else this.pending.delete(trajectory);
  }

  trajectoryEnded(trajectory: number): void {
    this.ended.add(trajectory);
  }

  /** Trajectories that have reached their end, and the batch size. */
  get progress(): { ended: number; total: number } {
    return { ended: this.ended.size, total: this.trajectories.length };
  }

  /** Policy tokens generated so far per second of rollout. */
  tokensPerSecond(): number {
    let generated = 0;
    for (const t of this.trajectories)
      for (const turn of t.turns) if (turn.assistantTurn !== undefined) generated += turn.tokenEnd - turn.tokenStart;
    return generated / Math.max(1e-3, (performance.now() - this.started) / 1000);
  }

  records(): TrajectoryRecord[] {
    return this.trajectories.map((t) => this.record(t));
  }

  private record(t: Trajectory): TrajectoryRecord {
    const pending = this.pending.get(t.index) ?? [];
    const turns = t.turns.map((turn): TurnRecord => {
      let base = this.turns.get(turn);
      if (!base) this.turns.set(turn, (base = turnRecord(t, turn, this.tokenizer)));
      const finished = (turn.calls ?? []).map((call) => callRecord(call));
      const announced = pending.filter((p) => p.turnIndex === turn.index).map(pendingRecord);
      const calls = [...finished, ...announced].sort((a, b) => a.index - b.index);
      return calls.length ? { ...base, toolCalls: calls } : base;
    });
    const ended = this.ended.has(t.index);
    return {
      step: this.step,
      index: t.index,
      rowId: t.rowId,
      group: t.group,
      sample: t.sample,
      prompt: t.prompt,
      turns,
      finishReason: t.finishReason,
      ...definedFields({
        error: t.error,
        historyRewrites: t.historyRewrites.length ? t.historyRewrites.map((r) => ({ ...r })) : undefined,
        images: t.images?.length ? t.images.map(imageRecord) : undefined,
      }),
      rewards: { outcome: 0, process: 0, total: 0, components: {} },
      lengths: { prompt: t.promptLength, response: t.mask.reduce((a, m) => a + m, 0), total: t.ids.length },
      tokens: { ids: '', pieces: [], mask: encodeUint8(t.mask), logprobs: '' },
      inFlight: { ended },
    };
  }
}

function pendingRecord(call: PendingCall): ToolCallRecord {
  return {
    index: call.index,
    name: call.name,
    ...definedFields({ arguments: call.arguments }),
    raw: call.raw,
    observation: '',
    truncated: false,
    latencyMs: 0,
    tokenEnd: call.tokenEnd,
    pending: true,
  };
}
