import * as path from 'node:path';
import { loadJsonlDataset } from '../../../foundations/data/dataset';
import type { DatasetRow } from '../../../foundations/data/row';
import type { ExecutionProviderName } from '../../../foundations/engine/runtime/providers';
import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
import { ModelPolicy } from '../../../foundations/models/generation/generationSession';
import type { ModelRuntime } from '../../../foundations/models/runtime';
import { McpServers } from '../../../foundations/mcp/servers';
import { scoreTrajectories, type RewardConfig } from '../../rewards/score';
import { AgentLoop } from '../../rollout/agentLoop';
import { toTrajectoryRecord } from '../step/trajectoryRecord';
import { cutTokenIndex, generatedTurns, restoreState, type CutPoint } from '../../rollout/restoreState';
import { batchDraws, drawValues, RerollUniforms } from '../../rollout/samplingSchedule';
import type { Trajectory } from '../../rollout/trajectory';
import { PROTOCOL_VERSION } from '../../../contract/protocol/protocolVersion';
import type { BranchEdit, BranchSet } from '../../../contract/protocol/branches';
import { decodeInt32 } from '../../../contract/protocol/tokens';
import {
  recordedDrawSchedule,
  type DrawSchedule,
  type TrajectoryRecord,
  type TrajectorySet,
} from '../../../contract/protocol/runStore';
import { writeBranchSet } from '../../../contract/runstore/branchStore';
import { RunStoreReader } from '../../../contract/runstore/reader';
import { CassettePlayer, recordedOutcome, ToolCassette, type CassetteMiss } from '../../../foundations/tools/cassette';
import type { ToolResult } from '../../../foundations/tools/result';
import { ToolSet } from '../../../foundations/tools/toolSet';
import { checkpointModelFor } from './rerollModel';
import { checkAgentCut, rollAgentBranches } from './rerollAgent';
import type { SamplingOptions } from '../../../foundations/models/generation/policy';
import { agentLoopOptions, evaluationSampling, rolloutSampling } from '../config/configOptions';
import { EditedResults } from './editedResults';
import { readCassette } from '../run/runCassette';
import { seedFor } from '../run/runParts';
import {
  placeConfigRewards,
  placeConfigTools,
  type LoadedConfig,
  type PlacedRewards,
  type PlacedTools,
} from '../config/trainingConfig';

/**
 * `rollout-studio reroll`: what would the agent have done? A recorded trajectory is cut at a turn
 * boundary, its prefix kept token for token (rollout/restoreState.ts), maybe edited (a call's
 * result or arguments), and the rest generated again, N times, with a chosen checkpoint and
 * sampling; tools run live or answer from the run's cassette; the branches are scored with the
 * run's rewards and saved in the run store (`branches/<id>.json`), apart from its training data.
 *
 * With the run's own checkpoint, sampling and seed, branch 0 samples with the numbers its parent
 * drew inside its original batch (rollout/samplingSchedule.ts), so with recorded tool results and
 * no edit it reproduces the parent token for token.
 */
export interface RerollRequest {
  runDir: string;
  set: TrajectorySet;
  step: number;
  index: number;
  cut: CutPoint;
  edits?: BranchEdit[];
  /** See rerollCheckpoint.ts (default: the weights that generated the parent). */
  checkpoint?: string;
  samples?: number;
  temperature?: number;
  /** Default: the seed the parent's rollout sampled with. */
  seed?: number;
  /** Default: `cassette` when the run recorded one, else `live`. */
  tools?: 'live' | 'cassette';
  onMiss?: CassetteMiss;
  device?: ExecutionProviderName;
  log?: (line: string) => void;
}

export interface RerollResult {
  branches: BranchSet;
  file: string;
  parent: TrajectoryRecord;
}

export class RerollError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RerollError';
  }
}

/** The whole rollout the parent was in: a training step's trajectories, or an evaluation's. */
function readBatch(reader: RunStoreReader, set: TrajectorySet, step: number): TrajectoryRecord[] {
  const steps = set === 'train' ? reader.steps() : reader.evaluations();
  if (!steps.includes(step))
    throw new RerollError(
      `${reader.dir}: no ${set === 'train' ? 'training rollouts' : 'evaluation'} at step ${step} (recorded: ${steps.join(', ') || 'none'})`,
    );
  return (set === 'train' ? reader.trajectories(step) : reader.evaluationTrajectories(step)).records;
}

