import type { HealthWarning, MetricsRecord } from '../../../contract/protocol/runStore';
import type { HealthSettings } from './healthSettings';

/**
 * "Is it learning?": the per-step health checks. Pure functions of a step's recorded values and
 * the few steps before it (a `HealthSample` each, kept in the run position and rebuilt from
 * metrics.jsonl on resume), returning warnings in plain words with what to try. A `critical`
 * warning is a collapse: `onCollapse` in the config decides what the run does about it
 * (collapseResponse.ts).
 */

/** One recent training step as the trends see it: the values they compare, where recorded. */
export interface HealthSample {
  step: number;
  entropy?: number;
  score?: number;
  toolErrors?: number;
  kl?: number;
}

type Values = Readonly<Record<string, number | null | undefined>>;

const finite = (v: number | null | undefined): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) ? v : undefined;

/** The training score a trend follows: the task metric's `score/<name>`, else the mean reward. */
function scoreOf(values: Values, scoreKey: string | undefined): number | undefined {
  return finite(scoreKey !== undefined ? values[scoreKey] : undefined) ?? finite(values['reward/mean']);
}

export function healthSample(step: number, values: Values, scoreKey: string | undefined): HealthSample {
  const sample: HealthSample = { step };
  const entropy = finite(values['entropy/mean']);
  const score = scoreOf(values, scoreKey);
  const toolErrors = finite(values['tools/error_rate']);
  const kl = finite(values['kl/mean']);
  if (entropy !== undefined) sample.entropy = entropy;
  if (score !== undefined) sample.score = score;
  if (toolErrors !== undefined) sample.toolErrors = toolErrors;
  if (kl !== undefined) sample.kl = kl;
  return sample;
}

/** Keep the newest `window` samples. */
export function pushHealthSample(history: HealthSample[], sample: HealthSample, window: number): void {
  history.push(sample);
  if (history.length > window) history.splice(0, history.length - window);
}

/**
 * The trends' history when a run resumes after `step`: its training steps recorded up to there,
 * after the last collapse the run acted on (a rollback or a stop starts the history afresh, see
 * collapseResponse.ts), the newest `window` — what the uninterrupted run had in memory.
 */
export function healthHistory(
  records: readonly MetricsRecord[],
  step: number,
  window: number,
  scoreKey?: string,
): HealthSample[] {
  const kept = records.filter((r) => r.kind !== 'sft' && r.step <= step);
  const actedOn = kept
    .filter((r) => r.warnings?.some((w) => w.severity === 'critical' && w.action !== undefined))
    .map((r) => r.step);
  const since = actedOn.length ? Math.max(...actedOn) : -1;
  const history: HealthSample[] = [];
  for (const r of kept)
    if (r.kind === 'train' && r.step > since)
      pushHealthSample(history, healthSample(r.step, r.values, scoreKey), window);
  return history;
}

/**
 * Share of groups that teach nothing: every member's advantage is zero on every token. For the
 * GRPO family that is a group whose rewards are all equal; RFT's group with a kept sample, or
 * PPO's critic, still teaches — so this reads the advantages, not the rewards.
 */
export function zeroSignalShare(groups: readonly number[], advantages: ReadonlyArray<ArrayLike<number>>): number {
  const signal = new Map<number, boolean>();
  groups.forEach((g, i) => {
    let any = false;
    for (let t = 0; t < advantages[i].length && !any; t++) any = Math.abs(advantages[i][t]) > 1e-9;
    signal.set(g, (signal.get(g) ?? false) || any);
  });
  if (signal.size === 0) return 0;
  return [...signal.values()].filter((s) => !s).length / signal.size;
}

function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The window's median of one value, when at least `minHistory` steps recorded it. */
function recent(
  history: readonly HealthSample[],
  key: keyof Omit<HealthSample, 'step'>,
  settings: HealthSettings,
): number | undefined {
  const values = history.map((s) => s[key]).filter((v): v is number => v !== undefined);
  return values.length >= settings.minHistory ? median(values) : undefined;
}

const pct = (x: number) => `${(100 * x).toFixed(0)} %`;
const num = (x: number) => x.toFixed(3);

