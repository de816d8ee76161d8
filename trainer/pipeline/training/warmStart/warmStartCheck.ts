import type { HealthWarning } from '../../../contract/protocol/runStore';
import type { DemonstrationScore } from '../../rl/demonstrationCheck';
import type { SftSequence } from '../../rl/sft';

/**
 * The warm start's check, in words: which demonstrations it reads, how a result reads in the
 * log, and the warning when the warm start ends with a model that still cannot write its
 * demonstrations' tool calls.
 *
 * Why it exists: the tutorial's warm start (3 epochs) ended with the `to` argument of one question
 * form wrong in 42 of 56 held-out calls, at a loss of 0.05 that looked done; 12 epochs got all 56
 * right. RL cannot repair such a slot from its own samples when each group's calls are wrong alike.
 */

/** Below this share of reproduced calls the warm start ends with a warning. */
export const CALLS_REPRODUCED_WARNING = 0.9;

/** A held-out check never takes more than this share of a file's demonstrations from training. */
const MAX_HELD_OUT_SHARE = 0.2;

export interface CheckSplit {
  trained: SftSequence[];
  checked: SftSequence[];
}

/**
 * The demonstrations the check reads: up to `count`, evenly spaced through the file; held out of
 * training when `holdOut` (at most a fifth of the file), checked among the trained ones otherwise.
 */
export function splitForCheck(sequences: readonly SftSequence[], count: number, holdOut: boolean): CheckSplit {
  const n = Math.min(count, holdOut ? Math.floor(sequences.length * MAX_HELD_OUT_SHARE) : sequences.length);
  if (n <= 0) return { trained: [...sequences], checked: [] };
  const picked = new Set(Array.from({ length: n }, (_, i) => Math.floor(((i + 0.5) * sequences.length) / n)));
  const checked = sequences.filter((_, i) => picked.has(i));
  return { trained: holdOut ? sequences.filter((_, i) => !picked.has(i)) : [...sequences], checked };
}

const percent = (right: number, total: number) => `${Math.round((100 * right) / Math.max(1, total))} %`;

/** "tool calls 12 of 32 (38 %), other turns 30 of 32 (94 %), loss 0.051" */
export function describeScore(score: DemonstrationScore): string {
  const parts: string[] = [];
  const { callTurns: c, textTurns: t } = score;
  if (c.total) parts.push(`tool calls ${c.right} of ${c.total} (${percent(c.right, c.total)})`);
  if (t.total)
    parts.push(`${c.total ? 'other turns' : 'turns'} ${t.right} of ${t.total} (${percent(t.right, t.total)})`);
  parts.push(`loss ${score.loss.toFixed(3)}`);
  return parts.join(', ');
}

/** The metrics an `sft` record carries for a check. */
export function checkValues(score: DemonstrationScore): Record<string, number> {
  const share = ({ right, total }: { right: number; total: number }) => right / total;
  return {
    ...(score.callTurns.total ? { 'sft/check_calls': share(score.callTurns) } : {}),
    ...(score.textTurns.total ? { 'sft/check_turns': share(score.textTurns) } : {}),
    'sft/check_loss': score.loss,
  };
}

/**
 * The warning for a warm start that ends short of its demonstrations' calls, with the first call
 * it gets wrong (`decode` turns token ids into text) and whether the last epoch still helped.
 */
export function warmStartWarning(
  last: DemonstrationScore,
  previous: DemonstrationScore | undefined,
  decode: (ids: readonly number[]) => string,
  heldOut: boolean,
): HealthWarning | undefined {
  const { right, total } = last.callTurns;
  if (total === 0 || right / total >= CALLS_REPRODUCED_WARNING) return undefined;
  const which = heldOut ? 'held-out demonstrations' : 'checked demonstrations';
  const before = previous?.callTurns.total
    ? ` (${percent(previous.callTurns.right, previous.callTurns.total)} an epoch earlier)`
    : '';
  const miss = last.firstCallMiss;
  const example = miss
    ? `; the first miss${miss.source ? ` (${miss.source})` : ''}: after \`…${tail(decode(miss.expected.slice(0, -1)))}\` the demonstration writes \`${decode(miss.expected.slice(-1))}\`, the model \`${decode(miss.wrote.slice(-1))}\``
    : '';
  const rising = previous !== undefined && right > previous.callTurns.right;
  return {
    code: 'warm_start_calls',
    severity: 'warn',
    message: `the warm start writes ${right} of the ${total} tool calls of its ${which} token for token (${percent(right, total)})${before}${example}`,
    advice: `${rising ? 'it was still improving: ' : ''}raise sft.epochs (or sft.lr), or add demonstrations of the calls it misses — RL starts from this policy, and a call it cannot yet write gives groups that are all wrong alike`,
  };
}

/** The last characters of a turn on one line, enough to show the argument a miss is in. */
function tail(text: string, length = 40): string {
  const line = text.replace(/\s+/g, (run) => (run.includes('\n') ? ' ' : run));
  return line.length <= length ? line : line.slice(line.length - length);
}
