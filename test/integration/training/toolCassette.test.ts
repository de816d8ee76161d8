/**
 * Recorded tool results: a run trained with `toolCassette.record` and then trained again from its
 * cassette — with tools that throw whenever they are really called — gives the same metrics and the
 * same rollouts, record for record (the timings aside).
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readJsonl, RunStoreReader } from '#trainer/contract/runstore';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { createTrainingFixture, type TrainingFixture } from '../../helpers/trainingFixture';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { evaluateCheckpoint } from '#trainer/pipeline/training/evaluation/evaluateCheckpoint';
import { CassetteEntry } from '#trainer/contract/protocol';

let fixture: TrainingFixture;
/** The recorded run of the first test, for the evaluation tests. */
let recordedRun: string;
before(() => {
  fixture = createTrainingFixture();
});
after(() => fixture.cleanup());

/** The config, but for its tools: the example's search tool (same name, schema and process reward) whose every real call throws. */
function withDisabledTools(configFile: string): string {
  const text = fs.readFileSync(configFile, 'utf8');
  const disabled = text.replace(
    /^import \{ tools \} from (".*");$/m,
    (_, from) => `import { KnowledgeBaseSearch, knowledgeBase, search } from ${from};
class DisabledSearch extends KnowledgeBaseSearch {
  override execute(): never {
    throw new Error('the live tool was called');
  }
}
const tools = [new DisabledSearch(knowledgeBase.documents, { description: search.description, topK: 1 })];`,
  );
  assert.notEqual(disabled, text, 'the config imports the example tools as expected');
  fs.writeFileSync(configFile, disabled);
  return configFile;
}

const SETTINGS = {
  steps: '2',
  evaluation: '{ samples: 3, every: 0 }',
  model: "{ path: 'rollout-studio:base', lora: false }",
  sft: '',
  // Room for a whole call in a turn.
  rollout:
    '{ promptsPerStep: 2, budget: { maxTurns: 3, maxNewTokensPerTurn: 64, maxTotalTokens: 768, maxToolResultTokens: 64 }, systemPrompt: SYSTEM_PROMPT, templateKwargs: { enable_thinking: false } }',
};

async function train(configFile: string, runDir: string) {
  const result = await new TrainingRun(await loadConfig(configFile), {
    inProcessDevice: true,
    runDir,
    log: () => undefined,
  }).run();
  assert.equal(result.run.status, 'finished');
  return new RunStoreReader(runDir);
}

/** Metrics without the wall-clock ones (time/*, throughput/*), which no two runs share. */
function steadyMetrics(reader: RunStoreReader) {
  return reader.metrics().records.map((m) => ({
    step: m.step,
    kind: m.kind,
    values: Object.fromEntries(Object.entries(m.values).filter(([k]) => !/^(time|throughput)\//.test(k))),
  }));
}

describe('a run replayed from its cassette', () => {
  it('with every live tool disabled, gives the recorded run’s metrics and rollouts exactly', async () => {
    const recordedDir = path.join(fixture.dir, 'runs', 'recorded');
    const recorded = await train(
      fixture.writeConfig('record.config.ts', { ...SETTINGS, toolCassette: '{ record: true }' }),
      recordedDir,
    );
    const cassette = recorded.cassette().records;
    const made = recorded
      .steps()
      .flatMap((s) => recorded.trajectories(s).records)
      .flatMap((t) => t.turns.flatMap((turn) => turn.toolCalls ?? []));
    assert.ok(
      cassette.length > 0,
      `the run made tool calls (${made.length}: ${JSON.stringify(made.slice(0, 2))}), and they were recorded`,
    );
    assert.ok(
      cassette.some((e) => e.set === 'eval') && cassette.some((e) => e.set === 'train'),
      'training and evaluation calls are both recorded',
    );
    const calls = recorded
      .steps()
      .flatMap((s) => recorded.trajectories(s).records)
      .flatMap((t) => t.turns.flatMap((turn) => turn.toolCalls ?? []));
    assert.equal(
      cassette.filter((e) => e.set === 'train').length,
      calls.filter(
        (c) => c.error?.kind !== 'parse' && c.error?.kind !== 'invalid_arguments' && c.error?.kind !== 'unknown_tool',
      ).length,
      'one entry per call that reached its tool',
    );

    recordedRun = recordedDir;
    const replayedDir = path.join(fixture.dir, 'runs', 'replayed');
    const replayConfig = withDisabledTools(
      fixture.writeConfig('replay.config.ts', { ...SETTINGS, toolCassette: `{ replay: 'runs/recorded' }` }),
    );
    const replayed = await train(replayConfig, replayedDir);

    assert.deepEqual(steadyMetrics(replayed), steadyMetrics(recorded));
    assert.deepEqual(replayed.steps(), recorded.steps());
    for (const step of recorded.steps())
      assert.deepEqual(
        replayed.trajectories(step).records,
        recorded.trajectories(step).records,
        `rollouts of step ${step}`,
      );
    for (const step of recorded.evaluations())
      assert.deepEqual(
        replayed.evaluationTrajectories(step).records,
        recorded.evaluationTrajectories(step).records,
        `evaluation after step ${step}`,
      );
    assert.ok(
      replayed
        .steps()
        .flatMap((s) => replayed.trajectories(s).records)
        .every((t) =>
          t.turns.every((turn) => (turn.toolCalls ?? []).every((c) => !c.error || c.error.kind !== 'threw')),
        ),
      'no call reached the disabled tools',
    );
  });

  it('eval records its calls to a cassette file and replays them with the tools disabled; a miss is an unrecorded error', async () => {
    assert.ok(recordedRun, 'the recorded run of the first test');
    const checkpoint = path.join(recordedRun, 'checkpoints', 'step-000002');
    const cassette = path.join(fixture.dir, 'eval-cassette.jsonl');
    const live = await evaluateCheckpoint(
      await loadConfig(fixture.writeConfig('eval-live.config.ts', SETTINGS)),
      checkpoint,
      { samples: 3, toolCassette: { record: cassette } },
    );
    const entries = readJsonl(cassette, CassetteEntry).records;
    assert.ok(
      entries.length > 0 && entries.every((e) => e.set === 'eval' && e.tool === 'search'),
      `${entries.length} recorded calls`,
    );
    const disabled = await loadConfig(withDisabledTools(fixture.writeConfig('eval-disabled.config.ts', SETTINGS)));
    const replayed = await evaluateCheckpoint(disabled, checkpoint, { samples: 3, toolCassette: { replay: cassette } });
    assert.deepEqual(replayed.metrics, {
      ...replayed.metrics,
      ...Object.fromEntries(Object.entries(live.metrics).filter(([k]) => !/^(time|throughput)\//.test(k))),
    });
    assert.equal(replayed.metrics['tools/error_rate'], live.metrics['tools/error_rate']);
    // The same calls against a cassette of other calls: each is an `unrecorded` error, and no tool runs.
    const other = path.join(fixture.dir, 'other-cassette.jsonl');
    fs.writeFileSync(
      other,
      entries
        .map((e) => JSON.stringify({ ...e, arguments: { query: `not ${JSON.stringify(e.arguments)}` } }))
        .join('\n') + '\n',
    );
    const missed = await evaluateCheckpoint(disabled, checkpoint, { samples: 3, toolCassette: { replay: other } });
    assert.equal(missed.metrics['tools/error_rate'], 1, 'every call missed the cassette');
  });
});
