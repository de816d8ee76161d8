import type { MetricsRecord } from '../../contract/protocol/runStore';
import { SftTrainer, type SftSequence } from '../rl/sft';
import type { Random } from '../../foundations/models/random';
import { sftOptions, sftSchedule } from './configOptions';
import { readDemonstrationSequences } from './demonstrationSequences';
import { finiteValues } from './rolloutMetrics';
import type { RunParts } from './runParts';
import { learningRate } from './schedule';

/**
 * The supervised warm start: the demonstration files (a curriculum, trained in order) tokenised
 * as the agent loop lays out a rollout, trained under one learning-rate schedule over the whole
 * curriculum; each optimizer step recorded as an `sft` metric.
 */
export async function warmStart(parts: RunParts, random: Random): Promise<void> {
  const sft = parts.config.sft!;
  const stages: SftSequence[][] = [];
  const kwargs = parts.config.rollout.templateKwargs;
  const reading = {
    template: parts.template,
    tools: parts.tools,
    images: parts.images,
    ...(kwargs ? { templateKwargs: kwargs } : {}),
  };
  for (const file of typeof sft.data === 'string' ? [sft.data] : sft.data)
    stages.push(await readDemonstrationSequences(parts.loaded.resolve(file), reading));
  const trainer = await SftTrainer.create(parts.model, sftOptions(parts.config));
  // Step numbers run on across files and epochs.
  const total = stages.reduce((n, sequences) => n + Math.ceil(sequences.length / sft.batchSize) * sft.epochs, 0);
  const schedule = sftSchedule(parts.config);
  const onStep = (s: number, loss: number) => {
    parts.report.progress(0, 'sft', s, total);
    const record: MetricsRecord = {
      step: s,
      time: new Date().toISOString(),
      kind: 'sft',
      ...finiteValues({ 'loss/sft': loss, lr: learningRate(schedule, s - 1, total) }),
    };
    parts.report.metrics(record);
    if (s % Math.max(1, Math.floor(total / 10)) === 0 || s === total)
      parts.report.log(`sft step ${s}/${total}: loss ${loss.toFixed(4)}`);
  };
  const stopping = () => parts.control.stopping;
  try {
    for (const sequences of stages) {
      for (let epoch = 0; epoch < sft.epochs && !stopping(); epoch++) {
        await trainer.epoch(sequences, (s) => learningRate(schedule, s, total), random, onStep, stopping);
      }
    }
    if (stopping())
      parts.report.log(
        `warm start stopped after sft step ${trainer.optimizer.steps}/${total}; a half warm-started model is not checkpointed`,
      );
  } finally {
    await trainer.release();
  }
}
