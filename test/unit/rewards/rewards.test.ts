import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { z } from 'zod';
import { datasetFromRows, type DatasetRow } from '#trainer/foundations/data';
import type { ToolCallResult, Trajectory } from '#trainer/pipeline/rollout';
import {
  answerTag,
  exactMatch,
  f1,
  finalText,
  formatCheck,
  normalizeAnswer,
  outcomeReward,
  ProcessRewardNormalizer,
  RewardError,
  scoreTrajectories,
  withoutProcessRewards,
  substringMatch,
  tokenF1,
  type RewardConfig,
} from '#trainer/pipeline/rewards';
import { MAX_ABS_REWARD } from '#trainer/pipeline/rewards/score';
import { rewardToGo, tokenRewards } from '#trainer/pipeline/rl/samples';
import { defineTool, ToolSet, type ToolCallOutcome } from '#trainer/foundations/tools';
import { toRlSample } from '#trainer/pipeline/rl/rewardPlacement';

const rowsOf = (values: Record<string, unknown>[]) => datasetFromRows('rewards.jsonl', values).rows;

/**
 * A hand-made trajectory: `layout` is its token mask ('P' prompt/template, 'G' generated);
 * calls sit on generated tokens; the final assistant turn has `answer` as its content.
 */
function trajectory(
  index: number,
  row: DatasetRow,
  layout: string,
  answer: string,
  calls: Partial<ToolCallResult>[] = [],
  group = 0,
): Trajectory {
  const mask = [...layout].map((c) => (c === 'G' ? 1 : 0));
  const lastStart = layout.lastIndexOf('P') + 1;
  return {
    index,
    rowId: row.id,
    group,
    sample: 0,
    row,
    prompt: 'q',
    messages: [],
    ids: mask.map((_, i) => 100 + i),
    mask,
    logprobs: mask.map(() => 0),
    entropies: mask.map(() => 0),
    promptLength: layout.indexOf('G'),
    turns: [
      {
        index: 0,
        role: 'assistant',
        tokenStart: lastStart,
        tokenEnd: layout.length,
        finish: 'eos',
        assistantTurn: 0,
        content: answer,
      },
    ],
    calls: calls.map((c, i) => ({
      turn: 0,
      turnIndex: 0,
      index: i,
      raw: '',
      observation: '',
      truncated: false,
      latencyMs: 1,
      tokenEnd: 0,
      logs: [],
      ...c,
    })),
    finishReason: 'answered',
    historyRewrites: [],
  };
}

