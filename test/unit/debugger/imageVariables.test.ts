/**
 * The debugger's VARIABLES for a vision-language trajectory: an "Images" scope listing the
 * images the trajectory has seen at the stopped point — the prompt's from the start, a tool's
 * once its call has run — each with its origin, size, tokens and the file in the run directory.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { VariableStore } from '../../../extension/debugger/variables';
import { buildTrajectory } from '../../fixtures/recordedRun';

function trajectoryWithImages() {
  const random = (() => {
    let s = 17;
    return () => (s = (s * 48271) % 2147483647) / 2147483647;
  })();
  for (let i = 0; ; i++) {
    const record = buildTrajectory(1, i, 4, random);
    const turn = record.turns.find((t) => t.toolCalls?.length && !t.toolCalls[0].error);
    if (!turn) continue;
    const sha = (c: string) => c.repeat(64);
    record.images = [
      {
        sha256: sha('a'),
        format: 'png',
        file: `images/${sha('a')}.png`,
        width: 32,
        height: 24,
        tokenStart: 2,
        tokens: 12,
        from: { kind: 'prompt' },
      },
      {
        sha256: sha('b'),
        format: 'webp',
        file: `images/${sha('b')}.webp`,
        width: 16,
        height: 16,
        tokenStart: turn.tokenEnd,
        tokens: 4,
        from: { kind: 'tool', turn: turn.index, call: 0 },
      },
    ];
    return { record, turn: turn.index };
  }
}

describe('debugger variables with images', () => {
  it("shows the prompt's image before the call runs, and the tool's image once it has", () => {
    const { record, turn } = trajectoryWithImages();
    const store = new VariableStore();
    const imagesAt = (phase: 'call' | 'result') => {
      const scopes = store.scopes({
        step: 1,
        trajectory: record,
        turn,
        call: 0,
        isEnd: false,
        visibleAt: { trajectory: 0, phase, turn, call: 0 },
        runDirectory: '/runs/r1',
      });
      const scope = scopes.find((s) => s.name.startsWith('Images'));
      return {
        name: scope?.name,
        items: scope ? store.variables(scope.variablesReference).map((v) => store.variables(v.variablesReference)) : [],
      };
    };
    const before = imagesAt('call');
    assert.equal(before.name, 'Images (1)');
    assert.deepEqual(Object.fromEntries(before.items[0].map((v) => [v.name, v.value])), {
      from: '"prompt"',
      size: '"32×24 png"',
      tokens: '12',
      tokenStart: '2',
      file: `"/runs/r1/images/${'a'.repeat(64)}.png"`,
      sha256: `"${'a'.repeat(64)}"`,
    });
    const after = imagesAt('result');
    assert.equal(after.name, 'Images (2)');
    assert.equal(after.items[1].find((v) => v.name === 'from')?.value, `"tool call 0 of turn ${turn}"`);
    assert.equal(after.items[1].find((v) => v.name === 'file')?.value, `"/runs/r1/images/${'b'.repeat(64)}.webp"`);
  });
});