/** The warnings of one training step, given the steps before it (oldest first, this one not included). */
export function stepWarnings(
  values: Values,
  history: readonly HealthSample[],
  settings: HealthSettings,
  scoreKey?: string,
): HealthWarning[] {
  const now = healthSample(-1, values, scoreKey);
  const collapse = collapseWarning(now, history, settings, scoreKey);
  return [
    ...(collapse ? [collapse] : []),
    ...zeroSignalWarnings(values, now, settings),
    ...entropyWarnings(now, history, settings, collapse !== undefined),
    ...toolErrorWarnings(values, settings),
    ...truncationWarnings(values, settings),
    ...updateSizeWarnings(values, now, history, settings),
  ];
}

function zeroSignalWarnings(values: Values, now: HealthSample, settings: HealthSettings): HealthWarning[] {
  const share = finite(values['health/zero_signal_groups']);
  if (share === undefined || share < settings.zeroSignal || share === 0) return [];
  const score = now.score;
  const why =
    score === undefined
      ? ''
      : score >= 0.9
        ? ' Most answers are already right: the prompts are too easy for the policy now.'
        : score <= 0.1
          ? ' Almost nothing is right yet: the policy needs to find its first successes.'
          : '';
  const task =
    score !== undefined && score <= 0.1 ? 'add demonstrations (sft) or easier prompts' : 'add harder prompts';
  return [
    {
      code: 'zero_signal',
      severity: 'warn',
      message: `${pct(share)} of the groups had all-equal rewards: they carry no learning signal.${why}`,
      advice: `raise rollout.temperature or algorithm.groupSize, ${task}, or drop such groups with dynamic sampling`,
    },
  ];
}

function entropyWarnings(
  now: HealthSample,
  history: readonly HealthSample[],
  settings: HealthSettings,
  collapsing: boolean,
): HealthWarning[] {
  if (now.entropy === undefined) return [];
  if (now.entropy < settings.entropyFloor) {
    return [
      {
        code: 'entropy_collapse',
        severity: 'warn',
        message: `entropy ${num(now.entropy)} nats per generated token: the policy has almost stopped exploring, so groups stop differing`,
        advice:
          'raise rollout.temperature, add an entropy bonus (algorithm.entropyCoef) or a KL term (algorithm.kl.coef), or lower optimization.lr',
      },
    ];
  }
  const jump = entropyJump(now, history, settings);
  if (!jump || collapsing) return [];
  return [
    {
      code: 'entropy_explosion',
      severity: 'warn',
      message: `entropy rose from ${num(jump.before)} to ${num(now.entropy)} nats per generated token (the median of the last ${history.length} steps → this step): the policy is becoming erratic`,
      advice: 'lower optimization.lr or raise algorithm.kl.coef; an entropy jump often comes before a collapse',
    },
  ];
}

function entropyJump(
  now: HealthSample,
  history: readonly HealthSample[],
  settings: HealthSettings,
): { before: number } | undefined {
  const before = recent(history, 'entropy', settings);
  if (before === undefined || now.entropy === undefined) return undefined;
  return now.entropy >= settings.entropyJump * before && now.entropy - before >= settings.entropyJumpMin
    ? { before }
    : undefined;
}

/** Trajectories cut off by a length limit: unfinished answers, or a policy that runs on past its answer. */
function truncationWarnings(values: Values, settings: HealthSettings): HealthWarning[] {
  const share = finite(values['health/truncated']);
  if (share === undefined || share < settings.truncated) return [];
  return [
    {
      code: 'truncated',
      severity: 'warn',
      message: `${pct(share)} of the trajectories ran into a length limit: answers never finished, or the policy runs on past its answer`,
      advice:
        'set rewards.truncationPenalty (e.g. 0.5) so that running on costs reward, or raise rollout.budget.maxNewTokensPerTurn if answers need the room',
    },
  ];
}

function toolErrorWarnings(values: Values, settings: HealthSettings): HealthWarning[] {
  const parse = finite(values['tools/parse_error_rate']) ?? 0;
  const schema = finite(values['tools/schema_error_rate']) ?? 0;
  if ((finite(values['tools/calls_per_trajectory']) ?? 0) === 0 || parse + schema < settings.toolErrors) return [];
  return [
    {
      code: 'tool_errors',
      severity: 'warn',
      message: `${pct(parse + schema)} of the tool calls could not be used: ${pct(parse)} did not parse, ${pct(schema)} named no known tool or did not match its schema`,
      advice:
        'keep constrained decoding on, add demonstrations of correct calls (sft), and leave room for the error in rollout.budget.maxToolResultTokens so the policy can read it',
    },
  ];
}

