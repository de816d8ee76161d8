import type { MetricsRecord } from '../../../contract/protocol/runStore';
import { DemonstrationCheck, type DemonstrationScore } from '../../rl/demonstrationCheck';
import { SftTrainer } from '../../rl/sft';
import type { Random } from '../../../foundations/models/random';
import { sftOptions, sftSchedule } from '../config/configOptions';
import { readDemonstrationSequences } from './demonstrationSequences';
import { finiteValues } from '../step/rolloutMetrics';
import type { RunParts } from '../run/runParts';
import { learningRate } from '../step/schedule';
import { checkValues, describeScore, splitForCheck, warmStartWarning, type CheckSplit } from './warmStartCheck';

/**
 * The supervised warm start: the demonstration files (a curriculum, trained in order) tokenised
 * as the agent loop lays out a rollout, trained under one learning-rate schedule over the whole
 * curriculum; each optimizer step recorded as an `sft` metric. After each epoch a check
 * (`sft.check`, warmStartCheck.ts) counts the demonstrations' turns the model writes token for
 * token, and the warm start ends with a warning when its calls are still short.
 */
export async function warmStart(parts: RunParts, random: Random): Promise<void> {
  const sft = parts.config.sft!;
  const stages = await readStages(parts);
  const trainer = await SftTrainer.create(parts.model, sftOptions(parts.config));
  const check = new DemonstrationCheck(parts.model, parts.config.optimization.microBatchSize);
  // Step numbers run on across files and epochs.
  const total = stages.reduce((n, s) => n + Math.ceil(s.split.trained.length / sft.batchSize) * sft.epochs, 0);
  const schedule = sftSchedule(parts.config);
  const records = new StepRecords(parts);
  const onStep = (s: number, loss: number) => {
    parts.report.progress(0, 'sft', s, total);
    records.step({
      step: s,
      time: new Date().toISOString(),
      kind: 'sft',
      ...finiteValues({ 'loss/sft': loss, lr: learningRate(schedule, s - 1, total) }),
    });
    if (s % Math.max(1, Math.floor(total / 10)) === 0 || s === total)
      parts.report.log(`sft step ${s}/${total}: loss ${loss.toFixed(4)}`);
  };
  const stopping = () => parts.control.stopping;
  let scores: DemonstrationScore[] = [];
  try {
    for (const { file, split } of stages) {
      scores = [];
      for (let epoch = 0; epoch < sft.epochs && !stopping(); epoch++) {
        await trainer.epoch(split.trained, (s) => learningRate(schedule, s, total), random, onStep, stopping);
        if (split.checked.length === 0 || stopping()) continue;
        const score = await check.score(split.checked);
        scores.push(score);
        records.amend((r) => withCheck(r, score));
        logCheck(parts, `${file}, epoch ${epoch + 1}/${sft.epochs}`, score);
      }
    }
    if (stopping())
      parts.report.log(
        `warm start stopped after sft step ${trainer.optimizer.steps}/${total}; a half warm-started model is not checkpointed`,
      );
    else records.amend((r) => withWarning(parts, r, scores));
  } finally {
    records.flush();
    await check.release();
    await trainer.release();
  }
}

/** Each demonstrations file as token sequences, split into those trained and those checked. */
async function readStages(parts: RunParts): Promise<{ file: string; split: CheckSplit }[]> {
  const sft = parts.config.sft!;
  const kwargs = parts.config.rollout.templateKwargs;
  const reading = {
    template: parts.template,
    tools: parts.tools,
    images: parts.images,
    ...(kwargs ? { templateKwargs: kwargs } : {}),
  };
  const stages: { file: string; split: CheckSplit }[] = [];
  for (const file of typeof sft.data === 'string' ? [sft.data] : sft.data) {
    const sequences = await readDemonstrationSequences(parts.loaded.resolve(file), reading);
    stages.push({ file, split: splitForCheck(sequences, sft.check, sft.holdOut) });
  }
  return stages;
}

/**
 * The sft step records, each held until the next step: a check after an epoch adds its values
 * (and the warm start's warning) to the epoch's last step, since a run records each step once.
 */
class StepRecords {
  private pending: MetricsRecord | undefined;

  constructor(private readonly parts: RunParts) {}

  step(record: MetricsRecord): void {
    this.flush();
    this.pending = record;
  }

  amend(change: (record: MetricsRecord) => MetricsRecord): void {
    if (this.pending) this.pending = change(this.pending);
  }

  flush(): void {
    if (this.pending) this.parts.report.metrics(this.pending);
    this.pending = undefined;
  }
}

/** The step's record with the check's values added. */
function withCheck(record: MetricsRecord, score: DemonstrationScore): MetricsRecord {
  const check = finiteValues(checkValues(score));
  const nonFinite = [...(record.nonFinite ?? []), ...(check.nonFinite ?? [])];
  return { ...record, values: { ...record.values, ...check.values }, ...(nonFinite.length ? { nonFinite } : {}) };
}

function logCheck(parts: RunParts, where: string, score: DemonstrationScore): void {
  const which = parts.config.sft!.holdOut ? 'held out' : 'trained on';
  parts.report.log(
    `sft check (${where}, ${score.demonstrations} demonstrations ${which}, written token for token): ${describeScore(score)}`,
  );
}

/** The last file's last check, against the epoch before it: the record with a warning when its calls are short. */
function withWarning(parts: RunParts, record: MetricsRecord, scores: readonly DemonstrationScore[]): MetricsRecord {
  const last = scores.at(-1);
  if (!last) return record;
  const decode = (ids: readonly number[]) => parts.model.tokenizer.decode(ids);
  const warning = warmStartWarning(last, scores.at(-2), decode, parts.config.sft!.holdOut);
  if (!warning) return record;
  parts.report.log(`warning (warm start): ${warning.message} — try: ${warning.advice}`);
  return { ...record, warnings: [...(record.warnings ?? []), warning] };
}
