import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { evaluateReward, type RecordedSamples } from '#trainer/bridges/authoring/evaluateReward';
import { formatRewardEvaluation } from '#trainer/contract/authoringReport';
import { loadJsonlDataset } from '#trainer/foundations/data/dataset';
import { RewardEvaluation } from '#trainer/contract/protocol';
import { RunStoreReader } from '#trainer/contract/runstore';
import { loadUserModule } from '#trainer/bridges/usercode/loadUserModule';
import { ToolSet } from '#trainer/foundations/tools/toolSet';
import { writeRecordedRun } from '../../fixtures/recordedRun';
import { rowsForRecordedRun as rowsFor } from '../../fixtures/recordedRows';
import { MultihopFields } from '../../../examples/multihop-search/rows';
import { tools as multihopTools } from '../../../examples/multihop-search/tools';

const root = path.resolve(__dirname, '../../..');
const multihopRewards = path.join(root, 'examples/multihop-search/rewards.ts');

describe('Evaluate on Samples in the trainer', () => {
  let dir: string;
  let runDir: string;
  let dataFile: string;
  let recorded: RecordedSamples;

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-eval-reward-'));
    runDir = writeRecordedRun(path.join(dir, 'run-a'), { steps: 2, batch: 12, groupSize: 4, seed: 5 });
    const reader = new RunStoreReader(runDir);
    const records = [...reader.trajectories(2).records, ...reader.trajectories(1).records];
    dataFile = path.join(dir, 'train.jsonl');
    fs.writeFileSync(
      dataFile,
      rowsFor(records)
        .map((r) => JSON.stringify(r))
        .join('\n') + '\n',
    );
    recorded = { dir: runDir, steps: [2, 1], records };
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const data = () => {
    const dataset = loadJsonlDataset(dataFile, { fields: MultihopFields });
    return { file: dataset.origin, rows: dataset.rows };
  };

  it('scores exact match: 1 on gold answers, 0 without one, and the recorded exact_match again on recorded trajectories', async () => {
    const evaluation = await evaluateReward(await loadUserModule(multihopRewards), {
      file: multihopRewards,
      exportPath: 'rewards.outcome[0]',
      data: data(),
      recorded,
      samples: 10,
    });
    assert.equal(evaluation.kind, 'outcome');
    assert.deepEqual(evaluation.rewards, ['exact_match']);
    const by = (source: string) => evaluation.samples.filter((s) => s.source === source);
    assert.equal(by('gold').length, 6);
    assert.ok(by('gold').every((s) => s.scores['exact_match'] === 1));
    assert.equal(by('unanswered').length, 6);
    assert.ok(by('unanswered').every((s) => s.scores['exact_match'] === 0 && s.answer === undefined));
    const recordedSamples = by('recorded');
    assert.equal(recordedSamples.length, 10);
    for (const sample of recordedSamples)
      assert.equal(sample.scores['exact_match'], sample.recorded!['exact_match'], sample.label);
    assert.ok(
      recordedSamples.some((s) => s.scores['exact_match'] === 1) &&
        recordedSamples.some((s) => s.scores['exact_match'] === 0),
      'the fixture has right and wrong answers',
    );
    assert.match(recordedSamples[0].label, /^run-a step 2 #0$/);
    assert.deepEqual(
      evaluation.summary.find((s) => s.source === 'gold'),
      { source: 'gold', score: 'exact_match', count: 6, mean: 1, min: 1, max: 1 },
    );
    assert.doesNotThrow(() => RewardEvaluation.parse(evaluation));
  });

  it("scores a whole RewardConfig with the config's tools: outcome, the error penalty on failed calls, the total", async () => {
    const evaluation = await evaluateReward(await loadUserModule(multihopRewards), {
      file: multihopRewards,
      exportPath: 'rewards',
      data: data(),
      recorded,
      samples: 24,
      tools: new ToolSet(multihopTools),
    });
    assert.equal(evaluation.kind, 'config');
    const samples = evaluation.samples.filter((s) => s.source === 'recorded');
    assert.equal(samples.length, 24);
    let failedCalls = 0;
    for (const sample of samples) {
      const record = recorded.records.find((r) => `run-a step ${r.step} #${r.index}` === sample.label)!;
      const failed = record.turns.flatMap((t) => t.toolCalls ?? []).filter((c) => c.error).length;
      failedCalls += failed;
      // errorPenalty 0.1 per failed call; the search tool's own reward reads result data, which a record does not keep (0).
      assert.ok(
        Math.abs(sample.scores['process'] - -0.1 * failed) < 1e-9,
        `${sample.label}: process ${sample.scores['process']} for ${failed} failed calls`,
      );
      assert.equal(sample.scores['outcome'], sample.recorded!['exact_match']);
      assert.ok(Math.abs(sample.scores['total'] - (sample.scores['outcome'] + sample.scores['process'])) < 1e-9);
    }
    assert.ok(failedCalls > 0, 'the fixture has failed calls');
    assert.ok(evaluation.notes.some((n) => /result data/.test(n)));
    assert.ok(!evaluation.notes.some((n) => /no tools were given/.test(n)));
  });

  it('scores a process reward per call, only on recorded trajectories, and reports a throw on the sample it happened on', async () => {
    const file = path.join(dir, 'process.ts');
    fs.writeFileSync(
      file,
      [
        "import type { ProcessReward } from 'rollout-studio';",
        'export const found: ProcessReward = {',
        "  name: 'found_headquarters',",
        "  score: (call) => (call.error ? undefined : call.observation.includes('headquartered') ? 1 : 0),",
        '};',
        'export const picky: ProcessReward = {',
        "  name: 'picky',",
        "  score: (call, ctx) => { if (ctx.trajectory.index === 1) throw new Error('no opinion on trajectory 1'); return 1; },",
        '};',
        "export const normalised = { outcome: [], process: [found], combine: 'agent-r1' as const };",
      ].join('\n'),
    );
    const exports = await loadUserModule(file);
    const evaluation = await evaluateReward(exports, {
      file,
      exportPath: 'found',
      kind: 'process',
      data: data(),
      recorded,
      samples: 6,
    });
    assert.ok(evaluation.samples.every((s) => s.source === 'recorded'));
    assert.ok(evaluation.notes.some((n) => /reference trajectories make none/.test(n)));
    for (const sample of evaluation.samples) {
      const record = recorded.records.find((r) => `run-a step ${r.step} #${r.index}` === sample.label)!;
      const calls = record.turns.flatMap((t) => t.toolCalls ?? []);
      assert.equal(sample.calls!.length, calls.length);
      sample.calls!.forEach((c, i) =>
        assert.equal(c.score, calls[i].error ? null : calls[i].observation.includes('headquartered') ? 1 : 0),
      );
      assert.equal(
        sample.scores['found_headquarters'],
        sample.calls!.reduce((a, c) => a + (c.score ?? 0), 0),
      );
    }
    const picky = await evaluateReward(exports, {
      file,
      exportPath: 'picky',
      kind: 'process',
      data: data(),
      recorded,
      samples: 3,
    });
    assert.match(
      picky.samples[1].error ?? '',
      /process reward "picky" on turn 0 call 0 threw: Error: no opinion on trajectory 1/,
    );
    assert.deepEqual(picky.samples[1].scores, {});
    assert.equal(picky.samples[0].error, undefined);
    assert.match(formatRewardEvaluation(picky), /Errors\n─+\nrecorded run-a step 2 #1: process reward "picky"/);
    const normalised = await evaluateReward(exports, {
      file,
      exportPath: 'normalised',
      data: data(),
      recorded,
      samples: 2,
    });
    assert.equal(normalised.kind, 'config');
    assert.ok(
      normalised.notes.some((n) => /agent-r1.*each trajectory is scored alone/.test(n)),
      normalised.notes.join('\n'),
    );
  });

  it('says which recorded trajectories it skipped, and names the missing part of an export path', async () => {
    const partial = path.join(dir, 'partial.jsonl');
    const rows = fs.readFileSync(dataFile, 'utf8').trim().split('\n');
    fs.writeFileSync(partial, rows.slice(0, 1).join('\n') + '\n');
    const dataset = loadJsonlDataset(partial, { fields: MultihopFields });
    const exports = await loadUserModule(multihopRewards);
    const evaluation = await evaluateReward(exports, {
      file: multihopRewards,
      exportPath: 'rewards.outcome[0]',
      data: { file: dataset.origin, rows: dataset.rows },
      recorded,
      samples: 50,
    });
    const kept = evaluation.samples.filter((s) => s.source === 'recorded').length;
    assert.equal(kept, 4, 'one row: the four samples of its group');
    assert.ok(
      evaluation.notes.includes(`20 recorded trajectories were skipped: their rows are not in ${dataset.origin}`),
      evaluation.notes.join('\n'),
    );
    await assert.rejects(
      evaluateReward(exports, { file: 'rewards.ts', exportPath: 'rewards.process[0]', samples: 1 }),
      /rewards\.ts: rewards has no property "process"/,
    );
    await assert.rejects(
      evaluateReward(exports, { file: 'rewards.ts', exportPath: 'reward', samples: 1 }),
      /does not export "reward"; its exports are: rewards/,
    );
  });
});

describe('Evaluate on Samples with gold answers of any JSON type', () => {
  it('answers a numeric, boolean or object gold answer as its JSON text, and notes only rows that have no answer at all', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-eval-json-'));
    try {
      const file = path.join(dir, 'rewards.ts');
      fs.writeFileSync(
        file,
        `import { answerTag, outcomeReward } from 'rollout-studio';
export const same = outcomeReward('same', (trajectory, row) => (answerTag(trajectory) === JSON.stringify((row as Record<string, unknown>).answer) ? 1 : 0));
`,
      );
      const dataFile = path.join(dir, 'rows.jsonl');
      const rows = [
        { prompt: 'a', answer: 5 },
        { prompt: 'b', answer: -2.5 },
        { prompt: 'c', answer: true },
        { prompt: 'd', answer: { total: 7 } },
        { prompt: 'e', answer: [1, 2] },
        { prompt: 'f' },
      ];
      fs.writeFileSync(dataFile, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
      const dataset = loadJsonlDataset(dataFile);
      const evaluation = await evaluateReward(await loadUserModule(file), {
        file,
        exportPath: 'same',
        data: { file: dataset.origin, rows: dataset.rows },
        samples: 10,
      });
      const gold = evaluation.samples.filter((s) => s.source === 'gold');
      assert.deepEqual(
        gold.map((s) => s.answer),
        ['5', '-2.5', 'true', '{"total":7}', '1'],
      );
      assert.deepEqual(
        gold.map((s) => s.scores['same']),
        [1, 1, 1, 1, 0],
        'a list of answers is answered with its first one',
      );
      assert.deepEqual(evaluation.notes, [
        '1 row has no "answer" or "answers" field: no gold-answer trajectory was made for it',
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('rollout-studio eval-reward', () => {
  it("scores the multi-hop RewardConfig with the example config's row fields and tools, on rows and a recorded run", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-eval-cli-'));
    try {
      const runDir = writeRecordedRun(path.join(dir, 'run-b'), { steps: 1, batch: 8, groupSize: 4, seed: 9 });
      const dataFile = path.join(dir, 'train.jsonl');
      fs.writeFileSync(
        dataFile,
        rowsFor(new RunStoreReader(runDir).trajectories(1).records)
          .map((r) => JSON.stringify(r))
          .join('\n'),
      );
      const cli = path.join(root, 'trainer/bridges/cli/main.ts');
      const config = path.join(root, 'examples/multihop-search/config.ts');
      const args = [
        '--import',
        'tsx',
        cli,
        'eval-reward',
        multihopRewards,
        '--export',
        'rewards',
        '--config',
        config,
        '--data',
        dataFile,
        '--run',
        runDir,
        '--samples',
        '3',
      ];
      const json = spawnSync(process.execPath, [...args, '--json'], { cwd: root, encoding: 'utf8' });
      assert.equal(json.status, 0, json.stderr);
      const evaluation = RewardEvaluation.parse(JSON.parse(json.stdout));
      assert.equal(evaluation.kind, 'config');
      assert.deepEqual(evaluation.run, { dir: runDir, steps: [1] });
      assert.deepEqual(
        evaluation.samples.map((s) => s.source),
        ['gold', 'unanswered', 'gold', 'unanswered', 'recorded', 'recorded', 'recorded'],
      );
      const text = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8' });
      assert.equal(text.status, 0, text.stderr);
      assert.match(text.stdout, /^rewards \(config: exact_match\) from .*rewards\.ts$/m);
      assert.match(text.stdout, /^gold answer +outcome +2 +1 +1 +1$/m);

      const bad = spawnSync(
        process.execPath,
        ['--import', 'tsx', cli, 'eval-reward', multihopRewards, '--export', 'rewards', '--samples', 'many'],
        { cwd: root, encoding: 'utf8' },
      );
      assert.equal(bad.status, 2);
      assert.match(bad.stderr, /--samples: expected a positive integer, got "many"/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
