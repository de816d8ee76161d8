/**
 * The health checks: each threshold, the collapse detector on a synthetic history that collapses
 * (issue 31's two-tool chain: entropy 0.06 → 0.27, tool errors to 84 %) and on ones that do not,
 * the held-out drop, and the history a resumed run rebuilds from metrics.jsonl.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import type { MetricsRecord } from '#trainer/contract/protocol/runStore';
import {
  collapseOf,
  evaluationWarnings,
  healthHistory,
  healthSample,
  noGainWarnings,
  stepWarnings,
  zeroSignalShare,
  type HealthSample,
} from '#trainer/pipeline/training/health/health';
import { HealthSettings } from '#trainer/pipeline/training/health/healthSettings';
import { planCollapseResponse, withAction } from '#trainer/pipeline/training/health/collapseResponse';
import { rolloutMetrics } from '#trainer/pipeline/training/step/rolloutMetrics';
import type { Trajectory } from '#trainer/pipeline/rollout';

const settings = HealthSettings.parse({});
const SCORE = 'score/exact_match';

/** A healthy step's values: most of them changed by `patch`. */
function values(patch: Record<string, number> = {}): Record<string, number> {
  return {
    'reward/mean': 0.6,
    [SCORE]: 0.6,
    'entropy/mean': 0.08,
    'tools/error_rate': 0.02,
    'tools/parse_error_rate': 0.01,
    'tools/schema_error_rate': 0.01,
    'tools/calls_per_trajectory': 1.2,
    'health/zero_signal_groups': 0.25,
    'clip/fraction': 0.02,
    'kl/mean': 0.01,
    ...patch,
  };
}

/** Steps 1..n of a steady run with small wobbles. */
function history(n: number, patch: (step: number) => Record<string, number> = () => ({})): HealthSample[] {
  return Array.from({ length: n }, (_, i) =>
    healthSample(
      i + 1,
      values({ 'entropy/mean': 0.06 + 0.01 * (i % 2), [SCORE]: 0.95 + 0.02 * (i % 2), ...patch(i + 1) }),
      SCORE,
    ),
  );
}

const codes = (warnings: { code: string }[]) => warnings.map((w) => w.code).sort();

describe('the health metrics', () => {
  it('count the groups whose every advantage is zero: no member teaches anything', () => {
    const a = (...values: number[]) => Float32Array.from(values);
    // Group 0: GRPO with equal rewards; group 1: one member with signal (RFT's kept sample); group 2: a critic's advantages.
    const share = zeroSignalShare([0, 0, 1, 1, 2], [a(0, 0), a(0, 0), a(0, 0), a(1, 1), a(0.2, -0.1)]);
    assert.equal(share, 1 / 3);
    assert.equal(zeroSignalShare([], []), 0);
  });

  it('tell parse errors from schema errors, apart from tools that failed on their own', () => {
    const call = (kind?: 'parse' | 'unknown_tool' | 'invalid_arguments' | 'threw') => ({
      turn: 0,
      index: 0,
      raw: '',
      observation: '',
      truncated: false,
      turnIndex: 1,
      tokenEnd: 1,
      logs: [],
      ...(kind ? { error: { kind, message: kind } } : {}),
    });
    const trajectory = {
      index: 0,
      rowId: 'r',
      group: 0,
      sample: 0,
      row: { id: 'r', messages: [] },
      prompt: 'q',
      messages: [],
      ids: [1, 2],
      mask: [0, 1],
      logprobs: [0, 0],
      entropies: [0, 0.5],
      promptLength: 1,
      turns: [],
      finishReason: 'answered',
      historyRewrites: [],
      calls: [
        call('parse'),
        call('unknown_tool'),
        call('invalid_arguments'),
        call('threw'),
        call(),
        call(),
        call(),
        call(),
      ],
    } as unknown as Trajectory;
    const metrics = rolloutMetrics([trajectory], {
      trajectories: [{ outcome: 0, process: 0, total: 0, components: {}, calls: [] }],
    } as never);
    assert.equal(metrics['tools/parse_error_rate'], 1 / 8);
    assert.equal(metrics['tools/schema_error_rate'], 2 / 8);
    assert.equal(metrics['tools/error_rate'], 4 / 8);
  });
});

