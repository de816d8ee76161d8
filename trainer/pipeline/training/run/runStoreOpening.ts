import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ExecutionProviderName } from '../../../foundations/engine/runtime/providers';
import { PROTOCOL_VERSION } from '../../../contract/protocol/protocolVersion';
import type { RunRecord } from '../../../contract/protocol/runStore';
import { RunStoreReader } from '../../../contract/runstore/reader';
import { RunDirectoryLock } from '../../../contract/runstore/runLock';
import { dropRecordsAfterStep, RunStoreWriter } from '../../../contract/runstore/writer';
import { ProcessRewardNormalizer } from '../../rewards/processRewardScale';
import { Random } from '../../../foundations/models/random';
import { ROLLOUT_STUDIO_VERSION } from '../../../version';
import { loadCheckpoint, type LoadedCheckpoint } from '../checkpoints/checkpoint';
import { DataCursor } from '../step/dataCursor';
import type { RunParts, RunPosition } from './runParts';
import { healthHistory } from '../health/health';
import { scoreKey, taskMetric } from '../step/taskMetric';
import { hashable } from '../config/trainingConfig';
import { configDifferences } from '../config/configDifferences';
import { configFileSha256 } from '../config/configFileHash';
import { definedFields } from '../../../contract/definedFields';

/** A run that cannot be resumed, said in terms of what to do; printed without a stack trace. */
export class ResumeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ResumeError';
  }
}

/**
 * The run directory at the start of a run: a new one with its run.json, or — to resume — an
 * existing one cut back to its last checkpoint, with the data position, random state and
 * optimizer state that checkpoint saved.
 */

export interface OpenedRun {
  position: RunPosition;
  /** The first RL step to train. */
  startStep: number;
  /** When resuming: the checkpoint (optimizers, reference policy, critic) and where it is. A resume from step 0's checkpoint is a resume too: its warm start is done. */
  checkpoint?: LoadedCheckpoint;
  checkpointDir?: string;
}

/** `20261203-101500-my-agent`: when and what, sortable. */
function runId(name: string): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
  return `${stamp}-${
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 40) || 'run'
  }`;
}

function modelSummary(parts: RunParts): RunRecord['model'] {
  const { config, model } = parts;
  const parameters = model.parameterCount(model.baseWeights);
  return {
    path: parts.modelDir,
    family: model.config.family,
    parameters,
    // What the update trains (a vision-language model's tower only with model.trainVision).
    trainableParameters: model.parameterCount(model.trainableWeights(config.model.lora === false)),
    ...(config.model.lora !== false
      ? {
          lora: {
            rank: config.model.lora.rank,
            alpha: config.model.lora.alpha,
            targets: [...config.model.lora.targets],
          },
        }
      : {}),
    quantize: model.options.quantize && { ...model.options.quantize, lowMemory: model.quantized?.lowMemory },
  };
}

export function createRun(parts: RunParts, provider: ExecutionProviderName, runDir: string | undefined): OpenedRun {
  const { config: c, loaded } = parts;
  const name = c.name ?? path.basename(loaded.file).replace(/\.config\.ts$|\.ts$/, '');
  const dir = runDir ?? path.join(loaded.resolve(c.output.runsDir), runId(name));
  const metric = taskMetric(c);
  const configSha256 = configFileSha256(loaded.file);
  const writer = RunStoreWriter.create(dir, {
    protocol: PROTOCOL_VERSION,
    id: path.basename(dir),
    name,
    status: 'running',
    createdAt: new Date().toISOString(),
    algorithm: c.algorithm.name,
    device: provider,
    seed: c.seed,
    totalSteps: parts.totalSteps,
    model: modelSummary(parts),
    versions: { rolloutStudio: ROLLOUT_STUDIO_VERSION, node: process.versions.node },
    drawSchedule: 'per-round',
    config: { ...hashable(c), configHash: loaded.hash },
    configPath: loaded.file,
    ...definedFields({ configSha256, metric }),
  });
  return {
    position: {
      writer,
      cursor: new DataCursor(parts.train.rows.length, c.seed),
      random: Random.fromSeed(c.seed),
      consecutiveNonFinite: 0,
      processNormalizer: new ProcessRewardNormalizer(c.rewards.processNormMomentum),
      lrScale: 1,
      health: [],
    },
    startStep: 1,
  };
}

/**
 * Resume: take the run's lock (a run whose writer is alive is refused, naming it; a dead
 * writer's lock is taken over), load the newest intact checkpoint — a damaged one is skipped
 * with a warning, for the one before it — and cut the run back to it: the records after it are
 * dropped and written again by the resumed run.
 */
