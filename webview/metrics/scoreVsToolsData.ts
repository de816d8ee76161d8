import type { RunMetrics } from './store';

const CALLS = 'tools/calls_per_trajectory';

/** One held-out evaluation: its tool use and its score. */
export interface EvaluationPoint {
  step: number;
  calls: number;
  score: number;
}

/** Per run, its evaluations that recorded both the task score and the tool calls per trajectory, in step order. */
export function scoreVsToolCalls(
  runs: readonly RunMetrics[],
): Array<{ run: RunMetrics; metric: string; points: EvaluationPoint[] }> {
  return runs.map((run) => {
    const metric = run.run.metric ?? 'exact_match';
    const scores = run.values.get(`score/${metric}`);
    const calls = run.values.get(CALLS);
    const points: EvaluationPoint[] = [];
    run.steps.forEach((step, i) => {
      const score = scores?.[i];
      const call = calls?.[i];
      if (run.kinds[i] === 'eval' && score !== null && score !== undefined && call !== null && call !== undefined)
        points.push({ step, calls: call, score });
    });
    return { run, metric, points: points.sort((a, b) => a.step - b.step) };
  });
}