describe('the step warnings', () => {
  it('say nothing about a healthy step', () => {
    assert.deepEqual(stepWarnings(values(), history(5), settings, SCORE), []);
  });

  it('warn when most groups carry no signal, with advice that fits the score', () => {
    const easy = stepWarnings(
      values({ 'health/zero_signal_groups': 0.875, [SCORE]: 0.97 }),
      history(5),
      settings,
      SCORE,
    );
    assert.deepEqual(codes(easy), ['zero_signal']);
    assert.match(easy[0].message, /88 % of the groups had all-equal rewards/);
    assert.match(easy[0].message, /too easy/);
    assert.match(easy[0].advice, /rollout\.temperature or algorithm\.groupSize, add harder prompts/);
    const hard = stepWarnings(values({ 'health/zero_signal_groups': 1, [SCORE]: 0 }), history(5), settings, SCORE);
    assert.match(hard[0].advice, /add demonstrations \(sft\) or easier prompts/);
    assert.deepEqual(
      stepWarnings(values({ 'health/zero_signal_groups': 0.49 }), history(5), settings, SCORE),
      [],
      'below the threshold',
    );
  });

  it('warn when entropy collapses towards 0', () => {
    assert.deepEqual(codes(stepWarnings(values({ 'entropy/mean': 0.004 }), history(5), settings, SCORE)), [
      'entropy_collapse',
    ]);
    assert.deepEqual(stepWarnings(values({ 'entropy/mean': 0.02 }), history(5), settings, SCORE), []);
  });

  it('warn when entropy jumps against the recent median, but not before there is a history', () => {
    const jump = stepWarnings(values({ 'entropy/mean': 0.2, [SCORE]: 0.95 }), history(5), settings, SCORE);
    assert.deepEqual(codes(jump), ['entropy_explosion']);
    assert.match(jump[0].message, /from 0\.060 to 0\.200/);
    assert.deepEqual(
      stepWarnings(values({ 'entropy/mean': 0.2, [SCORE]: 0.95 }), history(2), settings, SCORE),
      [],
      'two steps are not a trend',
    );
    assert.deepEqual(
      stepWarnings(values({ 'entropy/mean': 0.1, [SCORE]: 0.95 }), history(5), settings, SCORE),
      [],
      'under twice the median',
    );
  });

  it('warn when tool calls do not parse or match their schema, only where calls were made', () => {
    const errors = stepWarnings(
      values({ 'tools/parse_error_rate': 0.2, 'tools/schema_error_rate': 0.1, 'tools/error_rate': 0.3 }),
      history(5),
      settings,
      SCORE,
    );
    assert.deepEqual(codes(errors), ['tool_errors']);
    assert.match(errors[0].message, /30 % of the tool calls could not be used: 20 % did not parse, 10 %/);
    assert.deepEqual(
      stepWarnings(
        values({ 'tools/parse_error_rate': 0.2, 'tools/schema_error_rate': 0.1, 'tools/calls_per_trajectory': 0 }),
        history(5),
        settings,
        SCORE,
      ),
      [],
    );
  });

  it('warn when the clip fraction is very high, and when the KL grows fast', () => {
    assert.deepEqual(codes(stepWarnings(values({ 'clip/fraction': 0.45 }), history(5), settings, SCORE)), [
      'clip_fraction',
    ]);
    const kl = stepWarnings(values({ 'kl/mean': 0.09 }), history(5), settings, SCORE);
    assert.deepEqual(codes(kl), ['kl_growth']);
    assert.match(kl[0].message, /0\.090 nats per token, up from 0\.010/);
    assert.deepEqual(
      stepWarnings(values({ 'kl/mean': 0.04 }), history(5), settings, SCORE),
      [],
      'growing, but under klMin',
    );
    assert.deepEqual(
      stepWarnings(
        values({ 'kl/mean': 0.09 }),
        history(5, () => ({ 'kl/mean': 0.06 })),
        settings,
        SCORE,
      ),
      [],
      'high, but not growing fast',
    );
  });

  it('follow the config: a threshold set there is the one used', () => {
    const strict = HealthSettings.parse({ zeroSignal: 0.2, clipFraction: 0.01 });
    assert.deepEqual(codes(stepWarnings(values(), history(5), strict, SCORE)), ['clip_fraction', 'zero_signal']);
  });
});