function updateSizeWarnings(
  values: Values,
  now: HealthSample,
  history: readonly HealthSample[],
  settings: HealthSettings,
): HealthWarning[] {
  const warnings: HealthWarning[] = [];
  const clip = finite(values['clip/fraction']);
  if (clip !== undefined && clip > settings.clipFraction) {
    warnings.push({
      code: 'clip_fraction',
      severity: 'warn',
      message: `${pct(clip)} of the tokens had their probability ratio clipped: the updates move the policy too far at once`,
      advice: 'lower optimization.lr, or algorithm.epochs or algorithm.miniBatches',
    });
  }
  const klBefore = recent(history, 'kl', settings);
  if (
    now.kl !== undefined &&
    klBefore !== undefined &&
    now.kl > settings.klMin &&
    now.kl > settings.klGrowth * klBefore
  ) {
    warnings.push({
      code: 'kl_growth',
      severity: 'warn',
      message: `KL to the reference policy is ${num(now.kl)} nats per token, up from ${num(klBefore)} (the median of the last ${history.length} steps): the policy is drifting fast`,
      advice: 'lower optimization.lr or raise algorithm.kl.coef',
    });
  }
  return warnings;
}

/**
 * The collapse detector: an entropy jump together with the training score falling sharply or the
 * tool error rate rising sharply, each against the median of the last steps. Either alone is
 * common noise; together they are how a policy that collapses into degenerate text looks (issue
 * 31: `<tool_call>\n\n<tool_call>` openings, repeated keys, entropy 0.06 → 0.27, 84 % tool errors).
 * Fewer than `collapseSteps` such steps in a row (default 2) are a warning (`collapse_risk`): with
 * four prompts a step, one hard batch can look like it (the currency-agent tutorial at temperature 1:
 * entropy 0.04 → 0.18 and exact match 0.59 → 0.25 for one step, then back). `collapseSteps` in a
 * row are a collapse, which `onCollapse` acts on.
 */
function collapseWarning(
  now: HealthSample,
  history: readonly HealthSample[],
  settings: HealthSettings,
  scoreKey: string | undefined,
): HealthWarning | undefined {
  const seen = collapseSigns(now, history, settings, scoreKey);
  if (!seen) return undefined;
  let inRow = 1;
  for (let k = history.length - 1; k >= 0 && inRow < settings.collapseSteps; k--) {
    if (!collapseSigns(history[k], history.slice(0, k), settings, scoreKey)) break;
    inRow++;
  }
  const detail = `entropy jumped from ${num(seen.before)} to ${num(now.entropy!)} nats per token while ${seen.signs.join(' and ')} (the median of the last ${history.length} steps → this step)`;
  if (inRow < settings.collapseSteps) {
    return {
      code: 'collapse_risk',
      severity: 'warn',
      message: `the policy may be collapsing: ${detail}; one step of this can be a hard batch, ${settings.collapseSteps} in a row are a collapse`,
      advice: 'watch the next step; lower optimization.lr or raise algorithm.kl.coef if it goes on',
    };
  }
  return {
    code: 'collapse',
    severity: 'critical',
    message: `the policy is collapsing${settings.collapseSteps > 1 ? ` (${inRow} steps in a row)` : ''}: ${detail}`,
    advice:
      "onCollapse: 'rollback' restores the best checkpoint and halves the learning rate; or lower optimization.lr, raise algorithm.kl.coef",
  };
}

