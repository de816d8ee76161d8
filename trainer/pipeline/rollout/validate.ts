import type { Trajectory } from './trajectory';

/** A trajectory broke an invariant the trainer relies on: a bug in the loop or the policy, never the model's fault. */
export class TrajectoryInvariantError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TrajectoryInvariantError';
  }
}

/**
 * Checks what training relies on before anything trains on a trajectory: the per-token arrays
 * are aligned; the mask is 0/1 and starts with the prompt; log-probs are finite and ≤ 0 on
 * policy tokens and 0 elsewhere; turns partition the sequence, generated turns are all policy
 * tokens and other turns none; every call ends on a policy token of its own turn. Cheap (one
 * pass), so the loop runs it on every trajectory it returns.
 */
export function checkTrajectory(t: Trajectory<object>): void {
  const fail = (what: string): never => {
    throw new TrajectoryInvariantError(`trajectory ${t.index} (row ${t.rowId}): ${what}`);
  };
  const n = t.ids.length;
  for (const [name, array] of [
    ['mask', t.mask],
    ['logprobs', t.logprobs],
    ['entropies', t.entropies],
  ] as const) {
    if (array.length !== n) fail(`${name} has ${array.length} entries for ${n} tokens`);
  }
  if (t.promptLength < 1 || t.promptLength > n) fail(`promptLength ${t.promptLength} is outside 1..${n}`);
  for (let i = 0; i < n; i++) {
    const m = t.mask[i];
    if (m !== 0 && m !== 1) fail(`mask[${i}] is ${m}`);
    if (i < t.promptLength && m) fail(`token ${i} is in the prompt but marked as generated`);
    const lp = t.logprobs[i];
    if (m ? !(Number.isFinite(lp) && lp <= 0) : lp !== 0)
      fail(`logprobs[${i}] is ${lp} on a ${m ? 'policy' : 'context'} token`);
    if (!Number.isInteger(t.ids[i]) || t.ids[i] < 0) fail(`ids[${i}] is ${t.ids[i]}`);
  }
  let cursor = 0;
  t.turns.forEach((turn, k) => {
    if (turn.index !== k) fail(`turns[${k}] has index ${turn.index}`);
    if (turn.tokenStart !== cursor || turn.tokenEnd <= turn.tokenStart)
      fail(
        `turns[${k}] covers [${turn.tokenStart}, ${turn.tokenEnd}), expected to start at ${cursor} and be non-empty`,
      );
    // Generated turns (an assistant message in the prompt is context, not generated).
    const generated = turn.assistantTurn !== undefined;
    if (generated && turn.role !== 'assistant') fail(`turns[${k}] is generated but has role ${turn.role}`);
    for (let i = turn.tokenStart; i < turn.tokenEnd; i++) {
      if (t.mask[i] !== (generated ? 1 : 0)) fail(`token ${i} of ${turn.role} turn ${k} has mask ${t.mask[i]}`);
    }
    for (const call of turn.calls ?? []) {
      if (call.turnIndex !== k) fail(`a call on turn ${k} says it belongs to turn ${call.turnIndex}`);
      if (call.tokenEnd < turn.tokenStart || call.tokenEnd >= turn.tokenEnd)
        fail(`call ${call.index} of turn ${k} ends on token ${call.tokenEnd}, outside its turn`);
    }
    cursor = turn.tokenEnd;
  });
  if (cursor !== n) fail(`turns cover ${cursor} of ${n} tokens`);
  const inTurns = t.turns.reduce((a, turn) => a + (turn.calls?.length ?? 0), 0);
  if (inTurns !== t.calls.length) fail(`${t.calls.length} calls listed, ${inTurns} on turns`);
}
