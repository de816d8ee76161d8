import { z } from 'zod';
import {
  Algorithm,
  HealthWarning,
  RunRecord,
  RunStatus,
  ToolErrorKind,
  TrajectoryRecord,
  TrajectorySet,
} from './runStore';
import { BranchCut, BranchEdit, type BranchSet } from './branches';

/**
 * Messages between the extension host and the Trajectories and Metrics webviews, both
 * directions, and the state each webview keeps across a window reload. The host builds the
 * same messages whether its data comes from a run directory on disk or, later, from a live
 * trainer; the webviews validate every message on receipt.
 */

/** What a panel shows about a run: enough to title it and to say whether it is still live. */
export const RunSummary = z.object({
  dir: z.string().min(1),
  id: z.string(),
  name: z.string(),
  status: RunStatus,
  algorithm: Algorithm,
  createdAt: z.string(),
  totalSteps: z.number().int().nonnegative(),
  lastStep: z.number().int().nonnegative().optional(),
  error: z.string().optional(),
  /** The run's task metric (see runMetric): charted and reported by this name. */
  metric: z.string().optional(),
  /** The best held-out evaluation so far and the checkpoint kept with it (RunRecord.best). */
  best: RunRecord.shape.best,
});
export type RunSummary = z.infer<typeof RunSummary>;

/**
 * A trajectory record read for its table row: everything but the per-token arrays, which are
 * most of its bytes and most of its validation time. The whole record is validated when its
 * detail opens.
 */
export const TrajectoryRecordWithoutTokens = TrajectoryRecord.omit({ tokens: true });
export type TrajectoryRecordWithoutTokens = z.infer<typeof TrajectoryRecordWithoutTokens>;

/** One trajectory as a table row: the numbers the table sorts and filters on, no token data. */
export const TrajectoryRow = z.object({
  step: z.number().int().nonnegative(),
  index: z.number().int().nonnegative(),
  group: z.number().int().nonnegative(),
  sample: z.number().int().nonnegative(),
  rowId: z.string(),
  prompt: z.string(),
  answer: z.string().optional(),
  reward: z.number(),
  outcome: z.number(),
  process: z.number(),
  advantage: z.number().optional(),
  turns: z.number().int().nonnegative(),
  toolCalls: z.number().int().nonnegative(),
  errors: z.number().int().nonnegative(),
  /** Names of the tools called (distinct, in order of first call); unparsed calls have none. */
  tools: z.array(z.string()),
  errorKinds: z.array(ToolErrorKind),
  responseLength: z.number().int().nonnegative(),
  totalLength: z.number().int().nonnegative(),
  finishReason: TrajectoryRecord.shape.finishReason,
});
export type TrajectoryRow = z.infer<typeof TrajectoryRow>;

/** Columns the trajectory table sorts by. */
export const TrajectoryColumn = z.enum([
  'index',
  'prompt',
  'reward',
  'outcome',
  'process',
  'advantage',
  'turns',
  'toolCalls',
  'errors',
  'responseLength',
  'finishReason',
]);
export type TrajectoryColumn = z.infer<typeof TrajectoryColumn>;

export const SortOrder = z.object({ column: TrajectoryColumn, direction: z.enum(['asc', 'desc']) });
export type SortOrder = z.infer<typeof SortOrder>;

export const TrajectoryFilters = z.object({
  /** Case-insensitive substring of the prompt, the answer or the row id. */
  text: z.string(),
  rewardMin: z.number().nullable(),
  rewardMax: z.number().nullable(),
  errors: z.enum(['any', 'with', 'without']),
  /** A tool name the trajectory called; empty for any. */
  tool: z.string(),
  /** A finish reason; empty for any. */
  finishReason: z.string(),
});
export type TrajectoryFilters = z.infer<typeof TrajectoryFilters>;

/**
 * What the Trajectories panel shows: the newest training step, following the run as it grows;
 * one training step pinned; or the held-out evaluation after a step (`{ evaluation: 0 }` is the
 * one before RL).
 */
export const StepSelection = z.union([
  z.literal('follow'),
  z.number().int().nonnegative(),
  z.strictObject({ evaluation: z.number().int().nonnegative() }),
]);
export type StepSelection = z.infer<typeof StepSelection>;

/** One set of a run's trajectories: a training step's rollouts, or the evaluation after a step. */
export interface ShownSet {
  set: TrajectorySet;
  step: number;
}

export const TokenColouring = z.enum(['advantage', 'logprob', 'entropy']);
export type TokenColouring = z.infer<typeof TokenColouring>;

/** A run named to the user: enough to say which one. */
export const RunRef = z.object({ dir: z.string().min(1), id: z.string(), name: z.string() });
export type RunRef = z.infer<typeof RunRef>;

/**
 * Which run a panel shows: it follows the newest run (a run started later takes its place), or
 * it is pinned to its own — and then `newer` names a run that started since, which it does not show.
 */
