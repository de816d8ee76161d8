import type { Device } from '../../../foundations/engine/device/device';
import type { Dataset } from '../../../foundations/data/dataset';
import type { DatasetRow } from '../../../foundations/data/row';
import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
import type { ModelRuntime } from '../../../foundations/models/runtime';
import type { McpServers } from '../../../foundations/mcp/servers';
import type { ProcessRewardNormalizer } from '../../rewards/processRewardScale';
import type { Critic } from '../../rl/critic';
import type { PolicyTrainer } from '../../rl/policyTrainer';
import type { AgentLoop } from '../../rollout/agentLoop';
import type { GatewayRollout } from '../../rollout/gateway/gatewayRollout';
import type { RolloutImages } from '../../rollout/images';
import type { RunStoreWriter } from '../../../contract/runstore/writer';
import type { ToolSet } from '../../../foundations/tools/toolSet';
import type { ToolCassette } from '../../../foundations/tools/cassette';
import type { Random } from '../../../foundations/models/random';
import type { DataCursor } from '../step/dataCursor';
import type { HealthSample } from '../health/health';
import type { LiveSnapshot } from './liveSnapshot';
import type { RunControl } from './runControl';
import type { RunReporter } from './runReporter';
import type { LoadedConfig, PlacedRewards, PlacedTools, TrainingConfig } from '../config/trainingConfig';

/**
 * Everything a training run has loaded and owns, handed to each stage (warm start, evaluation,
 * a training step) so that each can be a plain function of what it uses.
 */
export interface RunParts {
  loaded: LoadedConfig;
  config: TrainingConfig;
  /** RL steps this run trains (the config's, or a command-line override). */
  totalSteps: number;
  device: Device;
  /** The model folder: `model.path` next to the config, or a Hub snapshot in the Hugging Face cache. */
  modelDir: string;
  model: ModelRuntime;
  template: ChatTemplate;
  tools: ToolSet;
  /** The config's MCP servers (their tools are in `tools`). */
  mcp: McpServers;
  /** The config's own tools as placed for the run (in a tool worker, usually; they are in `tools`). */
  placed: PlacedTools;
  /** The config's rewards as placed for the run (in a reward worker, usually; `config.rewards` is them). */
  placedRewards: PlacedRewards;
  /** Reads and prepares the images of rows, demonstrations and tool results (vision-language models). */
  images: RolloutImages;
  /** Training rollouts (the config's sampling, the debugger's hooks): the built-in loop, or the user's own agent through the gateway. */
  loop: Rollouts;
  /** Evaluation rollouts (greedy by default, no debugger hooks). */
  evalLoop: Rollouts;
  train: Dataset;
  evalData: Dataset | undefined;
  control: RunControl;
  report: RunReporter;
  /** The rollout in progress as the debugger sees it (set only while a step rolls out). */
  live: { snapshot: LiveSnapshot | undefined };
  /** Recorded tool results (toolCassette): the interceptor both loops use, and whether it records into the run store. */
  cassette?: { cassette: ToolCassette; record: boolean };
}

/** What a run rolls out with: the built-in agent loop over the config's tools, or the user's agent (rollout/gateway). */
export interface Rollouts {
  run: AgentLoop['run'] & GatewayRollout['run'];
  prepareRows(rows: readonly DatasetRow[]): Promise<void>;
  checkRows(rows: readonly DatasetRow[]): void;
  releasePolicy(): Promise<void>;
  close?(): Promise<void>;
}

/** Where a run stands: what a checkpoint saves and a resume restores. */
export interface RunPosition {
  writer: RunStoreWriter;
  cursor: DataCursor;
  random: Random;
  /** Steps in a row whose every update was skipped as non-finite. */
  consecutiveNonFinite: number;
  /** The running statistic of `rewards.combine: 'agent-r1'` (saved with each checkpoint). */
  processNormalizer: ProcessRewardNormalizer;
  /** The policy's learning-rate multiplier: 1, halved by each `onCollapse: 'rollback'` (saved with each checkpoint). */
  lrScale: number;
  /** The last few training steps as the health checks' trends see them (rebuilt from metrics.jsonl on resume). */
  health: HealthSample[];
}

/** What learns in a run: the policy, and PPO's separate critic when it has one. */
export interface Learners {
  policy: PolicyTrainer;
  critic?: Critic;
}

/** A run under way as its stages receive it: what it loaded and owns, where it stands, what learns. */
export interface RunContext {
  parts: RunParts;
  position: RunPosition;
  learners: Learners;
}

/** A run under way at one step: what every stage of the step (trainingStep.ts) receives. */
export interface StepContext extends RunContext {
  step: number;
}

/** A seed for one purpose (`salt`) at one step, so that a resumed run samples what the uninterrupted one did. */
export function seedFor(seed: number, step: number, salt: number): number {
  return (seed * 1_000_003 + step * 7_919 + salt) % Number.MAX_SAFE_INTEGER;
}
