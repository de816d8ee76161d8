import type {
  RewardEvaluation,
  RewardKind,
  RewardSample,
  SampleSource,
  ScoreSummary,
} from '../../contract/protocol/authoring';
import type { TrajectoryRecord } from '../../contract/protocol/runStore';
import type { DatasetRow } from '../../foundations/data/row';
import { answerTag, type AnswerExtractor } from '../../pipeline/rewards/answer';
import { RewardError } from '../../pipeline/rewards/rewardErrors';
import { defaultGroundTruth } from '../../pipeline/rewards/outcome';
import { checkRewardConfig, scoreTrajectories, type RewardConfig } from '../../pipeline/rewards/score';
import type { OutcomeReward, ProcessReward } from '../../pipeline/rewards/types';
import type { Trajectory } from '../../pipeline/rollout/trajectory';
import { UserCodeError } from '../../foundations/tools/toolErrors';
import { describeThrown } from '../../foundations/tools/runner';
import { ToolSet } from '../../foundations/tools/toolSet';
import { parseExportPath, resolveExportPath } from '../usercode/exportPath';
import { recordedTrajectory, referenceTrajectory } from './sampleTrajectories';

/**
 * Evaluate on Samples: one reward of a user module — an OutcomeReward, a ProcessReward, a whole
 * RewardConfig or a plain `(trajectory, row) => number` — scored on a few dataset rows (as
 * reference trajectories: the gold answer, and no answer) and on trajectories a run recorded,
 * with the rewards the run itself recorded alongside. A reward that throws on one sample is
 * reported on that sample; the others are still scored.
 */

export interface RecordedSamples {
  dir: string;
  steps: number[];
  /** Newest first. */
  records: TrajectoryRecord[];
}

export interface EvaluationInput {
  file: string;
  exportPath: string;
  /** As the code lens saw it; inferred from the value when absent. */
  kind?: RewardKind;
  /** The dataset the rows come from (reference trajectories use the first `samples`; recorded ones are matched by id). */
  data?: { file: string; rows: readonly DatasetRow[] };
  recorded?: RecordedSamples;
  /** At most this many rows and this many recorded trajectories. */
  samples: number;
  /** For a RewardConfig's tool reward hooks: the tools of the config. */
  tools?: ToolSet;
}

type Scored = Pick<RewardSample, 'scores' | 'calls'>;

interface Scorer {
  names: string[];
  answer: AnswerExtractor;
  /** Process rewards score calls: reference trajectories (which make none) are not scored. */
  needsCalls: boolean;
  score(trajectory: Trajectory<DatasetRow>): Promise<Scored>;
}

function isScoringObject(
  value: unknown,
): value is { name: string; score: (...args: never[]) => unknown; weight?: number } {
  return typeof value === 'object' && value !== null && typeof (value as { score?: unknown }).score === 'function';
}

export function inferRewardKind(value: unknown, exportPath: string): RewardKind {
  if (typeof value === 'object' && value !== null && Array.isArray((value as { outcome?: unknown }).outcome))
    return 'config';
  if (typeof value === 'function') return 'function';
  if (isScoringObject(value)) return parseExportPath(exportPath).includes('process') ? 'process' : 'outcome';
  return 'outcome';
}

function finiteScore(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new RewardError(
      `${what} returned ${typeof value === 'number' ? value : (JSON.stringify(value) ?? String(value))}; rewards must be finite numbers`,
    );
  return value;
}

async function guarded<T>(what: string, run: () => T | Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof RewardError) throw error;
    throw new RewardError(`${what} threw: ${describeThrown(error)}`, { cause: error });
  }
}

function checkScoringObject(
  value: unknown,
  where: string,
): asserts value is { name: string; score: (...args: never[]) => unknown } {
  if (!isScoringObject(value))
    throw new UserCodeError(`${where} is ${value === null ? 'null' : typeof value}; a reward is { name, score(…) }`);
  if (typeof value.name !== 'string' || value.name === '')
    throw new UserCodeError(`${where}: a reward needs a non-empty name`);
}