describe('the truncation check', () => {
  it('warns when many trajectories run into a length limit, and points at the truncation penalty', () => {
    const warnings = stepWarnings(values({ 'health/truncated': 0.75 }), history(5), settings, SCORE);
    const truncated = warnings.find((w) => w.code === 'truncated');
    assert.ok(truncated, JSON.stringify(warnings));
    assert.match(truncated.message, /^75 % of the trajectories ran into a length limit/);
    assert.match(truncated.advice, /rewards\.truncationPenalty/);
    assert.ok(
      !stepWarnings(values({ 'health/truncated': 0.1 }), history(5), settings, SCORE).some(
        (w) => w.code === 'truncated',
      ),
    );
  });
});

describe('the collapse detector', () => {
  // One step at a time (the detector's signs); the default asks for two in a row, tested below.
  const settings = HealthSettings.parse({ collapseSteps: 1 });

  it('calls one such step a risk and two in a row a collapse (the default)', () => {
    const defaults = HealthSettings.parse({});
    const collapsed = values({ 'entropy/mean': 0.27, 'tools/error_rate': 0.84, [SCORE]: 0.9 });
    const first = stepWarnings(collapsed, history(5), defaults, SCORE);
    assert.equal(collapseOf(first), undefined);
    assert.deepEqual(
      first.filter((w) => w.code.startsWith('collapse')).map((w) => [w.code, w.severity]),
      [['collapse_risk', 'warn']],
    );
    const second = stepWarnings(
      collapsed,
      [...history(5).slice(1), healthSample(6, collapsed, SCORE)],
      defaults,
      SCORE,
    );
    assert.equal(collapseOf(second)?.code, 'collapse');
    assert.match(collapseOf(second)!.message, /2 steps in a row/);
    // A hard batch between healthy steps: a risk, then nothing.
    const after = stepWarnings(
      values({ 'entropy/mean': 0.07, [SCORE]: 0.96 }),
      [...history(5).slice(1), healthSample(6, collapsed, SCORE)],
      defaults,
      SCORE,
    );
    assert.ok(!after.some((w) => w.code.startsWith('collapse')), JSON.stringify(after));
  });

  it("fires on issue 31's collapse: an entropy jump with the tool error rate shooting up", () => {
    const collapsed = values({
      'entropy/mean': 0.27,
      'tools/error_rate': 0.84,
      'tools/parse_error_rate': 0.6,
      'tools/schema_error_rate': 0.24,
      [SCORE]: 0.9,
    });
    const warnings = stepWarnings(collapsed, history(5), settings, SCORE);
    const collapse = collapseOf(warnings);
    assert.ok(collapse, JSON.stringify(warnings));
    assert.equal(collapse.code, 'collapse');
    assert.equal(collapse.severity, 'critical');
    assert.match(collapse.message, /entropy jumped from 0\.060 to 0\.270 .* the tool error rate rose from 2 % to 84 %/);
    assert.ok(
      !warnings.some((w) => w.code === 'entropy_explosion'),
      'the jump is reported once, as part of the collapse',
    );
  });

  it('fires on an entropy jump with the training score falling', () => {
    const warnings = stepWarnings(values({ 'entropy/mean': 0.3, [SCORE]: 0.4 }), history(5), settings, SCORE);
    assert.match(collapseOf(warnings)?.message ?? '', /the training exact_match fell from 0\.950 to 0\.400/);
  });

  it('does not fire on a score drop or an error spike without an entropy jump, nor on a jump alone', () => {
    assert.equal(
      collapseOf(stepWarnings(values({ [SCORE]: 0.2, 'tools/error_rate': 0.9 }), history(5), settings, SCORE)),
      undefined,
    );
    assert.equal(
      collapseOf(stepWarnings(values({ 'entropy/mean': 0.3, [SCORE]: 0.9 }), history(5), settings, SCORE)),
      undefined,
    );
  });

  it('does not fire on a run that learns: rising score, entropy slowly falling, steady errors', () => {
    const steps = Array.from({ length: 30 }, (_, i) =>
      values({
        [SCORE]: Math.min(1, 0.2 + 0.03 * i) + 0.04 * Math.sin(i),
        'entropy/mean': 0.3 * Math.exp(-i / 15) + 0.02 * Math.cos(i),
        'tools/error_rate': 0.05 + 0.03 * Math.sin(2 * i),
      }),
    );
    const past: HealthSample[] = [];
    for (const [i, v] of steps.entries()) {
      assert.equal(collapseOf(stepWarnings(v, past, settings, SCORE)), undefined, `step ${i + 1}`);
      past.push(healthSample(i + 1, v, SCORE));
      past.splice(0, Math.max(0, past.length - settings.window));
    }
  });

  it('fires within the window on a synthetic history that collapses', () => {
    // 20 healthy steps, then the policy falls apart over three.
    const healthy = Array.from({ length: 20 }, (_, i) =>
      values({ [SCORE]: 0.97 + 0.02 * (i % 2), 'entropy/mean': 0.06 + 0.005 * (i % 3), 'tools/error_rate': 0.01 }),
    );
    const falling = [0.15, 0.2, 0.27].map((e, i) =>
      values({ [SCORE]: [0.7, 0.4, 0.2][i], 'entropy/mean': e, 'tools/error_rate': [0.4, 0.6, 0.84][i] }),
    );
    const past: HealthSample[] = [];
    const fired: number[] = [];
    for (const [i, v] of [...healthy, ...falling].entries()) {
      if (collapseOf(stepWarnings(v, past, settings, SCORE))) fired.push(i + 1);
      past.push(healthSample(i + 1, v, SCORE));
      past.splice(0, Math.max(0, past.length - settings.window));
    }
    assert.deepEqual(fired, [21, 22, 23]);
  });
});