function findRow(loaded: LoadedConfig, set: TrajectorySet, rowId: string): DatasetRow {
  const c = loaded.config;
  const file = set === 'train' ? c.data.train : (c.evaluation.data ?? c.data.eval);
  if (!file) throw new RerollError(`${loaded.file}: no evaluation data to find row ${rowId} in`);
  const row = loadJsonlDataset(loaded.resolve(file), { fields: c.data.fields }).rows.find((r) => r.id === rowId);
  if (!row)
    throw new RerollError(
      `${loaded.resolve(file)}: no row ${rowId} (the parent's row); the dataset changed since the run`,
    );
  return row;
}

/** The seed the parent's rollout sampled with (trainingStep.ts: salt 1; evaluation.ts: salt 17). */
export function parentSeed(loaded: LoadedConfig, set: TrajectorySet, step: number): number {
  return seedFor(loaded.config.seed, step, set === 'train' ? 1 : 17);
}

/** Where two token sequences first differ; null when they are the same. */
export function firstDivergence(a: ArrayLike<number>, b: ArrayLike<number>): number | null {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? null : n;
}

export async function reroll(loaded: LoadedConfig, request: RerollRequest): Promise<RerollResult> {
  const reader = new RunStoreReader(request.runDir);
  const schedule = recordedDrawSchedule(reader.run());
  const batch = readBatch(reader, request.set, request.step);
  const parent = batch.find((t) => t.index === request.index);
  if (!parent)
    throw new RerollError(
      `${request.runDir}: step ${request.step} has no trajectory ${request.index} (0..${batch.length - 1})`,
    );
  cutTokenIndex(parent, request.cut);
  if (loaded.config.agent !== undefined) checkAgentCut(parent, request.cut, request.edits ?? []);
  else checkEdits(parent, request);
  const row = findRow(loaded, request.set, parent.rowId);
  const { model, checkpoint } = await checkpointModelFor(loaded, request);
  const device = model.device;
  let mcp: McpServers | undefined;
  let placed: PlacedTools | undefined;
  let placedRewards: PlacedRewards | undefined;
  try {
    const template = model.folder.chatTemplate;
    if (!template) throw new RerollError(`${model.folder.dir}: the tokenizer has no chat template`);
    mcp = await McpServers.open(loaded.config.mcpServers, {
      baseDir: path.dirname(loaded.file),
      ...(request.log ? { log: request.log } : {}),
    });
    placed = await placeConfigTools(loaded);
    const tools = new ToolSet([...placed.tools, ...mcp.tools]);
    // Scored in the reward worker, as a training run scores: a reward that never returns is ended by its deadline.
    placedRewards = await placeConfigRewards(loaded);
    const parts = { batch, schedule, parent, row, model, template, tools, rewards: placedRewards.rewards };
    const branches = await (loaded.config.agent !== undefined ? rollAgentBranchSet : rollBranches)(
      loaded,
      request,
      parts,
    );
    const set: BranchSet = {
      ...branches,
      checkpoint,
      createdAt: new Date().toISOString(),
      protocol: PROTOCOL_VERSION,
      id: branchId(request),
    };
    return { branches: set, file: writeBranchSet(request.runDir, set), parent };
  } finally {
    await placedRewards?.close().catch(() => undefined);
    await placed?.close().catch(() => undefined);
    await mcp?.close().catch(() => undefined);
    model.close();
    await device.close().catch(() => undefined);
  }
}

function branchId(request: RerollRequest): string {
  const stamp = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, '');
  return `${request.set}-${request.step}-${request.index}-t${request.cut.turn}${request.cut.at === 'call' ? 'c' : 's'}-${stamp}-${Math.random().toString(36).slice(2, 6)}`;
}

/** Edits of a call need a cut before the calls' results and name calls of that turn; inserted messages need a cut at a turn's start. */
function checkEdits(parent: TrajectoryRecord, request: RerollRequest): void {
  const edits = request.edits ?? [];
  const calls = generatedTurns(parent)[request.cut.turn].toolCalls ?? [];
  for (const edit of edits) {
    if (edit.kind === 'message') {
      if (request.cut.at !== 'start')
        throw new RerollError(
          `an inserted message goes at the start of a turn (at: start), not before the results of turn ${request.cut.turn}'s calls`,
        );
      continue;
    }
    if (request.cut.at !== 'call')
      throw new RerollError(
        `edits of a call's result or arguments need a cut before the calls' results (at: call), not at the start of turn ${request.cut.turn}`,
      );
    if (edit.call >= calls.length)
      throw new RerollError(
        `turn ${request.cut.turn} of trajectory ${parent.index} has ${calls.length} call(s); there is no call ${edit.call} to edit`,
      );
  }
}

