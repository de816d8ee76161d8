import * as fs from 'node:fs';
import * as path from 'node:path';
import { createDevice } from '../../../foundations/engine/device/device';
import { ModelRuntime } from '../../../foundations/models/runtime';
import { readModelWeights } from '../../../foundations/models/loadWeights';
import { saveModelFolder } from '../../../foundations/models/files/save';
import { SftTrainer, type SftSequence } from '../../rl/sft';
import { ToolSet } from '../../../foundations/tools/toolSet';
import { Random } from '../../../foundations/models/random';
import { ConfigError, type LoadedConfig } from '../config/trainingConfig';
import { rolloutImagesFor, sftOptions } from '../config/configOptions';
import { RunStoreReader } from '../../../contract/runstore';
import { evaluateCheckpoint, type CheckpointEvaluation } from '../evaluation/evaluateCheckpoint';
import { readDemonstrationSequences } from './demonstrationSequences';
import { ChatTemplateError } from '../../../foundations/models/modelErrors';

/**
 * The SFT-only baseline of an RL result: from the same warm start, keep training on the same
 * demonstrations instead of running RL, for the same extra compute (wall-clock seconds of the RL
 * phase, measured in the same run) at a tenth of the warm start's learning rate, then evaluate
 * exactly as the run did.
 *
 * What it is: the answer to "was RL's gain just more training on what we had?". What it is not: a
 * strong rival. Where the demonstrations are imperfect (the demo's stop a search early, the new
 * tasks' round their answers), more imitation of them cannot fix what RL is rewarded for, so RL
 * beating it says little about RL against a good alternative. Rejection-sampling fine-tuning on
 * the policy's own rollouts (`algorithm: { name: 'rft' }`) and SFT on correct demonstrations, with
 * equal budgets, are the arms of `npm run bench:rl` (test/bench/rlArms.ts).
 */
export interface SftBaselineOptions {
  /** The warm-started model folder (the run's step-0 checkpoint). */
  from: string;
  /** Seconds of training to spend (the RL phase's time). */
  seconds: number;
  /** Where to write the baseline's model. */
  outDir: string;
  log?: (line: string) => void;
  /** Ends the training after the step in flight (Ctrl-C, SIGTERM); the model trained so far is saved and evaluated. */
  signal?: AbortSignal;
}

export interface SftBaselineResult {
  evaluation: CheckpointEvaluation;
  steps: number;
  seconds: number;
}

export async function sftBaseline(loaded: LoadedConfig, options: SftBaselineOptions): Promise<SftBaselineResult> {
  const c = loaded.config;
  if (!c.sft)
    throw new ConfigError(
      `${loaded.file}: the SFT-only baseline continues the warm start; the config has no sft section`,
    );
  // A LoRA run's checkpoints are adapters; the baseline saves a whole model folder.
  if (c.model.lora !== false)
    throw new ConfigError(
      `${loaded.file}: the SFT-only baseline needs model.lora: false (it continues a full model folder)`,
    );
  const device = createDevice(c.device === 'auto' ? 'cpu' : c.device);
  // The tower trains here exactly when it trained in the warm start.
  const model = await ModelRuntime.load(device, options.from, { trainVision: c.model.trainVision });
  const started = performance.now();
  let steps: number;
  try {
    const template = model.folder.chatTemplate;
    if (!template) throw new ChatTemplateError(`${options.from}: the tokenizer has no chat template; agents need one`);
    const tools = new ToolSet(c.tools);
    const reading = {
      template,
      tools,
      images: rolloutImagesFor(model, c),
      ...(c.rollout.templateKwargs ? { templateKwargs: c.rollout.templateKwargs } : {}),
    };
    const sequences: SftSequence[] = [];
    for (const file of typeof c.sft.data === 'string' ? [c.sft.data] : c.sft.data)
      sequences.push(...(await readDemonstrationSequences(loaded.resolve(file), reading)));
    steps = await trainFor(model, loaded, sequences, options);
  } finally {
    model.close();
    await device.close();
  }
  const seconds = (performance.now() - started) / 1000;
  if (options.signal?.aborted)
    throw new Error(
      `the SFT-only baseline was stopped after ${steps} SFT steps (${seconds.toFixed(0)} s); its model so far is in ${options.outDir}, not evaluated`,
    );
  options.log?.(
    `SFT-only baseline: ${steps} more SFT steps in ${seconds.toFixed(0)} s; evaluating ${path.basename(options.outDir)}`,
  );
  const evaluation = await evaluateCheckpoint(loaded, options.outDir);
  return { evaluation, steps, seconds };
}

/** Passes over the demonstrations (reshuffled) at the warm start's final learning rate until the time is spent; saves the model. */
async function trainFor(
  model: ModelRuntime,
  loaded: LoadedConfig,
  sequences: readonly SftSequence[],
  options: SftBaselineOptions,
): Promise<number> {
  const c = loaded.config;
  const batchSize = c.sft!.batchSize;
  const trainer = await SftTrainer.create(model, sftOptions(c));
  const random = Random.fromSeed(c.seed + 99);
  const started = performance.now();
  let steps = 0;
  try {
    const lr = c.sft!.lr * 0.1;
    let order: number[] = [];
    while ((performance.now() - started) / 1000 < options.seconds && !options.signal?.aborted) {
      if (order.length < batchSize) order = random.shuffle(sequences.map((_, i) => i));
      await trainer.step(
        order.splice(0, batchSize).map((i) => sequences[i]),
        lr,
      );
      steps++;
    }
    const trained = await trainer.optimizer.parameters();
    // A frozen vision tower is saved as it was read.
    const frozen = model.baseWeights.some((name) => !trained[name])
      ? readModelWeights(model.folder.checkpoint, model.folder.config)
      : {};
    const weights = { ...frozen, ...trained };
    fs.rmSync(options.outDir, { recursive: true, force: true });
    saveModelFolder(
      options.outDir,
      options.from,
      model.baseWeights.map((name) => ({ name, shape: weights[name].shape, data: weights[name].data as Float32Array })),
    );
  } finally {
    await trainer.release();
  }
  return steps;
}

/** Seconds the RL phase of a run took (rollouts, rewards and updates of every step), from its own metrics: the baseline's budget. */
export function rlSeconds(runDir: string): number {
  return new RunStoreReader(runDir)
    .metrics()
    .records.filter((r) => r.kind === 'train')
    .reduce((sum, r) => sum + (r.values['time/step_s'] as number), 0);
}

/** What the SFT-only baseline is, printed beside its result so that no one reads it as more. */
export const SFT_BASELINE_MEANING =
  '(SFT-only: more SFT on the same imperfect demonstrations, for as long as RL ran — it asks "was RL\'s gain just more training?"; ' +
  'it is not a strong rival: npm run bench:rl compares RL with RFT and with SFT on correct demonstrations at equal budgets)';
