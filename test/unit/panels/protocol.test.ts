import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  type MetricsRecord,
  type RunRecord,
  MetricsPanelState,
  MetricsToHost,
  MetricsToWebview,
  OpenRunInDebuggerArgs,
  parseWith,
  resolveStepSelection,
  TrajectoriesPanelState,
  TrajectoriesToHost,
  TrajectoriesToWebview,
} from '#trainer/contract/protocol';
import { latestTrainMetrics, runStatusText } from '../../../extension/panels/runStatusText';

describe('panel messages', () => {
  it('accept what the panels send and name the field of what they must not', () => {
    assert.deepEqual(parseWith(TrajectoriesToHost, { type: 'showStep', step: 'follow' }, 'm'), {
      type: 'showStep',
      step: 'follow',
    });
    assert.throws(
      () => parseWith(TrajectoriesToHost, { type: 'openTrajectory', step: 1 }, 'message from the Trajectories panel'),
      /message from the Trajectories panel: index: /,
    );
    assert.throws(
      () =>
        parseWith(
          TrajectoriesToWebview,
          { type: 'rows', step: 1, selection: 'follow', reset: true, rows: [{ index: 0 }] },
          'm',
        ),
      /m: rows\.0\.step/,
    );
    assert.throws(
      () =>
        parseWith(
          MetricsToWebview,
          {
            type: 'metrics',
            runDir: '/r',
            reset: true,
            columns: { steps: [1], kinds: ['test'], skipped: [null], values: {} },
          },
          'm',
        ),
      /columns\.kinds\.0/,
    );
    assert.throws(() => parseWith(MetricsToHost, { type: 'exportCsv', fileName: '', csv: '' }, 'm'), /fileName/);
    assert.throws(
      () => parseWith(OpenRunInDebuggerArgs, { runDirectory: '/r', step: 1 }, 'Open in Debugger'),
      /Open in Debugger: trajectory/,
    );
  });

  it('validate the state a panel keeps across a reload', () => {
    const state = {
      runDir: '/w/.rollout/runs/r1',
      step: 3,
      filters: { text: '', rewardMin: null, rewardMax: 1, errors: 'with', tool: 'search', finishReason: '' },
      sort: { column: 'reward', direction: 'desc' },
      selected: 4,
      colourBy: 'entropy',
    };
    // A state saved before panels could follow the newest run reads as pinned to its run.
    assert.deepEqual(TrajectoriesPanelState.parse(state), { ...state, followsNewest: false });
    assert.equal(TrajectoriesPanelState.parse({ ...state, followsNewest: true }).followsNewest, true);
    assert.equal(MetricsPanelState.parse({ runDirs: ['/r'], smoothing: 0, band: 'std' }).followsNewest, false);
    assert.equal(
      TrajectoriesPanelState.safeParse({ ...state, sort: { column: 'size', direction: 'desc' } }).success,
      false,
    );
    assert.equal(
      MetricsPanelState.safeParse({ runDirs: [], smoothing: 0, band: 'std' }).success,
      false,
      'a Metrics panel shows at least its own run',
    );
    assert.equal(MetricsPanelState.safeParse({ runDirs: ['/r'], smoothing: 1.5, band: 'std' }).success, false);
  });

  it('resolve a step selection: the newest step when following, else the pinned one, or the evaluation asked for', () => {
    assert.deepEqual(resolveStepSelection('follow', [1, 2, 7]), { set: 'train', step: 7 });
    assert.equal(resolveStepSelection('follow', []), undefined);
    assert.deepEqual(resolveStepSelection(2, [1, 2, 7]), { set: 'train', step: 2 });
    assert.deepEqual(resolveStepSelection({ evaluation: 0 }, [1, 2, 7]), { set: 'eval', step: 0 });
  });
});

describe('live-run status text', () => {
  const run: RunRecord = {
    protocol: 1,
    id: 'r1',
    name: 'search agent',
    status: 'running',
    createdAt: '2026-01-01T00:00:00Z',
    algorithm: 'grpo',
    device: 'cpu',
    seed: 1,
    totalSteps: 50,
    lastStep: 11,
    model: { path: 'm', family: 'qwen3', parameters: 1, trainableParameters: 1 },
    versions: { rolloutStudio: '0.1.0', node: '20' },
    config: {},
  };

  it('shows step, mean reward and tokens per second of the newest training record', () => {
    const records: MetricsRecord[] = [
      {
        step: 12,
        time: 't',
        kind: 'train',
        values: { 'reward/mean': 0.61234, 'throughput/rollout_tokens_per_s': 381.6 },
      },
      { step: 12, time: 't', kind: 'eval', values: { 'reward/mean': 0.9 } },
    ];
    assert.equal(latestTrainMetrics(records), records[0]);
    assert.equal(
      runStatusText(run, latestTrainMetrics(records)).text,
      '$(pulse) step 12/50 · reward 0.612 · 382 tok/s',
    );
  });

  it('names the run’s task metric with its value; a run from before runs named one reads score/exact_match', () => {
    const records: MetricsRecord[] = [
      {
        step: 3,
        time: 't',
        kind: 'train',
        values: { 'reward/mean': 0.5, 'score/within_1pct': 0.25, 'score/exact_match': 0.75 },
      },
    ];
    const named = runStatusText({ ...run, metric: 'within_1pct' }, latestTrainMetrics(records));
    assert.equal(named.text, '$(pulse) step 3/50 · reward 0.500 · within_1pct 0.250');
    assert.match(named.tooltip, /^task metric: within_1pct /m);
    assert.equal(
      runStatusText(run, latestTrainMetrics(records)).text,
      '$(pulse) step 3/50 · reward 0.500 · exact_match 0.750',
    );
  });

  it('falls back to run.json’s last step before any metrics', () => {
    const { text, tooltip } = runStatusText(run, undefined);
    assert.equal(text, '$(pulse) step 11/50');
    assert.match(tooltip, /no metrics recorded yet/);
  });
});
