import * as path from 'node:path';
import { createDevice, type Device } from '../../../foundations/engine/device/device';
import type { ExecutionProviderName } from '../../../foundations/engine/runtime/providers';
import { loadJsonlDataset } from '../../../foundations/data/dataset';
import { ModelPolicy } from '../../../foundations/models/generation/generationSession';
import { ModelRuntime } from '../../../foundations/models/runtime';
import { quantizationOf } from '../../../foundations/models/quantized/blockQuantize';
import { McpServers } from '../../../foundations/mcp/servers';
import { AgentLoop } from '../../rollout/agentLoop';
import { agentRollouts, agentRunner } from './agentRollouts';
import { ToolSet } from '../../../foundations/tools/toolSet';
import {
  agentLoopOptions,
  evaluationSampling,
  rolloutImagesFor,
  rolloutSampling,
  sharedCritic,
} from '../config/configOptions';
import { rolloutHooks } from './rolloutHooks';
import { runCassette, type CassetteOverrides } from './runCassette';
import { resolveConfigModel } from '../config/modelSource';
import type { RunControl } from './runControl';
import type { RunParts } from './runParts';
import type { RunReporter } from './runReporter';
import {
  placeConfigRewards,
  placeConfigTools,
  type LoadedConfig,
  type PlacedRewards,
  type PlacedTools,
} from '../config/trainingConfig';
import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
import { ChatTemplateError } from '../../../foundations/models/modelErrors';
import { definedFields } from '../../../contract/definedFields';

/** How a run loads: where its tensors run, how long it is, and the run's control and reporting. */
interface LoadRunSettings {
  provider: ExecutionProviderName;
  totalSteps: number;
  inProcessDevice?: boolean;
  control: RunControl;
  report: RunReporter;
  toolCassette?: CassetteOverrides;
}

/** What loadRunParts has opened so far, to close again if a later part fails. */
interface OpenedParts {
  device?: Device;
  model?: ModelRuntime;
  mcp?: McpServers;
  placed?: PlacedTools;
  placedRewards?: PlacedRewards;
}

/**
 * Load what a run needs, in the order a failure is cheapest to report: the device, the model
 * (downloaded from the Hub when the config names a repo), its chat template, the MCP servers'
 * tools, the datasets (each row checked against the length budget). Whatever was opened before
 * a failure is closed again (`closeRunParts`), so a setup error never leaves a process behind.
 */
export async function loadRunParts(loaded: LoadedConfig, settings: LoadRunSettings): Promise<RunParts> {
  const c = loaded.config;
  const opened: OpenedParts = {};
  try {
    opened.device = createDevice(settings.provider, { worker: !settings.inProcessDevice });
    const { modelDir, model, template } = await openModel(loaded, settings, opened.device, opened);
    opened.mcp = await McpServers.open(c.mcpServers, { baseDir: path.dirname(loaded.file), log: settings.report.log });
    opened.placed = await placeConfigTools(loaded);
    opened.placedRewards = await placeConfigRewards(loaded);
    const tools = new ToolSet([...opened.placed.tools, ...opened.mcp.tools]);
    const train = loadJsonlDataset(loaded.resolve(c.data.train), { fields: c.data.fields });
    const evalFile = c.evaluation.data ?? c.data.eval;
    const evalData = evalFile ? loadJsonlDataset(loaded.resolve(evalFile), { fields: c.data.fields }) : undefined;
    const live: RunParts['live'] = { snapshot: undefined };
    const { images, cassette, loop, evalLoop } = runLoops(loaded, settings, { model, template, tools, live });
    for (const rows of [train.rows, ...(evalData ? [evalData.rows] : [])]) {
      await loop.prepareRows(rows);
      loop.checkRows(rows);
    }
    const { device, mcp, placed, placedRewards } = opened;
    return {
      loaded,
      // The rewards as placed (in a reward worker, usually): the same names and weights, scored there.
      config: { ...c, rewards: placedRewards.rewards },
      totalSteps: settings.totalSteps,
      device,
      modelDir,
      model,
      template,
      tools,
      mcp,
      placed,
      placedRewards,
      images,
      loop,
      evalLoop,
      train,
      evalData,
      control: settings.control,
      report: settings.report,
      live,
      ...definedFields({ cassette }),
    };
  } catch (error) {
    await closeOpened(opened);
    throw error;
  }
}

