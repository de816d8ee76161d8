import * as path from 'node:path';
import { createDevice } from '../../../foundations/engine/device/device';
import type { ExecutionProviderName } from '../../../foundations/engine/runtime/providers';
import { loadJsonlDataset } from '../../../foundations/data/dataset';
import { ModelPolicy } from '../../../foundations/models/generation/generationSession';
import { ModelRuntime } from '../../../foundations/models/runtime';
import { scoreTrajectories, type BatchRewards } from '../../rewards/score';
import { agentRollouts, agentRunner } from '../run/agentRollouts';
import { AgentLoop } from '../../rollout/agentLoop';
import type { GatewayRollout } from '../../rollout/gateway/gatewayRollout';
import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
import type { Trajectory } from '../../rollout/trajectory';
import { ToolSet } from '../../../foundations/tools/toolSet';
import {
  ConfigError,
  placeConfigRewards,
  placeConfigTools,
  type LoadedConfig,
  type PlacedRewards,
  type PlacedTools,
} from '../config/trainingConfig';
import { agentLoopOptions, evaluationSampling, providerFor, rolloutImagesFor } from '../config/configOptions';
import { rolloutMetrics } from '../step/rolloutMetrics';
import { downloadProgressReporter } from '../config/modelSource';
import { loadCheckpointModel } from '../checkpoints/checkpointModel';
import { evalCassette, type EvalCassette } from '../run/runCassette';
import { resolveModelPath } from '../../../foundations/models/hub/index';
import type { TrainingEvent } from '../../../contract/protocol';
import { scoreKey, taskMetric } from '../step/taskMetric';
import { McpServers } from '../../../foundations/mcp/servers';
import { ChatTemplateError } from '../../../foundations/models/modelErrors';

export interface CheckpointEvaluation {
  rows: number;
  /** The task metric's name (see taskMetric.ts) and its mean over the rows. */
  metric: string | undefined;
  score: number | undefined;
  reward: number;
  toolCallsPerTrajectory: number;
  metrics: Record<string, number>;
}

/** What `rollout-studio eval`'s flags set (each defaults to the config's). */
interface EvaluateCheckpointOptions {
  device?: ExecutionProviderName;
  data?: string;
  samples?: number;
  temperature?: number;
  log?: (line: string) => void;
  events?: (event: TrainingEvent) => void;
  toolCassette?: EvalCassette;
}

/**
 * `rollout-studio eval`: roll out the evaluation rows with a checkpoint (a full model folder or
 * a LoRA adapter folder over the config's base model) and score them with the config's rewards.
 */
export async function evaluateCheckpoint(
  loaded: LoadedConfig,
  checkpoint: string,
  options: EvaluateCheckpointOptions = {},
): Promise<CheckpointEvaluation> {
  const c = loaded.config;
  const report = {
    ...(options.log ? { log: options.log } : {}),
    ...(options.events ? { events: options.events } : {}),
  };
  // The checkpoint may be a Hub repo too (a fine-tuned model or a PEFT adapter someone published).
  const checkpointDir = await resolveModelPath(checkpoint, {
    baseDir: process.cwd(),
    field: '--checkpoint',
    onProgress: downloadProgressReporter(report),
  });
  const device = createDevice(providerFor(c, options.device));
  let model: ModelRuntime | undefined;
  let mcp: McpServers | undefined;
  let placed: PlacedTools | undefined;
  let placedRewards: PlacedRewards | undefined;
  let closeLoop: (() => Promise<void>) | undefined;
  try {
    model = await loadCheckpointModel(loaded, checkpointDir, device, report);
    const template = model.folder.chatTemplate;
    if (!template)
      throw new ChatTemplateError(`${model.folder.dir}: the tokenizer has no chat template; agents need one`);
    const rows = rowsToEvaluate(loaded, options);
    mcp = await McpServers.open(c.mcpServers, { baseDir: path.dirname(loaded.file) });
    placed = await placeConfigTools(loaded);
    const tools = new ToolSet([...placed.tools, ...mcp.tools]);
    const loop = evaluationLoop(loaded, model, template, tools, options);
    closeLoop = 'close' in loop ? () => loop.close() : undefined;
    await loop.prepareRows(rows);
    loop.checkRows(rows);
    const trajectories = await loop.run(
      rows.map((row, i) => ({ row, group: i, sample: 0 })),
      { seed: c.seed },
    );
    // In the reward worker, as a training run scores: a reward that never returns is ended by its deadline.
    placedRewards = await placeConfigRewards(loaded);
    const rewards = await scoreTrajectories(trajectories, placedRewards.rewards, tools);
    return evaluationSummary(loaded, rows.length, trajectories, rewards);
  } finally {
    await placedRewards?.close();
    await closeLoop?.();
    await placed?.close();
    await mcp?.close();
    model?.close();
    await device.close();
  }
}

/** The loop that rolls the rows out: the config's own agent through the gateway when it names one, else the built-in loop. */
function evaluationLoop(
  loaded: LoadedConfig,
  model: ModelRuntime,
  template: ChatTemplate,
  tools: ToolSet,
  options: EvaluateCheckpointOptions,
): AgentLoop | GatewayRollout {
  const c = loaded.config;
  const policy = new ModelPolicy(model);
  const sampling = evaluationSampling(c, options.temperature);
  // Images in rows, tool results and agent requests, prepared as the training run prepares them.
  const images = rolloutImagesFor(model, c);
  if (c.agent) {
    const agent = agentRunner(loaded, options.log ?? (() => {}));
    return agentRollouts(loaded, { policy, template, images, agent, sampling });
  }
  const cassette = evalCassette(options.toolCassette);
  return new AgentLoop({
    ...agentLoopOptions(c, { policy, template, tools }),
    images,
    sampling,
    ...(cassette ? { toolInterceptor: cassette } : {}),
  });
}

/** The rows to roll out: `--data`'s, else the config's evaluation data, the first `--samples` (or `evaluation.samples`) of them. */
function rowsToEvaluate(loaded: LoadedConfig, options: EvaluateCheckpointOptions) {
  const c = loaded.config;
  const file = options.data ?? c.evaluation.data ?? c.data.eval;
  if (!file)
    throw new ConfigError(`${loaded.file}: no evaluation data: set data.eval or evaluation.data, or pass --data`);
  const data = loadJsonlDataset(options.data ? path.resolve(file) : loaded.resolve(file), { fields: c.data.fields });
  return data.rows.slice(0, options.samples ?? c.evaluation.samples ?? data.rows.length);
}

/** The rollout metrics of the evaluated rows, with the task metric's score and the mean reward picked out. */
function evaluationSummary(
  loaded: LoadedConfig,
  rows: number,
  trajectories: readonly Trajectory[],
  rewards: BatchRewards,
): CheckpointEvaluation {
  const metric = taskMetric(loaded.config);
  const metrics = rolloutMetrics(trajectories, rewards, metric);
  return {
    rows,
    metric,
    score: metric === undefined ? undefined : metrics[scoreKey(metric)],
    reward: metrics['reward/mean'],
    toolCallsPerTrajectory: metrics['tools/calls_per_trajectory'],
    metrics,
  };
}
