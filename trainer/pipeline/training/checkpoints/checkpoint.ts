import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import type { HostTensor } from '../../../foundations/engine/runtime/tensors';
import type { OptimizerRuntime } from '../../../foundations/engine/optimizerRuntime';
import { CheckpointReader } from '../../../foundations/models/files/checkpointReader';
import type { ModelRuntime } from '../../../foundations/models/runtime';
import { loraTensorNames, loraModules } from '../../../foundations/models/lora';
import { saveLoraAdapter, saveModelFolder } from '../../../foundations/models/files/save';
import { VALUE_HEAD } from '../../../foundations/models/scoring';
import { writeSafetensors } from '../../../foundations/models/files/safetensorsWriter';
import { checkpointDirName, TrainerState } from '../../../contract/protocol/runStore';
import { parseWith } from '../../../contract/protocol/parse';
import { writeFileAtomic } from '../../../contract/runstore/jsonl';
import { storageError } from '../../../contract/runstore/storageError';
import { CheckpointError } from '../../../foundations/models/modelErrors';

/**
 * Checkpoints: `checkpoints/step-NNNNNN/` holds
 *
 *   the policy's weights       in a folder other tools load (a PEFT adapter with LoRA, a full
 *                              Hugging Face model otherwise)
 *   value_head.safetensors     a shared-trunk critic's value head (critic.network 'shared')
 *   optimizer.safetensors      the policy optimizer's parameters and AdamW moments (`<name>.m`, `<name>.v`)
 *   reference.safetensors      with a KL term: the reference policy's own tensors by weight name —
 *                              the policy as RL started (the warm start's adapters, or every weight)
 *   critic/optimizer.safetensors  a separate critic's trainable tensors (`critic/<name>`) and their
 *                              AdamW moments; its frozen weights are not saved: they are the
 *                              policy's base weights or the critic's model folder, unchanged
 *   critic/critic_state.json   { protocol, optimizerSteps } of the critic's AdamW
 *   trainer_state.json         step, data position, random state, AdamW step count, the config's
 *                              hash, the process-reward normaliser's running statistic
 *
 * A checkpoint is written under a temporary name and renamed when complete, so a crash never
 * leaves half of one. Resuming restores every file above and nothing else.
 */
const OPTIMIZER_FILE = 'optimizer.safetensors';
const VALUE_HEAD_FILE = 'value_head.safetensors';
const REFERENCE_FILE = 'reference.safetensors';
const CRITIC_DIR = 'critic';
const CRITIC_STATE_FILE = 'critic_state.json';

/** What a checkpoint holds besides the policy: the reference policy's tensors and a separate critic's optimizer state. */
export interface CheckpointExtras {
  reference?: Record<string, HostTensor>;
  critic?: { step: number; tensors: Record<string, HostTensor> };
}

const CriticState = z.object({ protocol: z.literal(1), optimizerSteps: z.number().int().nonnegative() });

const asEntries = (tensors: Record<string, HostTensor>) =>
  Object.entries(tensors).map(([name, t]) => ({ name, shape: t.shape, data: t.data as Float32Array }));

function readTensors(dir: string, file: string): Record<string, HostTensor> {
  const reader = CheckpointReader.open(dir, file);
  try {
    const tensors: Record<string, HostTensor> = {};
    for (const name of reader.names())
      tensors[name] = { dtype: 'float32', shape: [...reader.info(name).shape], data: reader.read(name) };
    return tensors;
  } finally {
    reader.close();
  }
}

type SavedState = Omit<TrainerState, 'protocol' | 'optimizerSteps' | 'weights' | 'files'>;

