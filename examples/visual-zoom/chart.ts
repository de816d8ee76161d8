/**
 * The visual-zoom example's chart, drawn from the runs' own metrics: for each run given (one per
 * seed), held-out exact match at each evaluation and the training batches' exact match by GRPO
 * step; and the baselines, averaged over the runs — the warm start, the SFT-only baseline (from
 * each run's sft-only-baseline.json, written by demo.ts) and chance (one colour in four).
 *
 *   npx tsx examples/visual-zoom/chart.ts RUN_DIR... [--out examples/visual-zoom/curve.svg]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { RunStoreReader } from '../../trainer/contract/runstore';
import { rlChartSvg } from '../../test/bench/rlChart';
import { BASELINE_FILE, type BaselineResult } from './demo';

const SCORE = 'score/exact_match';

function meanStd(values: readonly number[]): { mean: number; std: number } {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  // Sample standard deviation (n − 1), as the RL benchmark reports it; 0 for one run.
  const std = values.length > 1 ? Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (values.length - 1)) : 0;
  return { mean, std };
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { out: { type: 'string', default: path.join(__dirname, 'curve.svg') } },
  });
  if (positionals.length === 0) throw new Error('usage: chart.ts RUN_DIR... [--out FILE]');
  const runs = positionals.map((dir) => {
    const reader = new RunStoreReader(dir);
    const records = reader.metrics().records;
    const pick = (kind: string) =>
      new Map(
        records
          .filter((r) => r.kind === kind && typeof r.values[SCORE] === 'number')
          .map((r) => [r.step, r.values[SCORE] as number]),
      );
    const baselineFile = path.join(dir, BASELINE_FILE);
    if (!fs.existsSync(baselineFile)) throw new Error(`${baselineFile}: missing; run demo.ts without --no-baseline`);
    return {
      seed: reader.run().seed,
      evals: pick('eval'),
      train: pick('train'),
      baseline: JSON.parse(fs.readFileSync(baselineFile, 'utf8')) as BaselineResult,
    };
  });
  const steps = Math.max(...runs.flatMap((r) => [...r.train.keys()]));
  const across = (get: (r: (typeof runs)[number]) => number | undefined) =>
    runs.map(get).filter((v): v is number => v !== undefined);
  // One line per seed: with few seeds and outcomes far apart, a mean ± std would hide which run did what.
  const series = runs.map((r) => ({
    name: `GRPO, seed ${r.seed}`,
    heldout: [...r.evals.entries()].sort(([a], [b]) => a - b).map(([step, mean]) => ({ step, mean, std: 0 })),
    training: [...r.train.entries()].sort(([a], [b]) => a - b).map(([step, mean]) => ({ step, mean })),
  }));
  const warm = meanStd(across((r) => r.evals.get(0)));
  const sftOnly = meanStd(across((r) => r.baseline.score));
  const svg = rlChartSvg(
    series,
    [
      { name: 'warm start (mean)', value: warm.mean },
      { name: 'SFT-only, same extra time (mean)', value: sftOnly.mean, std: sftOnly.std },
      { name: 'chance', value: 0.25 },
    ],
    {
      steps,
      panelTitles: ['Held-out exact match (greedy), per seed', 'Training-batch exact match (sampled), per seed'],
      title:
        'visual-zoom: held-out exact match of a tiny Qwen2-VL (from scratch) — GRPO with the zoom tool vs SFT only',
      note: `${runs.length} runs (seeds), 64 held-out pictures, greedy decoding; the SFT-only baseline trains for as long as each run's GRPO phase took. Drawn by chart.ts from the runs' metrics.`,
    },
  );
  fs.writeFileSync(values.out!, svg);
  const last = meanStd(across((r) => r.evals.get(steps)));
  console.log(
    `wrote ${values.out}: held-out at step 0 ${(100 * warm.mean).toFixed(1)}±${(100 * warm.std).toFixed(1)}, at step ${steps} ${(100 * last.mean).toFixed(1)}±${(100 * last.std).toFixed(1)}; SFT-only ${(100 * sftOnly.mean).toFixed(1)}±${(100 * sftOnly.std).toFixed(1)} (mean ± std over ${runs.length} runs)`,
  );
}

main();