/** What makes a step look like a collapse (an entropy jump and a falling score or rising errors), or undefined. */
function collapseSigns(
  now: HealthSample,
  history: readonly HealthSample[],
  settings: HealthSettings,
  scoreKey: string | undefined,
): { before: number; signs: string[] } | undefined {
  const jump = entropyJump(now, history, settings);
  if (!jump) return undefined;
  const signs: string[] = [];
  const scoreBefore = recent(history, 'score', settings);
  if (
    now.score !== undefined &&
    scoreBefore !== undefined &&
    scoreBefore - now.score >= settings.scoreDrop * Math.abs(scoreBefore)
  ) {
    signs.push(
      `the training ${scoreKey?.replace(/^score\//, '') ?? 'reward'} fell from ${num(scoreBefore)} to ${num(now.score)}`,
    );
  }
  const errorsBefore = recent(history, 'toolErrors', settings);
  if (
    now.toolErrors !== undefined &&
    errorsBefore !== undefined &&
    now.toolErrors - errorsBefore >= settings.toolErrorRise
  ) {
    signs.push(`the tool error rate rose from ${pct(errorsBefore)} to ${pct(now.toolErrors)}`);
  }
  return signs.length ? { before: jump.before, signs } : undefined;
}

/** A held-out evaluation against the best one so far: a warning when well below it, a collapse when far below. */
export function evaluationWarnings(
  evaluation: { step: number; metric: string; value: number },
  best: { step: number; value: number } | undefined,
  settings: HealthSettings,
): HealthWarning[] {
  if (!best || best.step === evaluation.step) return [];
  const drop = best.value - evaluation.value;
  const scale = Math.abs(best.value);
  const collapse = drop >= Math.max(settings.heldOutCollapse * scale, 2 * settings.heldOutMin);
  if (!collapse && drop < Math.max(settings.heldOutDrop * scale, settings.heldOutMin)) return [];
  return [
    {
      code: collapse ? 'heldout_collapse' : 'heldout_drop',
      severity: collapse ? 'critical' : 'warn',
      message: `held-out ${evaluation.metric} ${num(evaluation.value)} at step ${evaluation.step}, down from the best ${num(best.value)} (step ${best.step})`,
      // Measured (trainer/bases/README.md, forecast): at a third of the rate the updates mostly
      // stopped breaking calls that the warm start wrote right; 4× the prompts per step broke fewer.
      advice: `the best weights are kept in checkpoints/best; lower optimization.lr (to a third, say) or raise rollout.promptsPerStep, so that smaller, less noisy updates leave alone what the warm start got right${collapse ? ", or set onCollapse: 'rollback' to go back to them automatically" : ''}`,
    },
  ];
}

/**
 * The evaluation after the last step, when the best held-out score of the run (this evaluation
 * included) is less than `heldOutMin` above the evaluation before RL: what RL gained, if anything,
 * is within the noise of the evaluation. Said once, at the end, with what to try; a held-out drop
 * is reported beside it by `evaluationWarnings`.
 */
export function noGainWarnings(
  evaluation: { step: number; metric: string; value: number },
  before: number | undefined,
  best: { step: number; value: number } | undefined,
  settings: HealthSettings,
): HealthWarning[] {
  if (before === undefined || evaluation.step === 0) return [];
  const top = best && best.value >= evaluation.value ? best : evaluation;
  // 0.50 − 0.45 is 0.0499… in floating point: a gain of exactly heldOutMin counts as one.
  if (top.value - before >= settings.heldOutMin - 1e-9) return [];
  const where =
    top.step === 0
      ? 'checkpoints/best holds the weights RL started from'
      : `the best, ${num(top.value)} at step ${top.step}, is within the noise of the evaluation (health.heldOutMin ${settings.heldOutMin})`;
  return [
    {
      code: 'no_gain',
      severity: 'warn',
      message: `RL gained nothing measurable in ${evaluation.step} steps: held-out ${evaluation.metric} ${num(before)} before RL, ${num(evaluation.value)} at the end; ${where}`,
      // Measured (trainer/bases/README.md, forecast): from demonstrations that reported the wrong
      // value three times in four, 40 RL steps went 45 % → 45 % (best 48 %), and 80 steps of 16
      // prompts reached 52 % at best; right demonstrations gave 95 %.
      advice:
        'read the wrong answers in the Trajectories panel. If the demonstrations taught the mistake, fix them and train the warm start again: RL seldom unlearns in a few dozen steps what most demonstrations taught. If the right answer is rare in the training groups (the zero-signal share stays high), raise algorithm.groupSize or rollout.temperature; otherwise train more steps',
    },
  ];
}

/** Whether the warnings report a collapse (what `onCollapse` acts on). */
export function collapseOf(warnings: readonly HealthWarning[]): HealthWarning | undefined {
  return warnings.find((w) => w.severity === 'critical');
}