/** Save a checkpoint into `relative` of `runDir` (default: `checkpoints/step-NNNNNN`; the best one goes to `checkpoints/best`). */
export async function saveCheckpoint(
  runDir: string,
  model: ModelRuntime,
  optimizer: OptimizerRuntime,
  state: SavedState,
  extras: CheckpointExtras = {},
  relative = checkpointDirName(state.step),
): Promise<string> {
  const final = path.join(runDir, relative);
  const staging = `${final}.partial`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true });
  try {
    await writeCheckpointFolder(staging, model, optimizer, state, extras);
    fs.rmSync(final, { recursive: true, force: true });
    fs.renameSync(staging, final);
  } catch (error) {
    // A checkpoint is whole or absent: the half-written folder goes, the previous checkpoints stay.
    fs.rmSync(staging, { recursive: true, force: true });
    throw storageError(error, staging, `saving the checkpoint of step ${state.step}`);
  }
  return relative;
}

async function writeCheckpointFolder(
  staging: string,
  model: ModelRuntime,
  optimizer: OptimizerRuntime,
  state: SavedState,
  extras: CheckpointExtras,
): Promise<void> {
  const saved = await optimizer.state();
  const tensors = saved.tensors;
  const f32 = (t: HostTensor) => t.data as Float32Array;
  const weights = await writeWeights(staging, model, optimizer, tensors);
  if (model.options.valueHead) {
    const head =
      VALUE_HEAD.weight in tensors ? tensors : await model.device.getState([VALUE_HEAD.weight, VALUE_HEAD.bias]);
    writeSafetensors(
      path.join(staging, VALUE_HEAD_FILE),
      [VALUE_HEAD.weight, VALUE_HEAD.bias].map((name) => ({ name, shape: head[name].shape, data: f32(head[name]) })),
    );
  }
  writeSafetensors(
    path.join(staging, OPTIMIZER_FILE),
    Object.entries(tensors).map(([name, t]) => ({ name, shape: t.shape, data: f32(t) })),
  );
  if (extras.reference) writeSafetensors(path.join(staging, REFERENCE_FILE), asEntries(extras.reference));
  if (extras.critic) {
    fs.mkdirSync(path.join(staging, CRITIC_DIR));
    writeSafetensors(path.join(staging, CRITIC_DIR, OPTIMIZER_FILE), asEntries(extras.critic.tensors));
    writeFileAtomic(
      path.join(staging, CRITIC_DIR, CRITIC_STATE_FILE),
      JSON.stringify({ protocol: 1, optimizerSteps: extras.critic.step }, null, 2) + '\n',
    );
  }
  const trainerState: TrainerState = {
    protocol: 1,
    ...state,
    optimizerSteps: saved.step,
    weights,
    files: fileSizes(staging),
  };
  writeFileAtomic(path.join(staging, STATE_FILE), JSON.stringify(trainerState, null, 2) + '\n');
}

/**
 * The model's weights: a LoRA adapter when only adapters were trained, else a whole model folder
 * (trained weights from the optimizer's state, the rest from the device). Returns which.
 */
async function writeWeights(
  staging: string,
  model: ModelRuntime,
  optimizer: OptimizerRuntime,
  tensors: Record<string, HostTensor>,
): Promise<TrainerState['weights']> {
  const f32 = (t: HostTensor) => t.data as Float32Array;
  const lora = model.options.lora;
  const trainedBase = optimizer.parameterNames.some((n) => model.baseWeights.includes(n));
  if (lora && !trainedBase) {
    const adapter: Record<string, { shape: number[]; data: Float32Array }> = {};
    for (const m of loraModules(model.config, lora)) {
      const names = loraTensorNames(m.module);
      for (const n of [names.a, names.b]) adapter[n] = { shape: [...tensors[n].shape], data: f32(tensors[n]) };
    }
    saveLoraAdapter(staging, model.folder.dir, { lora, tensors: adapter, baseQuantization: model.options.quantize });
    return 'lora';
  }
  // Full fine-tuning: trained weights from the optimizer, the rest (if any) from the device.
  const others = model.baseWeights.filter((n) => !(n in tensors));
  const rest = others.length ? await model.device.getState(others) : {};
  saveModelFolder(
    staging,
    model.folder.dir,
    model.baseWeights.map((name) => {
      const t = tensors[name] ?? rest[name];
      return { name, shape: t.shape, data: f32(t) };
    }),
  );
  return 'full';
}

