import type { DatasetRow } from '../../../foundations/data/row';
import type { GeneratedTurn, SamplingOptions } from '../../../foundations/models/generation/policy';
import { ModelPolicy } from '../../../foundations/models/generation/generationSession';
import type { ModelRuntime } from '../../../foundations/models/runtime';
import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
import type { TrajectoryRecord } from '../../../contract/protocol/runStore';
import { decodeFloat32, decodeInt32 } from '../../../contract/protocol/tokens';
import type { SessionReplay } from '../../rollout/gateway/gatewayRollout';
import { generatedTurns, type CutPoint } from '../../rollout/restoreState';
import type { Trajectory } from '../../rollout/trajectory';
import { agentRollouts, agentRunner } from '../run/agentRollouts';
import { rolloutImagesFor } from '../config/configOptions';
import type { LoadedConfig } from '../config/trainingConfig';

/**
 * Re-rolls of a run of an agent we did not write (the config's `agent`, rollout/gateway). The
 * agent's own code holds its loop and tools, so its state at a turn cannot be restored from the
 * record as the built-in loop's is (restoreState.ts): the agent is run again from the start, and
 * its requests are answered with the recorded answers — token for token, as sampled — up to the
 * chosen turn, then sampled live. An agent that, given the same answers, sends the same requests
 * (most do: their tools are functions of the calls) rebuilds the recorded prefix exactly; one
 * that does not shows where in the branch's `firstDivergence`, and the log says so.
 *
 * A session that split (the agent rewrote its history) replays its earlier parts too; the branch
 * is the part of the session the parent was, or the session's last when it split less often.
 */

export class AgentRerollError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AgentRerollError';
  }
}

export interface AgentRerollParts {
  batch: readonly TrajectoryRecord[];
  parent: TrajectoryRecord;
  row: DatasetRow;
  model: ModelRuntime;
  template: ChatTemplate;
}

/** Refuses what an agent's re-roll cannot do: its tools are the agent's, so their results are neither run again nor edited here. */
export function checkAgentCut(parent: TrajectoryRecord, cut: CutPoint, edits: readonly unknown[]): void {
  if (!parent.agent)
    throw new AgentRerollError(
      `trajectory ${parent.index} of step ${parent.step} was not rolled out by the config's agent; the config changed since the run`,
    );
  if (cut.at !== 'start')
    throw new AgentRerollError(
      "a run of your own agent is re-rolled from the start of a turn (at: start): the agent runs its tools itself, so a call's result cannot be run again from here",
    );
  if (edits.length)
    throw new AgentRerollError(
      "edits are not available for a run of your own agent: its tool results and messages come from the agent's code",
    );
}

/** The answers a session's records hold, in the order the agent asked for them, up to the parent's cut. */
export function recordedAnswers(
  batch: readonly TrajectoryRecord[],
  parent: TrajectoryRecord,
  cut: CutPoint,
): Omit<GeneratedTurn, 'sequence'>[] {
  const parts = batch
    .filter((r) => r.agent?.session === parent.agent!.session && r.agent.part <= parent.agent!.part)
    .sort((a, b) => a.agent!.part - b.agent!.part);
  return parts.flatMap((record) => {
    const turns = generatedTurns(record);
    const kept = record === parent ? turns.slice(0, cut.turn) : turns;
    const ids = decodeInt32(record.tokens.ids);
    const logprobs = decodeFloat32(record.tokens.logprobs);
    const entropies = record.tokens.entropies ? decodeFloat32(record.tokens.entropies) : undefined;
    return kept.map((turn) => {
      const tokens = Array.from(ids.subarray(turn.tokenStart, turn.tokenEnd));
      return {
        tokens,
        logprobs: Array.from(logprobs.subarray(turn.tokenStart, turn.tokenEnd)),
        entropies: entropies ? Array.from(entropies.subarray(turn.tokenStart, turn.tokenEnd)) : tokens.map(() => 0),
        finish: turn.finish === 'length' ? 'length' : 'stop_token',
      };
    });
  });
}

/** The parent's session slot in its batch: the index of the session's first part (gatewayRollout.ts numbers first parts by session). */
function sessionSlot(batch: readonly TrajectoryRecord[], parent: TrajectoryRecord): number {
  const first = batch.find((r) => r.agent?.session === parent.agent!.session && r.agent.part === 0);
  if (!first)
    throw new AgentRerollError(`the step holds no first part of the parent's session ${parent.agent!.session}`);
  return first.index;
}

/**
 * Rolls `samples` sessions of the agent on the parent's row, each replaying the parent's session
 * up to the cut; with `followSeed` (the parent's seed), branch 0 samples with its session's draws.
 * Returns each branch's trajectory and every trajectory of the sessions (for scoring).
 */
export async function rollAgentBranches(
  loaded: LoadedConfig,
  parts: AgentRerollParts,
  options: {
    cut: CutPoint;
    samples: number;
    seed: number;
    followSeed: number | undefined;
    sampling: SamplingOptions;
    log?: ((line: string) => void) | undefined;
  },
): Promise<{ branches: Trajectory[]; all: Trajectory[] }> {
  const { parent, batch } = parts;
  const answers = recordedAnswers(batch, parent, options.cut);
  const slot = sessionSlot(batch, parent);
  const replay = (session: number): SessionReplay => ({
    answers,
    ...(session === 0 && options.followSeed !== undefined
      ? { draws: { seed: options.followSeed, session: slot } }
      : {}),
  });
  const log = options.log ?? (() => {});
  const loop = agentRollouts(loaded, {
    policy: new ModelPolicy(parts.model),
    template: parts.template,
    images: rolloutImagesFor(parts.model, loaded.config),
    agent: agentRunner(loaded, log),
    sampling: options.sampling,
    replay,
  });
  try {
    const episodes = Array.from({ length: options.samples }, (_, k) => ({ row: parts.row, group: 0, sample: k }));
    const all = await loop.run(episodes, { seed: options.seed });
    const branches = episodes.map((_, k) => branchOf(all, k, parent, log));
    return { branches, all };
  } finally {
    await loop.close();
  }
}

/** Session k's part that stands for the parent: the same part, or its last when it split less often. */
function branchOf(all: readonly Trajectory[], k: number, parent: TrajectoryRecord, log: (line: string) => void) {
  const first = all.find((t) => t.index === k)!;
  const parts = all.filter((t) => t.agent?.session === first.agent?.session);
  const same = parts.find((t) => t.agent?.part === parent.agent!.part);
  if (!same)
    log(
      `branch ${k}: the agent's session has ${parts.length} part(s), not ${parent.agent!.part + 1} as its parent's; the branch is its last`,
    );
  return same ?? parts[parts.length - 1];
}
