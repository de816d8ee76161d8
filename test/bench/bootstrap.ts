import { Random } from '../../trainer/foundations/models/random';

/**
 * Bootstrap confidence intervals for a benchmark whose arms were scored on the same questions
 * under the same seeds. Scores are a grid `scores[seed][question]` (exact match: 0 or 1).
 *
 * The two sources of variation are crossed: which seeds were run and which questions were drawn.
 * Each resample draws seeds with replacement and, independently, questions with replacement, and
 * takes the mean over the resampled grid — the same (seed, question) cells for both arms of a
 * comparison, so the interval of a difference is paired: a question every arm finds hard moves
 * both arms together and cancels. The interval is the percentile interval of the resampled means.
 */

export interface BootstrapOptions {
  /** Resamples (default 4000). */
  resamples?: number;
  /** The random stream's seed: the same seed gives the same interval (default 1). */
  seed?: number;
  /** Coverage (default 0.95). */
  level?: number;
}

export interface Interval {
  /** The mean over the whole grid (not resampled). */
  mean: number;
  low: number;
  high: number;
}

function checkGrid(grid: readonly (readonly number[])[], what: string): void {
  if (grid.length === 0 || grid[0].length === 0)
    throw new Error(`${what}: expected at least one seed and one question`);
  grid.forEach((row, s) => {
    if (row.length !== grid[0].length)
      throw new Error(`${what}: seed ${s} has ${row.length} questions, seed 0 has ${grid[0].length}`);
    row.forEach((v, q) => {
      if (!Number.isFinite(v)) throw new Error(`${what}: seed ${s}, question ${q}: not a finite score (${v})`);
    });
  });
}

/** The value at fraction `p` of sorted `xs`, by linear interpolation between order statistics. */
function quantile(sorted: readonly number[], p: number): number {
  const position = p * (sorted.length - 1);
  const below = Math.floor(position);
  const above = Math.min(sorted.length - 1, below + 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (position - below);
}

/**
 * The interval of the mean of `a` (one arm), or of `a − b` (two arms scored on the same seeds and
 * questions, paired cell by cell).
 */
export function pairedBootstrap(
  a: readonly (readonly number[])[],
  b?: readonly (readonly number[])[],
  options: BootstrapOptions = {},
): Interval {
  checkGrid(a, 'pairedBootstrap: a');
  if (b) {
    checkGrid(b, 'pairedBootstrap: b');
    if (b.length !== a.length || b[0].length !== a[0].length)
      throw new Error(
        `pairedBootstrap: a is ${a.length} seeds × ${a[0].length} questions, b ${b.length} × ${b[0].length}; a paired comparison needs the same grid`,
      );
  }
  const cells = a.map((row, s) => row.map((v, q) => v - (b ? b[s][q] : 0)));
  const seeds = cells.length;
  const questions = cells[0].length;
  const resamples = options.resamples ?? 4000;
  const level = options.level ?? 0.95;
  if (!(level > 0 && level < 1)) throw new Error(`pairedBootstrap: level must be in (0, 1), got ${level}`);
  const random = Random.fromSeed(options.seed ?? 1);
  const means: number[] = [];
  for (let r = 0; r < resamples; r++) {
    const pickedSeeds = Array.from({ length: seeds }, () => random.nextInt(seeds));
    const pickedQuestions = Array.from({ length: questions }, () => random.nextInt(questions));
    let sum = 0;
    for (const s of pickedSeeds) for (const q of pickedQuestions) sum += cells[s][q];
    means.push(sum / (seeds * questions));
  }
  means.sort((x, y) => x - y);
  const mean = cells.flat().reduce((x, y) => x + y, 0) / (seeds * questions);
  return { mean, low: quantile(means, (1 - level) / 2), high: quantile(means, 1 - (1 - level) / 2) };
}

/** "separated" when the interval excludes 0, with the sign of the difference. */
export function separation(interval: Interval): 'ahead' | 'behind' | 'not separated' {
  if (interval.low > 0) return 'ahead';
  if (interval.high < 0) return 'behind';
  return 'not separated';
}