describe('answer normalisation and matching (SQuAD rules)', () => {
  it('lowercases, strips punctuation and articles, collapses whitespace', () => {
    assert.equal(normalizeAnswer('  The  Northwind-Labs, Inc.! '), 'northwindlabs inc');
    assert.equal(normalizeAnswer('An apple a day'), 'apple day');
    assert.equal(normalizeAnswer('theatre'), 'theatre');
  });

  it('computes token F1 like the SQuAD script', () => {
    assert.equal(tokenF1('Northwind Labs', 'the Northwind Labs'), 1);
    assert.equal(tokenF1('Northwind', 'Northwind Labs'), 2 / 3);
    assert.equal(tokenF1('labs labs', 'labs'), 2 / 3);
    assert.equal(tokenF1('Veldmark', 'Ostria'), 0);
    assert.equal(tokenF1('', 'the'), 1, 'both empty after normalisation');
    assert.equal(tokenF1('', 'x'), 0);
  });

  it('extracts the last <answer> of the final turn, ignoring thinking', () => {
    const [row] = rowsOf([{ prompt: 'q', answer: 'x' }]);
    assert.equal(
      answerTag(
        trajectory(
          0,
          row,
          'PG',
          '<think>\n<answer>draft</answer>\n</think>\n\n<answer> A </answer> and <answer>Veldmark</answer>',
        ),
      ),
      'Veldmark',
    );
    assert.equal(answerTag(trajectory(0, row, 'PG', 'Veldmark')), undefined);
    assert.equal(finalText(trajectory(0, row, 'PG', '<think>x</think>\n Veldmark ')), 'Veldmark');
  });

  it('scores exact match, F1, substring and format', async () => {
    const rows = rowsOf([{ id: 'a', prompt: 'q', answers: ['Northwind Labs', 'NWL'] }]);
    const score = (reward: ReturnType<typeof exactMatch>, answer: string) =>
      reward.score(trajectory(0, rows[0], 'PG', answer), rows[0]);
    assert.equal(await score(exactMatch(), '<answer>the northwind labs.</answer>'), 1);
    assert.equal(await score(exactMatch(), '<answer>NWL</answer>'), 1);
    assert.equal(await score(exactMatch(), '<answer>Northwind</answer>'), 0);
    assert.equal(await score(exactMatch(), 'Northwind Labs'), 0, 'no answer tag: no answer');
    assert.equal(await score(f1(), '<answer>Northwind</answer>'), 2 / 3);
    assert.equal(await score(substringMatch(), '<answer>It is Northwind Labs, in Veldmark</answer>'), 1);
    assert.equal(await score(substringMatch(), '<answer>Northwind Laboratories</answer>'), 0);
    const format = formatCheck({ test: /^<answer>[^<]+<\/answer>$/ });
    assert.equal(await format.score(trajectory(0, rows[0], 'PG', '<answer>x</answer>'), rows[0]), 1);
    assert.equal(await format.score(trajectory(0, rows[0], 'PG', 'x'), rows[0]), 0);
  });

  it('reads numbers and booleans as gold answers, as JSON writes them', async () => {
    const rows = rowsOf([
      { id: 'n', prompt: 'q', answer: 5 },
      { id: 'f', prompt: 'q', answer: -0.25 },
      { id: 'b', prompt: 'q', answer: true },
      { id: 'l', prompt: 'q', answers: [12, 'twelve'] },
    ]);
    const score = (row: DatasetRow, answer: string) =>
      exactMatch().score(trajectory(0, row, 'PG', `<answer>${answer}</answer>`), row);
    assert.deepEqual(
      await Promise.all([
        score(rows[0], '5'),
        score(rows[0], '6'),
        score(rows[1], '-0.25'),
        score(rows[2], 'true'),
        score(rows[3], 'twelve'),
        score(rows[3], '12'),
      ]),
      [1, 0, 1, 1, 1, 1],
    );
  });

  it('names the row when the ground truth is missing', async () => {
    const [row] = rowsOf([{ id: 'q-7', prompt: 'q', gold: 'x' }]);
    await assert.rejects(
      async () => exactMatch().score(trajectory(0, row, 'PG', '<answer>x</answer>'), row),
      /rewards\.jsonl:1 \(row q-7\): the answer rewards read the ground truth from "answer" \(a string, number or boolean\) or "answers" \(a non-empty list of them\); this row has neither$/,
    );
    const [objectRow] = rowsOf([{ id: 'q-8', prompt: 'q', answer: { value: 5 } }]);
    await assert.rejects(
      async () => exactMatch().score(trajectory(0, objectRow, 'PG', '<answer>5</answer>'), objectRow),
      /\(row q-8\): .* this row has \{"value":5\} \(compare other values with your own reward, or pass groundTruth\)/,
    );
    const custom = exactMatch<DatasetRow<{ gold: string }>>({ groundTruth: (r) => r.gold });
    assert.equal(await custom.score(trajectory(0, row, 'PG', '<answer>x</answer>') as never, row as never), 1);
  });
});

