import * as fs from 'node:fs';
import * as path from 'node:path';
import type { HostTensor } from '../engine/runtime/tensors';
import type { OptimizerRuntime } from '../engine/optimizerRuntime';
import { CheckpointReader } from '../models/checkpointReader';
import type { ModelRuntime } from '../models/runtime';
import { loraTensorNames, loraModules } from '../models/lora';
import { saveLoraAdapter, saveModelFolder } from '../models/save';
import { VALUE_HEAD } from '../models/scoring';
import { writeSafetensors } from '../models/safetensorsWriter';
import { checkpointDirName, TrainerState } from '../shared/protocol/runStore';
import { parseWith } from '../shared/protocol/parse';
import { writeFileAtomic } from '../shared/runstore/jsonl';
import { storageError } from '../shared/runstore/storageError';
import { CheckpointError } from '../models/modelErrors';

/**
 * Checkpoints: `checkpoints/step-NNNNNN/` holds the weights in a folder other tools load (a
 * PEFT adapter with LoRA, a full Hugging Face model otherwise), the value head when there is
 * one, the optimizer's moments (`optimizer.safetensors`) and `trainer_state.json`. A checkpoint
 * is written under a temporary name and renamed when complete, so a crash never leaves half of one.
 */
const OPTIMIZER_FILE = 'optimizer.safetensors';
const VALUE_HEAD_FILE = 'value_head.safetensors';

export async function saveCheckpoint(runDir: string, model: ModelRuntime, optimizer: OptimizerRuntime, state: Omit<TrainerState, 'protocol' | 'optimizerSteps' | 'weights' | 'files'>): Promise<string> {
  const relative = checkpointDirName(state.step);
  const final = path.join(runDir, relative);
  const staging = `${final}.partial`;
  try {
    await writeCheckpointFolder(staging, model, optimizer, state);
    fs.rmSync(final, { recursive: true, force: true });
    fs.renameSync(staging, final);
  } catch (error) {
    // A checkpoint is whole or absent: the half-written folder goes, the previous checkpoints stay.
    fs.rmSync(staging, { recursive: true, force: true });
    throw storageError(error, staging, `saving the checkpoint of step ${state.step}`);
  }
  return relative;
}

async function writeCheckpointFolder(staging: string, model: ModelRuntime, optimizer: OptimizerRuntime, state: Omit<TrainerState, 'protocol' | 'optimizerSteps' | 'weights' | 'files'>): Promise<void> {
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true });
  const saved = await optimizer.state();
  const tensors = saved.tensors;
  const f32 = (t: HostTensor) => t.data as Float32Array;
  const lora = model.options.lora;
  const trainedBase = optimizer.parameterNames.some((n) => model.baseWeights.includes(n));
  if (lora && !trainedBase) {
    const adapter: Record<string, { shape: number[]; data: Float32Array }> = {};
    for (const m of loraModules(model.config, lora)) {
      const names = loraTensorNames(m.module);
      for (const n of [names.a, names.b]) adapter[n] = { shape: [...tensors[n].shape], data: f32(tensors[n]) };
    }
    saveLoraAdapter(staging, model.folder.dir, { lora, tensors: adapter });
  } else {
    // Full fine-tuning: trained weights from the optimizer, the rest (if any) from the device.
    const others = model.baseWeights.filter((n) => !(n in tensors));
    const rest = others.length ? await model.device.getState(others) : {};
    saveModelFolder(staging, model.folder.dir, model.baseWeights.map((name) => {
      const t = tensors[name] ?? rest[name];
      return { name, shape: t.shape, data: f32(t) };
    }));
  }
  if (model.options.valueHead) {
    const head = VALUE_HEAD.weight in tensors ? tensors : await model.device.getState([VALUE_HEAD.weight, VALUE_HEAD.bias]);
    writeSafetensors(path.join(staging, VALUE_HEAD_FILE), [VALUE_HEAD.weight, VALUE_HEAD.bias].map((name) => ({ name, shape: head[name].shape, data: f32(head[name]) })));
  }
  writeSafetensors(path.join(staging, OPTIMIZER_FILE), Object.entries(tensors).map(([name, t]) => ({ name, shape: t.shape, data: f32(t) })));
  const trainerState: TrainerState = { protocol: 1, ...state, optimizerSteps: saved.step, weights: lora && !trainedBase ? 'lora' : 'full', files: fileSizes(staging) };
  writeFileAtomic(path.join(staging, STATE_FILE), JSON.stringify(trainerState, null, 2) + '\n');
}

const STATE_FILE = 'trainer_state.json';

/** The size of every file in a checkpoint folder (trainer_state.json aside). */
function fileSizes(dir: string): Record<string, number> {
  return Object.fromEntries(
    fs
      .readdirSync(dir)
      .filter((f) => f !== STATE_FILE)
      .sort()
      .map((f) => [f, fs.statSync(path.join(dir, f)).size]),
  );
}

export interface LoadedCheckpoint {
  state: TrainerState;
  /** Parameters and moments, as OptimizerRuntime.restore takes them. */
  optimizer: { step: number; tensors: Record<string, HostTensor> };
}

/** A checkpoint's trainer_state.json, validated, with every file it lists checked for its size. */
export function readTrainerState(dir: string): TrainerState {
  const stateFile = path.join(dir, STATE_FILE);
  if (!fs.existsSync(stateFile)) throw new CheckpointError(`${dir} is not a complete checkpoint: ${STATE_FILE} is missing`);
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(stateFile, 'utf8'));
  } catch (error) {
    throw new CheckpointError(`${stateFile}: not valid JSON (${(error as Error).message})`);
  }
  const state = parseWith(TrainerState, json, stateFile);
  for (const [name, size] of Object.entries(state.files ?? {})) {
    const file = path.join(dir, name);
    const actual = fs.existsSync(file) ? fs.statSync(file).size : undefined;
    if (actual !== size) throw new CheckpointError(`${file}: ${actual === undefined ? 'missing' : `${actual} bytes where ${size} were saved`}; the checkpoint is damaged`);
  }
  return state;
}

export function loadCheckpoint(dir: string): LoadedCheckpoint {
  const state = readTrainerState(dir);
  const reader = CheckpointReader.open(dir, OPTIMIZER_FILE);
  try {
    const tensors: Record<string, HostTensor> = {};
    for (const name of reader.names()) {
      const info = reader.info(name);
      tensors[name] = { dtype: 'float32', shape: [...info.shape], data: reader.read(name) };
    }
    return { state, optimizer: { step: state.optimizerSteps, tensors } };
  } finally {
    reader.close();
  }
}

/** Remove all but the newest `keep` checkpoints; `pinned` (the warm start's, when it is the KL reference) stays too. */
export function pruneCheckpoints(runDir: string, keep: number, pinned?: string): void {
  const dir = path.join(runDir, 'checkpoints');
  if (!fs.existsSync(dir)) return;
  const all = fs.readdirSync(dir).filter((f) => /^step-\d+$/.test(f) && `checkpoints/${f}` !== pinned).sort();
  for (const old of all.slice(0, Math.max(0, all.length - keep))) fs.rmSync(path.join(dir, old), { recursive: true, force: true });
}