/**
 * The model (downloaded from the Hub when the config names a repo), loaded onto the device and
 * noted in `opened` before its chat template is checked, so that a model without one is closed again.
 */
async function openModel(
  loaded: LoadedConfig,
  settings: LoadRunSettings,
  device: Device,
  opened: OpenedParts,
): Promise<{ modelDir: string; model: ModelRuntime; template: ChatTemplate }> {
  const c = loaded.config;
  const modelDir = await resolveConfigModel(loaded, {
    events: (e) => settings.report.emit(e),
    log: settings.report.log,
    signal: settings.control.signal,
  });
  settings.report.progress(0, 'load', 0, 1);
  const model = await ModelRuntime.load(device, modelDir, {
    lora: c.model.lora === false ? undefined : c.model.lora,
    valueHead: sharedCritic(c),
    seed: c.seed,
    trainVision: c.model.trainVision,
    quantize: c.model.quantize === undefined ? undefined : quantizationOf(c.model.quantize),
  });
  opened.model = model;
  const template = model.folder.chatTemplate;
  if (!template) throw new ChatTemplateError(`${modelDir}: the tokenizer has no chat template; agents need one`);
  return { modelDir, model, template };
}

/** The training loop and the evaluation loop: the same model, tools, images and cassette, each with its own sampling. */
function runLoops(
  loaded: LoadedConfig,
  settings: LoadRunSettings,
  { model, template, tools, live }: Pick<RunParts, 'model' | 'template' | 'tools' | 'live'>,
): Pick<RunParts, 'images' | 'cassette' | 'loop' | 'evalLoop'> {
  const c = loaded.config;
  const images = rolloutImagesFor(model, c);
  // Images in rows and tool results (vision-language models; an error naming the row or call for text-only ones).
  // Recorded tool results, answering and/or recording the calls of both loops (runCassette.ts).
  const cassette = runCassette(loaded, settings.toolCassette);
  if (cassette)
    settings.report.log(
      `tool calls: ${[cassette.record ? 'recorded to cassette.jsonl' : '', cassette.cassette.replaying ? `replayed from ${cassette.cassette.replaying}` : ''].filter(Boolean).join(', ')}`,
    );
  const loopParts = {
    ...agentLoopOptions(c, { policy: new ModelPolicy(model), template, tools }),
    images,
    ...definedFields({ toolInterceptor: cassette?.cassette }),
  };
  const observer = rolloutHooks(settings.control, settings.report, live);
  if (c.agent !== undefined) {
    // The user's own agent: each rollout one session of it, served by the policy (rollout/gateway).
    const gateway = { policy: loopParts.policy, template, images, agent: agentRunner(loaded, settings.report.log) };
    const loop = agentRollouts(loaded, { ...gateway, sampling: rolloutSampling(c), observer });
    const evalLoop = agentRollouts(loaded, { ...gateway, sampling: evaluationSampling(c) });
    return { images, loop, evalLoop, ...definedFields({ cassette }) };
  }
  const loop = new AgentLoop({ ...loopParts, sampling: rolloutSampling(c), observer });
  const evalLoop = new AgentLoop({ ...loopParts, sampling: evaluationSampling(c) });
  return { images, loop, evalLoop, ...definedFields({ cassette }) };
}

/** Close what loadRunParts opened: the tool worker, the MCP servers, the model, the device (its worker thread). */
export async function closeRunParts(
  parts: Pick<RunParts, 'device' | 'model' | 'mcp' | 'placed'> & Partial<Pick<RunParts, 'loop' | 'evalLoop'>>,
): Promise<void> {
  // A gateway's endpoint and the agent's host process (rollout/gateway).
  for (const loop of [parts.loop, parts.evalLoop]) await loop?.close?.().catch(() => undefined);
  await closeOpened(parts);
}

async function closeOpened(opened: OpenedParts): Promise<void> {
  await opened.placed?.close().catch(() => undefined);
  await opened.placedRewards?.close().catch(() => undefined);
  await opened.mcp?.close().catch(() => undefined);
  opened.model?.close();
  await opened.device?.close().catch(() => undefined);
}