describe('scoring a batch: outcome and process rewards, combination, placement', () => {
  const Args = z.object({ query: z.string() });
  const search = defineTool({
    name: 'search',
    description: 'Search.',
    parameters: Args,
    execute: () => 'result',
    // Rewards a search that mentions the row's needed entity.
    reward: (call: ToolCallOutcome<z.output<typeof Args>>, ctx) =>
      call.arguments.query.includes(String((ctx.row as Record<string, unknown>)['needed'])) ? 1 : 0,
  });
  const tools = new ToolSet([search]);
  const ok = (query: string, tokenEnd: number): Partial<ToolCallResult> => ({
    name: 'search',
    arguments: { query },
    result: { content: [{ type: 'text', text: 'result' }] },
    tokenEnd,
  });
  const failed = (tokenEnd: number): Partial<ToolCallResult> => ({
    error: { kind: 'parse', message: 'bad' },
    tokenEnd,
  });

  it('combines by weighted sum, records every component per call and per trajectory, and places rewards on tokens', async () => {
    const rows = rowsOf([{ id: 'r', prompt: 'q', answer: 'Veldmark', needed: 'Ada' }]);
    //                         0123456789012
    const t = trajectory(0, rows[0], 'PPGGGPPGGGPGG', '<answer>Veldmark</answer>', [
      ok('Ada Brenner', 4),
      failed(9),
      ok('weather', 9),
    ]);
    const config: RewardConfig = {
      outcome: [
        exactMatch({ weight: 2 }),
        outcomeReward('length_penalty', (tr) => -0.01 * tr.mask.filter(Boolean).length),
      ],
      process: [{ name: 'called', weight: 0.5, score: (call) => (call.error ? undefined : 1) }],
      toolRewards: { weight: 0.3 },
      errorPenalty: 0.2,
      processWeight: 2,
    };
    const batch = await scoreTrajectories([t], config, tools);
    const r = batch.trajectories[0];
    assert.deepEqual(
      r.calls.map((c) => c.components),
      [{ 'tool:search': 1, called: 1 }, { error_penalty: -0.2 }, { 'tool:search': 0, called: 1 }],
    );
    assert.deepEqual(
      r.calls.map((c) => c.processReward),
      [0.3 + 0.5, -0.2, 0.5],
    );
    assert.equal(r.processScale, 2);
    assert.deepEqual(
      r.calls.map((c) => c.scaled),
      [1.6, -0.4, 1],
    );
    assert.equal(r.outcome, 2 - 0.08);
    assert.ok(Math.abs(r.process - 2.2) < 1e-12);
    assert.ok(Math.abs(r.total - (1.92 + 2.2)) < 1e-12);
    assert.deepEqual(r.components, {
      exact_match: 1,
      length_penalty: -0.08,
      'process/tool:search': 1,
      'process/called': 2,
      'process/error_penalty': -0.2,
    });
    assert.equal(r.answer, 'Veldmark');

    const sample = toRlSample(t, r);
    const expected = new Float64Array(13);
    expected[4] = 1.6;
    expected[9] = -0.4 + 1; // two calls can end on the same token only in a hand-made case; their rewards add
    expected[12] = 1.92;
    assert.deepEqual(
      [...tokenRewards(sample)].map((v) => Math.round(v * 1e12) / 1e12),
      [...expected],
    );
    assert.deepEqual([...sample.mask], t.mask);
    assert.equal(sample.group, 0);
    assert.ok(
      Math.abs(rewardToGo(tokenRewards(sample), sample.mask)[2] - r.total) < 1e-12,
      'the return from the first generated token is the total reward',
    );
  });

  it("scales process rewards by the batch's largest absolute process reward-to-go (Agent-R1)", async () => {
    const rows = rowsOf([
      { id: 'a', prompt: 'q', answer: 'x', needed: 'Ada' },
      { id: 'b', prompt: 'q', answer: 'x', needed: 'Ada' },
    ]);
    const t1 = trajectory(0, rows[0], 'PGGGGGG', '<answer>x</answer>', [ok('Ada', 1), ok('Ada', 3), ok('Ada', 5)]);
    const t2 = trajectory(1, rows[1], 'PGGGG', '<answer>y</answer>', [ok('Ada', 1), failed(3)]);
    const config: RewardConfig = { outcome: [exactMatch()], errorPenalty: 4, combine: 'agent-r1' };
    const batch = await scoreTrajectories([t1, t2], config, tools);
    // Process rewards-to-go: t1 = 3, 2, 1; t2 = 1 − 4 = −3, −4. The largest magnitude is 4.
    assert.equal(batch.maxProcessRewardToGo, 4);
    assert.equal(batch.processScale, 0.25);
    assert.deepEqual(
      batch.trajectories[0].calls.map((c) => c.scaled),
      [0.25, 0.25, 0.25],
    );
    assert.deepEqual(
      batch.trajectories[1].calls.map((c) => c.scaled),
      [0.25, -1],
    );
    assert.deepEqual(
      batch.trajectories.map((r) => [r.outcome, r.process, r.total]),
      [
        [1, 0.75, 1.75],
        [0, -0.75, -0.75],
      ],
    );
    // Raw rewards stay on the calls, for the record.
    assert.deepEqual(
      batch.trajectories[1].calls.map((c) => c.processReward),
      [1, -4],
    );
    // With no process rewards at all the scale is left alone.
    const none = await scoreTrajectories(
      [trajectory(0, rows[0], 'PG', 'x')],
      { outcome: [], combine: 'agent-r1' },
      tools,
    );
    assert.equal(none.processScale, 1);
  });

  it('skips tool hooks when turned off, and calls them only for successful calls', async () => {
    const [row] = rowsOf([{ prompt: 'q', answer: 'x', needed: 'Ada' }]);
    const t = trajectory(0, row, 'PGGG', 'x', [
      ok('Ada', 1),
      { name: 'search', error: { kind: 'timeout', message: 'slow' }, tokenEnd: 2 },
    ]);
    const off = await scoreTrajectories([t], { outcome: [], toolRewards: false }, tools);
    assert.deepEqual(
      off.trajectories[0].calls.map((c) => [c.components, c.processReward, c.scaled]),
      [
        [{}, undefined, 0],
        [{}, undefined, 0],
      ],
    );
    const on = await scoreTrajectories([t], { outcome: [] }, tools);
    assert.deepEqual(
      on.trajectories[0].calls.map((c) => c.processReward),
      [1, undefined],
    );
  });

  it('fails with the reward and the row named when a reward throws or is not a finite number', async () => {
    const [row] = rowsOf([{ id: 'q-3', prompt: 'q', answer: 'x' }]);
    const t = trajectory(2, row, 'PGG', 'x', [ok('z', 1)]);
    await assert.rejects(
      scoreTrajectories(
        [t],
        {
          outcome: [
            outcomeReward('judge', () => {
              throw new Error('judge offline');
            }),
          ],
        },
        tools,
      ),
      (error: unknown) => {
        assert.ok(error instanceof RewardError);
        assert.match(
          error.message,
          /^outcome reward "judge" on trajectory 2 \(rewards\.jsonl:1 \(row q-3\)\) threw: Error: judge offline/,
        );
        return true;
      },
    );
    await assert.rejects(
      scoreTrajectories([t], { outcome: [outcomeReward('nan', () => NaN)] }, tools),
      /outcome reward "nan" on trajectory 2 .* returned NaN; rewards must be finite numbers/,
    );
    await assert.rejects(
      scoreTrajectories([t], { outcome: [], process: [{ name: 'p', score: () => 'high' as never }] }, tools),
      /process reward "p" on trajectory 2 \(rewards\.jsonl:1 \(row q-3\)\), turn 0 call 0 returned "high"/,
    );
    await assert.rejects(
      scoreTrajectories([t], { outcome: [exactMatch(), exactMatch()] }, tools),
      /rewards\.outcome\[1\]: two rewards are named "exact_match"/,
    );
    await assert.rejects(
      scoreTrajectories([t], { outcome: [], combine: 'normalised' as never }, tools),
      /rewards\.combine must be "weighted-sum" or "agent-r1", got "normalised"/,
    );
    await assert.rejects(
      scoreTrajectories([t], { outcome: [], errorPenalty: { parse: Infinity } }, tools),
      /rewards\.errorPenalty\.parse: expected a finite number ≥ 0/,
    );
  });

  it('subtract the truncation penalty from the outcome of a trajectory a length limit cut off, and only then', async () => {
    const [row] = rowsOf([{ id: 'q-9', prompt: 'q', answer: 'x' }]);
    const runOn = {
      ...trajectory(0, row, 'PGG', '<answer>x</answer>x</answer>x'),
      finishReason: 'max_turn_tokens' as const,
    };
    const cutByTotal = {
      ...trajectory(1, row, 'PGG', '<answer>x</answer>'),
      finishReason: 'max_total_tokens' as const,
    };
    const finished = trajectory(2, row, 'PGG', '<answer>x</answer>');
    const batch = await scoreTrajectories(
      [runOn, cutByTotal, finished],
      { outcome: [exactMatch()], truncationPenalty: 0.5 },
      tools,
    );
    assert.deepEqual(
      batch.trajectories.map((t) => [t.outcome, t.components.exact_match, t.components.truncation_penalty]),
      [
        [0.5, 1, -0.5],
        [0.5, 1, -0.5],
        [1, 1, undefined],
      ],
    );
    await assert.rejects(
      scoreTrajectories([finished], { outcome: [], truncationPenalty: -1 }, tools),
      /rewards\.truncationPenalty: expected a finite number ≥ 0/,
    );
  });

  it('fails naming the row and the value for ±Infinity, NaN and absurdly large rewards, and for totals weights take out of range', async () => {
    const [row] = rowsOf([{ id: 'q-4', prompt: 'q', answer: 'x' }]);
    const t = trajectory(5, row, 'PGG', 'x', [ok('z', 1)]);
    const where = 'trajectory 5 \\(rewards\\.jsonl:1 \\(row q-4\\)\\)';
    for (const [value, said] of [
      [Infinity, 'Infinity; rewards must be finite numbers'],
      [-Infinity, '-Infinity; rewards must be finite numbers'],
      [1e300, '1e\\+300; rewards must lie within ±1e\\+6'],
      [-1e300, '-1e\\+300; rewards must lie within ±1e\\+6'],
      [2e6, '2000000; rewards must lie within ±1e\\+6'],
    ] as const) {
      await assert.rejects(
        scoreTrajectories([t], { outcome: [outcomeReward('big', () => value)] }, tools),
        new RegExp(`^RewardError: outcome reward "big" on ${where} returned ${said}`),
      );
    }
    await assert.rejects(
      scoreTrajectories([t], { outcome: [outcomeReward('bigint', () => 3n as never)] }, tools),
      /returned 3n \(a BigInt\); rewards must be finite numbers/,
    );
    // Each reward in range, the weighted total not.
    await assert.rejects(
      scoreTrajectories([t], { outcome: [{ ...outcomeReward('one', () => 1), weight: 5e6 }] }, tools),
      new RegExp(
        `the total reward \\(outcome 5000000, process 0\\) of ${where} returned 5000000; rewards must lie within`,
      ),
    );
    const fine = await scoreTrajectories([t], { outcome: [outcomeReward('edge', () => -MAX_ABS_REWARD)] }, tools);
    assert.equal(fine.trajectories[0].total, -MAX_ABS_REWARD);
  });
});

