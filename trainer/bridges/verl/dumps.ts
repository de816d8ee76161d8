import * as fs from 'node:fs';
import { z } from 'zod';

/**
 * verl's per-step rollout dumps: with `trainer.rollout_data_dir` set, `RayPPOTrainer` writes
 * `<rollout_data_dir>/<step>.jsonl` after each step's update (verl/trainer/ppo/ray_trainer.py,
 * `_log_rollout_data` → `_dump_generations`, verl commit b178a3cd56f58b2d502255daba591e92833930a7):
 * one line per trajectory of the batch, in batch order (a prompt's n samples next to each other),
 *
 *   input   the prompt's token ids decoded with skip_special_tokens=True
 *   output  the response's (every turn after the prompt, tool results included), decoded likewise
 *   gts     the row's reward_model.ground_truth
 *   score   the sum of the token-level scores (the reward the trajectory got)
 *   step    the global step
 *   …       every reward extra info list as long as the batch: what the reward function returned
 *           besides "score" — for the exported reward module `rs_outcome`, `rs_process`,
 *           `rs_row_id`, `rs_answer`, `rs_components` and `rs_calls` (JSON text)
 *
 * The whole file is written at once (`open(filename, "w")`, then one `write`).
 */
export const VerlDumpLine = z.looseObject({
  input: z.string(),
  output: z.string(),
  gts: z.unknown().optional(),
  score: z.number().nullable(),
  step: z.number().int().nonnegative(),
  rs_outcome: z.number().optional(),
  rs_process: z.number().optional(),
  rs_row_id: z.string().optional(),
  rs_answer: z.string().optional(),
  rs_components: z.string().optional(),
  rs_calls: z.string().optional(),
});
export type VerlDumpLine = z.infer<typeof VerlDumpLine>;

/** `12.jsonl` → 12; anything else → undefined. */
export function dumpStep(fileName: string): number | undefined {
  const match = /^(\d+)\.jsonl$/.exec(fileName);
  return match ? Number(match[1]) : undefined;
}

export class VerlImportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VerlImportError';
  }
}

/** The lines of one dump file, each checked; errors name the file and line. */
export function readDumpFile(file: string): VerlDumpLine[] {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const out: VerlDumpLine[] = [];
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new VerlImportError(`${file}:${i + 1}: not valid JSON (${(error as Error).message})`);
    }
    const parsed = VerlDumpLine.safeParse(value);
    if (!parsed.success)
      throw new VerlImportError(
        `${file}:${i + 1}: not a verl rollout dump line: ${parsed.error.issues.map((x) => `${x.path.join('.') || '(root)'}: ${x.message}`).join('; ')}`,
      );
    out.push(parsed.data);
  });
  return out;
}

/**
 * verl's file logger (verl/utils/tracking.py, FileLogger): `$VERL_FILE_LOGGER_PATH`, or
 * `$VERL_FILE_LOGGER_ROOT/<project>/<experiment>.jsonl`; one line per `log(data, step)`:
 * `{"step": N, "data": {"actor/pg_loss": …, "critic/score/mean": …, "val-core/…": …}}`
 * (orjson with numpy support: NaN becomes null).
 */
export const VerlMetricsLine = z.object({
  step: z.number().int().nonnegative(),
  data: z.record(z.string(), z.unknown()),
});
export type VerlMetricsLine = z.infer<typeof VerlMetricsLine>;
