import { describeRow, type DatasetRow } from '../../foundations/data/row';
import { finalContent, type Trajectory } from '../rollout/trajectory';
import { answerTag, type AnswerExtractor } from './answer';
import { RewardError } from './rewardErrors';
import { normalizeAnswer, tokenF1 } from './answerText';
import type { OutcomeReward } from './types';

/** Reads the gold answer(s) from a row. */
export type GroundTruth<Row extends object> = (row: Row) => string | readonly string[];

export interface AnswerRewardOptions<Row extends object> {
  name?: string;
  weight?: number;
  /** Where the predicted answer comes from (default: the last `<answer>…</answer>`). */
  answer?: AnswerExtractor;
  /** Where the gold answers come from (default: the row's `answers` or `answer`: strings, numbers or booleans). */
  groundTruth?: GroundTruth<Row>;
}

/** A gold answer that compares as text: a string, or a number or boolean written as JSON writes it (`5`, `-0.25`, `true`). */
function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') return String(value);
  return undefined;
}

/** The row's `answers` or `answer` field as texts: a string, number or boolean, or a non-empty list of them. */
export function defaultGroundTruth(row: object): readonly string[] {
  const fields = row as Record<string, unknown>;
  const value = fields['answers'] ?? fields['answer'];
  const single = scalarText(value);
  if (single !== undefined) return [single];
  if (Array.isArray(value) && value.length > 0) {
    const texts = value.map(scalarText);
    if (texts.every((t) => t !== undefined)) return texts as string[];
  }
  const where = 'id' in row && 'source' in row ? describeRow(row as DatasetRow) : 'a row';
  throw new RewardError(
    `${where}: the answer rewards read the ground truth from "answer" (a string, number or boolean) or "answers" (a non-empty list of them); this row has ${value === undefined ? 'neither' : JSON.stringify(value)}` +
      (value === undefined ? '' : ' (compare other values with your own reward, or pass groundTruth)'),
  );
}

function golds<Row extends object>(row: Row, groundTruth: GroundTruth<Row> | undefined): readonly string[] {
  if (!groundTruth) return defaultGroundTruth(row);
  const value = groundTruth(row);
  return typeof value === 'string' ? [value] : value;
}

function answerReward<Row extends object>(
  defaultName: string,
  options: AnswerRewardOptions<Row>,
  compare: (prediction: string, gold: string) => number,
): OutcomeReward<Row> {
  const extract = options.answer ?? answerTag;
  return {
    name: options.name ?? defaultName,
    ...(options.weight !== undefined ? { weight: options.weight } : {}),
    score(trajectory: Trajectory<Row>, row: Row): number {
      const prediction = extract(trajectory);
      const expected = golds(row, options.groundTruth);
      if (prediction === undefined) return 0;
      return Math.max(0, ...expected.map((gold) => compare(prediction, gold)));
    },
  };
}

/** 1 when the normalised answer equals a normalised gold answer, else 0. */
export function exactMatch<Row extends object = DatasetRow>(
  options: AnswerRewardOptions<Row> = {},
): OutcomeReward<Row> {
  return answerReward('exact_match', options, (prediction, gold) =>
    normalizeAnswer(prediction) === normalizeAnswer(gold) ? 1 : 0,
  );
}

/** SQuAD token F1 against the best-matching gold answer. */
export function f1<Row extends object = DatasetRow>(options: AnswerRewardOptions<Row> = {}): OutcomeReward<Row> {
  return answerReward('f1', options, tokenF1);
}

/** 1 when a normalised gold answer occurs in the normalised answer (on word boundaries), else 0. */
export function substringMatch<Row extends object = DatasetRow>(
  options: AnswerRewardOptions<Row> = {},
): OutcomeReward<Row> {
  return answerReward('substring_match', options, (prediction, gold) => {
    const haystack = ` ${normalizeAnswer(prediction)} `;
    const needle = normalizeAnswer(gold);
    return needle !== '' && haystack.includes(` ${needle} `) ? 1 : 0;
  });
}

export interface FormatRewardOptions {
  name?: string;
  weight?: number;
  /** A pattern the final turn's text must match, or a predicate over the trajectory. */
  test: RegExp | ((trajectory: Trajectory<object>) => boolean);
}

/** 1 when the final turn (or the trajectory) has the required form, else 0. */
export function formatCheck<Row extends object = DatasetRow>(options: FormatRewardOptions): OutcomeReward<Row> {
  const { test } = options;
  return {
    name: options.name ?? 'format',
    ...(options.weight !== undefined ? { weight: options.weight } : {}),
    score: (trajectory) => {
      if (typeof test === 'function') return test(trajectory) ? 1 : 0;
      test.lastIndex = 0;
      return test.test(finalContent(trajectory)) ? 1 : 0;
    },
  };
}

/** A user function of the trajectory and the row as an outcome reward. */
export function outcomeReward<Row extends object = DatasetRow>(
  name: string,
  score: (trajectory: Trajectory<Row>, row: Row) => number | Promise<number>,
  weight?: number,
): OutcomeReward<Row> {
  return { name, score, ...(weight !== undefined ? { weight } : {}) };
}
