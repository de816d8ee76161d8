import type { HealthWarning } from '../../../contract/protocol/runStore';

/** A warning kind that has been printed and is still being seen. */
interface Ongoing {
  lastPrinted: number;
  lastSeen: number;
  /** Steps it was seen since it was last printed (the printed step not counted). */
  seenSincePrinted: number;
}

/**
 * The terminal's view of the training steps' health warnings: a kind once when it starts, then a
 * reminder every `remindEvery` steps while it lasts, instead of the same line every step (the
 * forecast task's 40 steps printed 80 warning lines, two a step, and a user stops reading them). A
 * kind not seen for `remindEvery` steps is forgotten; when it comes back it is printed as new. A
 * collapse is always printed. metrics.jsonl, the Metrics panel and the status bar keep every
 * step's warnings: this decides only what the log says.
 */
export class WarningLog {
  private readonly ongoing = new Map<string, Ongoing>();

  constructor(
    private readonly log: (line: string) => void,
    private readonly remindEvery = 10,
  ) {}

  step(step: number, warnings: readonly HealthWarning[]): void {
    for (const [code, o] of this.ongoing) if (step - o.lastSeen > this.remindEvery) this.ongoing.delete(code);
    for (const w of warnings) {
      const o = this.ongoing.get(w.code);
      if (w.severity === 'critical' || o === undefined) {
        this.log(warningLine(step, w));
        this.ongoing.set(w.code, { lastPrinted: step, lastSeen: step, seenSincePrinted: 0 });
      } else if (step - o.lastPrinted >= this.remindEvery) {
        const seen = `seen at ${o.seenSincePrinted + 1} of the ${step - o.lastPrinted} steps since step ${o.lastPrinted}`;
        this.log(warningLine(step, w, `still, ${seen}`));
        Object.assign(o, { lastPrinted: step, lastSeen: step, seenSincePrinted: 0 });
      } else {
        o.lastSeen = step;
        o.seenSincePrinted += 1;
      }
    }
  }
}

/** "warning at step 12: 88 % of the groups had all-equal rewards … — try: raise rollout.temperature …" */
export function warningLine(step: number, w: HealthWarning, note?: string): string {
  const what = w.severity === 'critical' ? 'COLLAPSE' : 'warning';
  return `${what} at step ${step}${note ? ` (${note})` : ''}: ${w.message} — try: ${w.advice}`;
}

/** Every warning, one line each: for the held-out evaluations' warnings, which are few and each news. */
export function logWarnings(log: (line: string) => void, step: number, warnings: readonly HealthWarning[]): void {
  for (const w of warnings) log(warningLine(step, w));
}
