/**
 * The terminal's health warnings: a kind printed when it starts, reminders while it lasts, printed
 * again as new after a quiet spell, a collapse every time, and each kind on its own schedule.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import type { HealthWarning } from '#trainer/contract/protocol/runStore';
import { WarningLog, warningLine } from '#trainer/pipeline/training/run/warningLog';

const zeroSignal: HealthWarning = {
  code: 'zero_signal',
  severity: 'warn',
  message: '75 % of the groups had all-equal rewards',
  advice: 'raise rollout.temperature',
};
const entropy: HealthWarning = {
  code: 'entropy_low',
  severity: 'warn',
  message: 'entropy 0.003',
  advice: 'add a KL term',
};
const collapse: HealthWarning = {
  code: 'collapse',
  severity: 'critical',
  message: 'tool errors 84 %',
  advice: 'roll back',
};

/** The lines printed for warnings[step - 1] at steps 1, 2, …, each prefixed with its step. */
function printed(perStep: HealthWarning[][], remindEvery = 10): string[] {
  const lines: string[] = [];
  const log = new WarningLog((line) => lines.push(line), remindEvery);
  perStep.forEach((warnings, i) => log.step(i + 1, warnings));
  return lines;
}

describe('WarningLog', () => {
  it('prints a kind when it starts and then every remindEvery steps, with how often it was seen', () => {
    const lines = printed(Array.from({ length: 25 }, () => [zeroSignal]));
    assert.deepEqual(lines, [
      warningLine(1, zeroSignal),
      warningLine(11, zeroSignal, 'still, seen at 10 of the 10 steps since step 1'),
      warningLine(21, zeroSignal, 'still, seen at 10 of the 10 steps since step 11'),
    ]);
  });

  it('counts a kind that comes and goes as one that lasts, and says how often it was seen', () => {
    const perStep = Array.from({ length: 11 }, (_, i) => (i % 2 === 0 ? [zeroSignal] : []));
    assert.deepEqual(printed(perStep), [
      warningLine(1, zeroSignal),
      warningLine(11, zeroSignal, 'still, seen at 5 of the 10 steps since step 1'),
    ]);
  });

  it('prints a kind again as new once it has been quiet for remindEvery steps', () => {
    const perStep = [[zeroSignal], ...Array.from({ length: 4 }, () => []), [zeroSignal], [zeroSignal]];
    assert.deepEqual(printed(perStep, 4), [warningLine(1, zeroSignal), warningLine(6, zeroSignal)]);
  });

  it('keeps each kind on its own schedule', () => {
    const perStep = [[zeroSignal], [zeroSignal, entropy], [zeroSignal, entropy], [entropy]];
    assert.deepEqual(printed(perStep, 2), [
      warningLine(1, zeroSignal),
      warningLine(2, entropy),
      warningLine(3, zeroSignal, 'still, seen at 2 of the 2 steps since step 1'),
      warningLine(4, entropy, 'still, seen at 2 of the 2 steps since step 2'),
    ]);
  });

  it('prints every collapse', () => {
    const lines = printed([[collapse], [collapse], [collapse]]);
    assert.equal(lines.length, 3);
    assert.ok(lines.every((line, i) => line.startsWith(`COLLAPSE at step ${i + 1}: tool errors 84 %`)));
  });
});