describe('the held-out drop', () => {
  it("warns on a drop below the best and calls the tutorial's 22 % → 8 % a collapse", () => {
    const best = { step: 12, value: 0.22 };
    const collapse = evaluationWarnings({ step: 37, metric: 'exact_match', value: 0.08 }, best, settings);
    assert.deepEqual(
      collapse.map((w) => [w.code, w.severity]),
      [['heldout_collapse', 'critical']],
    );
    assert.match(collapse[0].message, /held-out exact_match 0\.080 at step 37, down from the best 0\.220 \(step 12\)/);
    assert.match(collapse[0].advice, /checkpoints\/best/);
    const drop = evaluationWarnings(
      { step: 20, metric: 'exact_match', value: 0.65 },
      { step: 10, value: 0.85 },
      settings,
    );
    assert.deepEqual(
      drop.map((w) => [w.code, w.severity]),
      [['heldout_drop', 'warn']],
    );
    assert.deepEqual(
      evaluationWarnings({ step: 20, metric: 'exact_match', value: 0.82 }, { step: 10, value: 0.85 }, settings),
      [],
      'within the noise of 100 rows',
    );
    assert.deepEqual(
      evaluationWarnings({ step: 20, metric: 'exact_match', value: 0.9 }, { step: 10, value: 0.85 }, settings),
      [],
    );
    assert.deepEqual(
      evaluationWarnings({ step: 0, metric: 'exact_match', value: 0.1 }, undefined, settings),
      [],
      'no best yet',
    );
  });
});

