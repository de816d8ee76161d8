/**
 * The draw schedule (DrawSchedule in run.json): a new run samples each rollout round in one
 * generate call; a run recorded before the field existed sampled one call per token limit, and a
 * resume of it keeps that schedule. Under a budget tight enough that a round's turns get different
 * limits, the two schedules sample different tokens, and a re-roll of either run's trajectories,
 * which works its draws out from the schedule in run.json (samplingSchedule.ts), reproduces them
 * token for token.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RunStoreReader } from '#trainer/contract/runstore';
import { decodeInt32, type TrajectoryRecord } from '#trainer/contract/protocol';
import { generatedTurns } from '#trainer/pipeline/rollout/restoreState';
import { batchDraws } from '#trainer/pipeline/rollout/samplingSchedule';
import { reroll } from '#trainer/pipeline/training/reroll/reroll';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import type { LoadedConfig } from '#trainer/pipeline/training/config/trainingConfig';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { createTrainingFixture, type TrainingFixture } from '../../helpers/trainingFixture';

// The shipped base writes its first call by about token 470 and its second turn starts at 488–505:
// with 560 tokens in all, the second round's limits range from 64 down to the mid-50s.
const BUDGET = { maxTurns: 3, maxNewTokensPerTurn: 64, maxTotalTokens: 560, maxToolResultTokens: 64 };

let fixture: TrainingFixture;
let loaded: LoadedConfig;
let current: string;
let recordedBefore: string;

const train = (runDir: string, options: { steps?: number; resume?: string } = {}) =>
  new TrainingRun(loaded, {
    inProcessDevice: true,
    log: () => undefined,
    ...(options.resume ? { resume: options.resume } : { runDir }),
    ...(options.steps !== undefined ? { steps: options.steps } : {}),
  }).run();

before(async () => {
  fixture = createTrainingFixture();
  const config = fixture.writeConfig('schedule.config.ts', {
    model: "{ path: 'rollout-studio:base', lora: false }",
    sft: '',
    steps: '2',
    evaluation: '{ samples: 3, every: 0 }',
    rollout: `{ promptsPerStep: 2, budget: ${JSON.stringify(BUDGET)}, systemPrompt: SYSTEM_PROMPT, templateKwargs: { enable_thinking: false } }`,
    toolCassette: '{ record: true }',
  });
  loaded = await loadConfig(config);
  current = path.join(fixture.dir, 'runs', 'current');
  assert.equal((await train(current)).run.status, 'finished');
  // A run as recorded before the field: its run.json without drawSchedule, resumed after step 0.
  recordedBefore = path.join(fixture.dir, 'runs', 'recorded-before');
  await train(recordedBefore, { steps: 0 });
  const runJson = path.join(recordedBefore, 'run.json');
  const { drawSchedule, ...older } = JSON.parse(fs.readFileSync(runJson, 'utf8')) as Record<string, unknown>;
  assert.equal(drawSchedule, 'per-round');
  fs.writeFileSync(runJson, JSON.stringify(older, null, 2));
  assert.equal((await train(recordedBefore, { resume: recordedBefore, steps: 2 })).run.status, 'finished');
});
after(() => fixture?.cleanup());

const ids = (t: TrajectoryRecord) => Array.from(decodeInt32(t.tokens.ids));

/** The distinct token limits of each round of a batch (per-limit made a generate call for each). */
function limitsPerRound(batch: readonly TrajectoryRecord[]): number[][] {
  const turns = batch.map(generatedTurns);
  const rounds: number[][] = [];
  for (let r = 0; turns.some((t) => t[r]); r++)
    rounds.push([
      ...new Set(
        turns
          .filter((t) => t[r])
          .map((t) => Math.min(BUDGET.maxNewTokensPerTurn, BUDGET.maxTotalTokens - t[r].tokenStart)),
      ),
    ]);
  return rounds;
}

describe('the draw schedule', () => {
  it('is recorded per round for a new run and kept absent (per limit) when an older run resumes', () => {
    assert.equal(new RunStoreReader(current).run().drawSchedule, 'per-round');
    assert.equal(new RunStoreReader(recordedBefore).run().drawSchedule, undefined);
  });

  it('a round with several limits: the schedules place the draws differently and sample different tokens', () => {
    for (const step of [1, 2]) {
      const batch = new RunStoreReader(current).trajectories(step).records;
      assert.ok(
        limitsPerRound(batch).some((limits) => limits.length > 1),
        `step ${step}: a round has several token limits (${JSON.stringify(limitsPerRound(batch))})`,
      );
      assert.notDeepEqual(batchDraws(batch, BUDGET, 'per-round'), batchDraws(batch, BUDGET, 'per-limit'));
    }
    const before = new RunStoreReader(recordedBefore).trajectories(1).records;
    const now = new RunStoreReader(current).trajectories(1).records;
    assert.notDeepEqual(before.map(ids), now.map(ids), 'the resumed older run sampled with its own schedule');
    // The first round has one limit (every prompt fits a whole turn): the schedules agree there.
    const firstTurn = (t: TrajectoryRecord) => ids(t).slice(0, generatedTurns(t)[0].tokenEnd);
    assert.deepEqual(before.map(firstTurn), now.map(firstTurn));
  });

  for (const [name, dir] of [
    ['a new run', () => current],
    ['an older run', () => recordedBefore],
  ] as const)
    it(`a re-roll of ${name} from its second turn reproduces every trajectory that has one`, async () => {
      const batch = new RunStoreReader(dir()).trajectories(2).records;
      const parents = batch.filter((t) => generatedTurns(t).length > 1);
      assert.ok(parents.length > 1, 'several trajectories reached a second turn');
      for (const parent of parents) {
        const { branches } = await reroll(loaded, {
          runDir: dir(),
          set: 'train',
          step: 2,
          index: parent.index,
          cut: { turn: 1, at: 'start' },
        });
        assert.equal(branches.sampling.followsParent, true);
        assert.equal(branches.branches[0].firstDivergence, null, `trajectory ${parent.index}`);
        assert.deepEqual(ids(branches.branches[0].trajectory), ids(parent));
      }
    });
});