export function reopenRun(parts: RunParts, dir: string): OpenedRun {
  readRunToResume(dir); // a folder that is not a run fails here, before a lock file is created in it
  const lock = RunDirectoryLock.acquire(dir, {
    onTakeover: (stale) =>
      parts.report.log(
        `${dir}: its last writer (pid ${stale.pid} on ${stale.host}, last seen ${stale.heartbeatAt}) is gone; resuming in its place`,
      ),
  });
  try {
    const run = new RunStoreReader(dir).run();
    const { checkpoint, relative } = newestIntactCheckpoint(parts, dir, run);
    const step = checkpoint.state.step;
    dropRecordsAfterStep(dir, step);
    const writer = RunStoreWriter.reopen(
      dir,
      { ...run, lastStep: step, lastCheckpoint: relative, totalSteps: parts.totalSteps },
      lock,
    );
    const { data, random, consecutiveNonFinite, processNormalizer, lrScale } = checkpoint.state;
    const metric = taskMetric(parts.config);
    const health = healthHistory(
      new RunStoreReader(dir).metrics().records,
      step,
      parts.config.health.window,
      metric === undefined ? undefined : scoreKey(metric),
    );
    parts.report.log(`resuming ${run.id} after step ${step} from ${relative}`);
    return {
      position: {
        writer,
        cursor: new DataCursor(parts.train.rows.length, parts.config.seed, data.epoch, data.position),
        random: Random.fromState(random),
        consecutiveNonFinite,
        processNormalizer: new ProcessRewardNormalizer(parts.config.rewards.processNormMomentum, processNormalizer),
        lrScale: lrScale ?? 1,
        health,
      },
      startStep: step + 1,
      checkpoint,
      checkpointDir: path.join(dir, relative),
    };
  } catch (error) {
    lock.release();
    throw error;
  }
}

/** run.json of the folder given to --resume; a folder that is not a run, or whose record is damaged, is a ResumeError saying what to give instead. */
function readRunToResume(dir: string): RunRecord {
  try {
    return new RunStoreReader(dir).run();
  } catch (error) {
    if ((error as Error).name !== 'ProtocolError') throw error;
    if (!fs.existsSync(path.join(dir, 'run.json'))) {
      const what = fs.existsSync(dir) ? 'is not a Rollout Studio run (it has no run.json)' : 'does not exist';
      throw new ResumeError(
        `${dir} ${what}; --resume takes the folder of an earlier run (the one train printed at its end, runs/<name>-<time>/), or leave --resume out to start a new run`,
      );
    }
    throw new ResumeError(
      `${(error as Error).message}\nThe run's record is damaged, so it cannot be resumed; start a new run (the checkpoints under ${path.join(dir, 'checkpoints')} still load with eval --checkpoint)`,
    );
  }
}

/**
 * The newest checkpoint that loads whole, newest first; each damaged one is named in a warning.
 * A checkpoint of another config is not damage: it fails the resume at once.
 */
function newestIntactCheckpoint(
  parts: RunParts,
  dir: string,
  run: RunRecord,
): { checkpoint: LoadedCheckpoint; relative: string } {
  const candidates = new RunStoreReader(dir).checkpoints().reverse();
  if (candidates.length === 0)
    throw new ResumeError(
      `${dir}: the run has no checkpoint to resume from (it ended before its first one was saved); start a new run instead`,
    );
  const damaged: string[] = [];
  for (const relative of candidates) {
    let checkpoint: LoadedCheckpoint;
    try {
      checkpoint = loadCheckpoint(path.join(dir, relative));
    } catch (error) {
      damaged.push(`${relative}: ${(error as Error).message}`);
      parts.report.log(`warning: ${relative} is damaged and is skipped (${(error as Error).message.split('\n')[0]})`);
      continue;
    }
    if (checkpoint.state.configHash !== parts.loaded.hash) {
      throw new ResumeError(configMismatch(dir, run, parts, checkpoint.state.configHash));
    }
    if (damaged.length) parts.report.log(`warning: resuming from ${relative}, the newest intact checkpoint`);
    return { checkpoint, relative };
  }
  throw new ResumeError(`${dir}: no checkpoint can be resumed from; every one is damaged:\n  ${damaged.join('\n  ')}`);
}

/**
 * The refusal of a resume under another config, naming the fields that changed (from run.json's
 * record of the config). When that record shows none — a run written by another version, which
 * records or hashes a config differently — it says so, with both hashes and both versions.
 */
function configMismatch(dir: string, run: RunRecord, parts: RunParts, trainedHash: string): string {
  const recorded = run.config as Record<string, unknown> | undefined;
  const changes = recorded ? configDifferences(recorded, { ...hashable(parts.config) }) : [];
  if (changes.length) {
    return `${dir} was trained with another config; what differs from the config it was trained with:\n  ${changes.join('\n  ')}\nResume with the config it was trained with (put those fields back), or start a new run with this one`;
  }
  const written = run.versions.rolloutStudio;
  const version =
    written === ROLLOUT_STUDIO_VERSION
      ? ''
      : ` (the run was written by rollout-studio ${written}, this is ${ROLLOUT_STUDIO_VERSION}: versions may record or hash a config differently)`;
  return `${dir} was trained with another config: its checkpoints were made under config hash ${trainedHash}, this config's is ${parts.loaded.hash}, yet run.json's record of its config shows no field that differs${version}\nResume with the rollout-studio version and config it was trained with, or start a new run with this one`;
}
