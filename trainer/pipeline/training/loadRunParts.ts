import * as path from 'node:path';
import { createDevice, type Device } from '../../foundations/engine/device/device';
import type { ExecutionProviderName } from '../../foundations/engine/runtime/providers';
import { loadJsonlDataset } from '../../foundations/data/dataset';
import { ModelPolicy } from '../../foundations/models/generation/generationSession';
import { ModelRuntime } from '../../foundations/models/runtime';
import { McpServers } from '../../foundations/mcp/servers';
import { AgentLoop } from '../rollout/agentLoop';
import { ToolSet } from '../../foundations/tools/toolSet';
import { agentLoopOptions, evaluationSampling, rolloutImagesFor, rolloutSampling, sharedCritic } from './configOptions';
import { rolloutHooks } from './rolloutHooks';
import { runCassette, type CassetteOverrides } from './runCassette';
import { resolveConfigModel } from './modelSource';
import type { RunControl } from './runControl';
import type { RunParts } from './runParts';
import type { RunReporter } from './runReporter';
import { placeConfigTools, type LoadedConfig, type PlacedTools } from './trainingConfig';
import { ChatTemplateError } from '../../foundations/models/modelErrors';

/**
 * Load what a run needs, in the order a failure is cheapest to report: the device, the model
 * (downloaded from the Hub when the config names a repo), its chat template, the MCP servers'
 * tools, the datasets (each row checked against the length budget). Whatever was opened before
 * a failure is closed again (`closeRunParts`), so a setup error never leaves a process behind.
 */
export async function loadRunParts(
  loaded: LoadedConfig,
  settings: {
    provider: ExecutionProviderName;
    totalSteps: number;
    inProcessDevice?: boolean;
    control: RunControl;
    report: RunReporter;
    toolCassette?: CassetteOverrides;
  },
): Promise<RunParts> {
  const c = loaded.config;
  const opened: { device?: Device; model?: ModelRuntime; mcp?: McpServers; placed?: PlacedTools } = {};
  try {
    opened.device = createDevice(settings.provider, { worker: !settings.inProcessDevice });
    const modelDir = await resolveConfigModel(loaded, {
      events: (e) => settings.report.emit(e),
      log: settings.report.log,
      signal: settings.control.signal,
    });
    settings.report.progress(0, 'load', 0, 1);
    opened.model = await ModelRuntime.load(opened.device, modelDir, {
      lora: c.model.lora === false ? undefined : c.model.lora,
      valueHead: sharedCritic(c),
      seed: c.seed,
      trainVision: c.model.trainVision,
    });
    const template = opened.model.folder.chatTemplate;
    if (!template) throw new ChatTemplateError(`${modelDir}: the tokenizer has no chat template; agents need one`);
    opened.mcp = await McpServers.open(c.mcpServers, { baseDir: path.dirname(loaded.file), log: settings.report.log });
    opened.placed = await placeConfigTools(loaded);
    const tools = new ToolSet([...opened.placed.tools, ...opened.mcp.tools]);
    const train = loadJsonlDataset(loaded.resolve(c.data.train), { fields: c.data.fields });
    const evalFile = c.evaluation.data ?? c.data.eval;
    const evalData = evalFile ? loadJsonlDataset(loaded.resolve(evalFile), { fields: c.data.fields }) : undefined;
    const live: RunParts['live'] = { snapshot: undefined };
    const images = rolloutImagesFor(opened.model, c);
    // Images in rows and tool results (vision-language models; an error naming the row or call for text-only ones).
    // Recorded tool results, answering and/or recording the calls of both loops (runCassette.ts).
    const cassette = runCassette(loaded, settings.toolCassette);
    if (cassette)
      settings.report.log(
        `tool calls: ${[cassette.record ? 'recorded to cassette.jsonl' : '', cassette.cassette.replaying ? `replayed from ${cassette.cassette.replaying}` : ''].filter(Boolean).join(', ')}`,
      );
    const loopParts = {
      ...agentLoopOptions(c, { policy: new ModelPolicy(opened.model), template, tools }),
      images,
      ...(cassette ? { toolInterceptor: cassette.cassette } : {}),
    };
    const loop = new AgentLoop({
      ...loopParts,
      sampling: rolloutSampling(c),
      observer: rolloutHooks(settings.control, settings.report, live),
    });
    const evalLoop = new AgentLoop({ ...loopParts, sampling: evaluationSampling(c) });
    for (const rows of [train.rows, ...(evalData ? [evalData.rows] : [])]) {
      await loop.prepareRows(rows);
      loop.checkRows(rows);
    }
    return {
      loaded,
      config: c,
      totalSteps: settings.totalSteps,
      device: opened.device,
      modelDir,
      model: opened.model,
      template,
      tools,
      mcp: opened.mcp,
      placed: opened.placed,
      images,
      loop,
      evalLoop,
      train,
      evalData,
      control: settings.control,
      report: settings.report,
      live,
      ...(cassette ? { cassette } : {}),
    };
  } catch (error) {
    await closeOpened(opened);
    throw error;
  }
}

/** Close what loadRunParts opened: the tool worker, the MCP servers, the model, the device (its worker thread). */
export async function closeRunParts(parts: Pick<RunParts, 'device' | 'model' | 'mcp' | 'placed'>): Promise<void> {
  await closeOpened(parts);
}

async function closeOpened(opened: {
  device?: Device;
  model?: ModelRuntime;
  mcp?: McpServers;
  placed?: PlacedTools;
}): Promise<void> {
  await opened.placed?.close().catch(() => undefined);
  await opened.mcp?.close().catch(() => undefined);
  opened.model?.close();
  await opened.device?.close().catch(() => undefined);
}