describe('process rewards: normalisation that never amplifies, validation, the ablation', () => {
  const search = defineTool({
    name: 'search',
    description: 'Search.',
    parameters: z.object({ query: z.string() }),
    execute: () => 'result',
    reward: () => 1,
  });
  const tools = new ToolSet([search]);
  const ok = (tokenEnd: number): Partial<ToolCallResult> => ({
    name: 'search',
    arguments: { query: 'q' },
    result: { content: [{ type: 'text', text: 'result' }] },
    tokenEnd,
  });
  const failed = (tokenEnd: number): Partial<ToolCallResult> => ({
    error: { kind: 'parse', message: 'bad' },
    tokenEnd,
  });
  const rows = rowsOf([
    { id: 'a', prompt: 'q', answer: 'x' },
    { id: 'b', prompt: 'q', answer: 'x' },
  ]);

  // Defect 2 of issue 16: Agent-R1's divide-by-the-batch's-largest-return scaled a lone 0.05
  // penalty up to −1, enough to cancel a correct answer.
  it('agent-r1 never scales a process reward up: a lone small penalty stays what it was', async () => {
    const right = trajectory(0, rows[0], 'PGGGG', '<answer>x</answer>', [failed(2)]);
    const batch = await scoreTrajectories(
      [right],
      { outcome: [exactMatch()], toolRewards: false, errorPenalty: 0.05, combine: 'agent-r1' },
      tools,
    );
    assert.equal(batch.maxProcessRewardToGo, 0.05);
    assert.equal(batch.processScale, 1, 'divided by max(1, 0.05) = 1');
    assert.deepEqual(
      batch.trajectories[0].calls.map((c) => c.scaled),
      [-0.05],
    );
    assert.ok(Math.abs(batch.trajectories[0].total - 0.95) < 1e-12, 'the correct answer keeps its reward');
    // With a weight: never more than the weight.
    const weighted = await scoreTrajectories(
      [right],
      { outcome: [], toolRewards: false, errorPenalty: 0.05, combine: 'agent-r1', processWeight: 0.5 },
      tools,
    );
    assert.equal(weighted.processScale, 0.5);
  });

  it('agent-r1 keeps a running statistic: the scale does not jump from batch to batch', async () => {
    const normalizer = new ProcessRewardNormalizer(0.9);
    const config: RewardConfig = { outcome: [], combine: 'agent-r1' };
    // Batch 1: four rewarded searches in one trajectory (largest reward-to-go 4); batch 2: two (2).
    const four = trajectory(0, rows[0], 'PGGGGGGGGG', 'x', [ok(1), ok(3), ok(5), ok(7)]);
    const two = trajectory(0, rows[0], 'PGGGGG', 'x', [ok(1), ok(3)]);
    const first = await scoreTrajectories([four], config, tools, { normalizer });
    assert.equal(first.processScale, 1 / 4);
    const second = await scoreTrajectories([two], config, tools, { normalizer });
    assert.equal(second.maxProcessRewardToGo, 2);
    assert.ok(
      Math.abs(second.processScale - 1 / (0.9 * 4 + 0.1 * 2)) < 1e-12,
      `scale ${second.processScale}: M = 0.9·4 + 0.1·2, not the batch's own 2`,
    );
    assert.ok(Math.abs(second.processMagnitude! - 3.8) < 1e-12);
    // A batch without process rewards measures nothing and leaves M alone.
    const none = await scoreTrajectories([trajectory(0, rows[0], 'PG', 'x')], config, tools, { normalizer });
    assert.equal(none.processMagnitude, second.processMagnitude);
    assert.deepEqual(normalizer.state(), { magnitude: second.processMagnitude, batches: 2 });
    // Resumed from its state, the statistic continues where it was.
    const resumed = new ProcessRewardNormalizer(0.9, normalizer.state());
    assert.equal(resumed.observe(2), normalizer.observe(2));
  });

  // Defect 5 of issue 16: a negative errorPenalty silently became a bonus for failing.
  it('refuses penalties and weights of the wrong sign, naming the field', async () => {
    const t = trajectory(0, rows[0], 'PGG', 'x', [failed(1)]);
    const refused = async (config: RewardConfig, message: RegExp) =>
      assert.rejects(
        scoreTrajectories([t], config, tools),
        (error: unknown) => error instanceof RewardError && message.test(error.message),
      );
    await refused(
      { outcome: [], errorPenalty: -0.1 },
      /^rewards\.errorPenalty: expected a finite number ≥ 0 \(it is subtracted from a failed call's reward: a negative penalty would reward failing\), got -0\.1$/,
    );
    await refused(
      { outcome: [], errorPenalty: { timeout: -1 } },
      /^rewards\.errorPenalty\.timeout: expected a finite number ≥ 0/,
    );
    await refused(
      { outcome: [], errorPenalty: { crashed: 1 } as never },
      /^rewards\.errorPenalty\.crashed: not an error kind; expected one of parse, unknown_tool, invalid_arguments, threw, timeout, unrecorded$/,
    );
    await refused(
      { outcome: [exactMatch({ weight: -2 })] },
      /^rewards\.outcome\[0\] \("exact_match"\)\.weight: expected a finite number ≥ 0 \(a weight scales the score; make the score negative for a penalty\), got -2$/,
    );
    await refused(
      { outcome: [], process: [{ name: 'p', weight: Number.NaN, score: () => 1 }] },
      /^rewards\.process\[0\] \("p"\)\.weight: expected a finite number ≥ 0/,
    );
    await refused(
      { outcome: [], toolRewards: { weight: -0.1 } },
      /^rewards\.toolRewards\.weight: expected a finite number ≥ 0/,
    );
    await refused({ outcome: [], processWeight: -1 }, /^rewards\.processWeight: expected a finite number ≥ 0/);
    await refused(
      { outcome: [], combine: 'agent-r1', processNormMomentum: 1 },
      /^rewards\.processNormMomentum: expected a number in \[0, 1\)/,
    );
    // A penalty of 0 and a weight of 0 are allowed (off).
    const zero = await scoreTrajectories([t], { outcome: [], errorPenalty: 0, toolRewards: { weight: 0 } }, tools);
    assert.deepEqual(
      zero.trajectories[0].calls.map((c) => c.scaled + 0),
      [0],
    );
  });

  // Defect 4 of issue 16: the "process rewards off" ablation (toolRewards: false) kept the error penalty.
  it('the process-rewards-off ablation takes every process part out of the return, the error penalty included', async () => {
    const config: RewardConfig = {
      outcome: [exactMatch()],
      toolRewards: { weight: 0.1 },
      process: [{ name: 'called', score: () => 1 }],
      errorPenalty: 0.1,
    };
    const t = trajectory(0, rows[0], 'PGGGGG', '<answer>x</answer>', [ok(1), failed(3)]);
    const off = await scoreTrajectories([t], withoutProcessRewards(config), tools);
    const r = off.trajectories[0];
    assert.deepEqual(
      r.calls.map((c) => c.scaled + 0),
      [0, 0],
      'nothing of the calls enters the return',
    );
    assert.equal(r.total, 1, 'the outcome alone');
    assert.deepEqual(
      r.calls.map((c) => c.components),
      [
        { 'tool:search': 1, called: 1 },
        { called: 1, error_penalty: -0.1 },
      ],
      'still recorded, for comparison',
    );
    const sample = toRlSample(t, r);
    assert.deepEqual(
      [...tokenRewards(sample)].map((v) => v + 0),
      [0, 0, 0, 0, 0, 1],
      'the only reward on a token is the outcome',
    );
  });
});
