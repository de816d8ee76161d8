/**
 * Ratios that survive a noisy machine: our repetitions and the peer's run in alternating pairs
 * (ours then peer, then peer then ours, …) and each pair gives one ratio. Load that drifts over
 * the run hits both members of a pair alike, so the median of the per-pair ratios moves far
 * less than a ratio of two medians measured minutes apart. The spread (quartiles and extremes)
 * says how much the machine moved.
 */

export interface Spread {
  median: number;
  /** 25th and 75th percentiles. */
  q1: number;
  q3: number;
  min: number;
  max: number;
  values: number[];
}

export function spread(values: readonly number[]): Spread {
  if (values.length === 0) throw new Error('spread of no values');
  const s = [...values].sort((a, b) => a - b);
  const at = (p: number) => {
    const i = p * (s.length - 1);
    const lo = Math.floor(i);
    return s[lo] + (s[Math.min(lo + 1, s.length - 1)] - s[lo]) * (i - lo);
  };
  return { median: at(0.5), q1: at(0.25), q3: at(0.75), min: s[0], max: s[s.length - 1], values: [...values] };
}

export function median(values: readonly number[]): number {
  return spread(values).median;
}

/** `RESULT name=median q1=… q3=… min=… max=… n=…`: the machine-readable line of a paired ratio. */
export function resultLine(name: string, s: Spread, digits = 3): string {
  const f = (x: number) => x.toFixed(digits);
  return `RESULT ${name}=${f(s.median)} q1=${f(s.q1)} q3=${f(s.q3)} min=${f(s.min)} max=${f(s.max)} n=${s.values.length}`;
}

/** "1.234 (quartiles 1.200–1.250, range 1.100–1.300, n=7)" */
export function formatSpread(s: Spread, digits = 3): string {
  const f = (x: number) => x.toFixed(digits);
  return `${f(s.median)} (quartiles ${f(s.q1)}–${f(s.q3)}, range ${f(s.min)}–${f(s.max)}, n=${s.values.length})`;
}

export interface PairedResult {
  ours: Spread;
  peer: Spread;
  /** ratio(ours, peer) of each pair. */
  ratio: Spread;
  /** The same ratio with each side's wall time replaced by the CPU time its process used (when asked for). */
  cpuRatio?: Spread;
}

/** Cumulative CPU seconds of this process (every thread: onnxruntime runs in it). */
export function ownCpuSeconds(): number {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1e6;
}

export interface PairOptions {
  pairs: number;
  warmup?: number;
  /** What the measurements are: durations (lower is better) or rates such as tokens/s. */
  kind: 'seconds' | 'rate';
  unit: string;
  /**
   * Cumulative CPU-second counters of both processes. On a loaded machine the wall clock also
   * measures how much of a core the scheduler gave each process; the CPU-time ratio does not
   * (though threads that spin while waiting count as working).
   */
  cpu?: { ours: () => number; peer: () => number };
  /** Called after each timed pair, outside the timings. */
  onPair?: (ours: number, peer: number) => Promise<void> | void;
}

/**
 * `pairs` alternating pairs after `warmup` unpaired rounds of each. `ours` and `peer` return
 * a measurement (seconds or a rate); `ratio` turns a pair into the reported ratio.
 */
export async function interleavedPairs(
  label: string,
  options: PairOptions,
  ours: () => Promise<number>,
  peer: () => Promise<number>,
  ratio: (ours: number, peer: number) => number,
): Promise<PairedResult> {
  for (let i = 0; i < (options.warmup ?? 1); i++) {
    await ours();
    await peer();
  }
  // A measurement with its wall time replaced by CPU time: seconds scale with time, rates inversely.
  const measure = async (run: () => Promise<number>, cpu?: () => number) => {
    const cpu0 = cpu?.() ?? 0;
    const t0 = performance.now();
    const value = await run();
    const wall = (performance.now() - t0) / 1000;
    const used = cpu ? cpu() - cpu0 : wall;
    return { value, onCpu: options.kind === 'seconds' ? value * (used / wall) : value * (wall / used) };
  };
  const o: number[] = [];
  const p: number[] = [];
  const r: number[] = [];
  const c: number[] = [];
  for (let i = 0; i < options.pairs; i++) {
    let a: Awaited<ReturnType<typeof measure>>;
    let b: Awaited<ReturnType<typeof measure>>;
    if (i % 2 === 0) {
      a = await measure(ours, options.cpu?.ours);
      b = await measure(peer, options.cpu?.peer);
    } else {
      b = await measure(peer, options.cpu?.peer);
      a = await measure(ours, options.cpu?.ours);
    }
    o.push(a.value);
    p.push(b.value);
    r.push(ratio(a.value, b.value));
    if (options.cpu) c.push(ratio(a.onCpu, b.onCpu));
    const cpuText = options.cpu ? ` (on CPU time ${c[c.length - 1].toFixed(3)})` : '';
    console.log(
      `  ${label} pair ${i + 1}/${options.pairs}: ours ${a.value.toFixed(3)} ${options.unit}, peer ${b.value.toFixed(3)} ${options.unit}, ratio ${r[r.length - 1].toFixed(3)}${cpuText}`,
    );
    await options.onPair?.(a.value, b.value);
  }
  return { ours: spread(o), peer: spread(p), ratio: spread(r), ...(options.cpu ? { cpuRatio: spread(c) } : {}) };
}

/** Seconds one call of `fn` takes. */
export async function seconds(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

/**
 * The fastest of several settings of one side (thread counts, flash attention, …): each probe
 * runs once to warm up and `reps` times measured; prints every setting's median. `higher`:
 * the probe returns a rate (tokens/s) rather than seconds. A setting whose warm-up took over
 * four times as long as the best setting's warm-up is not measured further (on a loaded machine
 * a spinning thread pool can be 30× slower, and probing it would take minutes). Warm-ups are
 * compared with warm-ups: a first call that also builds and packs a session is slower than its
 * probes by that much for every setting, and must not count against the second setting only.
 */
export async function pickFastest<T extends { name: string }>(
  label: string,
  candidates: readonly T[],
  probe: (candidate: T) => Promise<number>,
  options: { reps?: number; higher: boolean },
): Promise<T> {
  let best: T | undefined;
  let bestValue = 0;
  let bestWarmup = Infinity;
  for (const candidate of candidates) {
    const warmup = await seconds(() => probe(candidate));
    if (best && warmup > 4 * bestWarmup) {
      console.log(
        `  ${label}, ${candidate.name}: skipped (its warm-up took ${warmup.toFixed(1)} s, over 4× the best setting's)`,
      );
      continue;
    }
    const values: number[] = [];
    for (let i = 0; i < (options.reps ?? 2); i++) values.push(await probe(candidate));
    const value = median(values);
    console.log(`  ${label}, ${candidate.name}: probe ${value.toFixed(3)}`);
    if (!best || (options.higher ? value > bestValue : value < bestValue)) {
      best = candidate;
      bestValue = value;
      bestWarmup = warmup;
    }
  }
  console.log(`  ${label}: best setting ${best!.name}`);
  return best!;
}
