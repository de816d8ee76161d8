import type { RunMetrics } from './store';

const CALLS = 'tools/calls_per_trajectory';

/** One held-out evaluation: its tool use and its score. */
export interface EvaluationPoint {
  step: number;
  calls: number;
  score: number;
}

/** A run's evaluations that recorded both its task score (`metric`) and its tool calls per trajectory. */
export interface RunScoreVsCalls {
  run: RunMetrics;
  metric: string;
  points: EvaluationPoint[];
}

/** Per run, its evaluations that recorded both the task score and the tool calls per trajectory, in step order. */
export function scoreVsToolCalls(runs: readonly RunMetrics[]): RunScoreVsCalls[] {
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