export const RunFollowingState = z.object({ followsNewest: z.boolean(), newer: RunRef.optional() });
export type RunFollowingState = z.infer<typeof RunFollowingState>;

/** Kept by the Trajectories webview (vscode.setState) and handed back to the host's serializer. */
export const TrajectoriesPanelState = z.object({
  runDir: z.string().min(1),
  /** Follows the newest run (panels saved before there was a choice were pinned to their run). */
  followsNewest: z.boolean().default(false),
  step: StepSelection,
  filters: TrajectoryFilters,
  sort: SortOrder,
  /** The trajectory whose detail is open, by its index in the step. */
  selected: z.number().int().nonnegative().nullable(),
  colourBy: TokenColouring,
});
export type TrajectoriesPanelState = z.infer<typeof TrajectoriesPanelState>;

/** A re-roll branch of the trajectory in the detail view (protocol/branches.ts), as its list shows it. */
export const BranchSummary = z.object({
  id: z.string(),
  branch: z.number().int().nonnegative(),
  createdAt: z.string(),
  cut: BranchCut,
  edits: z.array(BranchEdit),
  checkpoint: z.string(),
  temperature: z.number(),
  rewards: z.object({ outcome: z.number(), process: z.number(), total: z.number() }),
  finishReason: z.string(),
  firstDivergence: z.number().int().nonnegative().nullable(),
});
export type BranchSummary = z.infer<typeof BranchSummary>;

export const TrajectoriesToWebview = z.discriminatedUnion('type', [
  /** The run, its steps with trajectories and its recorded evaluations; sent on ready and whenever one changes. */
  z.object({
    type: z.literal('run'),
    run: RunSummary,
    steps: z.array(z.number().int().nonnegative()),
    evaluations: z.array(z.number().int().nonnegative()).default([]),
  }),
  /**
   * Rows of `step`. `reset` starts the step afresh (a new step is shown); otherwise the rows
   * are appended to what was sent before (trajectories still arriving, or a large step sent in
   * chunks). `selection` is what the host shows: following the newest step, or pinned.
   */
  z.object({
    type: z.literal('rows'),
    set: TrajectorySet.default('train'),
    step: z.number().int().nonnegative(),
    selection: StepSelection,
    reset: z.boolean(),
    rows: z.array(TrajectoryRow),
  }),
  /** No step has trajectories yet. */
  z.object({ type: z.literal('noSteps'), selection: StepSelection }),
  /**
   * One trajectory in full, tokens included: sent only when its detail opens. `imageUris` maps
   * each image's sha256 to a URI the webview may load (VS Code: `asWebviewUri` of the run
   * directory's `images/…` file, allowed by the page's `img-src ${cspSource}`).
   */
  z.object({
    type: z.literal('trajectory'),
    set: TrajectorySet.default('train'),
    record: TrajectoryRecord,
    imageUris: z.record(z.string(), z.string()).optional(),
    branches: z.array(BranchSummary).default([]),
  }),
  /** A re-roll saved branches of this trajectory: if its detail is open, ask for it again. */
  z.object({
    type: z.literal('branchesChanged'),
    step: z.number().int().nonnegative(),
    index: z.number().int().nonnegative(),
  }),
  z.object({ type: z.literal('notice'), level: z.enum(['info', 'error']), message: z.string() }),
  /** Whether the panel follows the newest run; sent on ready and whenever it or the newest run changes. */
  z.object({ type: z.literal('following'), following: RunFollowingState }),
  /**
   * Whether the workspace is trusted; sent on ready and when trust is granted. Untrusted
   * (VS Code's Restricted Mode), actions that run the workspace's code (Re-roll…) are not offered.
   */
  z.object({ type: z.literal('trust'), trusted: z.boolean() }),
]);
export type TrajectoriesToWebview = z.infer<typeof TrajectoriesToWebview>;

export const TrajectoriesToHost = z.discriminatedUnion('type', [
  /** The script runs (first time, or again after the panel was hidden): send everything. */
  z.object({ type: z.literal('ready') }),
  z.object({ type: z.literal('showStep'), step: StepSelection }),
  z.object({
    type: z.literal('openTrajectory'),
    set: TrajectorySet.default('train'),
    step: z.number().int().nonnegative(),
    index: z.number().int().nonnegative(),
  }),
  z.object({
    type: z.literal('openInDebugger'),
    step: z.number().int().nonnegative(),
    index: z.number().int().nonnegative(),
  }),
  /** "Re-roll…" on a training trajectory's detail, and a branch's "Compare" (the original and the branch side by side). */
  z.object({ type: z.literal('reroll'), step: z.number().int().nonnegative(), index: z.number().int().nonnegative() }),
  z.object({ type: z.literal('showBranch'), id: z.string(), branch: z.number().int().nonnegative() }),
  z.object({ type: z.literal('replayBranch'), id: z.string() }),
  /** Follow the newest run (showing it now), or stay on this one. */
  z.object({ type: z.literal('followNewestRun'), follow: z.boolean() }),
]);
export type TrajectoriesToHost = z.infer<typeof TrajectoriesToHost>;