interface RerollParts {
  batch: TrajectoryRecord[];
  /** How the parent's run split its sampled rounds into generate calls. */
  schedule: DrawSchedule;
  parent: TrajectoryRecord;
  row: DatasetRow;
  model: ModelRuntime;
  template: ChatTemplate;
  tools: ToolSet;
  /** The config's rewards as placed (in the reward worker). */
  rewards: RewardConfig;
}

type RolledBranches = Omit<BranchSet, 'checkpoint' | 'createdAt' | 'protocol' | 'id'>;

async function rollBranches(loaded: LoadedConfig, request: RerollRequest, parts: RerollParts): Promise<RolledBranches> {
  const c = loaded.config;
  const { parent, template, tools } = parts;
  const samples = request.samples ?? 1;
  const origin = { set: request.set, step: request.step, trajectory: parent.index };
  const player = toolSource(request) === 'cassette' ? readCassette(request.runDir) : undefined;
  const cassette = player
    ? new ToolCassette({ player, onMiss: request.onMiss ?? 'error', originOf: () => origin })
    : undefined;
  const edited = new EditedResults(request.cut.turn, request.edits ?? [], cassette);
  const sampling = rerollSampling(loaded, request);
  const loop = new AgentLoop({
    ...agentLoopOptions(c, { policy: new ModelPolicy(parts.model), template, tools }),
    sampling,
    toolInterceptor: edited,
  });
  const context = { loop, template, ...(c.rollout.templateKwargs ? { templateKwargs: c.rollout.templateKwargs } : {}) };
  const insertedMessages = (request.edits ?? []).flatMap((e) =>
    e.kind === 'message' ? [{ role: e.role, content: e.content }] : [],
  );
  const argumentEdits = new Map(
    (request.edits ?? []).flatMap((e) => (e.kind === 'arguments' ? [[e.call, e.arguments] as const] : [])),
  );
  const states = Array.from({ length: samples }, (_, k) =>
    restoreState(parent, parts.row, request.cut, k, context, {
      priorResult: priorResults(player, k, origin, parent, request.cut),
      arguments: argumentEdits,
      insert: insertedMessages,
    }),
  );
  const seed = request.seed ?? parentSeed(loaded, request.set, request.step);
  const follow =
    seed === parentSeed(loaded, request.set, request.step) && oneRollout(loaded, request, parts.batch)
      ? parentDraws(parts, request, c.rollout.budget, seed)
      : undefined;
  if (!follow)
    request.log?.(
      `branch 0 samples with fresh numbers${seed === parentSeed(loaded, request.set, request.step) ? " (its parent's could not be worked out)" : ' (another seed than the parent’s)'}`,
    );
  const uniforms = new RerollUniforms(
    [follow],
    Array.from({ length: samples }, (_, k) => seedFor(seed, k, 23)),
  );
  const trajectories = await loop.continueFrom(states, { seed, uniforms });
  edited.checkApplied();
  return {
    parent: { set: request.set, step: request.step, index: parent.index, rowId: parent.rowId },
    cut: { ...request.cut, tokenIndex: cutTokenIndex(parent, request.cut) },
    edits: request.edits ?? [],
    sampling: { ...sampling, seed, followsParent: follow !== undefined },
    tools: { source: player ? 'cassette' : 'live', ...(player ? { onMiss: request.onMiss ?? 'error' } : {}) },
    branches: await branchRecords(request, parts, trajectories),
  };
}

/** The parent's sampling (its set's), at the request's temperature when it sets one. */
function rerollSampling(loaded: LoadedConfig, request: RerollRequest): SamplingOptions {
  const c = loaded.config;
  return {
    ...(request.set === 'train' ? { ...rolloutSampling(c) } : evaluationSampling(c)),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
  };
}

/** An agent's run (rerollAgent.ts): the agent run again, answered from the record up to the cut, then live. */
async function rollAgentBranchSet(
  loaded: LoadedConfig,
  request: RerollRequest,
  parts: RerollParts,
): Promise<RolledBranches> {
  const { parent } = parts;
  const sampling = rerollSampling(loaded, request);
  const parentsSeed = parentSeed(loaded, request.set, request.step);
  const seed = request.seed ?? parentsSeed;
  const firstParts = parts.batch.filter((r) => (r.agent?.part ?? 0) === 0);
  const follows = seed === parentsSeed && oneRollout(loaded, request, firstParts);
  if (!follows) request.log?.('branch 0 samples with fresh numbers');
  const { branches, all } = await rollAgentBranches(loaded, parts, {
    cut: request.cut,
    samples: request.samples ?? 1,
    seed,
    followSeed: follows ? seed : undefined,
    sampling,
    log: request.log,
  });
  const rewards = await scoreTrajectories(all, parts.rewards, parts.tools);
  const parentIds = decodeInt32(parent.tokens.ids);
  const cutAt = cutTokenIndex(parent, request.cut);
  return {
    parent: { set: request.set, step: request.step, index: parent.index, rowId: parent.rowId },
    cut: { ...request.cut, tokenIndex: cutAt },
    edits: [],
    sampling: { ...sampling, seed, followsParent: follows },
    tools: { source: 'live' },
    branches: branches.map((t, k) => {
      const divergence = firstDivergence(parentIds, t.ids);
      if (divergence !== null && divergence < cutAt)
        request.log?.(
          `branch ${k}: the agent's requests differ from the recorded run at token ${divergence}, before the cut at ${cutAt} (an agent that does not send the same requests for the same answers)`,
        );
      return {
        trajectory: toTrajectoryRecord(t, rewards.trajectories[all.indexOf(t)], {
          step: request.step,
          tokenizer: parts.model.tokenizer,
        }),
        firstDivergence: divergence,
      };
    }),
  };
}

