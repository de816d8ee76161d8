import { z } from 'zod';
import { EXPORT_PATH_PATTERN } from './names';
import { ToolErrorKind } from './runStore';
import { PROTOCOL_VERSION } from './protocolVersion';

/**
 * Authoring: running one tool, or one reward, from the editor (the code lenses Run Tool…,
 * Debug Tool and Evaluate on Samples). The extension never loads user code itself; it starts
 * `rollout-studio run-tool` / `eval-reward` and these are the messages that come back.
 */

const v = { protocol: z.literal(PROTOCOL_VERSION) };

export { EXPORT_PATH_PATTERN, TOOL_NAME_PATTERN, TOOL_NAME_RULE } from './names';

export const ExportPath = z
  .string()
  .regex(EXPORT_PATH_PATTERN, 'expected an export path such as "search", "tools[0]" or "rewards.outcome[0]"');

/** Which tool of a module: by the name the policy calls it, by its class, or by where it is exported. */
export const ToolSelector = z.discriminatedUnion('by', [
  z.object({ by: z.literal('name'), name: z.string().min(1) }),
  z.object({ by: z.literal('class'), name: z.string().regex(/^[A-Za-z_$][\w$]*$/, 'expected a class name') }),
  z.object({ by: z.literal('export'), path: ExportPath }),
  /** A tool of an MCP server the module declares (a training config's `mcpServers`), by the name the policy calls it. */
  z.object({ by: z.literal('mcp'), server: z.string().min(1), tool: z.string().min(1) }),
]);
export type ToolSelector = z.infer<typeof ToolSelector>;

/** What the editor needs to know of a tool to ask for its arguments. */
export const ToolInfo = z.object({
  name: z.string(),
  description: z.string(),
  /** The constructor's name (`KnowledgeBaseSearch`, `DefinedTool` for defineTool). */
  className: z.string(),
  /** The arguments as JSON Schema (what the model is shown). */
  parameters: z.record(z.string(), z.unknown()),
  timeoutMs: z.number().positive(),
});
export type ToolInfo = z.infer<typeof ToolInfo>;

/** One reason arguments fail a tool's schema: the field (`[]` for the whole object) and what was expected. */
export const ArgumentIssue = z.object({ path: z.array(z.union([z.string(), z.number()])), message: z.string() });
export type ArgumentIssue = z.infer<typeof ArgumentIssue>;

export const ArgumentCheck = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true) }),
  z.object({
    ok: z.literal(false),
    /** One line naming every bad field: `query: Too small: expected string to have >=1 characters`. */
    message: z.string(),
    issues: z.array(ArgumentIssue),
  }),
]);
export type ArgumentCheck = z.infer<typeof ArgumentCheck>;

/** One run of a tool, as the runner saw it. */
export const ToolRunReport = z.object({
  tool: ToolInfo,
  /** The validated arguments (or, when they failed the schema, what was given). */
  arguments: z.unknown(),
  /** The observation text the policy would see, when the call succeeded. */
  observation: z.string().optional(),
  /** The result's `data` (for the program, never shown to the policy), as JSON. */
  data: z.unknown().optional(),
  error: z.object({ kind: ToolErrorKind, message: z.string() }).optional(),
  /** With error kind `invalid_arguments`: each bad field. */
  issues: z.array(ArgumentIssue).optional(),
  latencyMs: z.number().nonnegative(),
  /** What the tool logged (`info: …`). */
  logs: z.array(z.string()),
});
export type ToolRunReport = z.infer<typeof ToolRunReport>;

/** What kind of reward an export is: an OutcomeReward, a ProcessReward, a RewardConfig, or a plain `(trajectory, row) => number`. */
export const RewardKind = z.enum(['outcome', 'process', 'config', 'function']);
export type RewardKind = z.infer<typeof RewardKind>;

