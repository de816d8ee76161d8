import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import type { TrajectoryRecord, TurnRecord } from '#trainer/contract/protocol';
import { shownIndices } from '../../../extension/debugger/replay/replayTarget';
import { stepTimeline, trajectoryPoints } from '../../../extension/debugger/timeline';
import {
  parseTranscriptPath,
  parseTranscriptUri,
  transcriptUri,
} from '../../../extension/debugger/transcripts/transcriptUri';

function trajectory(index: number, callsPerAssistantTurn: number[]): TrajectoryRecord {
  const turns: TurnRecord[] = [
    { index: 0, role: 'user', text: 'q', tokenStart: 0, tokenEnd: 1 },
    ...callsPerAssistantTurn.map((calls, k) => ({
      index: k + 1,
      role: 'assistant' as const,
      text: 'a',
      tokenStart: k + 1,
      tokenEnd: k + 2,
      toolCalls: Array.from({ length: calls }, (_, c) => ({
        index: c,
        name: 't',
        raw: '{}',
        observation: 'o',
        truncated: false,
        latencyMs: 1,
        tokenEnd: k + 1,
      })),
    })),
  ];
  return {
    step: 1,
    index,
    rowId: `r${index}`,
    group: 0,
    sample: index,
    prompt: 'q',
    turns,
    finishReason: 'answered',
    rewards: { outcome: 0, process: 0, total: 0, components: {} },
    lengths: { prompt: 1, response: 1, total: 2 },
    tokens: { ids: '', pieces: [], mask: '', logprobs: '' },
  };
}

const label = (p: { trajectory: number; phase: string; turn: number; call: number }) =>
  `${p.trajectory}:${p.phase}${p.phase === 'update' ? '' : p.turn}${p.call >= 0 ? `.${p.call}` : ''}`;

describe('timeline', () => {
  it("lists a trajectory's turns, each call before and after it runs, and the end", () => {
    assert.deepEqual(trajectoryPoints(trajectory(0, [2]), 0).map(label), [
      '0:turn0',
      '0:turn1',
      '0:call1.0',
      '0:result1.0',
      '0:call1.1',
      '0:result1.1',
      '0:end2',
    ]);
  });

  it("interleaves a step's trajectories turn by turn, then the update", () => {
    const timeline = stepTimeline([trajectory(0, [1, 0]), trajectory(1, [0])]);
    assert.deepEqual(timeline.map(label), [
      '0:turn0',
      '1:turn0',
      '0:turn1',
      '0:call1.0',
      '0:result1.0',
      '1:turn1',
      '0:turn2',
      '1:end2',
      '0:end3',
      '-1:update',
    ]);
  });

  it('shows each trajectory at its last point so far, or its first when it has not started', () => {
    const timeline = stepTimeline([trajectory(0, [1, 0]), trajectory(1, [0])]);
    assert.deepEqual(shownIndices(timeline, 0, 2), [0, 1]);
    assert.deepEqual(shownIndices(timeline, 4, 2), [4, 1]);
    assert.deepEqual(shownIndices(timeline, 9, 2), [8, 7]);
  });
});

describe('transcript URIs', () => {
  it('carry the run directory, step and trajectory, and read back', () => {
    const uri = transcriptUri({ runDirectory: '/work/my runs/.rollout/runs/a#1', step: 12, index: 3 });
    assert.equal(uri, 'rollout:/work/my%20runs/.rollout/runs/a%231/step-000012/trajectory-3.rollout.txt');
    assert.deepEqual(parseTranscriptUri(uri), { runDirectory: '/work/my runs/.rollout/runs/a#1', step: 12, index: 3 });
    assert.deepEqual(parseTranscriptPath('/c:/runs/a/step-000001/trajectory-0.rollout.txt'), {
      runDirectory: 'c:/runs/a',
      step: 1,
      index: 0,
    });
    assert.equal(
      transcriptUri({ runDirectory: 'C:\\runs\\a', step: 1, index: 0 }),
      'rollout:/C%3A/runs/a/step-000001/trajectory-0.rollout.txt',
    );
    assert.equal(parseTranscriptUri('file:/x/step-000001/trajectory-0.rollout.txt'), undefined);
    assert.equal(parseTranscriptPath('/x/notes.txt'), undefined);
  });
});