function toolSource(request: RerollRequest): 'live' | 'cassette' {
  return request.tools ?? (new RunStoreReader(request.runDir).cassette().records.length > 0 ? 'cassette' : 'live');
}

/**
 * Was the parent's batch one rollout of the loop (one session, one seed)? A training step with
 * dynamic sampling rolls out in rounds, each with its own seed, and drops groups: its draws
 * cannot be worked out from the records.
 */
function oneRollout(loaded: LoadedConfig, request: RerollRequest, batch: readonly TrajectoryRecord[]): boolean {
  if (request.set === 'eval') return true;
  const c = loaded.config;
  const dynamic = (c.algorithm as { dynamicSampling?: { enabled?: boolean } }).dynamicSampling?.enabled === true;
  const expected = c.rollout.promptsPerStep * c.algorithm.groupSize;
  if (dynamic || batch.length !== expected) {
    request.log?.(
      `step ${request.step} was not one rollout of ${expected} trajectories (${dynamic ? 'dynamic sampling' : `${batch.length} recorded`})`,
    );
    return false;
  }
  return true;
}

/** The parent's random numbers from the cut on, or undefined when its batch's draws cannot be worked out. */
function parentDraws(
  { batch, parent, schedule }: Pick<RerollParts, 'batch' | 'parent' | 'schedule'>,
  request: RerollRequest,
  budget: { maxNewTokensPerTurn: number; maxTotalTokens: number },
  seed: number,
): number[] | undefined {
  let draws: number[][];
  try {
    draws = batchDraws(batch, budget, schedule);
  } catch (error) {
    request.log?.(`the parent's batch: ${(error as Error).message}`);
    return undefined;
  }
  const cut = cutTokenIndex(parent, request.cut);
  const before = generatedTurns(parent).reduce((n, t) => n + Math.max(0, Math.min(t.tokenEnd, cut) - t.tokenStart), 0);
  return drawValues(seed, draws[parent.index].slice(before));
}

/** The full results (their `data` too) of the prefix's calls, from the cassette; consuming them keeps the branch's later identical calls in step. */
function priorResults(
  player: CassettePlayer | undefined,
  requester: number,
  origin: { set: TrajectorySet; step: number; trajectory: number },
  parent: TrajectoryRecord,
  cut: CutPoint,
): ((turn: number, call: number) => ToolResult | undefined) | undefined {
  if (!player) return undefined;
  const results = new Map<string, ToolResult>();
  generatedTurns(parent).forEach((turn, g) => {
    if (g >= cut.turn) return;
    for (const call of turn.toolCalls ?? []) {
      if (
        call.name === undefined ||
        (call.error && ['parse', 'unknown_tool', 'invalid_arguments'].includes(call.error.kind))
      )
        continue;
      const entry = player.find(requester, origin, call.name, call.arguments);
      const outcome = entry ? recordedOutcome(entry) : undefined;
      if (outcome?.result) results.set(`${g}/${call.index}`, outcome.result);
    }
  });
  return (turn, call) => results.get(`${turn}/${call}`);
}

async function branchRecords(
  request: RerollRequest,
  parts: RerollParts,
  trajectories: Trajectory[],
): Promise<BranchSet['branches']> {
  // Scored alone, as an evaluation is: no batch statistic (Agent-R1's process normaliser) from training.
  const rewards = await scoreTrajectories(trajectories, parts.rewards, parts.tools);
  const parentIds = decodeInt32(parts.parent.tokens.ids);
  return trajectories.map((t, k) => ({
    trajectory: toTrajectoryRecord(t, rewards.trajectories[k], {
      step: request.step,
      tokenizer: parts.model.tokenizer,
    }),
    firstDivergence: firstDivergence(parentIds, t.ids),
  }));
}