describe('the no-gain warning', () => {
  const end = (value: number) => ({ step: 40, metric: 'exact_match', value });
  it("says so when the run's best is within heldOutMin of the evaluation before RL", () => {
    // forecast at lr 3e-5: 0.45 before RL, best 0.48 at step 8, 0.45 at the end.
    const [noise] = noGainWarnings(end(0.45), 0.45, { step: 8, value: 0.48 }, settings);
    assert.equal(noise.code, 'no_gain');
    assert.match(
      noise.message,
      /^RL gained nothing measurable in 40 steps: held-out exact_match 0\.450 before RL, 0\.450 at the end; the best, 0\.480 at step 8, is within the noise/,
    );
    assert.match(noise.advice, /demonstrations taught the mistake/);
    const [none] = noGainWarnings(end(0.4), 0.45, { step: 0, value: 0.45 }, settings);
    assert.match(none.message, /checkpoints\/best holds the weights RL started from$/);
  });

  it('stays quiet when RL gained heldOutMin or more, at its best or at the end, and without a score before RL', () => {
    assert.deepEqual(noGainWarnings(end(0.47), 0.45, { step: 16, value: 0.52 }, settings), []);
    assert.deepEqual(
      noGainWarnings(end(0.5), 0.45, { step: 0, value: 0.45 }, settings),
      [],
      'the final evaluation counts',
    );
    assert.deepEqual(noGainWarnings(end(0.45), undefined, { step: 8, value: 0.46 }, settings), []);
    assert.deepEqual(noGainWarnings({ ...end(0.45), step: 0 }, 0.45, { step: 0, value: 0.45 }, settings), []);
  });
});

describe('the response to a collapse', () => {
  const best = { step: 24, metric: 'exact_match', value: 0.61, checkpoint: 'checkpoints/best' };

  it('is decided before the warning is recorded, so that the record says what was done', () => {
    assert.deepEqual(planCollapseResponse('warn', best, 1), { kind: 'warn', lrScale: 1 });
    const rollback = planCollapseResponse('rollback', best, 0.5);
    assert.equal(rollback.lrScale, 0.25);
    assert.equal(
      rollback.action,
      'rolled back to step 24, exact_match 0.610 (checkpoints/best); learning rate ×0.25 from now on',
    );
    assert.match(
      planCollapseResponse('rollback', undefined, 1).action!,
      /no best checkpoint to roll back to yet.*×0\.5/,
    );
    assert.match(
      planCollapseResponse('stop', best, 1).action!,
      /^stopped the run \(onCollapse: 'stop'\); the best weights are at step 24/,
    );
    const warnings = [
      { code: 'zero_signal', severity: 'warn' as const, message: 'm', advice: 'a' },
      { code: 'collapse', severity: 'critical' as const, message: 'm', advice: 'a' },
    ];
    assert.deepEqual(
      withAction(warnings, warnings[1], rollback).map((w) => w.action),
      [undefined, rollback.action],
    );
  });
});

describe('the history a resumed run rebuilds', () => {
  const record = (
    kind: MetricsRecord['kind'],
    step: number,
    patch: Record<string, number> = {},
    warnings?: MetricsRecord['warnings'],
  ): MetricsRecord => ({ step, kind, time: '', values: values(patch), ...(warnings ? { warnings } : {}) });

  it('is the newest training steps up to the checkpoint, after the last collapse acted on', () => {
    const records = [
      record('sft', 3),
      ...[1, 2, 3, 4, 5, 6, 7, 8].map((s) => record('train', s, { 'entropy/mean': s })),
      record('eval', 4),
    ];
    assert.deepEqual(
      healthHistory(records, 6, 3, SCORE).map((s) => [s.step, s.entropy]),
      [
        [4, 4],
        [5, 5],
        [6, 6],
      ],
    );
    const acted = [
      { code: 'collapse', severity: 'critical' as const, message: 'm', advice: 'a', action: 'rolled back to …' },
    ];
    const warned = [{ code: 'collapse', severity: 'critical' as const, message: 'm', advice: 'a' }];
    const withRollback = records.map((r) =>
      r.kind === 'train' && r.step === 5
        ? { ...r, warnings: acted }
        : r.kind === 'train' && r.step === 4
          ? { ...r, warnings: warned }
          : r,
    );
    assert.deepEqual(
      healthHistory(withRollback, 8, 5, SCORE).map((s) => s.step),
      [6, 7, 8],
    );
    const afterEvalRollback = [...records.slice(0, 5), record('eval', 4, {}, acted), ...records.slice(5)];
    assert.deepEqual(
      healthHistory(afterEvalRollback, 8, 5, SCORE).map((s) => s.step),
      [5, 6, 7, 8],
    );
  });
});