/**
 * Where an evaluated trajectory came from. `gold` and `unanswered` are reference trajectories:
 * a dataset row's prompt with a stand-in final turn that gives the row's gold answer in
 * `<answer>` tags, or no answer — a reward should tell the two apart. `recorded`: a trajectory a
 * run wrote to its run store, with its dataset row.
 */
export const SampleSource = z.enum(['gold', 'unanswered', 'recorded']);
export type SampleSource = z.infer<typeof SampleSource>;

export const RewardSample = z.object({
  source: SampleSource,
  /** For the reader: "train.jsonl:3 (row q-0003)", "run-x step 8 #5". */
  label: z.string(),
  rowId: z.string(),
  /** The final answer the trajectory gives (what the answer extractor finds), if any. */
  answer: z.string().optional(),
  /** Each score by name: an outcome reward's value; a config's `outcome`, `process`, `total` and components; a process reward's sum over calls. */
  scores: z.record(z.string(), z.number()),
  /** Process rewards: each call's score (null: no opinion on that call). */
  calls: z
    .array(
      z.object({
        turn: z.number().int().nonnegative(),
        index: z.number().int().nonnegative(),
        name: z.string().optional(),
        score: z.number().nullable(),
      }),
    )
    .optional(),
  /** Recorded trajectories: the rewards the run itself recorded, to compare with. */
  recorded: z.record(z.string(), z.number()).optional(),
  /** The reward threw (or returned a non-number) on this sample. */
  error: z.string().optional(),
});
export type RewardSample = z.infer<typeof RewardSample>;

/** One score over the samples of one source. */
export const ScoreSummary = z.object({
  source: SampleSource,
  score: z.string(),
  count: z.number().int().positive(),
  mean: z.number(),
  min: z.number(),
  max: z.number(),
});
export type ScoreSummary = z.infer<typeof ScoreSummary>;

export const RewardEvaluation = z.object({
  file: z.string(),
  export: ExportPath,
  kind: RewardKind,
  /** The names of the rewards evaluated (a config: its outcome and process rewards). */
  rewards: z.array(z.string()),
  data: z.object({ file: z.string(), rows: z.number().int().nonnegative() }).optional(),
  run: z.object({ dir: z.string(), steps: z.array(z.number().int().nonnegative()) }).optional(),
  samples: z.array(RewardSample),
  summary: z.array(ScoreSummary),
  /** What was skipped and why ("4 recorded trajectories: their rows are not in data/train.jsonl"). */
  notes: z.array(z.string()),
});
export type RewardEvaluation = z.infer<typeof RewardEvaluation>;

/** Messages `run-tool --ipc` and `eval-reward --ipc` send to the extension (part of TrainerMessage). */
export const AuthoringEvent = z.discriminatedUnion('type', [
  /** `run-tool --session`: the tool is loaded; the session answers `tool.check` and `tool.run` until disconnected. */
  z.object({
    ...v,
    type: z.literal('tool.ready'),
    tool: ToolInfo,
    file: z.string(),
    inspectorUrl: z.string().optional(),
  }),
  z.object({ ...v, type: z.literal('tool.checked'), id: z.number().int().nonnegative(), check: ArgumentCheck }),
  /** `id` answers a session's `tool.run`; a one-shot run has none. */
  z.object({
    ...v,
    type: z.literal('tool.result'),
    id: z.number().int().nonnegative().optional(),
    report: ToolRunReport,
  }),
  z.object({ ...v, type: z.literal('reward.evaluation'), evaluation: RewardEvaluation }),
]);
export type AuthoringEvent = z.infer<typeof AuthoringEvent>;

/** What the extension sends to a `run-tool --session` process. */
export const ToolSessionRequest = z.discriminatedUnion('type', [
  /** Check arguments against the tool's schema without running it (as the user types). */
  z.object({ ...v, type: z.literal('tool.check'), id: z.number().int().nonnegative(), args: z.unknown() }),
  z.object({ ...v, type: z.literal('tool.run'), id: z.number().int().nonnegative(), args: z.unknown() }),
]);
export type ToolSessionRequest = z.infer<typeof ToolSessionRequest>;