const STATE_FILE = 'trainer_state.json';

/** The size of every file in a checkpoint folder and its subfolders (critic/), trainer_state.json aside, by relative path. */
function fileSizes(dir: string, prefix = ''): Record<string, number> {
  const sizes: Record<string, number> = {};
  for (const entry of fs
    .readdirSync(path.join(dir, prefix), { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))) {
    const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) Object.assign(sizes, fileSizes(dir, relative));
    else if (relative !== STATE_FILE) sizes[relative] = fs.statSync(path.join(dir, relative)).size;
  }
  return sizes;
}

/** A checkpoint's trainer_state.json, validated, with every file it lists checked for its size. */
export function readTrainerState(dir: string): TrainerState {
  const stateFile = path.join(dir, STATE_FILE);
  if (!fs.existsSync(stateFile))
    throw new CheckpointError(`${dir} is not a complete checkpoint: ${STATE_FILE} is missing`);
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
    if (actual !== size)
      throw new CheckpointError(
        `${file}: ${actual === undefined ? 'missing' : `${actual} bytes where ${size} were saved`}; the checkpoint is damaged`,
      );
  }
  return state;
}

export interface LoadedCheckpoint extends CheckpointExtras {
  state: TrainerState;
  /** Parameters and moments, as OptimizerRuntime.restore takes them. */
  optimizer: { step: number; tensors: Record<string, HostTensor> };
}

export function loadCheckpoint(dir: string): LoadedCheckpoint {
  const state = readTrainerState(dir);
  const loaded: LoadedCheckpoint = {
    state,
    optimizer: { step: state.optimizerSteps, tensors: readTensors(dir, OPTIMIZER_FILE) },
  };
  if (fs.existsSync(path.join(dir, REFERENCE_FILE))) loaded.reference = readTensors(dir, REFERENCE_FILE);
  const criticStateFile = path.join(dir, CRITIC_DIR, CRITIC_STATE_FILE);
  if (fs.existsSync(criticStateFile)) {
    const critic = parseWith(CriticState, JSON.parse(fs.readFileSync(criticStateFile, 'utf8')), criticStateFile);
    loaded.critic = { step: critic.optimizerSteps, tensors: readTensors(path.join(dir, CRITIC_DIR), OPTIMIZER_FILE) };
  }
  return loaded;
}

/**
 * Copy a complete checkpoint folder to `relative` (whole or not at all, as a save): by hard links
 * where the file system allows — a checkpoint's files are never changed once written, so the
 * copy costs no space — else by copying.
 */
export function copyCheckpoint(runDir: string, from: string, relative: string): string {
  const final = path.join(runDir, relative);
  const staging = `${final}.partial`;
  fs.rmSync(staging, { recursive: true, force: true });
  try {
    linkTree(path.join(runDir, from), staging);
    fs.rmSync(final, { recursive: true, force: true });
    fs.renameSync(staging, final);
  } catch (error) {
    fs.rmSync(staging, { recursive: true, force: true });
    throw storageError(error, staging, `copying ${from} to ${relative}`);
  }
  return relative;
}

function linkTree(from: string, to: string): void {
  fs.mkdirSync(to, { recursive: true });
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isDirectory()) linkTree(source, target);
    else {
      try {
        fs.linkSync(source, target);
      } catch {
        fs.copyFileSync(source, target);
      }
    }
  }
}

/** Remove all but the newest `keep` step checkpoints (`checkpoints/best` is never one of them). */
export function pruneCheckpoints(runDir: string, keep: number): void {
  const dir = path.join(runDir, 'checkpoints');
  if (!fs.existsSync(dir)) return;
  const all = fs
    .readdirSync(dir)
    .filter((f) => /^step-\d+$/.test(f))
    .sort();
  for (const old of all.slice(0, Math.max(0, all.length - keep)))
    fs.rmSync(path.join(dir, old), { recursive: true, force: true });
}
