/**
 * The pure helpers of bench:rl's arms: the paired bootstrap (test/bench/bootstrap.ts) against
 * cases whose answer is known, and the equal budgets (test/bench/armBudget.ts).
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { armBudget, demonstrationPasses, scoreGrid } from '../../bench/armBudget';
import { pairedBootstrap, separation } from '../../bench/bootstrap';
import { learningRate } from '#trainer/pipeline/training/step/schedule';

describe('the paired bootstrap over (seed, question)', () => {
  it('one seed, 400 questions, half right: the normal interval 0.5 ± 1.96·√(0.25/400)', () => {
    const scores = [Array.from({ length: 400 }, (_, q) => q % 2)];
    const ci = pairedBootstrap(scores, undefined, { resamples: 4000, seed: 3 });
    const half = 1.96 * Math.sqrt(0.25 / 400);
    assert.equal(ci.mean, 0.5);
    assert.ok(
      Math.abs(ci.low - (0.5 - half)) < 0.006 && Math.abs(ci.high - (0.5 + half)) < 0.006,
      `[${ci.low}, ${ci.high}] against ±${half}`,
    );
  });

  it('pairs the arms cell by cell: a constant difference has a zero-width interval, however much the questions vary', () => {
    const base = [
      [0, 1, 1, 0, 0, 1, 0, 0, 1, 1],
      [1, 1, 0, 0, 1, 0, 0, 1, 1, 0],
    ];
    const better = base.map((row) => row.map((v) => v + 0.25));
    const paired = pairedBootstrap(better, base, { seed: 5 });
    assert.ok(
      Math.abs(paired.mean - 0.25) < 1e-12 &&
        Math.abs(paired.low - 0.25) < 1e-12 &&
        Math.abs(paired.high - 0.25) < 1e-12,
      JSON.stringify(paired),
    );
    const alone = pairedBootstrap(better, undefined, { seed: 5 });
    assert.ok(alone.high - alone.low > 0.3, 'one arm alone varies with the questions drawn');
    assert.equal(separation(paired), 'ahead');
    assert.equal(separation(pairedBootstrap(base, better, { seed: 5 })), 'behind');
  });

  it('resamples seeds too: one seed all right and one all wrong span the whole range', () => {
    const ci = pairedBootstrap([Array(20).fill(1), Array(20).fill(0)], undefined, { seed: 2 });
    assert.equal(ci.mean, 0.5);
    assert.equal(ci.low, 0);
    assert.equal(ci.high, 1);
    assert.equal(separation(ci), 'not separated');
  });

  it('is deterministic given its seed', () => {
    const scores = [
      Array.from({ length: 30 }, (_, q) => ((q * 7) % 3 === 0 ? 1 : 0)),
      Array.from({ length: 30 }, (_, q) => ((q * 5) % 4 === 0 ? 1 : 0)),
    ];
    assert.deepEqual(pairedBootstrap(scores, undefined, { seed: 9 }), pairedBootstrap(scores, undefined, { seed: 9 }));
    // Another seed draws other resamples: with few of them the percentiles move.
    const few = (seed: number) => pairedBootstrap(scores, undefined, { seed, resamples: 50, level: 0.8 });
    assert.ok([10, 11, 12].some((seed) => JSON.stringify(few(seed)) !== JSON.stringify(few(9))));
  });

  it('refuses grids that do not pair, naming what differs', () => {
    assert.throws(() => pairedBootstrap([[1, 0]], [[1, 0, 1]]), /a is 1 seeds × 2 questions, b 1 × 3/);
    assert.throws(() => pairedBootstrap([[1, 0], [1]]), /seed 1 has 1 questions, seed 0 has 2/);
    assert.throws(() => pairedBootstrap([[1, Number.NaN]]), /seed 0, question 1: not a finite score/);
  });
});

describe('equal budgets', () => {
  const shape = { steps: 12, promptsPerStep: 4, groupSize: 8, epochs: 2, miniBatches: 2 };
  const budget = armBudget(shape, 1e-4);

  it("the example's shape: 48 optimizer steps of 16 sequences, 384 trajectories trained twice, 768 demonstrations", () => {
    assert.deepEqual(
      [budget.optimizerSteps, budget.batchSize, budget.trajectories, budget.sequencePasses],
      [48, 16, 384, 768],
    );
    assert.equal(
      budget.sequencePasses / budget.batchSize,
      budget.optimizerSteps,
      'an SFT arm of that many demonstrations makes as many optimizer steps',
    );
    assert.deepEqual([budget.rl.warmupSteps, budget.sft.warmupSteps], [3, 12]);
  });

  it('RL (per RL step) and SFT (per optimizer step) follow one schedule: at each RL step the RL rate lies within the SFT rates of its optimizer steps', () => {
    const perRlStep = shape.epochs * shape.miniBatches;
    for (let j = 0; j < shape.steps; j++) {
      const rl = learningRate(budget.rl, j, shape.steps);
      const sft = Array.from({ length: perRlStep }, (_, k) =>
        learningRate(budget.sft, j * perRlStep + k, budget.optimizerSteps),
      );
      assert.ok(
        rl >= Math.min(...sft) - 1e-15 && rl <= Math.max(...sft) + 1e-15,
        `RL step ${j + 1}: ${rl} outside [${Math.min(...sft)}, ${Math.max(...sft)}]`,
      );
    }
    assert.equal(learningRate(budget.sft, 11, 48), 1e-4, 'the peak, at the end of the warm-up');
    assert.ok(Math.abs(learningRate(budget.sft, 48, 48) - 1e-5) < 1e-18, 'decays to a tenth');
  });

  it('demonstration passes: the exact count, each row ⌊count/n⌋ or ⌈count/n⌉ times, the same for the same seed', () => {
    const rows = Array.from({ length: 400 }, (_, i) => i);
    const passes = demonstrationPasses(rows, 768, 4);
    assert.equal(passes.length, 768);
    const counts = new Map<number, number>();
    for (const r of passes) counts.set(r, (counts.get(r) ?? 0) + 1);
    assert.equal(counts.size, 400);
    assert.ok([...counts.values()].every((n) => n === 1 || n === 2));
    assert.deepEqual(passes, demonstrationPasses(rows, 768, 4));
    assert.notDeepEqual(passes, demonstrationPasses(rows, 768, 5));
    assert.throws(() => demonstrationPasses([], 3, 1), /no rows/);
  });

  it('the score grid: seeds by questions in the given order, calls per trajectory, a missing question named', () => {
    const runs = [
      {
        label: 'C seed 1',
        questions: [
          { rowId: 'b', score: 1, calls: 2 },
          { rowId: 'a', score: 0, calls: 1 },
        ],
      },
      {
        label: 'C seed 2',
        questions: [
          { rowId: 'a', score: 1, calls: 3 },
          { rowId: 'b', score: 1, calls: 2 },
        ],
      },
    ];
    assert.deepEqual(scoreGrid(runs, ['a', 'b']), {
      scores: [
        [0, 1],
        [1, 1],
      ],
      callsPerTrajectory: 2,
    });
    assert.throws(() => scoreGrid(runs, ['a', 'c']), /C seed 1: no evaluation of question c/);
  });
});
