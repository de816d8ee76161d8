import type { DatasetRow } from '../../foundations/data/row';
import type { RewardContext } from '../../foundations/tools/context';
import type { ToolCallResult, Trajectory } from '../rollout/trajectory';

/** A reward on the whole trajectory (it lands on the last generated token). */
export interface OutcomeReward<Row extends object = DatasetRow> {
  /** Recorded under this name in the trajectory's components (`exact_match`, `format`, …). */
  name: string;
  /** Multiplies the score in the outcome sum (default 1). */
  weight?: number;
  score(trajectory: Trajectory<Row>, row: Row): number | Promise<number>;
}

/** A reward on one tool call (it lands on the call's last token). */
export interface ProcessReward<Row extends object = DatasetRow> {
  name: string;
  weight?: number;
  /** The reward for this call, or undefined for "no opinion" (nothing is recorded for it). */
  score(
    call: ToolCallResult,
    ctx: RewardContext<Row> & { trajectory: Trajectory<Row> },
  ): number | undefined | Promise<number | undefined>;
}
