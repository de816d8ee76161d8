/**
 * Dynamic sampling's parts, without a model: which groups carry signal (rl/groupSignal.ts), how
 * many prompts each round rolls out, when the rounds stop, and which groups the update trains on
 * (training/dynamicSampling.ts).
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { groupsWithSignal } from '#trainer/pipeline/rl/groupSignal';
import { grpoAdvantages, rlooAdvantages } from '#trainer/pipeline/rl/advantages';
import type { RlSample } from '#trainer/pipeline/rl/samples';
import { GroupSelection, sampledStep, type ScoredRound } from '#trainer/pipeline/training/step/dynamicSampling';
import type { Trajectory } from '#trainer/pipeline/rollout/trajectory';
import type { BatchRewards, TrajectoryRewards } from '#trainer/pipeline/rewards/score';

/** A sample of `group` with this outcome reward and these call rewards (tokens 1, 2, … ; outcome on the last). */
function sample(group: number, outcome: number, calls: number[] = []): RlSample {
  const length = calls.length + 3;
  return {
    group,
    mask: Uint8Array.from({ length }, (_, i) => (i > 0 ? 1 : 0)),
    outcome: { token: length - 1, reward: outcome },
    calls: calls.map((reward, j) => ({ token: j + 1, reward })),
  };
}

describe('groups with signal', () => {
  it('a group has signal when an outcome reward or a call reward of the same number differs', () => {
    const samples = [
      ...[1, 1, 1].map((r) => sample(0, r)), // all right: none
      ...[0, 0, 0].map((r) => sample(1, r)), // all wrong: none
      sample(2, 1),
      sample(2, 0),
      sample(2, 1), // outcomes differ
      sample(3, 1, [0.5]),
      sample(3, 1, [0.5]),
      sample(3, 1, [0.2]), // a call reward differs
      sample(4, 1, [0.5]),
      sample(4, 1, [0.5]),
      sample(4, 1, []), // one member made no call: it counts 0
      sample(5, 0, [0, 0]),
      sample(5, 0, []),
      sample(5, 0, [0]), // fewer calls, all rewarded 0: the same
    ];
    assert.deepEqual(
      [...groupsWithSignal(samples)],
      [
        [0, false],
        [1, false],
        [2, true],
        [3, true],
        [4, true],
        [5, false],
      ],
    );
  });

  it('agrees with the estimators: a group without signal gets zero advantage on every token, one with signal does not', () => {
    const samples = [
      sample(0, 1, [0.3]),
      sample(0, 1, [0.3]),
      sample(1, 0, [0, 0]),
      sample(1, 0, []),
      sample(2, 1, [0.3]),
      sample(2, 1, []),
    ];
    const signal = groupsWithSignal(samples);
    for (const advantages of [
      grpoAdvantages(samples, { scaleByStd: true }).advantages,
      rlooAdvantages(samples).advantages,
    ]) {
      samples.forEach((s, i) => {
        const zero = advantages[i].every((a) => a === 0);
        assert.equal(zero, !signal.get(s.group), `group ${s.group} sample ${i}`);
      });
    }
  });

  it('ignores KL in the reward: its differences are not a signal about the task', () => {
    const samples = [sample(0, 1), sample(0, 1)];
    samples[0].kl = Float64Array.of(0, -0.01, 0);
    assert.equal(groupsWithSignal(samples).get(0), false);
  });
});

const groupsOf = (signals: boolean[], first: number) => signals.map((signal, i) => ({ group: first + i, signal }));

