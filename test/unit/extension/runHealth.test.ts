import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  healthMarker,
  healthNotice,
  latestStepWarnings,
  shortName,
  type NotifiedKeys,
} from '../../../extension/panels/runHealth';
import type { HealthWarning, MetricsRecord } from '#trainer/contract/protocol';

const zeroSignal: HealthWarning = {
  code: 'zero_signal',
  severity: 'warn',
  message: '14 of 16 groups had equal rewards: no learning signal',
  advice: 'raise rollout.temperature or algorithm.groupSize',
};
const toolErrors: HealthWarning = {
  code: 'tool_errors',
  severity: 'warn',
  message: '38 % of tool calls could not be read',
  advice: 'turn on constrained tool calls.',
};
const collapse: HealthWarning = {
  code: 'collapse',
  severity: 'critical',
  message: 'the policy collapsed: tool error rate 0.08 → 0.84',
  advice: 'lower optimization.lr',
  action: 'rolled back to checkpoints/best (step 24), lr 5e-6',
};
const heldoutDrop: HealthWarning = {
  code: 'heldout_drop',
  severity: 'warn',
  message: 'held-out exact_match fell from 0.61 to 0.35',
  advice: 'use checkpoints/best',
};

function record(step: number, warnings?: HealthWarning[], kind: MetricsRecord['kind'] = 'train'): MetricsRecord {
  return { step, time: `t${step}`, kind, values: { 'reward/mean': 0.5 }, ...(warnings ? { warnings } : {}) };
}

function keys(): NotifiedKeys & { all: Set<string> } {
  const all = new Set<string>();
  return { all, has: (k) => all.has(k), add: (k) => void all.add(k) };
}

const run = { key: '/runs/a', name: 'chain-task' };

describe('the status-bar health marker', () => {
  it('shows the newest step’s warnings only, critical first, the evaluation after that step included', () => {
    assert.equal(
      healthMarker([record(1, [zeroSignal]), record(2)]),
      undefined,
      'a warning of an older step is not the newest step’s',
    );
    const marker = healthMarker([
      record(1, [zeroSignal]),
      record(2, [toolErrors, collapse]),
      record(2, [heldoutDrop], 'eval'),
    ]);
    assert.ok(marker);
    assert.equal(marker.text, '$(error) collapse +2');
    assert.equal(marker.severity, 'critical');
    assert.equal(marker.step, 2);
    const tooltip = marker.tooltip.split('\n');
    assert.equal(tooltip[0], 'Rollout Studio: what the health checks found at step 2');
    assert.deepEqual(tooltip.slice(2, 5), [
      `Critical: ${collapse.message}`,
      `Try: ${collapse.advice}`,
      `Done: ${collapse.action}`,
    ]);
    assert.ok(tooltip.includes(`Warning: ${heldoutDrop.message}`) && tooltip.includes(`Try: ${toolErrors.advice}`));
    assert.equal(tooltip.at(-1), 'Click to open the Metrics panel');
  });

  it('marks a warn-only step with the warning icon and names unknown codes readably', () => {
    assert.equal(healthMarker([record(3, [zeroSignal])])!.text, '$(warning) no learning signal');
    assert.equal(healthMarker([record(3, [zeroSignal])])!.severity, 'warn');
    assert.equal(shortName('reward_hacking_suspected'), 'reward hacking suspected');
  });

  it('ignores warm-start records when finding the newest step', () => {
    assert.deepEqual(latestStepWarnings([record(4, [zeroSignal]), record(9, [toolErrors], 'sft')]), {
      step: 4,
      warnings: [zeroSignal],
    });
    assert.equal(latestStepWarnings([]), undefined);
  });
});

describe('health notifications', () => {
  it('tells each warn code once per run, the newest first when several are due, and counts the rest', () => {
    const told = keys();
    const first = healthNotice(run, [record(1, [zeroSignal]), record(2, [zeroSignal, toolErrors])], told);
    assert.ok(first);
    assert.equal(first.severity, 'warn');
    assert.equal(first.step, 2);
    assert.equal(first.code, 'tool_errors');
    assert.equal(
      first.message,
      `Rollout Studio: chain-task, step 2: ${toolErrors.message}. Try: turn on constrained tool calls. 1 other warning in the Metrics panel.`,
    );
    assert.equal(healthNotice(run, [record(3, [zeroSignal, toolErrors])], told), undefined, 'both codes were told');
    assert.ok(healthNotice({ ...run, key: '/runs/b' }, [record(3, [zeroSignal])], told), 'another run is told again');
  });

  it('tells the first critical warning of a run, above any warn due with it, and no critical after it', () => {
    const told = keys();
    const notice = healthNotice(run, [record(36, [zeroSignal]), record(37, [collapse, toolErrors])], told);
    assert.ok(notice);
    assert.equal(notice.severity, 'critical');
    assert.equal(
      notice.message,
      `Rollout Studio: chain-task, step 37: ${collapse.message}. Try: ${collapse.advice}. Done: ${collapse.action}. 2 other warnings in the Metrics panel.`,
    );
    const again = { ...collapse, code: 'entropy_collapse' };
    assert.equal(
      healthNotice(run, [record(38, [collapse]), record(39, [again])], told),
      undefined,
      'one critical notification per run',
    );
    assert.deepEqual([...told.all].sort(), [
      '/runs/a critical',
      '/runs/a warn tool_errors',
      '/runs/a warn zero_signal',
    ]);
  });

  it('says nothing for records without warnings', () => {
    const told = keys();
    assert.equal(healthNotice(run, [record(1), record(2, [])], told), undefined);
    assert.equal(told.all.size, 0);
  });
});