/**
 * Metrics travel as columns (one array per metric, aligned with `steps`): a 10,000-step run
 * is a few arrays of numbers instead of 10,000 objects, cheap to post and to validate, and the
 * shape charts want.
 */
export const MetricsColumns = z.object({
  steps: z.array(z.number().int().nonnegative()),
  kinds: z.array(z.enum(['train', 'eval', 'sft'])),
  /** Why the update of that row's step was skipped (non-finite loss or gradient), or null. */
  skipped: z.array(z.string().nullable()),
  /** Metric name → one value per row; null where the metric was not recorded or not finite. */
  values: z.record(z.string(), z.array(z.number().nullable())),
  /** What each row's health checks found (MetricsRecord.warnings), null where nothing; absent when no row has any. */
  warnings: z.array(z.array(HealthWarning).nullable()).optional(),
});
export type MetricsColumns = z.infer<typeof MetricsColumns>;

export const BandMode = z.enum(['minmax', 'std']);
export type BandMode = z.infer<typeof BandMode>;

/** Kept by the Metrics webview and handed back to the host's serializer. */
export const MetricsPanelState = z.object({
  /** Runs shown, the first one is the panel's own run; the rest are overlaid for comparison. */
  runDirs: z.array(z.string().min(1)).min(1),
  /** The panel's own run follows the newest run (panels saved before there was a choice were pinned). */
  followsNewest: z.boolean().default(false),
  /** EMA weight in [0, 1); 0 shows the raw values. */
  smoothing: z.number().min(0).max(0.99),
  band: BandMode,
});
export type MetricsPanelState = z.infer<typeof MetricsPanelState>;

export const MetricsToWebview = z.discriminatedUnion('type', [
  /** Runs of the workspace that can be overlaid, and the ones shown. */
  z.object({ type: z.literal('runs'), available: z.array(RunSummary), shown: z.array(z.string()) }),
  /** A shown run's summary changed (status, last step). */
  z.object({ type: z.literal('run'), run: RunSummary }),
  /** Metrics of one run: all of them when `reset`, else rows appended since the last message. */
  z.object({ type: z.literal('metrics'), runDir: z.string(), reset: z.boolean(), columns: MetricsColumns }),
  z.object({ type: z.literal('notice'), level: z.enum(['info', 'error']), message: z.string() }),
  /** Whether the panel's own run follows the newest run (see TrajectoriesToWebview). */
  z.object({ type: z.literal('following'), following: RunFollowingState }),
]);
export type MetricsToWebview = z.infer<typeof MetricsToWebview>;

export const MetricsToHost = z.discriminatedUnion('type', [
  /** The script runs (first time, or again after the panel was hidden): send everything. */
  z.object({ type: z.literal('ready') }),
  z.object({ type: z.literal('showRuns'), runDirs: z.array(z.string().min(1)).min(1) }),
  z.object({ type: z.literal('exportCsv'), fileName: z.string().min(1), csv: z.string() }),
  z.object({ type: z.literal('followNewestRun'), follow: z.boolean() }),
]);
export type MetricsToHost = z.infer<typeof MetricsToHost>;

/**
 * Arguments of the command `rolloutStudio.openRunInDebugger` (contributed by the debugger):
 * open `runDirectory` in replay at trajectory `trajectory` of step `step`.
 */
export const OpenRunInDebuggerArgs = z.object({
  runDirectory: z.string().min(1),
  step: z.number().int().nonnegative(),
  trajectory: z.number().int().nonnegative(),
});
export type OpenRunInDebuggerArgs = z.infer<typeof OpenRunInDebuggerArgs>;

/** What a selection shows, given the training `steps` (ascending): the newest step when following. */
export function resolveStepSelection(selection: StepSelection, steps: readonly number[]): ShownSet | undefined {
  if (selection === 'follow') return steps.length ? { set: 'train', step: steps[steps.length - 1] } : undefined;
  if (typeof selection === 'number') return { set: 'train', step: selection };
  return { set: 'eval', step: selection.evaluation };
}

/** The branches of a trajectory, one summary per branch, oldest re-roll first. */
export function branchSummaries(sets: readonly BranchSet[]): BranchSummary[] {
  return sets.flatMap((set) =>
    set.branches.map((b, k) => ({
      id: set.id,
      branch: k,
      createdAt: set.createdAt,
      cut: set.cut,
      edits: set.edits,
      checkpoint: set.checkpoint.spec,
      temperature: set.sampling.temperature,
      rewards: {
        outcome: b.trajectory.rewards.outcome,
        process: b.trajectory.rewards.process,
        total: b.trajectory.rewards.total,
      },
      finishReason: b.trajectory.finishReason,
      firstDivergence: b.firstDivergence,
    })),
  );
}