describe('group selection', () => {
  it('off: one round, nothing dropped, even with no signal', () => {
    const selection = new GroupSelection(4, { enabled: false, maxRounds: 5 });
    assert.equal(selection.nextPrompts(), 4);
    selection.add(groupsOf([false, false, true, false], 0));
    assert.equal(selection.nextPrompts(), 0);
    assert.deepEqual([...selection.dropped()], []);
  });

  it('every group with signal in the first round: one round, nothing dropped', () => {
    const selection = new GroupSelection(3, { enabled: true, maxRounds: 3 });
    selection.add(groupsOf([true, true, true], 0));
    assert.equal(selection.nextPrompts(), 0);
    assert.deepEqual([...selection.dropped()], []);
  });

  it('replaces groups without signal by fresh prompts as the share with signal predicts, trims the surplus in rollout order', () => {
    const selection = new GroupSelection(8, { enabled: true, maxRounds: 3 });
    assert.equal(selection.nextPrompts(), 8);
    selection.add(groupsOf([true, false, false, true, false, true, false, false], 0)); // 3 of 8
    // 5 missing at 3/8 with signal: ceil(5 · 8 / 3) = 14, at most a round's 8.
    assert.equal(selection.nextPrompts(), 8);
    selection.add(groupsOf([false, true, true, false, true, false, false, false], 8)); // 6 of 16
    // 2 missing at 6/16: ceil(2 · 16 / 6) = 6.
    assert.equal(selection.nextPrompts(), 6);
    selection.add(groupsOf([true, true, true, false, false, true], 16)); // 10 of 22: 2 too many
    assert.equal(selection.nextPrompts(), 0);
    assert.equal(selection.roundCount, 3);
    assert.equal(selection.groupCount, 22);
    const dropped = selection.dropped();
    const trained = Array.from({ length: 22 }, (_, g) => g).filter((g) => !dropped.has(g));
    assert.deepEqual(trained, [0, 3, 5, 9, 10, 12, 16, 17], 'the first 8 with signal, in rollout order');
    assert.deepEqual(
      [18, 21].map((g) => dropped.get(g)),
      ['surplus', 'surplus'],
    );
    assert.deepEqual(
      [1, 2, 4, 8, 11, 19, 20].map((g) => dropped.get(g)),
      Array(7).fill('no_signal'),
    );
    assert.equal(dropped.size, 22 - 8);
  });

  it('stops at maxRounds and trains on the groups with signal it has', () => {
    const selection = new GroupSelection(4, { enabled: true, maxRounds: 2 });
    selection.add(groupsOf([false, true, false, false], 0));
    assert.equal(selection.nextPrompts(), 4, 'ceil(3 · 4 / 1) = 12, at most 4');
    selection.add(groupsOf([false, false, true, false], 4));
    assert.equal(selection.nextPrompts(), 0, 'the bound: 2 rounds');
    assert.throws(() => selection.add(groupsOf([true], 8)), /at most 2 rollout round/);
    const dropped = selection.dropped();
    assert.deepEqual(
      Array.from({ length: 8 }, (_, g) => g).filter((g) => !dropped.has(g)),
      [1, 6],
    );
  });

  it('no group with signal after every round: trains on the first round, drops the others', () => {
    const selection = new GroupSelection(2, { enabled: true, maxRounds: 3 });
    selection.add(groupsOf([false, false], 0));
    assert.equal(selection.nextPrompts(), 2, 'no share to go by: a whole round');
    selection.add(groupsOf([false, false], 2));
    selection.add(groupsOf([false, false], 4));
    assert.equal(selection.nextPrompts(), 0);
    assert.deepEqual(
      [...selection.dropped()],
      [
        [2, 'no_signal'],
        [3, 'no_signal'],
        [4, 'no_signal'],
        [5, 'no_signal'],
      ],
    );
  });

  it('refuses a bound or a size that is not a positive integer', () => {
    assert.throws(() => new GroupSelection(0, { enabled: true, maxRounds: 2 }), /prompts per step/);
    assert.throws(() => new GroupSelection(2, { enabled: true, maxRounds: 0 }), /maxRounds/);
  });
});

describe('a sampled step', () => {
  /** A round of `groups` groups of 2, numbered from `first`; outcome 1 where `signal` says the group differs. */
  function round(first: number, signals: boolean[], index: number): ScoredRound {
    const trajectories: Trajectory[] = [];
    const rewards: TrajectoryRewards[] = [];
    const samples: RlSample[] = [];
    signals.forEach((signal, g) => {
      for (let k = 0; k < 2; k++) {
        trajectories.push({
          index: index + trajectories.length,
          group: first + g,
          sample: k,
          mask: [0, 1],
          ids: [1, 2],
        } as unknown as Trajectory);
        const outcome = signal ? k : 1;
        rewards.push({ outcome, process: 0, total: outcome, components: {}, processScale: 1, calls: [] });
        samples.push(sample(first + g, outcome));
      }
    });
    const batch: BatchRewards = {
      trajectories: rewards,
      combine: 'weighted-sum',
      processScale: 1,
      maxProcessRewardToGo: 0,
    };
    return {
      trajectories,
      rewards: batch,
      samples,
      rolloutSeconds: 2,
      rewardSeconds: 0.5,
      generatedTokens: 10 * signals.length,
    };
  }

  it('keeps every rollout in order with why it was dropped, trains on the rest, and describes the first round', () => {
    const rounds = [round(0, [false, true], 0), round(2, [true, false], 4)];
    const selection = new GroupSelection(2, { enabled: true, maxRounds: 2 });
    for (const r of rounds)
      selection.add([...groupsWithSignal(r.samples)].map(([group, signal]) => ({ group, signal })));
    const step = sampledStep(rounds, selection.dropped());
    assert.deepEqual(
      step.rollouts.trajectories.map((t) => t.index),
      [0, 1, 2, 3, 4, 5, 6, 7],
    );
    assert.deepEqual(step.rollouts.dropped, [
      'no_signal',
      'no_signal',
      undefined,
      undefined,
      undefined,
      undefined,
      'no_signal',
      'no_signal',
    ]);
    assert.deepEqual(
      step.trained.trajectories.map((t) => t.group),
      [1, 1, 2, 2],
    );
    assert.deepEqual(
      step.trained.samples.map((s) => s.group),
      [1, 1, 2, 2],
    );
    assert.equal(step.firstRound.trajectories.length, 4);
    assert.deepEqual([step.rounds, step.groups, step.droppedGroups], [2, 4, 2]);
    assert.deepEqual([step.rolloutSeconds, step.rewardSeconds, step.generatedTokens], [4, 1, 40]);
  });
});
