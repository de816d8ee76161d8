import type { UniformSource } from '../../foundations/models/generation/policy';
import type { DrawSchedule, TrajectoryRecord } from '../../contract/protocol/runStore';
import { Random } from '../../foundations/models/random';
import type { LengthBudget } from './budget';
import { generatedTurns } from './restoreState';

/**
 * Which of its session's random numbers each generated token of a recorded batch was sampled with.
 *
 * A generation session draws one uniform per row (every row, generating or not) per decoding step
 * from one seeded stream, so a sequence's numbers depend on the whole batch: the k-th token of
 * row b in a generate call that started at step E used draw (E + k)·size + b. The agent loop's
 * rounds are known from the records — in round r every unfinished trajectory generates its r-th
 * turn — and so are its generate calls, given the run's schedule (DrawSchedule, in run.json):
 * `per-round`, one call per round lasting as many steps as the round's longest turn;
 * `per-limit` (runs recorded before the field), one call per equal token limit
 * (min(maxNewTokensPerTurn, maxTotalTokens − length)), largest limit first, each lasting as many
 * steps as its longest turn. So the draws of every token can be worked out again, and a re-roll
 * of one trajectory, alone, can sample with the numbers it had in its batch. That keeps every
 * existing run's seeding as it is. It needs the whole batch of the rollout the trajectory was in
 * (all its records, indices 0…n−1) and the budget it ran under.
 */
export function batchDraws(
  records: readonly TrajectoryRecord[],
  budget: Pick<LengthBudget, 'maxNewTokensPerTurn' | 'maxTotalTokens'>,
  schedule: DrawSchedule,
): number[][] {
  const size = records.length;
  const byIndex = [...records].sort((a, b) => a.index - b.index);
  byIndex.forEach((r, i) => {
    if (r.index !== i)
      throw new RangeError(
        `the batch's records are not complete: index ${i} is missing (found ${r.index}); the draws of a partly recorded batch cannot be worked out`,
      );
  });
  const turns = byIndex.map(generatedTurns);
  const draws: number[][] = byIndex.map(() => []);
  let step = 0;
  for (let round = 0; ; round++) {
    const active = turns.map((t, b) => ({ b, turn: t[round] })).filter((x) => x.turn !== undefined);
    if (active.length === 0) break;
    const calls = new Map<number, typeof active>();
    for (const x of active) {
      const limit =
        schedule === 'per-round'
          ? budget.maxNewTokensPerTurn
          : Math.min(budget.maxNewTokensPerTurn, budget.maxTotalTokens - x.turn!.tokenStart);
      calls.set(limit, [...(calls.get(limit) ?? []), x]);
    }
    for (const [, call] of [...calls].sort((a, b) => b[0] - a[0])) {
      const longest = Math.max(...call.map((x) => x.turn!.tokenEnd - x.turn!.tokenStart));
      for (const { b, turn } of call)
        for (let k = 0; k < turn!.tokenEnd - turn!.tokenStart; k++) draws[b].push((step + k) * size + b);
      step += longest;
    }
  }
  return draws;
}

/** The values of the given draws (ascending positions) of the stream seeded with `seed`. */
export function drawValues(seed: number, positions: readonly number[]): number[] {
  const random = Random.fromSeed(seed);
  const values: number[] = [];
  let at = 0;
  for (const p of positions) {
    if (p < at) throw new RangeError(`draw positions must ascend (${p} after ${at - 1})`);
    while (at < p) {
      random.nextFloat();
      at++;
    }
    values.push(random.nextFloat());
    at++;
  }
  return values;
}

/**
 * A re-roll's sampling numbers: row r takes `follow[r]`'s values for its generated tokens while
 * they last (the original's draws from the cut on), then a stream of its own seeded from
 * `seeds[r]`.
 */
export class RerollUniforms implements UniformSource {
  private readonly taken: number[];
  private readonly own: Random[];

  constructor(
    private readonly follow: readonly (readonly number[] | undefined)[],
    seeds: readonly number[],
  ) {
    this.taken = seeds.map(() => 0);
    this.own = seeds.map((s) => Random.fromSeed(s));
  }

  next(row: number, generating: boolean): number {
    if (!generating) return 0.5;
    const k = this.taken[row]++;
    const list = this.follow[row];
    return list && k < list.length ? list[k] : this.own[row].nextFloat();
  }
}