function scorerFor(value: unknown, kind: RewardKind, where: string, exportPath: string, tools: ToolSet): Scorer {
  switch (kind) {
    case 'outcome': {
      checkScoringObject(value, where);
      const reward = value as unknown as OutcomeReward<DatasetRow>;
      return {
        names: [reward.name],
        answer: answerTag,
        needsCalls: false,
        score: async (t) => ({
          scores: {
            [reward.name]: finiteScore(
              await guarded(`outcome reward "${reward.name}"`, () => reward.score(t, t.row)),
              `outcome reward "${reward.name}"`,
            ),
          },
        }),
      };
    }
    case 'function': {
      if (typeof value !== 'function') throw new UserCodeError(`${where} is ${typeof value}, not a function`);
      const name = parseExportPath(exportPath).at(-1)!.toString();
      const fn = value as (trajectory: Trajectory<DatasetRow>, row: DatasetRow) => unknown;
      return {
        names: [name],
        answer: answerTag,
        needsCalls: false,
        score: async (t) => ({
          scores: { [name]: finiteScore(await guarded(`${name}()`, () => fn(t, t.row)), `${name}()`) },
        }),
      };
    }
    case 'process': {
      checkScoringObject(value, where);
      const reward = value as unknown as ProcessReward<DatasetRow>;
      return {
        names: [reward.name],
        answer: answerTag,
        needsCalls: true,
        score: async (t) => {
          const calls: NonNullable<RewardSample['calls']> = [];
          let sum = 0;
          for (const call of t.calls) {
            const what = `process reward "${reward.name}" on turn ${call.turn} call ${call.index}`;
            const raw = await guarded(what, () => reward.score(call, { row: t.row, trajectory: t }));
            const score = raw === undefined ? null : finiteScore(raw, what);
            if (score !== null) sum += score;
            calls.push({
              turn: call.turn,
              index: call.index,
              ...(call.name !== undefined ? { name: call.name } : {}),
              score,
            });
          }
          return { scores: { [reward.name]: sum }, calls };
        },
      };
    }
    case 'config': {
      const config = value as RewardConfig<DatasetRow>;
      try {
        checkRewardConfig(config);
      } catch (error) {
        throw new UserCodeError(`${where}: ${(error as Error).message}`);
      }
      return {
        names: [...config.outcome.map((r) => r.name), ...(config.process ?? []).map((r) => r.name)],
        answer: config.answer ?? answerTag,
        needsCalls: false,
        score: async (t) => {
          const [r] = (await scoreTrajectories([t], config, tools)).trajectories;
          return { scores: { outcome: r.outcome, process: r.process, total: r.total, ...r.components } };
        },
      };
    }
  }
}

/**
 * The text a gold-answer reference trajectory answers with: the row's first gold answer as the
 * answer rewards read it (strings, numbers, booleans), or any other JSON value of `answer` or
 * `answers` as JSON — a user's reward may well parse it. Undefined when the row has neither field.
 */
export function goldAnswerText(row: DatasetRow): string | undefined {
  const value = row['answers'] ?? row['answer'];
  if (value === undefined) return undefined;
  try {
    return defaultGroundTruth(row)[0];
  } catch {
    return JSON.stringify(value);
  }
}

async function scoreSample(
  scorer: Scorer,
  trajectory: Trajectory<DatasetRow>,
  base: Omit<RewardSample, 'scores'>,
): Promise<RewardSample> {
  const answer = scorer.answer(trajectory as Trajectory<object>);
  const sample: RewardSample = { ...base, ...(answer !== undefined ? { answer } : {}), scores: {} };
  try {
    Object.assign(sample, await scorer.score(trajectory));
  } catch (error) {
    sample.error = error instanceof RewardError ? error.message : describeThrown(error);
  }
  return sample;
}

/** "train.jsonl:3 (row q-0003)": the row's file by its name only (the dataset's path is in the header). */
function rowLabel(row: DatasetRow): string {
  const base = row.source.file.split(/[\\/]/).pop();
  return `${base}:${row.source.line} (row ${row.id})`;
}

function summarize(samples: readonly RewardSample[]): ScoreSummary[] {
  const groups = new Map<string, { source: SampleSource; score: string; values: number[] }>();
  for (const sample of samples) {
    for (const [score, value] of Object.entries(sample.scores)) {
      const key = `${sample.source}\u0000${score}`;
      const group = groups.get(key) ?? { source: sample.source, score, values: [] };
      group.values.push(value);
      groups.set(key, group);
    }
  }
  return [...groups.values()].map(({ source, score, values }) => ({
    source,
    score,
    count: values.length,
    mean: values.reduce((a, b) => a + b, 0) / values.length,
    min: Math.min(...values),
    max: Math.max(...values),
  }));
}

