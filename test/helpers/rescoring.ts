/**
 * Generation against training: the scoring graph recomputes the log-probs of sampled turns, and
 * the largest difference to what the policy sampled them with is what a test bounds (token-exact
 * trajectories; a first PPO epoch's ratio of 1).
 */
import type { Device } from '#trainer/foundations/engine/device/device';
import { serializeGraph } from '#trainer/foundations/engine/serialize';
import { packForScoring } from '#trainer/foundations/models/batch';
import type { GeneratedTurn } from '#trainer/foundations/models/generation/policy';
import type { ModelRuntime } from '#trainer/foundations/models/runtime';
import { buildScoringGraph } from '#trainer/foundations/models/scoring';

/** The largest |sampled − recomputed| log-prob over the tokens of `turns[b]`, each scored after `prompts[b]`. */
export async function worstRescoringGap(
  device: Device,
  model: ModelRuntime,
  prompts: readonly (readonly number[])[],
  turns: readonly GeneratedTurn[],
  temperature: number,
): Promise<number> {
  const scoring = buildScoringGraph(model.config, { dtype: 'float32' });
  scoring.graph.output(scoring.logprobs, 'logprobs');
  const sequences = turns.map((turn, b) => [...prompts[b], ...turn.tokens]);
  const packed = packForScoring(
    sequences,
    sequences.map((s, b) => Uint8Array.from(s, (_, t) => (t >= prompts[b].length ? 1 : 0))),
  );
  const session = await device.load({ model: serializeGraph(scoring.graph), settings: {} });
  let recomputed: Float32Array;
  try {
    const out = await device.run(
      session,
      {
        ...packed.feeds,
        ...model.weightFeeds(scoring.weights),
        inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1 / temperature) },
      },
      { logprobs: 'return' },
    );
    recomputed = out.logprobs.data as Float32Array;
  } finally {
    await device.release(session);
  }
  let worst = 0;
  turns.forEach((turn, b) =>
    turn.logprobs.forEach(
      (lp, k) => (worst = Math.max(worst, Math.abs(lp - recomputed[b * packed.length + prompts[b].length + k]))),
    ),
  );
  return worst;
}