export async function evaluateReward(
  exports: Record<string, unknown>,
  input: EvaluationInput,
): Promise<RewardEvaluation> {
  const value = resolveExportPath(exports, input.exportPath, input.file);
  const kind = input.kind ?? inferRewardKind(value, input.exportPath);
  const tools = input.tools ?? new ToolSet([]);
  const scorer = scorerFor(value, kind, `${input.file}: ${input.exportPath}`, input.exportPath, tools);
  const samples: RewardSample[] = [];
  const notes: string[] = [];
  const rows = input.data?.rows ?? [];
  await scoreReferenceSamples(scorer, input, samples, notes);
  if (input.recorded) await scoreRecordedSamples(scorer, kind, input, input.recorded, samples, notes);
  notes.push(...rewardConfigNotes(value, kind, tools));

  return {
    file: input.file,
    export: input.exportPath,
    kind,
    rewards: scorer.names,
    ...(input.data ? { data: { file: input.data.file, rows: rows.length } } : {}),
    ...(input.recorded ? { run: { dir: input.recorded.dir, steps: input.recorded.steps } } : {}),
    samples,
    summary: summarize(samples),
    notes,
  };
}

/** Each row's gold-answer and no-answer reference trajectories, scored; a note where they cannot be. */
async function scoreReferenceSamples(
  scorer: Scorer,
  input: EvaluationInput,
  samples: RewardSample[],
  notes: string[],
): Promise<void> {
  if (!input.data)
    notes.push('no dataset: reference trajectories need dataset rows (pick a training config or a JSONL file)');
  else if (scorer.needsCalls)
    notes.push(
      'a process reward scores tool calls, and reference trajectories make none: only recorded trajectories are scored',
    );
  else {
    let withoutAnswer = 0;
    for (const row of input.data.rows.slice(0, input.samples)) {
      const gold = goldAnswerText(row);
      if (gold === undefined) withoutAnswer++;
      const label = rowLabel(row);
      if (gold !== undefined) {
        samples.push(
          await scoreSample(scorer, referenceTrajectory(row, `<answer>${gold}</answer>`, samples.length), {
            source: 'gold',
            label,
            rowId: row.id,
          }),
        );
      }
      samples.push(
        await scoreSample(scorer, referenceTrajectory(row, 'I do not know.', samples.length), {
          source: 'unanswered',
          label,
          rowId: row.id,
        }),
      );
    }
    if (withoutAnswer)
      notes.push(
        `${withoutAnswer} row${withoutAnswer === 1 ? ' has' : 's have'} no "answer" or "answers" field: no gold-answer trajectory was made for ${withoutAnswer === 1 ? 'it' : 'them'}`,
      );
  }
}

/** The run's recorded trajectories whose rows are in the dataset, scored with what the run recorded alongside. */
async function scoreRecordedSamples(
  scorer: Scorer,
  kind: RewardKind,
  input: EvaluationInput,
  recordedSamples: RecordedSamples,
  samples: RewardSample[],
  notes: string[],
): Promise<void> {
  const byId = new Map((input.data?.rows ?? []).map((row) => [row.id, row]));
  let missing = 0;
  let taken = 0;
  for (const record of recordedSamples.records) {
    if (taken >= input.samples) break;
    const row = byId.get(record.rowId);
    if (!row) {
      missing++;
      continue;
    }
    taken++;
    const recorded = {
      outcome: record.rewards.outcome,
      process: record.rewards.process,
      total: record.rewards.total,
      ...record.rewards.components,
    };
    const label = `${recordedSamples.dir.split(/[\\/]/).pop()} step ${record.step} #${record.index}`;
    samples.push(
      await scoreSample(scorer, recordedTrajectory(record, row), {
        source: 'recorded',
        label,
        rowId: record.rowId,
        recorded,
      }),
    );
  }
  if (missing) {
    notes.push(
      `${missing} recorded trajector${missing === 1 ? 'y was' : 'ies were'} skipped: ${missing === 1 ? 'its row is' : 'their rows are'} not in ${input.data?.file ?? 'the dataset (none was given)'}`,
    );
  }
  if (kind !== 'outcome' && kind !== 'function')
    notes.push(
      "recorded calls keep the observation the policy saw, not the tool's result data: rewards that read call.result.data see none",
    );
}

/** What a whole RewardConfig does in training that evaluating it here cannot show. */
function rewardConfigNotes(value: unknown, kind: RewardKind, tools: ToolSet): string[] {
  const notes: string[] = [];
  if (kind === 'config' && (value as RewardConfig).combine === 'agent-r1') {
    notes.push(
      'combine "agent-r1" divides process rewards by the largest reward-to-go of the batch; here each trajectory is scored alone, so its process part is normalised by its own',
    );
  }
  if (kind === 'config' && tools.tools.length === 0 && (value as RewardConfig).toolRewards !== false) {
    notes.push("the tools' own reward hooks were not evaluated: no tools were given (evaluate with a training config)");
  }
  return notes;
}
